"""The optimized hierarchy (``dphist._numeric.strategy``, method OPT-H): its closed-form
expected error against dense least squares, its optimum against HB, and the release."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._numeric.strategy import design_error, optimal_design
from dphist._numeric.tree_params import hb_branching
from dphist.errors import ValidationError


def dense_error(b, shares, n, workload, noise="laplace"):
    """trace(G (A' D A)^-1) per query on the padded complete tree (the definition)."""
    height = len(shares) - 1
    full = b**height
    rows, prec = [], []
    for lev, w in enumerate(shares):
        span = b ** (height - lev)
        for q in range(b**lev):
            if w > 0:
                row = np.zeros(full)
                row[q * span : (q + 1) * span] = 1
                rows.append(row)
                prec.append(w**2 / 2.0 if noise == "laplace" else 2.0 * w)
    a = np.array(rows)
    cov = np.linalg.inv(a.T @ (np.array(prec)[:, None] * a))
    i = np.arange(full)
    lo, hi = np.minimum.outer(i, i), np.maximum.outer(i, i)
    gram = (lo + 1.0) * (n - hi) if workload == "all" else (n - hi) * 1.0
    gram[(i >= n)[:, None] | (i >= n)[None, :]] = 0
    queries = n * (n + 1) / 2 if workload == "all" else n
    return float(np.trace(gram @ cov)) / queries


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("workload", ["all", "prefix"])
@pytest.mark.parametrize(("b", "n"), [(2, 8), (2, 13), (3, 20), (4, 50), (5, 30)])
def test_closed_form_error_is_dense_least_squares(b, n, workload, noise):
    rng = np.random.default_rng(b * 100 + n)
    height = int(np.ceil(np.log(n) / np.log(b) - 1e-9))
    shares = rng.uniform(0.1, 1, height + 1)
    shares[0] = 0.0  # an unmeasured root, as the optimum often has
    shares /= shares.sum()
    got = design_error(b, shares, n, workload, noise)
    assert got == pytest.approx(dense_error(b, shares, n, workload, noise), rel=1e-9)


def test_uniform_tree_error_is_hb_variance():
    # Laplace noise of variance 2 (h+1)^2 on every node of the fan-out-16 tree over
    # 4,096 bins: 390.6 per range, the mean measured for HB over 200 seeds (385 +- 7)
    b, h = hb_branching(4096)
    assert design_error(b, [1 / (h + 1)] * (h + 1), 4096, "all") == pytest.approx(390.6, abs=0.1)


@pytest.mark.parametrize("n", [100, 1024, 4096])
@pytest.mark.parametrize("workload", ["all", "prefix"])
def test_optimum_beats_hb(n, workload):
    design = optimal_design(n, workload)
    b, h = hb_branching(n)
    hb = design_error(b, [1 / (h + 1)] * (h + 1), n, workload)
    assert design.error == pytest.approx(design_error(design.fanout, design.shares, n, workload))
    assert design.error <= 0.9 * hb
    assert sum(design.shares) == pytest.approx(1.0) and design.shares[-1] > 0


def test_release_spends_epsilon_exactly_and_matches_the_expected_error():
    n, eps, runs = 128, 1.0, 300
    x = np.zeros(n, dtype=np.int64)
    design = optimal_design(n, "all")
    errors = []
    for seed in range(runs):
        rel = dh.publish(x, method="OPT-H", epsilon=eps, rng=seed)
        errors.append(dh.metrics.interval_mse(x, rel.estimate))
    assert rel.spent == Fraction(1)
    assert len(rel.ledger) == sum(w > 0 for w in design.shares)
    # the mean over seeds estimates the closed form (discrete Laplace: variance ~ 2/eps^2)
    sem = np.std(errors) / np.sqrt(runs)
    assert abs(np.mean(errors) - design.error) < 4 * sem


def test_prefix_workload_and_bad_workload():
    x = np.arange(300) % 11
    rel = dh.publish(x, method="OPT-H", epsilon=0.5, workload="prefix", rng=1)
    assert rel.estimate.size == 300 and np.all(np.isfinite(rel.noise_variance))
    with pytest.raises(ValidationError):
        dh.publish(x, method="OPT-H", epsilon=0.5, workload="ranges")


def test_gaussian_design_prefers_deep_trees_and_beats_uniform_levels():
    """Under zCDP a level's variance falls as 1/share, so many levels cost little: the
    optimum over 4,096 bins is the binary tree, about half of HB's uniform error."""
    design = optimal_design(4096, "all", "gaussian")
    b, h = hb_branching(4096)
    hb = design_error(b, [1 / (h + 1)] * (h + 1), 4096, "all", "gaussian")
    assert design.fanout == 2 and design.error < 0.6 * hb


def test_opt_h_under_zcdp_uses_the_gaussian_design():
    x = np.zeros(4096, dtype=np.int64)
    rel = dh.publish(x, rho=1, method="OPT-H", rng=0)
    assert len(rel.ledger) == sum(w > 0 for w in optimal_design(4096, "all", "gaussian").shares)
    assert all(c.unit == "rho" for c in rel.ledger)
