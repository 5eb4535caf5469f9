"""Error bars, end to end: releases against Monte Carlo, the API, planning, files."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist import cli, workloads
from dphist._kernel import Accountant, noise_source, protect
from dphist.blocks import FixedQueries, FixedSizeGroups, Pipeline
from dphist.blocks.base import REST
from dphist.methods.run import run
from dphist.uncertainty import NoErrorBarError, Tail, workload_total

N = 40
X = np.random.default_rng(5).integers(0, 30, N)
LINEAR = ["identity", "uniform", "H", "HB", "Boost", "OPT-H", "Privelet"]
RUNS = 300


def _ranges(n: int = N, count: int = 60) -> tuple[np.ndarray, np.ndarray]:
    w = workloads.random_ranges(n, count, 3)
    return w.lo, w.hi


def _pooled_ratio(estimates: np.ndarray, truth: np.ndarray, predicted: np.ndarray) -> float:
    """Mean squared error over runs and queries, over the predicted mean variance."""
    return float(np.mean((estimates - truth) ** 2) / np.mean(predicted))


@pytest.mark.statistical
@pytest.mark.parametrize("method", LINEAR)
@pytest.mark.parametrize("budget", [{"epsilon": 1.0}, {"rho": 0.5}])
def test_linear_noise_variance_matches_monte_carlo(method, budget):
    """The exact noise variance of bins and ranges against RUNS seeded releases."""
    if "rho" in budget and method not in dh.zcdp_methods():
        pytest.skip(f"{method} has no zCDP form")
    lo, hi = _ranges()
    truth = np.concatenate(([0], np.cumsum(X)))
    runs = [dh.publish(X, method=method, rng=s, **budget) for s in range(RUNS)]
    model = runs[0].uncertainty
    bins = np.arange(N)
    # the noise part (uniform's estimate is biased: compare with its noise-free value)
    centre = np.full(N, X.sum() / N) if method == "uniform" else X
    centre_r = (hi - lo) * X.sum() / N if method == "uniform" else truth[hi] - truth[lo]
    est_b = np.stack([r.estimate for r in runs])
    est_r = np.stack([r.ranges(lo, hi) for r in runs])
    assert _pooled_ratio(est_b, centre, model.noise.variance(bins, bins + 1)) == pytest.approx(
        1.0, abs=0.12
    )
    assert _pooled_ratio(est_r, centre_r, model.noise.variance(lo, hi)) == pytest.approx(
        1.0, abs=0.15
    )
    for r in runs[:3]:  # every release of a data-independent method has the same model
        assert np.allclose(r.uncertainty.noise.variance(lo, hi), model.noise.variance(lo, hi))


@pytest.mark.statistical
def test_greedyh_noise_given_public_groups_matches_monte_carlo():
    """MM's publication over a fixed public grouping: its noise is exact given the groups."""
    pipeline = Pipeline((FixedSizeGroups(width=3), FixedQueries(share=REST, workload="all")))
    lo, hi = _ranges()
    groups = np.arange(N) // 3
    mean = (np.bincount(groups, weights=X) / np.bincount(groups))[groups]  # noise-free
    centre = np.concatenate(([0], np.cumsum(mean)))
    errors, model = [], None
    for s in range(RUNS):
        out = run(
            pipeline, protect(X), epsilon=Fraction(1), budget=Accountant(Fraction(1)),
            noise=noise_source(s),
        )  # fmt: skip
        prefix = np.concatenate(([0], np.cumsum(out.estimate)))
        errors.append(prefix[hi] - prefix[lo] - (centre[hi] - centre[lo]))
        model = out.uncertainty
    predicted = model.noise.variance(lo, hi)
    assert np.mean(np.square(errors)) / np.mean(predicted) == pytest.approx(1.0, abs=0.15)


# --------------------------------------------------------------------------- the API


