"""Tests of the result plots and of the Pareto front they mark."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from dphist.errors import ValidationError
from dphist.plot import (
    pareto_front,
    plot_error_vs_epsilon,
    plot_error_vs_range,
    plot_mre_by_size,
    plot_release,
    plot_skyline,
)

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def brute_front(x, y):
    n = len(x)
    return np.array(
        [
            not any(
                x[j] <= x[i] and y[j] <= y[i] and (x[j] < x[i] or y[j] < y[i]) for j in range(n)
            )
            for i in range(n)
        ],
        dtype=bool,
    )


def test_pareto_front_hand_made():
    # (time, error): C is dominated by B; E duplicates D (neither dominates the other);
    # F ties A in time with more error.
    pts = {
        "A": (1.0, 9.0),
        "B": (2.0, 5.0),
        "C": (3.0, 6.0),
        "D": (4.0, 1.0),
        "E": (4.0, 1.0),
        "F": (1.0, 10.0),
        "G": (5.0, 1.0),
    }
    x, y = zip(*pts.values(), strict=True)
    mask = pareto_front(x, y)
    assert {k for k, on in zip(pts, mask, strict=True) if on} == {"A", "B", "D", "E"}


def test_pareto_front_equals_brute_force_on_random_sets():
    rng = np.random.default_rng(4)
    for size in itertools.chain(range(0, 8), [20, 50]):
        for _ in range(25):
            # small integer grids force many ties in x, y or both
            x = rng.integers(0, 5, size).astype(float)
            y = rng.integers(0, 5, size).astype(float)
            assert np.array_equal(pareto_front(x, y), brute_front(x, y)), (x, y)


def test_pareto_front_rejects_bad_input():
    with pytest.raises(ValidationError):
        pareto_front([1.0, 2.0], [1.0])
    with pytest.raises(ValidationError):
        pareto_front([1.0, np.nan], [1.0, 2.0])


def rows_for_plots():
    rows = []
    rng = np.random.default_rng(0)
    for method, base in (("S~", 1.0), ("H", 3.0), ("S2+H", 2.0)):
        for eps in (0.01, 0.1, 1.0):
            for trial in range(2):
                common = {
                    "run": f"{method}{eps}{trial}",
                    "method": method,
                    "params": "{}",
                    "dataset": "d",
                    "n": 100,
                    "epsilon": eps,
                    "trial": trial,
                    "seconds": base * 1e-3 * (1 + trial),
                    "timings": "{}",
                    "error": "",
                }
                rows.append(
                    {**common, "metric": "point_mse", "metric_args": "{}", "value": base / eps}
                )
                for r in (1, 4, 16, 64):
                    rows.append(
                        {
                            **common,
                            "metric": "range_pct_mse",
                            "metric_args": json.dumps({"r": r}),
                            "value": base * r / eps,
                        }
                    )
                for lo, hi in ((0, 1), (1, 10), (10, float("inf"))):
                    rows.append(
                        {
                            **common,
                            "metric": "mre_size",
                            "metric_args": json.dumps({"hi": hi, "lo": lo}),
                            "value": rng.uniform(0.1, 2.0),
                        }
                    )
    rows.append({**rows[0], "method": "broken", "error": "ValueError", "value": float("nan")})
    return rows


def is_png(path):
    data = path.read_bytes()
    return len(data) > 1000 and data.startswith(PNG)


def test_each_plot_writes_a_png(tmp_path):
    rows = rows_for_plots()
    written = [
        plot_skyline(rows, tmp_path / "sky.png", metric="point_mse", epsilon=0.01),
        plot_error_vs_epsilon(rows, tmp_path / "eps.png", metric="point_mse", dataset="d"),
        plot_error_vs_range(rows, tmp_path / "r.png", epsilon=1.0, methods=["S~", "H"]),
        plot_mre_by_size(rows, tmp_path / "mre.png", dataset="d", epsilon=0.1),
        plot_release(np.arange(10), np.arange(10) + 0.5, tmp_path / "rel.png"),
    ]
    assert written == [tmp_path / n for n in ("sky.png", "eps.png", "r.png", "mre.png", "rel.png")]
    assert all(is_png(p) for p in written)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)


def test_plots_refuse_empty_selections_and_bad_suffix(tmp_path):
    rows = rows_for_plots()
    with pytest.raises(ValidationError, match="nothing to plot"):
        plot_skyline(rows, tmp_path / "x.png", metric="kld")
    with pytest.raises(ValidationError, match="nothing to plot"):
        plot_error_vs_range(rows, tmp_path / "x.png", dataset="other")
    with pytest.raises(ValidationError, match="cannot write"):
        plot_error_vs_epsilon(rows, tmp_path / "x.nope", metric="point_mse")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    import matplotlib.figure

    target = tmp_path / "sky.png"
    target.write_bytes(b"old")

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    with pytest.raises(OSError):
        plot_skyline(rows_for_plots(), target, metric="point_mse")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["sky.png"]
