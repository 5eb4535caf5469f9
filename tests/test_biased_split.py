"""PrivTree's biased splitting (``dphist._kernel.biased_split``): the exact law on tiny
trees, the privacy bound checked on it over neighbours, the sampler against the law,
the noise plan, and the mutant without the depth bias."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dphist as dh
from dphist._kernel import BiasedSplit, noise_source
from dphist._kernel.biased_split import _scorer, privtree_epsilon, split_top_down
from dphist._numeric.tree import tree_layout
from dphist.errors import ValidationError


def exact_law(tree, x, score, plan) -> dict[frozenset, float]:
    """Probability of every output cut, by recursion over the tree (no sampling)."""
    scorer = _scorer(np.asarray(x, dtype=np.int64), score)
    rho = math.exp(-plan.s / plan.t)

    def survival(t: int) -> float:  # P(Z >= t), discrete Laplace
        return rho**t / (1 + rho) if t >= 1 else 1 - rho ** (1 - t) / (1 + rho)

    def law(v: int, level: int) -> dict[frozenset, float]:
        kids = int(tree.n_children[v])
        if kids == 0:
            return {frozenset([v]): 1.0}
        first = int(tree.first_child[v])
        if kids == 1:
            return law(first, level + 1)
        s = int(scorer(tree.lo[[v]], tree.hi[[v]], plan.g_exp)[0])
        b = max(plan.theta - plan.delta, s - level * plan.delta)
        p_split = survival(plan.theta + 1 - b)
        out = {frozenset([v]): 1.0 - p_split}
        parts = [law(c, level + 1) for c in range(first, first + kids)]
        for combo in itertools.product(*(p.items() for p in parts)):
            cut = frozenset().union(*(c for c, _ in combo))
            out[cut] = out.get(cut, 0.0) + p_split * math.prod(p for _, p in combo)
        return out

    return law(0, 0)


def max_loss(law_a: dict, law_b: dict) -> float:
    assert law_a.keys() == law_b.keys()
    return max(abs(math.log(law_a[k]) - math.log(law_b[k])) for k in law_a)


def neighbours(x):
    for i in range(len(x)):
        yield [v + (j == i) for j, v in enumerate(x)]


@pytest.mark.parametrize("score", ["count", "deviation"])
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(3)])
def test_exact_loss_is_within_the_bound_over_neighbours(score, epsilon):
    tree = tree_layout(8, 2)
    sel = BiasedSplit(tree, score, threshold=1.0)
    plan = sel.plan(epsilon)
    bound = privtree_epsilon(plan.d_units * plan.s / plan.t, plan.delta * plan.s / plan.t)
    assert bound <= float(epsilon)
    rng = np.random.default_rng(7)
    worst = 0.0
    for x in [[0] * 8, [3, 0, 0, 0, 0, 0, 0, 0], [1, 2, 0, 5, 1, 1, 0, 0]] + [
        list(rng.integers(0, 4, 8)) for _ in range(6)
    ]:
        base = exact_law(tree, x, score, plan)
        assert abs(sum(base.values()) - 1.0) < 1e-12
        for other in neighbours(x):
            worst = max(worst, max_loss(base, exact_law(tree, other, score, plan)))
    assert 0.0 < worst <= bound + 1e-12


def first_leaf_isolated(tree, x, score, plan) -> float:
    """P(the leftmost bin is its own group): every node on its path splits, each
    independently, so the event's probability is the product along the path."""
    scorer = _scorer(np.asarray(x, dtype=np.int64), score)
    rho = math.exp(-plan.s / plan.t)
    prob, v, level = 1.0, 0, 0
    while tree.n_children[v] > 0:
        if tree.n_children[v] > 1:
            s = int(scorer(tree.lo[[v]], tree.hi[[v]], plan.g_exp)[0])
            t = plan.theta + 1 - max(plan.theta - plan.delta, s - level * plan.delta)
            prob *= rho**t / (1 + rho) if t >= 1 else 1 - rho ** (1 - t) / (1 + rho)
        v, level = int(tree.first_child[v]), level + 1
    return prob


def test_mutant_without_the_depth_bias_exceeds_its_claim():
    """The floor without PrivTree's bias (delta = 0): every level of the changed bin's
    path loses up to x, so a deep path loses far more than the claimed epsilon."""
    tree = tree_layout(1024, 2)
    epsilon = Fraction(1)
    plan = BiasedSplit(tree, "count").plan(epsilon)
    x, other = [0] * 1024, [1] + [0] * 1023

    def loss(p):
        a, b = (
            first_leaf_isolated(tree, x, "count", p),
            first_leaf_isolated(tree, other, "count", p),
        )
        return abs(math.log(a) - math.log(b))

    assert loss(plan) <= float(epsilon)
    assert loss(replace(plan, delta=0)) > 1.5 * float(epsilon)