def test_release_error_bar_api():
    rel = dh.publish(X, epsilon=1.0, method="H", rng=2)
    se = rel.stderr
    assert se.shape == (N,) and not se.flags.writeable
    assert se[7] == pytest.approx(rel.range_stderr(7, 8))
    lo, hi = _ranges()
    answers, stderr = rel.ranges(lo, hi, stderr=True)
    assert np.allclose(answers, rel.ranges(lo, hi))
    assert stderr[0] == pytest.approx(rel.range_stderr(int(lo[0]), int(hi[0])))
    low, high = rel.interval(3, 17)
    assert low <= rel.range_sum(3, 17) <= high
    lower, upper = rel.intervals()
    est = rel.estimate
    assert np.all((lower <= est) & (est <= upper))  # every interval holds its estimate
    assert np.all((lower >= 0) | (lower == est))  # below 0 only to hold a negative estimate
    w = workloads.prefix(N)
    answers_w, s = rel.answer(w, stderr=True)
    assert np.allclose(answers_w, rel.answer(w))
    assert np.allclose(s, rel.ranges(*w.intervals(), stderr=True)[1])
    assert rel.range_stderr(5, 5) == 0.0
    record = rel.to_dict()
    assert record["stderr"] == se.tolist() and "exact" in record["error_bars"]
    with pytest.raises(dh.errors.ValidationError):
        rel.interval(0, 3, alpha=1.0)


def test_identity_bins_use_the_exact_discrete_tail():
    rel = dh.publish(X, epsilon=0.5, method="identity", rng=1)
    k = Tail("laplace", Fraction(2)).quantile(0.05)
    lower, upper = rel.intervals(alpha=0.05)
    est = rel.estimate
    assert np.allclose(upper, est + k)
    assert np.allclose(lower, np.minimum(np.maximum(est - k, 0), est))
    raw_lower, raw_upper = rel.intervals(alpha=0.05, nonnegative=False)
    assert np.allclose(raw_lower, est - k) and np.allclose(raw_upper, est + k)
    assert "exact" in rel.error_bars


@pytest.mark.parametrize("method", ["MWEM", "EFPA"])
def test_methods_without_error_bars_say_so(method):
    rel = dh.publish(X, epsilon=1.0, method=method, rng=0)
    assert rel.stderr is None and rel.error_bars.startswith("nothing: ")
    with pytest.raises(NoErrorBarError, match="no error bar"):
        rel.interval(0, 5)
    with pytest.raises(NoErrorBarError):
        rel.ranges(np.array([0]), np.array([3]), stderr=True)
    assert rel.to_dict()["stderr"] is None


@pytest.mark.parametrize(
    ("method", "kind"),
    [("uniform", "bracket"), ("S1", "bound"), ("S2", "first_stage"), ("AHP", "first_stage")],
)
def test_grouping_releases_cover_their_bias(method, kind):
    """With noise far below one count, only the bias remains: the intervals hold it."""
    x = np.repeat([5, 40, 0, 12], 10)
    x[7] = 30  # a spike inside a flat run
    rel = dh.publish(x, epsilon=1e4, method=method, rng=0)
    assert rel.uncertainty.bias.kind == kind
    lo, hi = _ranges()
    truth = np.concatenate(([0], np.cumsum(x)))
    lower, upper = rel.intervals(lo, hi)
    t = truth[hi] - truth[lo]
    assert np.all((lower <= t + 1e-6) & (t <= upper + 1e-6))
    b_lo, b_hi = rel.intervals()
    assert np.all((b_lo <= x + 1e-6) & (x <= b_hi + 1e-6))


@pytest.mark.statistical
def test_coverage_of_linear_and_first_stage_intervals():
    """95% intervals hold about 95% of bins and ranges (the noise is all of H's error)."""
    x = np.random.default_rng(1).integers(0, 50, 512)
    lo, hi = _ranges(512, 400)
    truth = np.concatenate(([0], np.cumsum(x)))
    for method, band in (("H", (0.935, 0.965)), ("O+S2", (0.93, 0.99))):
        held_b = held_r = 0.0
        for s in range(40):
            rel = dh.publish(x, epsilon=1.0, method=method, rng=s)
            lower, upper = rel.intervals()
            held_b += np.mean((lower <= x) & (x <= upper)) / 40
            low, high = rel.intervals(lo, hi)
            t = truth[hi] - truth[lo]
            held_r += np.mean((low <= t) & (t <= high)) / 40
        assert band[0] <= held_b <= band[1], (method, held_b)
        assert band[0] - 0.02 <= held_r <= band[1], (method, held_r)


@pytest.mark.parametrize("method", ["H", "Privelet", "identity"])
def test_workload_totals_in_closed_form_equal_the_sum_over_queries(method):
    noise = dh.publish(X, epsilon=1.0, method=method, rng=0).uncertainty.noise
    for w in (workloads.all_ranges(N), workloads.prefix(N), workloads.windows(N, (1, 5))):
        lo, hi = w.intervals()
        assert workload_total(noise, w) == pytest.approx(noise.variance(lo, hi).sum(), rel=1e-9)


