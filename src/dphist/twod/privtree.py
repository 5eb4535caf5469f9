"""PrivTree's counts: the released decomposition as a tree, and which of its levels to
measure.

PrivTree (Zhang, Xiao, Xie, SIGMOD 2016, §4) publishes one noisy count per leaf of its
decomposition. Where the leaves are many (dense data at small epsilon), a large
rectangle sums hundreds of leaf noises; measuring also a coarser *frontier* of the same
tree (its nodes at depth ``d`` and the shallower leaves: a partition of the grid) and
making both consistent by least squares cuts that noise, as AGrid's two levels do.
Which frontier, and with which share, is chosen from public facts only: the released
leaves, the noise variances each share buys and a public sample of random rectangles,
by the exact expected variance of their estimates (:func:`dphist._numeric.rect_tree.
rect_moments`); the leaves' bias does not depend on the choice. Choosing from released
values is post-processing; each measured frontier is one sensitivity-1 query.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernel import PrivateView, RectangleSums
from .._numeric.rect_tree import QuadLayout, RectTree, tree_from_levels
from ..blocks import Block, State
from ..blocks.base import weighting_variance
from ..blocks.constraints import Options, rules
from ..errors import CompositionError, InternalError
from .blocks import best_plan, grid_shape, plan_variances, publish_tree

__all__ = ["LeafTotals", "decomposition_tree", "frontier"]

SHARES = (Fraction(1, 4), Fraction(1, 2))
"""Shares of the counts' budget a coarser frontier may take."""


def decomposition_tree(
    shape: tuple[int, int], leaves: tuple[np.ndarray, ...]
) -> tuple[RectTree, np.ndarray]:
    """The quadtree nodes above the released ``leaves``, as a tree (level order), and each
    node's depth. Public: it follows from the leaves (a node splits unless it is one)."""
    layout = QuadLayout(shape)
    known = set(zip(*(np.asarray(a).tolist() for a in leaves), strict=True))
    levels, active = [], layout.root()
    while True:
        inner = np.array(
            [tuple(v) not in known for v in zip(*(a.tolist() for a in active), strict=True)]
        )
        if not inner.any():
            break
        kids = layout.children(*(a[inner] for a in active))
        parent_index = np.flatnonzero(inner)[kids[4]]
        levels.append((*kids[:4], parent_index))
        active = kids[:4]
    tree = tree_from_levels(shape, levels)
    found = tree.leaves
    if (
        set(zip(*(a[found].tolist() for a in (tree.r0, tree.r1, tree.c0, tree.c1)), strict=True))
        != known
    ):
        raise InternalError("the released leaves are not those of a quadtree decomposition")
    sizes = [1] + [lv[0].size for lv in levels]
    return tree, np.repeat(np.arange(len(sizes)), sizes)


def frontier(tree: RectTree, depth: np.ndarray, d: int) -> np.ndarray:
    """The nodes at depth ``d`` and the leaves above it: a partition of the grid."""
    return np.flatnonzero((depth == d) | ((depth < d) & (tree.n_children == 0)))


def choose_plan(
    state: State, tree: RectTree, depth: np.ndarray, budget: Fraction
) -> tuple[int, Fraction]:
    """``(d, share)``: the frontier to measure with ``share`` of ``budget`` besides the
    leaves (``d = 0``: the leaves only), by :func:`~dphist.twod.blocks.best_plan`."""
    options = [(0, Fraction(0))] + [(d, s) for d in range(1, int(depth.max())) for s in SHARES]
    plans = []
    for d, share in options:
        plan = [(tree.leaves, budget * (1 - share))]
        if d:
            plan.append((frontier(tree, depth, d), budget * share))
        plans.append(plan)
    return options[best_plan(state, tree, plans)]


@dataclass(frozen=True, kw_only=True)
class LeafTotals(Block):
    """Noisy totals of the released leaves (``levels="leaves"``: PrivTree as published,
    one count per leaf) or of the leaves and the coarser frontier of the decomposition
    that least squares serves best (``"auto"``, module doc), spread evenly over each
    leaf's cells. Privacy: each measured set partitions the grid: one
    :class:`~dphist._kernel.RectangleSums` query of sensitivity 1 (derived by the kernel)
    each, with shares that add up to the block's. The error model is the noise exactly
    plus the bracket of non-negative counts for the spread within a leaf."""

    label = "leaf_totals"
    zcdp = True
    spends = True
    constraints = rules(levels=Options("auto", "leaves"))
    levels: str = "auto"

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        leaves = state.notes.get("leaves")
        if leaves is None:
            raise CompositionError("leaf_totals needs a decomposition block before it")
        tree, depth = decomposition_tree(shape, leaves)
        budget = view.remaining
        d, share = (
            choose_plan(state, tree, depth, budget) if self.levels == "auto" else (0, Fraction(0))
        )
        sets = [(tree.leaves, budget * (1 - share))] + (
            [(frontier(tree, depth, d), budget * share)] if d else []
        )
        y_sum, precision, measured = np.zeros(tree.n_nodes), np.zeros(tree.n_nodes), []
        for nodes, eps in sets:
            rects = (tree.r0[nodes], tree.r1[nodes], tree.c0[nodes], tree.c1[nodes])
            m = view.measure(RectangleSums(shape, *rects), epsilon=eps)
            var = float(weighting_variance(m.variance))
            y_sum[nodes] += m.values / var
            precision[nodes] += 1.0 / var
            measured.append((nodes, var))
        var = plan_variances(tree, measured)
        y = np.where(precision > 0, y_sum / np.where(precision > 0, precision, 1.0), 0.0)
        out = publish_tree(state, view, tree, y, var, measured)
        return out.with_(notes={**state.notes, "frontier": (d, str(share))})