@pytest.mark.parametrize("score", ["count", "deviation"])
def test_sampler_matches_the_exact_law(score):
    tree = tree_layout(4, 2)
    x = np.array([2, 0, 1, 3]) if score == "count" else np.array([0, 4, 1, 1])
    sel = BiasedSplit(tree, score, threshold=1.0)
    plan = sel.plan(Fraction(2))
    law = exact_law(tree, x, score, plan)
    keys = sorted(law, key=sorted)
    counts = dict.fromkeys(keys, 0)
    noise = noise_source(11)
    scorer = _scorer(x, score)
    runs = 6000
    for _ in range(runs):
        cut = split_top_down(tree, scorer, plan, noise)
        counts[frozenset(np.flatnonzero(cut).tolist())] += 1
    observed = np.array([counts[k] for k in keys])
    expected = np.array([law[k] for k in keys]) * runs
    assert stats.chisquare(observed, expected).pvalue > 1e-4


@pytest.mark.parametrize("fanout", [2, 4, 16])
def test_noise_plan_meets_its_epsilon(fanout):
    tree = tree_layout(64, fanout)
    scales = []
    for eps in ["1e-6", "0.01", "0.1", "1", "10", "1000", "1e6"]:
        epsilon = Fraction(eps)
        plan = BiasedSplit(tree).plan(epsilon)
        x = plan.d_units * plan.s / plan.t
        assert plan.delta >= plan.d_units
        assert privtree_epsilon(x, plan.delta * plan.s / plan.t) <= float(epsilon)
        assert privtree_epsilon(x, math.log(fanout)) > 0.99 * float(epsilon)  # not wasteful
        scales.append(float(BiasedSplit(tree).scale(64, epsilon)))
    assert scales == sorted(scales, reverse=True)


def test_too_small_epsilon_is_refused_before_any_read():
    with pytest.raises(ValidationError, match="too small"):
        BiasedSplit(tree_layout(8, 2)).scale(8, Fraction(1, 10**20))


def test_output_is_a_cut_and_empty_data_stays_whole():
    tree = tree_layout(1000, 2)
    noise = noise_source(3)
    plan = BiasedSplit(tree).plan(Fraction(1))
    rng = np.random.default_rng(0)
    for x in (rng.integers(0, 50, 1000), np.zeros(1000, dtype=np.int64)):
        cut = split_top_down(tree, _scorer(x, "count"), plan, noise)
        cover = np.zeros(1001, dtype=np.int64)
        np.add.at(cover, tree.lo[cut], 1)
        np.add.at(cover, tree.hi[cut], -1)
        assert (np.cumsum(cover)[:-1] == 1).all()
    assert cut.sum() <= 3  # all empty: the root, or a split or two near it


def test_sparse_histogram_keeps_empty_regions_whole():
    """Certified S~ groups a sparse histogram coarsely; the coupled partition of the
    same candidates, with no floor, splits the empty regions into many groups."""
    x = np.zeros(2048, dtype=np.int64)
    x[100:110] = 500
    x[1500] = 2000
    groups, mse = {}, {}
    for noise in ("certified", "coupled"):
        rel = dh.publish(x, method="S~", epsilon=1.0, noise=noise, rng=5)
        groups[noise] = np.unique(rel.estimate).size
        mse[noise] = float(np.mean((rel.estimate - x) ** 2))
        primitives = {c.to_dict()["primitive"] for c in rel.ledger}
        assert ("biased_split" in primitives) == (noise == "certified")
    assert groups["certified"] < 25 < 30 < groups["coupled"]
    assert mse["certified"] < mse["coupled"] / 10


def test_privtree_isolates_dense_bins():
    x = np.zeros(1024, dtype=np.int64)
    x[[10, 600]] = 5000
    rel = dh.publish(x, method="privtree", epsilon=1.0, rng=2)
    assert abs(rel.estimate[10] - 5000) < 100 and abs(rel.estimate[600] - 5000) < 100
    assert np.abs(rel.estimate[200:500]).max() < 1.0


@pytest.mark.parametrize(("method", "fanout"), [("S~", 2), ("DAWA", 4), ("S1", 8)])
def test_certified_groups_are_nodes_of_the_split_tree(method, fanout):
    """The certified partition's groups are nodes of the public tree of fan-out
    ``split_fanout`` (DAWA's default 4, S1/S~'s 2): aligned, of length a power of it."""
    x = np.random.default_rng(1).integers(0, 40, 256)
    x[64:128] = 0
    params = {} if method != "S1" else {"split_fanout": fanout}
    rel = dh.publish(x, method=method, epsilon=1.0, rng=4, **params)
    assert rel.params["split_fanout"] == fanout
    starts = np.flatnonzero(np.diff(rel.groups, prepend=-1))
    lengths = np.diff(np.append(starts, x.size))
    powers = {fanout**k for k in range(9)}
    assert set(lengths.tolist()) <= powers
    assert (starts % lengths == 0).all()
    assert 1 < starts.size < x.size


def test_split_fanout_is_checked_before_any_read():
    with pytest.raises(ValidationError, match="split_fanout"):
        dh.publish(np.ones(8, dtype=np.int64), method="DAWA", epsilon=1.0, split_fanout=1)
