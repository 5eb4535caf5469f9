"""PrivTree on a grid's quadtree (``dphist._kernel.grid_split``): the exact law of the
released leaves on small grids, the privacy bound checked on it over every neighbour,
the sampler against the law, and the mutant without the depth bias."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dphist._kernel import QuadSplit, noise_source
from dphist._kernel.biased_split import privtree_epsilon
from dphist._kernel.grid_split import split_quadtree
from dphist._numeric.grid2d import prefix2d, rect_totals
from dphist._numeric.rect_tree import QuadLayout


def survival(t: int, rho: float) -> float:
    """``P(Z >= t)`` for the discrete Laplace ``P(z) ~ rho**|z|``."""
    return rho**t / (1 + rho) if t >= 1 else 1 - rho ** (1 - t) / (1 + rho)


def exact_law(x: np.ndarray, plan) -> dict[frozenset, float]:
    """Probability of every set of leaves, by recursion over the quadtree."""
    layout = QuadLayout(x.shape)
    p = prefix2d(x)
    rho = math.exp(-plan.s / plan.t)

    def law(node: tuple, level: int) -> dict[frozenset, float]:
        r0, r1, c0, c1 = node
        if (r1 - r0) * (c1 - c0) == 1:
            return {frozenset([node]): 1.0}
        s = int(rect_totals(p, r0, r1, c0, c1)) << -plan.g_exp
        b = max(plan.theta - plan.delta, s - level * plan.delta)
        p_split = survival(plan.theta + 1 - b, rho)
        out = {frozenset([node]): 1.0 - p_split}
        kids = layout.children(*(np.array([v]) for v in node))
        parts = [law(k, level + 1) for k in zip(*(a.tolist() for a in kids[:4]), strict=True)]
        for combo in itertools.product(*(q.items() for q in parts)):
            leaves = frozenset().union(*(c for c, _ in combo))
            out[leaves] = out.get(leaves, 0.0) + p_split * math.prod(q for _, q in combo)
        return out

    return law((0, x.shape[0], 0, x.shape[1]), 0)


def max_loss(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(abs(math.log(a[k]) - math.log(b[k])) for k in a)


@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(2)])
@pytest.mark.parametrize("shape", [(4, 4), (3, 4), (2, 5)])
def test_exact_loss_is_within_the_bound_over_neighbours(shape, epsilon):
    split = QuadSplit(QuadLayout(shape), "count", threshold=1.0)
    plan = split.plan(epsilon)
    bound = privtree_epsilon(plan.d_units * plan.s / plan.t, plan.delta * plan.s / plan.t)
    assert bound <= float(epsilon)
    rng = np.random.default_rng(sum(shape))
    worst = 0.0
    grids = [np.zeros(shape, dtype=int)] + [rng.integers(0, 4, shape) for _ in range(4)]
    for x in grids:
        base = exact_law(x, plan)
        assert abs(sum(base.values()) - 1.0) < 1e-12
        for k in range(x.size):
            other = x.copy().ravel()
            other[k] += 1
            worst = max(worst, max_loss(base, exact_law(other.reshape(shape), plan)))
    assert 0.0 < worst <= bound + 1e-12


def corner_isolated(x: np.ndarray, plan) -> float:
    """P(the top-left cell is a leaf of its own): every node on its path splits,
    independently, so the event's probability is the product along the path."""
    p = prefix2d(x)
    rho = math.exp(-plan.s / plan.t)
    node, level, prob = (0, x.shape[0], 0, x.shape[1]), 0, 1.0
    while (node[1] - node[0]) * (node[3] - node[2]) > 1:
        s = int(rect_totals(p, *node)) << -plan.g_exp
        prob *= survival(plan.theta + 1 - max(plan.theta - plan.delta, s - level * plan.delta), rho)
        half_r, half_c = (node[1] - node[0] + 1) // 2, (node[3] - node[2] + 1) // 2
        node, level = (node[0], node[0] + half_r, node[2], node[2] + half_c), level + 1
    return prob


def test_mutant_without_the_depth_bias_exceeds_its_claim():
    """Without PrivTree's bias (delta = 0) every level of the changed cell's path loses up
    to x: on a 1,024 x 1,024 grid (10 levels) far more than the claimed epsilon."""
    plan = QuadSplit(QuadLayout((1024, 1024)), "count").plan(Fraction(1))
    x = np.zeros((1024, 1024), dtype=np.int64)
    other = x.copy()
    other[0, 0] = 1

    def loss(p) -> float:
        return abs(math.log(corner_isolated(x, p)) - math.log(corner_isolated(other, p)))

    assert loss(plan) <= 1.0
    assert loss(replace(plan, delta=0)) > 1.5


def test_sampler_matches_the_exact_law():
    x = np.array([[2, 0, 1, 0], [0, 5, 0, 0], [1, 0, 0, 3], [0, 0, 2, 1]])
    plan = QuadSplit(QuadLayout(x.shape), "count", threshold=1.0).plan(Fraction(2))
    law = exact_law(x, plan)
    keys = sorted(law, key=sorted)
    counts = dict.fromkeys(keys, 0)
    noise = noise_source(5)
    runs = 2000
    p = prefix2d(x)
    for _ in range(runs):
        leaves = split_quadtree(QuadLayout(x.shape), p, plan, noise)
        counts[frozenset(zip(*(a.tolist() for a in leaves), strict=True))] += 1
    observed = np.array([counts[k] for k in keys])
    expected = np.array([law[k] for k in keys]) * runs
    keep = expected >= 5
    scaled = expected[keep] * observed[keep].sum() / expected[keep].sum()
    assert stats.chisquare(observed[keep], scaled).pvalue > 1e-4
