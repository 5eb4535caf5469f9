"""Tests of the experiment runner: seeding, resuming, failures, metrics and summaries."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dphist
import dphist as dh
from dphist import metrics as mt
from dphist import workloads as wl
from dphist.errors import ValidationError
from dphist.lab import experiments as ex
from dphist.lab.experiments import runs

TOY = np.array([3, 0, 5, 1, 0, 0, 7, 2, 4, 4, 4, 9, 0, 1, 2, 3], dtype=np.int64)
VOLATILE = ("seconds", "timings")


def stable(rows):
    """Rows without the machine-dependent columns (NaN as None), keyed and sorted."""
    out = [{k: None if v != v else v for k, v in r.items() if k not in VOLATILE} for r in rows]
    return sorted(out, key=lambda r: (r["run"], r["metric"], r["metric_args"]))


def grid(**overrides):
    base = {
        "methods": ["identity", ("H", {"fanout": 4}), "uniform"],
        "datasets": [ex.Given("toy", TOY), ex.Synthetic.make("spiky", 48, seed=2)],
        "epsilons": [0.1, 1],
        "metrics": ["point_mse", "interval_mse", ex.metric("range_pct_mse", r=25)],
        "trials": 2,
        "progress": False,
    }
    base.update(overrides)
    return base


@pytest.fixture
def counted(monkeypatch):
    """Count calls of publish made by the runner (warm-up calls excluded)."""
    calls = []
    real = runs.publish

    def spy(counts, **kw):
        if counts is not runs.WARMUP_COUNTS:
            calls.append(kw["method"])
        return real(counts, **kw)

    monkeypatch.setattr(runs, "publish", spy)
    return calls


# --------------------------------------------------------------------------- seeding


def test_run_key_is_stable_and_exact_in_epsilon():
    m, d = ex.Method("identity"), ex.Given("toy", TOY)
    assert ex.run_key(m, d, 0.1, 0) == ex.run_key(m, d, "0.1", 0)
    assert ex.run_key(m, d, 0.1, 0) == ex.run_key(ex.Method("identity", {}), d, "1/10", 0)
    keys = {
        ex.run_key(m, d, 0.1, 1),
        ex.run_key(m, d, 0.2, 0),
        ex.run_key(ex.Method("identity", {"a": 1}), d, 0.1, 0),
        ex.run_key(m, ex.Given("toy", TOY + 1), 0.1, 0),
        ex.run_key(m, ex.Given("toy2", TOY), 0.1, 0),
        ex.run_key(m, d, 0.1, 0),
    }
    assert len(keys) == 6


def test_params_order_does_not_change_the_key():
    d = ex.Real("search_logs")
    a = ex.run_key(ex.Method("S1+H", {"ratio": 0.25, "fanout": 8}), d, 1, 0)
    b = ex.run_key(ex.Method("S1+H", {"fanout": 8, "ratio": 0.25}), d, 1, 0)
    assert a == b


def test_run_seed_is_a_child_of_the_root():
    key = ex.run_key(ex.Method("identity"), ex.Given("toy", TOY), 1, 0)
    a = np.random.default_rng(ex.run_seed(5, key)).integers(0, 2**32, 4)
    b = np.random.default_rng(ex.run_seed(5, key)).integers(0, 2**32, 4)
    c = np.random.default_rng(ex.run_seed(6, key)).integers(0, 2**32, 4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert ex.run_seed(5, key).entropy == np.random.SeedSequence(5).entropy


def test_rows_do_not_depend_on_other_cells_or_their_order():
    full = ex.run_grid(**grid())
    part = ex.run_grid(**grid(methods=["uniform", ("H", {"fanout": 4})], epsilons=[1], trials=2))
    reordered = ex.run_grid(**grid(methods=list(reversed(grid()["methods"]))))
    by_key = {(r["run"], r["metric"], r["metric_args"]): r for r in stable(full)}
    for row in stable(part):
        assert by_key[(row["run"], row["metric"], row["metric_args"])] == row
    assert stable(reordered) == stable(full)
    assert len(full) == 3 * 2 * 2 * 2 * 3


def test_one_and_two_workers_give_identical_rows(tmp_path):
    one = ex.run_grid(**grid(), out=tmp_path / "one.csv")
    two = ex.run_grid(**grid(), out=tmp_path / "two.csv", workers=2)
    assert stable(one) == stable(two)
    assert [r["run"] for r in one] == [r["run"] for r in two]  # returned in grid order
    assert stable(ex.load_results(tmp_path / "two.csv")) == stable(one)


def test_same_seed_same_values_other_seed_other_values():
    a = ex.run_grid(**grid(methods=["identity"], seed=1))
    b = ex.run_grid(**grid(methods=["identity"], seed=1))
    c = ex.run_grid(**grid(methods=["identity"], seed=2))
    assert [r["value"] for r in a] == [r["value"] for r in b]
    assert [r["value"] for r in a] != [r["value"] for r in c]


def test_rows_match_a_direct_publish_with_the_run_seed():
    rows = ex.run_grid(**grid(methods=["identity"], datasets=[("toy", TOY)], trials=1))
    row = next(r for r in rows if r["metric"] == "point_mse" and r["epsilon"] == 1.0)
    rng = np.random.default_rng(ex.run_seed(0, row["run"]))
    rel = dh.publish(TOY, epsilon=1, method="identity", rng=rng)
    assert row["value"] == mt.point_mse(TOY, rel.estimate)
    assert row["n"] == TOY.size and row["dataset"] == "toy" and row["error"] == ""
    assert set(eval_json(row["timings"])) == set(rel.timings)


def eval_json(text):
    import json

    return json.loads(text)


# --------------------------------------------------------------------------- resuming


def test_resume_skips_rows_already_present(tmp_path, counted):
    out = tmp_path / "res.csv"
    first = ex.run_grid(**grid(), out=out)
    assert len(counted) == 3 * 2 * 2 * 2
    counted.clear()
    again = ex.run_grid(**grid(), out=out)
    assert counted == []
    assert stable(again) == stable(first)
    assert len(ex.load_results(out)) == len(first)


def test_resume_runs_only_new_cells_and_missing_metrics(tmp_path, counted):
    out = tmp_path / "res.csv"
    first = ex.run_grid(**grid(epsilons=[1]), out=out)
    counted.clear()
    ex.run_grid(**grid(epsilons=[1, 0.5]), out=out)
    assert len(counted) == 3 * 2 * 2  # only epsilon 0.5
    counted.clear()
    more = ex.run_grid(**grid(epsilons=[1], metrics=["point_mse", "mae"]), out=out)
    assert len(counted) == 3 * 2 * 2  # each epsilon-1 run once more, for "mae" only
    old = {(r["run"], r["metric"]): r["value"] for r in first}
    for r in more:
        if r["metric"] == "point_mse":
            assert r["value"] == old[(r["run"], "point_mse")]
    rows = ex.load_results(out)
    keys = [(r["run"], r["metric"], r["metric_args"]) for r in rows]
    assert len(keys) == len(set(keys))


def test_a_cut_last_line_is_dropped_and_rerun(tmp_path, counted):
    out = tmp_path / "res.csv"
    ex.run_grid(**grid(methods=["identity"]), out=out)
    raw = out.read_bytes()
    out.write_bytes(raw[:-7])  # a write interrupted mid-line
    counted.clear()
    rows = ex.run_grid(**grid(methods=["identity"]), out=out)
    assert len(counted) == 1
    assert len(ex.load_results(out)) == len(rows) == 2 * 2 * 2 * 3
    assert len(out.read_bytes().splitlines()) == len(rows) + 1


def test_a_foreign_file_is_refused(tmp_path):
    out = tmp_path / "other.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(ValidationError, match="header"):
        ex.run_grid(**grid(), out=out)


def test_parquet_output_matches_the_csv_journal(tmp_path):
    pytest.importorskip("duckdb")
    rows = ex.run_grid(**grid(methods=["identity", "nope"]), out=tmp_path / "r.parquet")
    assert (tmp_path / "r.csv").exists()
    back = ex.load_results(tmp_path / "r.parquet")
    assert stable(back) == stable(rows)
    assert all(isinstance(r["value"], float) and isinstance(r["n"], int) for r in back)


# --------------------------------------------------------------------------- failures


def test_failures_are_recorded_not_raised(tmp_path):
    rows = ex.run_grid(
        **grid(methods=["identity", "nope", ("H", {"fanout": 1})], trials=1),
        out=tmp_path / "r.csv",
    )
    errors = {r["method"] + r["params"]: r["error"] for r in rows}
    assert errors["identity{}"] == ""
    assert errors["nope{}"] == "UnknownMethodError"
    assert errors['H{"fanout":1}'] == "ValidationError"
    assert all(math.isnan(r["value"]) for r in rows if r["error"])
    summary = ex.summarise(rows, by=("method",))
    got = {s["method"]: (s["runs"], s["failures"]) for s in summary}
    per_method = 2 * 2 * 3
    assert got == {"identity": (per_method, 0), "nope": (0, per_method), "H": (0, per_method)}
    assert math.isnan(next(s for s in summary if s["method"] == "nope")["value"])


def test_retry_failed_runs_failed_cells_again(tmp_path, counted):
    out = tmp_path / "r.csv"
    ex.run_grid(**grid(methods=["identity", "nope"], trials=1), out=out)
    counted.clear()
    ex.run_grid(**grid(methods=["identity", "nope"], trials=1), out=out)
    assert counted == []
    rows = ex.run_grid(**grid(methods=["identity", "nope"], trials=1), out=out, retry_failed=True)
    assert counted == ["nope"] * 4
    assert len(rows) == 2 * 2 * 2 * 3


def test_metric_failure_is_recorded_per_metric():
    zeros = np.zeros(8, dtype=np.int64)
    rows = ex.run_grid(
        **grid(
            methods=["identity"],
            datasets=[("z", zeros)],
            trials=1,
            metrics=["point_mse", "scaled_mse"],
        )
    )
    assert {r["metric"]: r["error"] for r in rows} == {
        "point_mse": "",
        "scaled_mse": "ValidationError",
    }


# --------------------------------------------------------------------------- metrics


def test_metric_registry_values_by_hand():
    t = np.array([0.0, 2.0, 4.0, 10.0])
    x = np.array([1.0, 2.0, 1.0, 12.0])
    assert ex.metric("mae")(t, x) == pytest.approx((1 + 0 + 3 + 2) / 4)
    # relative errors with delta 1: 1/1, 0/2, 3/4, 2/10
    assert ex.metric("mre_single")(t, x) == pytest.approx((1 + 0 + 0.75 + 0.2) / 4)
    assert ex.metric("mre_size", lo=0, hi=3)(t, x) == pytest.approx((1 + 0) / 2)
    assert ex.metric("mre_size", lo=4, hi=math.inf)(t, x) == pytest.approx((0.75 + 0.2) / 2)
    assert math.isnan(ex.metric("mre_size", lo=100, hi=200)(t, x))
    # windows of 2: true 2, 6, 14; estimate 3, 3, 13 -> errors 1, 3, 1
    assert ex.metric("range_mse", length=2)(t, x) == pytest.approx((1 + 9 + 1) / 3)
    assert ex.metric("range_pct_mse", r=50)(t, x) == pytest.approx((1 + 9 + 1) / 3)
    assert ex.metric("mre_range", length=2)(t, x) == pytest.approx((1 / 2 + 3 / 6 + 1 / 14) / 3)
    assert ex.metric("mre_range", r=50)(t, x) == ex.metric("mre_range", length=2)(t, x)
    assert ex.metric("point_mse")(t, x) == pytest.approx((1 + 0 + 9 + 4) / 4)
    assert ex.metric("interval_mse")(t, x) == pytest.approx(mt.interval_mse(t, x))
    # prefix errors 1, 1, -2, 0
    assert ex.metric("prefix_mse")(t, x) == pytest.approx((1 + 1 + 4 + 0) / 4)
    assert ex.metric("emd")(t, t) == 0.0
    assert ex.metric("kld")(t, t) == pytest.approx(0.0, abs=1e-12)
    assert ex.metric("scaled_mse", workload="prefix")(t, x) == pytest.approx(6 / 4 / 16)
    assert ex.metric("workload_mse", workload="length_percent", r=50)(t, x) == pytest.approx(
        mt.workload_mse(t, x, wl.fixed_length(4, 2))
    )


def test_size_metrics_split_the_bins_into_groups():
    t = np.array([0.0, 0.0, 3.0, 12.0, 150.0])
    x = np.array([1.0, 2.0, 3.0, 6.0, 100.0])
    groups = ex.size_metrics([0, 1, 10, math.inf])
    assert [m.label for m in groups] == [
        "mre_size(delta=1.0,hi=1.0,lo=0.0)",
        "mre_size(delta=1.0,hi=10.0,lo=1.0)",
        "mre_size(delta=1.0,hi=inf,lo=10.0)",
    ]
    assert [g(t, x) for g in groups] == pytest.approx([1.5, 0.0, (0.5 + 1 / 3) / 2])
    with pytest.raises(ValidationError):
        ex.size_metrics([1, 1])


def test_metric_labels_and_errors():
    assert ex.metric("range_pct_mse", r=4).label == "range_pct_mse(r=4)"
    assert ex.metric("mre_size", hi=10, lo=0).label == "mre_size(hi=10,lo=0)"
    assert ex.metric("point_mse").label == "point_mse"
    with pytest.raises(ValidationError, match="unknown metric"):
        ex.metric("nope")
    with pytest.raises(ValidationError, match="exactly one"):
        ex.metric("mre_range")(np.ones(4), np.ones(4))


def test_bad_grid_arguments():
    with pytest.raises(ValidationError):
        ex.run_grid(**grid(trials=0))
    with pytest.raises(ValidationError):
        ex.run_grid(**grid(workers=0))
    with pytest.raises(ValidationError):
        ex.run_grid(**grid(methods=[]))
    with pytest.raises(TypeError):
        ex.run_grid(**grid(datasets=[3]))


def test_real_dataset_spec_reduces_the_public_domain(monkeypatch):
    monkeypatch.setattr(dphist.datasets, "load", lambda name, data_dir=None: np.arange(8))
    spec = ex.Real("search_logs", bins=4)
    assert spec.label == "search_logs@4"
    assert np.array_equal(spec.load(), [1, 5, 9, 13])


def test_synthetic_spec_is_deterministic():
    a = ex.Synthetic.make("piecewise_constant", 40, seed=3, segments=4)
    assert np.array_equal(a.load(), a.load())
    assert a.load().shape == (40,)
    with pytest.raises(ValidationError):
        ex.Synthetic("_generator", 4).load()


# --------------------------------------------------------------------------- summaries


def row(method, value, *, seconds=1.0, error="", eps=1.0, metric="point_mse"):
    return {
        "run": "k",
        "method": method,
        "params": "{}",
        "dataset": "d",
        "n": 4,
        "epsilon": eps,
        "trial": 0,
        "metric": metric,
        "metric_args": "{}",
        "value": value,
        "seconds": seconds,
        "timings": "{}",
        "error": error,
    }


def test_summarise_by_hand():
    rows = [
        row("a", 1.0, seconds=1.0),
        row("a", 2.0, seconds=3.0),
        row("a", 9.0, seconds=2.0),
        row("a", math.nan, error="ValueError"),
        row("b", 4.0, eps=0.5),
        row("b", 6.0, eps=1.0),
    ]
    mean = ex.summarise(rows, by=("method",))
    assert mean[0] == {"method": "a", "value": 4.0, "seconds": 2.0, "runs": 3, "failures": 1}
    assert mean[1]["value"] == 5.0 and mean[1]["failures"] == 0
    med = ex.summarise(rows, by=("method", "epsilon"), stat="median")
    assert med[0]["value"] == 2.0 and med[0]["seconds"] == 2.0
    assert [(s["method"], s["epsilon"], s["value"]) for s in med[1:]] == [
        ("b", 0.5, 4.0),
        ("b", 1.0, 6.0),
    ]
    with pytest.raises(ValidationError):
        ex.summarise(rows, stat="max")


def test_summarise_by_metric_label():
    rows = [row("a", 1.0, metric="range_pct_mse"), row("a", 3.0, metric="range_pct_mse")]
    rows[1]["metric_args"] = '{"r":4}'
    got = ex.summarise(rows, by=("label",))
    assert [s["label"] for s in got] == ["range_pct_mse", "range_pct_mse(r=4)"]
