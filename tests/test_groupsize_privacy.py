"""Group-size releases: sensitivities by brute force, ledger, noise, selection, sealing."""

import copy
import itertools
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

from dphist import groupsize as gs
from dphist._kernel import Accountant, GroupMeasurer, noise_source, protect_groups
from dphist._kernel.groups import _node_pairs, _truncated
from dphist.errors import BudgetExceededError, DomainError


def seal(parent, leaves):
    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy(np.array(parent)), leaves)
    return protect_groups(data.hierarchy.parent, data.offsets, data.sizes, data.counts)


def answers(sealed, level, k, m0):
    """Exact (noise-free) answers of the three measurements over one level."""
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


@pytest.mark.parametrize("k,m0", [(3, 0), (7, 0), (4, 1)])
def test_sensitivities_by_brute_force(k, m0):
    """Spec §5.2 / S1: max L1 change 2 (H_K), 1 (Hc), 1 (Hg), each attained."""
    best = np.zeros(3, dtype=np.int64)
    for n in range(1, 5):
        for sizes in itertools.combinations_with_replacement(range(m0, 6), n):
            leaves = [list(sizes)]
            base = answers(seal([-1], leaves), 0, k, m0)
            for other in neighbours(leaves, m0):
                new = answers(seal([-1], other), 0, k, m0)
                best = np.maximum(
                    best, [np.abs(a - b).sum() for a, b in zip(base, new, strict=True)]
                )
    assert best.tolist() == [2, 1, 1]


def test_level_vector_sensitivity_with_two_regions():
    """Parallel composition: the joint answer of a level changes like one region's."""
    best = np.zeros(3, dtype=np.int64)
    for a in itertools.combinations_with_replacement(range(4), 2):
        for b in itertools.combinations_with_replacement(range(4), 2):
            leaves = [list(a), list(b)]
            base = [answers(seal([-1, 0, 0], leaves), lv, 3, 0) for lv in (0, 1)]
            for other in neighbours(leaves, 0):
                for lv in (0, 1):
                    new = answers(seal([-1, 0, 0], other), lv, 3, 0)
                    best = np.maximum(
                        best, [np.abs(x - y).sum() for x, y in zip(base[lv], new, strict=True)]
                    )
    assert best.tolist() == [2, 1, 1]


def test_e3_sensitivity_instance():
    before = answers(seal([-1], [[1, 1, 2, 3, 3]]), 0, 4, 0)
    after = answers(seal([-1], [[1, 1, 3, 3, 3]]), 0, 4, 0)
    assert [int(np.abs(a - b).sum()) for a, b in zip(before, after, strict=True)] == [2, 1, 1]
    capped = [
        answers(seal([-1], [s]), 0, 2, 0)[0].tolist() for s in ([1, 1, 2, 3, 3], [1, 1, 3, 3, 3])
    ]
    assert capped == [[0, 2, 3], [0, 2, 3]]


# ------------------------------------------------------------------ ledger and modes


def small():
    return gs.GroupSizeData.from_leaf_sizes(
        gs.Hierarchy.from_fanouts([[2], [2, 1]]), [[1, 2, 2], [4], [1, 1, 1, 7]]
    )


@pytest.mark.parametrize("method", gs.ESTIMATORS)
def test_ledger_is_exact_one_charge_per_level(method):
    rel = gs.publish_group_sizes(small(), epsilon=0.3, method=method, K=8, rng=0)
    assert [c.epsilon for c in rel.ledger] == [Fraction(1, 10)] * 3
    assert rel.epsilon == Fraction(3, 10)
    sens = 2 if method == "naive" else 1
    assert all(c.sensitivity == sens and c.scale == sens * 10 for c in rel.ledger)
    assert all("parallel composition" in c.query for c in rel.ledger)
    sizes = [c.size for c in rel.ledger]
    if method == "ranked":
        assert sizes == [8, 8, 8]  # every level measures every group once
    else:
        width = 9 if method == "naive" else 8
        assert sizes == [width, 2 * width, 3 * width]


def test_level_epsilon_override_is_exact():
    rel = gs.publish_group_sizes(
        small(), epsilon=1, level_epsilon=["0.5", 0.3, Fraction(1, 5)], method="ranked", rng=0
    )
    assert [c.epsilon for c in rel.ledger] == [Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)]
    assert rel.level_epsilon == (Fraction(1, 2), Fraction(3, 10), Fraction(1, 5))


def test_seeded_runs_reproduce_and_secure_runs_are_private():
    a = gs.publish_group_sizes(small(), epsilon=1, method="cumulative", K=8, rng=11)
    b = gs.publish_group_sizes(small(), epsilon=1, method="cumulative", K=8, rng=11)
    assert [x.tolist() for x in a.histograms] == [x.tolist() for x in b.histograms]
    assert not a.private and a.guarantee.startswith("none")
    runs = {
        tuple(map(tuple, gs.publish_group_sizes(small(), epsilon=1, K=8, rng=s).estimates))
        for s in range(6)
    }
    assert len(runs) > 1
    sec = gs.publish_group_sizes(small(), epsilon=1, method="ranked")
    assert sec.private and sec.guarantee.startswith("epsilon-DP")


