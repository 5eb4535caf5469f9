"""Methods under zero-concentrated DP: every registered method spends exactly its rho,
linear methods report their Gaussian variances (Monte Carlo), and the designs
re-derived for Gaussian noise (GreedyH's L2 weights, HB's branching) are checked."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._kernel import REST, Accountant, noise_source, protect
from dphist._numeric.greedyh import greedy_h, implicit_gram
from dphist._numeric.tree_params import hb_branching
from dphist.blocks import FixedQueries, FixedSizeGroups, Hierarchy, Pipeline
from dphist.methods import get_method
from dphist.methods.run import run


@pytest.mark.parametrize("method", [m.name for m in dh.list_methods()])
def test_every_method_spends_exactly_its_rho(method):
    info = get_method(method)
    x = (np.arange(48) * 7) % 11
    rel = dh.publish(x, rho="0.3", method=method, rng=2, **info.example)
    assert rel.spent == Fraction(3, 10) and {c.unit for c in rel.ledger} == {"rho"}
    assert rel.estimate.shape == (48,) and np.all(np.isfinite(rel.estimate))
    for c in rel.ledger:
        if c.primitive in ("discrete_gaussian", "lattice_gaussian"):
            assert 2 * c.epsilon * c.scale >= c.sensitivity  # rho >= D2 / (2 sigma**2)


LINEAR = {
    "identity": get_method("identity").pipeline(),
    "uniform": get_method("uniform").pipeline(),
    "H": get_method("H").pipeline(),
    "H geometric": get_method("H").pipeline(fanout=2, allocation="geometric"),
    "HB": get_method("HB").pipeline(),
    "OPT-H": get_method("OPT-H").pipeline(),
    "OPT-H prefix": get_method("OPT-H").pipeline(workload="prefix"),
    "Boost": get_method("Boost").pipeline(),
    "Privelet": get_method("Privelet").pipeline(),
    # MM / PMM's fixed queries over a public grouping (GreedyH with L2 weights)
    "MM": Pipeline((FixedSizeGroups(width=3), FixedQueries(share=REST, workload="all"))),
    "PMM": Pipeline((FixedSizeGroups(width=2), FixedQueries(share=REST, workload="prefix"))),
}


@pytest.mark.parametrize("name", list(LINEAR))
def test_linear_methods_report_their_gaussian_variance(name):
    """Monte Carlo over 300 runs on empty data against the reported per-bin variance."""
    n, rho, runs = 40, Fraction(1, 2), 300
    data = protect(np.zeros(n, dtype=np.int64))
    estimates, reported = [], None
    for seed in range(runs):
        budget = Accountant(rho, label="release")
        out = run(
            LINEAR[name],
            data,
            epsilon=rho,
            budget=budget,
            noise=noise_source(seed),
            definition="zcdp",
        )
        assert budget.spent == rho
        estimates.append(out.estimate)
        reported = out.variance
    empirical = np.var(np.array(estimates), axis=0).mean()
    assert empirical == pytest.approx(float(np.mean(reported)), rel=0.12)


def test_greedy_h_l2_weights_square_to_one_on_every_path_and_beat_l1_under_gaussian_noise():
    """64 groups, all ranges: GreedyH's L2 strategy has squared weights adding to 1 along
    every path (L2 sensitivity 1) and, under Gaussian noise calibrated to each strategy's
    own L2 sensitivity, a mean range variance well below the L1 strategy's (about 1.5x)."""
    g = 64
    sizes = np.ones(g, dtype=np.int64)
    lo, hi = np.triu_indices(g + 1, 1)
    errors = {}
    for norm in ("l1", "l2"):
        st = greedy_h(implicit_gram(sizes, "all"), norm=norm)
        a = np.zeros((st.n_queries, g))
        for k, (s, e, w) in enumerate(zip(st.lo, st.hi, st.weight, strict=True)):
            a[k, s:e] = w
        column2 = (a**2).sum(axis=0)
        if norm == "l2":
            assert np.allclose(column2, 1.0)
        else:
            assert np.allclose(np.abs(a).sum(axis=0), 1.0)
        cov = np.linalg.pinv(a.T @ a) * column2.max()
        prefix = np.vstack([np.zeros(g), np.cumsum(cov, axis=0)])
        ranges = np.vstack([np.zeros(g + 1), np.cumsum(prefix, axis=1).T]).T  # P C P^T
        errors[norm] = np.mean(ranges[hi, hi] - 2 * ranges[lo, hi] + ranges[lo, lo])
    assert errors["l2"] < 0.8 * errors["l1"]


def test_hb_gaussian_branching_is_the_scan_minimum():
    """V(b) = (b-1) h**2 - (2/3)(b+1) h with h = ceil(log_b n), first minimum over all b."""
    for n in (5, 64, 256, 1000, 4096, 5000):
        best = None
        for b in range(2, n + 1):
            h, span = 0, 1
            while span < n:
                span *= b
                h += 1
            v3 = 3 * (b - 1) * h**2 - 2 * (b + 1) * h
            if best is None or v3 < best[0]:
                best = (v3, b, h)
        assert hb_branching(n, "gaussian") == best[1:]
    assert hb_branching(4096, "gaussian") == (4, 6) and hb_branching(4096) == (16, 3)


def test_hierarchy_under_zcdp_uses_the_gaussian_branching():
    rel = dh.publish(np.zeros(256, dtype=np.int64), rho=1, method="HB", rng=0)
    assert len(rel.ledger) == 5  # fan-out 4: 256, 64, 16, 4, 1 nodes
    pure = dh.publish(np.zeros(256, dtype=np.int64), epsilon=1, method="HB", rng=0)
    assert len(pure.ledger) == 3  # fan-out 16
    h = Hierarchy(share=REST, fanout=2, allocation="geometric")
    assert h.zcdp
