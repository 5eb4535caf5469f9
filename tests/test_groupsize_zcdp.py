"""Group sizes under zero-concentrated DP: squared L2 sensitivities by brute force, the
Gaussian ledger, the noise, the consistency weights and the private selection."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dphist import groupsize as gs
from dphist._kernel import Accountant, GroupMeasurer, noise_source, protect_groups
from dphist._kernel.gaussian import discrete_gaussian_variance
from dphist._kernel.groups import _node_pairs, _truncated
from dphist._numeric.group_views import size_variances
from dphist.errors import ValidationError
from dphist.guarantee import GROUPS_ZCDP_SECURE


def seal(parent, leaves):
    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy(np.array(parent)), leaves)
    return protect_groups(data.hierarchy.parent, data.offsets, data.sizes, data.counts)


def answers(sealed, level, k, m0):
    """Exact answers of the three measurements (H_K, Hc, Hg) over one level."""
    nodes = sealed.level_nodes(level).tolist()
    hk = np.concatenate([_truncated(sealed, r, k) for r in nodes])
    hc = np.concatenate([np.cumsum(_truncated(sealed, r, k))[m0:k] for r in nodes])
    hg = np.concatenate([np.repeat(*_node_pairs(sealed, r)) for r in nodes])
    return hk, hc, hg


def neighbours(leaves, m0):
    """Every dataset one entity away: one group's size +1 or -1 (not below m0)."""
    for j, leaf in enumerate(leaves):
        for g in range(len(leaf)):
            for d in (1, -1):
                if leaf[g] + d >= m0:
                    new = [list(x) for x in leaves]
                    new[j][g] += d
                    yield new


def small():
    return gs.GroupSizeData.from_leaf_sizes(
        gs.Hierarchy.from_fanouts([[2], [2, 1]]), [[1, 2, 2], [4], [1, 1, 1, 7]]
    )


@pytest.mark.parametrize("k,m0", [(3, 0), (7, 0), (4, 1)])
def test_squared_l2_sensitivities_by_brute_force(k, m0):
    """Max squared L2 change 2 (H_K), 1 (Hc), 1 (Hg), each attained."""
    best = np.zeros(3, dtype=np.int64)
    for n in range(1, 5):
        for sizes in itertools.combinations_with_replacement(range(m0, 6), n):
            leaves = [list(sizes)]
            base = answers(seal([-1], leaves), 0, k, m0)
            for other in neighbours(leaves, m0):
                new = answers(seal([-1], other), 0, k, m0)
                moved = [int(((a - b) ** 2).sum()) for a, b in zip(base, new, strict=True)]
                best = np.maximum(best, moved)
    assert best.tolist() == [2, 1, 1]


def test_unit_of_k_records_moves_the_level_by_k_times_in_l2():
    """Two entities of one unit in two groups of equal size: Hc moves by 2 in one cell
    (squared norm 4 = K**2 D2); in one group, by 1 in two cells (2 <= 4)."""
    base = answers(seal([-1], [[2, 2, 5]]), 0, 6, 0)[1]
    apart = answers(seal([-1], [[3, 3, 5]]), 0, 6, 0)[1]
    together = answers(seal([-1], [[2, 4, 5]]), 0, 6, 0)[1]
    assert int(((base - apart) ** 2).sum()) == 4 and int(((base - together) ** 2).sum()) == 2


@pytest.mark.parametrize("method", gs.ESTIMATORS)
def test_ledger_is_exact_one_gaussian_charge_per_level(method):
    rel = gs.publish_group_sizes(small(), rho="0.3", method=method, K=8, rng=0)
    assert rel.definition == "zcdp" and rel.epsilon == Fraction(3, 10)
    d2 = 2 if method == "naive" else 1
    for c in rel.ledger:
        assert (c.primitive, c.unit, c.epsilon) == ("discrete_gaussian", "rho", Fraction(1, 10))
        assert c.sensitivity == d2 and c.scale == Fraction(d2) / (2 * Fraction(1, 10))
    assert "rho=0.3" in repr(rel) and rel.epsilon_at(1e-9) > 0.3
    assert all(int(h.sum()) == g for h, g in zip(rel.histograms, rel.groups, strict=True))
    unit = gs.publish_group_sizes(small(), rho=1, K=8, rng=0, max_records=3)
    assert {c.sensitivity for c in unit.ledger} == {9}  # K**2 D2


def test_secure_release_states_the_zcdp_guarantee_and_options_are_checked():
    rel = gs.publish_group_sizes(small(), rho=1, method="ranked")
    assert rel.private and rel.guarantee == GROUPS_ZCDP_SECURE
    with pytest.raises(ValidationError, match="exactly one"):
        gs.publish_group_sizes(small(), rho=1, epsilon=1)
    with pytest.raises(ValidationError, match="exactly one"):
        gs.publish_group_sizes(small())


def test_gaussian_noise_has_the_charged_variance():
    n, rho = 100_000, Fraction(1, 8)
    sealed = seal([-1], [[3] * n])
    m = GroupMeasurer(sealed, Accountant(rho, label="t"), noise_source(7), definition="zcdp")
    ((_, noisy),) = list(m.ranked(0, epsilon=rho, block="t"))
    z = noisy - 3
    assert z.var() == pytest.approx(discrete_gaussian_variance(4, 1), rel=0.03)  # 1/(2 rho)
    assert abs(z.mean()) < 5 * math.sqrt(4 / n)


def test_variance_heuristic_from_the_cell_variance():
    """Laplace cell variances 2 (D/eps)**2 reproduce the epsilon heuristic exactly."""
    h = np.array([0, 4, 1, 0, 2])
    for method, d in (("ranked", 1), ("cumulative", 1), ("naive", 2)):
        by_eps = size_variances(h, 0.5, method=method)
        by_cell = size_variances(h, 0.5, method=method, cell_variance=2 * (d / 0.5) ** 2)
        assert np.allclose(by_eps, by_cell, equal_nan=True)
    data = gs.housing(3_000, levels=2, n_states=3, seed=1)
    est = [np.asarray(e) for e in gs.publish_group_sizes(data, epsilon=1, rng=2).estimates]
    h2 = data.hierarchy
    a = gs.top_down(h2, est, ["cumulative"] * 2, [0.5, 0.5])
    b = gs.top_down(h2, est, ["cumulative"] * 2, [0.5, 0.5], cell_variance=[8.0, 8.0])
    assert [x.tolist() for x in a] == [x.tolist() for x in b]


def test_private_selection_under_zcdp_is_an_exponential_choice():
    data = gs.housing(20_000, n_counties=60, seed=2)
    cands = [{"method": "naive", "K": 200, "m0": 1}, {"method": "ranked", "m0": 1}]
    rel, chosen = gs.select_private(data, cands, rho=1, selection_rho=5, rng=3)
    assert chosen == 1 and rel.definition == "zcdp"
    assert rel.epsilon == 7 and rel.ledger[-1].primitive == "exponential_min"
    assert sum(1 for c in rel.ledger if c.primitive == "discrete_gaussian") == 6
    with pytest.raises(ValidationError):
        gs.select_private(data, cands, rho=1, selection_epsilon=5)