def test_budget_cap_is_enforced_before_reading():
    sealed = seal([-1], [[1, 2]])
    budget = Accountant(Fraction(1, 2), label="cap")
    m = GroupMeasurer(sealed, budget, noise_source(0))
    m.ranked(0, epsilon=Fraction(1, 2), block="a")
    with pytest.raises(BudgetExceededError):
        m.cumulative(0, 4, 0, epsilon=Fraction(1, 10), block="b")
    assert budget.spent == Fraction(1, 2)


def test_sealed_groups_do_not_leak():
    sealed = seal([-1, 0, 0], [[5, 6], [7]])
    assert "5" not in repr(sealed) and "6" not in repr(sealed)
    assert sealed.groups.tolist() == [3, 2, 1]
    for f in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError):
            f(sealed)
    with pytest.raises(DomainError):
        protect_groups([-1], [0, 2], [3, 3], [1, 1])  # repeated size
    with pytest.raises(DomainError):
        protect_groups([-1], [0, 1], [-3], [1])


@pytest.mark.statistical
@pytest.mark.parametrize("eps,sens", [(1, 1), (1, 2), (Fraction(1, 2), 1)])
def test_noise_scale_is_as_claimed(eps, sens):
    """Empirical P(0), P(+-1) and variance of the measurement noise (spec §5.3 table)."""
    n = 200_000
    sealed = seal([-1], [[3] * n] if sens == 1 else [[3] * 10])
    m = GroupMeasurer(sealed, Accountant(Fraction(eps), label="t"), noise_source(7))
    if sens == 1:
        ((_, noisy),) = list(m.ranked(0, epsilon=eps, block="t"))
        z = noisy - 3
    else:
        ((_, noisy),) = list(m.truncated(0, n, epsilon=eps, block="t"))
        z = noisy - _truncated(sealed, 0, n)
    a = math.exp(-float(eps) / sens)
    p0 = (1 - a) / (1 + a)
    var = 2 * a / (1 - a) ** 2
    se = math.sqrt(p0 * (1 - p0) / z.size)
    assert abs(np.mean(z == 0) - p0) < 5 * se
    assert abs(np.mean(z == 1) - p0 * a) < 5 * math.sqrt(p0 * a / z.size)
    assert abs(z.var() / var - 1) < 0.05
    assert abs(z.mean()) < 5 * math.sqrt(var / z.size)


# ------------------------------------------------------------------ evaluation


def test_private_selection_charges_every_candidate():
    data = gs.housing(20_000, n_counties=60, seed=2)
    cands = [{"method": "naive", "K": 200, "m0": 1}, {"method": "ranked", "m0": 1}]
    rel, chosen = gs.select_private(data, cands, epsilon=1, selection_epsilon=5, rng=3)
    assert chosen == 1  # naive is orders of magnitude worse (spec §10.5)
    assert rel.methods == ("ranked",) * 3
    total = sum((c.epsilon for c in rel.ledger), Fraction(0))
    assert total == gs.total_cost(2, 1, 5) == 7
    assert rel.ledger[-1].primitive == "noisy_min" and rel.ledger[-1].sensitivity == 3
    assert sum(1 for c in rel.ledger if c.primitive == "discrete_laplace") == 6


def test_omniscient_reference():
    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy(np.array([-1])), [[1] * 50 + [4] * 10])
    ref = gs.omniscient(data, epsilon=1, trials=20, rng=0)
    assert ref["analytic"].tolist() == pytest.approx([2 * math.sqrt(2)])
    assert 0 <= ref["simulated"][0] < 30


def test_weighted_merge_beats_plain_average():
    """The paper's claim (spec §10.6) on small synthetic data, summed over seeds."""
    data = gs.housing(40_000, levels=2, n_states=20, outliers_per_state=20, seed=4)
    wins = np.zeros(2)
    for seed in range(3):
        for i, merge in enumerate(("weighted", "mean")):
            rel = gs.publish_group_sizes(
                data, epsilon=1, method="ranked", m0=1, merge=merge, rng=seed
            )
            wins[i] += gs.level_emds(data, rel)[0]
    assert wins[0] < wins[1]


def test_noise_is_added_chunk_by_chunk(monkeypatch):
    import dphist._kernel.groups as kg

    monkeypatch.setattr(kg, "_NOISE_CHUNK", 4)
    sealed = seal([-1], [list(range(1, 11))])
    m = GroupMeasurer(sealed, Accountant(Fraction(100), label="t"), noise_source(1))
    ((_, quiet),) = list(m.ranked(0, epsilon=60, block="t"))  # noise scale 1/60
    assert quiet.tolist() == list(range(1, 11))
    ((_, noisy),) = list(m.ranked(0, epsilon=Fraction(1, 10), block="t"))
    assert noisy.shape == (10,) and noisy.tolist() != list(range(1, 11))


def test_e9_noise_constants():
    """Spec §5.3 table: variance 2a/(1-a)^2 with a = exp(-eps/sensitivity)."""
    from dphist._kernel import noise_variance

    assert noise_variance(Fraction(1), Fraction(1)) == pytest.approx(1.841347, abs=1e-6)
    assert noise_variance(Fraction(2), Fraction(1)) == pytest.approx(7.835396, abs=1e-6)
    assert noise_variance(Fraction(1), Fraction(1, 2)) == pytest.approx(7.835396, abs=1e-6)
    a = math.exp(-1)
    assert (1 - a) / (1 + a) == pytest.approx(0.462117, abs=1e-6)