# --------------------------------------------------------------------------- planning


def test_accuracy_of_identity_is_its_noise():
    a = dh.accuracy("identity", 50, epsilon=0.5, workload="point")
    p = np.exp(-0.5)
    assert a.rmse == pytest.approx(np.sqrt(2 * p / (1 - p) ** 2), rel=1e-12)
    assert a.half_width == Tail("laplace", Fraction(2)).quantile(0.05)
    ranges = dh.accuracy("identity", 50, epsilon=0.5, workload="ranges")
    assert ranges.rmse == pytest.approx(np.sqrt(2 * p / (1 - p) ** 2 * (50 + 2) / 3), rel=1e-9)


def test_epsilon_for_inverts_accuracy():
    for definition, key in (("pure", "epsilon"), ("zcdp", "rho")):
        budget = dh.epsilon_for("H", 64, 12.0, "ranges", definition=definition)
        assert dh.accuracy("H", 64, workload="ranges", **{key: budget}).half_width <= 12.0
        less = budget - 10.0 ** (np.floor(np.log10(budget)) - 2)  # one step of 3 digits
        assert dh.accuracy("H", 64, workload="ranges", **{key: less}).half_width > 12.0
    rmse_eps = dh.epsilon_for("Boost", 64, 5.0, "prefix", alpha=None)
    assert dh.accuracy("Boost", 64, rmse_eps, "prefix").rmse <= 5.0
    with pytest.raises(dh.errors.ValidationError, match="depends on the data"):
        dh.accuracy("S2", 64, epsilon=1.0)
    with pytest.raises(dh.errors.ValidationError):
        dh.epsilon_for("H", 64, -1.0)


def test_plan_command(capsys):
    code = cli.main(["plan", "--n", "100", "--target", "5", "--workload", "ranges"])
    out = capsys.readouterr().out
    assert code == 0 and "OPT-H" in out and "identity" in out
    assert f"{dh.epsilon_for('H', 100, 5.0, 'ranges'):g}" in out
    code = cli.main(["plan", "--n", "100", "--target", "5", "--delta", "1e-9", "--methods", "H"])
    out = capsys.readouterr().out
    assert code == 0 and "rho (zCDP)" in out
    assert cli.main(["plan", "--n", "100", "--target", "5", "--methods", "S2"]) == 2
    assert "depends on the data" in capsys.readouterr().err


# --------------------------------------------------------------------------- files


def test_files_carry_stderr_and_interval(tmp_path):
    rel = dh.publish(X, epsilon=1.0, method="H", rng=0)
    dh.export.write_histogram(tmp_path / "h.json", rel, counts="float")
    payload = json.loads((tmp_path / "h.json").read_text())
    lower, upper = rel.intervals()
    assert [b["lower"] for b in payload["bins"]] == pytest.approx(lower.tolist())
    assert [b["upper"] for b in payload["bins"]] == pytest.approx(upper.tolist())
    assert [b["stderr"] for b in payload["bins"]] == pytest.approx(rel.stderr.tolist())
    assert payload["release"]["interval_level"] == 0.95
    none = dh.publish(X, epsilon=1.0, method="MWEM", rng=0)
    dh.export.write_histogram(tmp_path / "m.csv", none)
    lines = (tmp_path / "m.csv").read_text().splitlines()
    assert lines[0].startswith("bin,label,left,right,estimate,stderr,lower,upper")
    assert lines[1].split(",")[5:8] == ["", "", ""]


def test_selection_epsilon_is_what_select_runs_at():
    from dphist._kernel import PrivateView
    from dphist._kernel.zcdp import pure_epsilon_within

    view = PrivateView(protect([1, 2, 3], max_records=2), Accountant(Fraction(1)),
                       noise_source(0), "b")  # fmt: skip
    assert view.selection_epsilon() == Fraction(1, 2)  # group privacy: epsilon / K
    assert view.selection_epsilon(Fraction(1, 4)) == Fraction(1, 8)
    zview = PrivateView(protect([1, 2, 3]), Accountant(Fraction(1, 2)), noise_source(0), "b",
                        definition="zcdp")  # fmt: skip
    assert zview.selection_epsilon() == pure_epsilon_within(Fraction(1, 2))
