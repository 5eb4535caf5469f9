"""PrivTree's biased splitting on the quadtree of a 2-D grid, as a kernel selection.

Zhang, Xiao, Xie, "PrivTree", SIGMOD 2016, Algorithm 2 with the spatial decomposition
of §4 (a node splits into ``2**d = 4`` quadrants). :class:`QuadSplit` is
:class:`~dphist._kernel.biased_split.BiasedSplit` on a different public tree: the
quadtree of the grid (:class:`~dphist._numeric.rect_tree.QuadLayout`), whose nodes are
rectangles; the noise plan, the bias ``delta = lambda ln 4`` per level, the threshold and
the privacy argument are that class's (kernel NOTES, "Biased splitting"): node scores are
rectangle counts (non-increasing from a node to its children, moved by at most one
record and only on the one path of nodes holding the changed cell), each decision node
at level ``l`` splits iff ``max(theta - delta, count - l delta) + Z > theta``. Single
cells stop without a decision. The released value is the set of leaf rectangles, sorted
by their top-left cell; counts and noises are never released.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._numeric.grid2d import prefix2d, rect_totals
from .._numeric.rect_tree import QuadLayout
from ..errors import InternalError
from .biased_split import BiasedSplit
from .noise import NoiseSource

__all__ = ["QuadSplit"]


@dataclass(frozen=True)
class QuadSplit(BiasedSplit):
    """The leaves ``(r0, r1, c0, c1)`` of a PrivTree decomposition of the grid's quadtree
    (``tree`` is a :class:`~dphist._numeric.rect_tree.QuadLayout`; ``score`` is the
    count; ``threshold`` is theta in records)."""

    def describe(self, n: int) -> str:
        rows, cols = self.tree.shape
        return f"biased quadtree split, count scores ({rows}x{cols}, theta={self.threshold:g})"

    def choose(self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource) -> tuple:
        if not isinstance(self.tree, QuadLayout) or self.score != "count":
            raise InternalError("a quadtree split needs a QuadLayout and count scores")
        if self.tree.n != x.shape[0]:
            raise InternalError("quadtree split: the layout does not cover the cells")
        p = prefix2d(x.reshape(self.tree.shape))
        return split_quadtree(self.tree, p, self.plan(epsilon), noise)


def split_quadtree(tree: QuadLayout, p: np.ndarray, plan, noise: NoiseSource) -> tuple:
    """The biased splitting level by level (as ``split_top_down``); the leaves, sorted."""
    leaves: list[tuple[np.ndarray, ...]] = []
    active = tree.root()
    floor = plan.theta - plan.delta
    level = 0
    while active[0].size:
        kids = tree.n_children(*active)
        leaves.append(tuple(a[kids == 0] for a in active))
        deciding = tuple(a[kids >= 2] for a in active)
        counts = rect_totals(p, *deciding) << -plan.g_exp
        biased = np.maximum(counts - min(level * plan.delta, 1 << 62), floor)
        z = noise.discrete_laplace(plan.t, plan.s, int(deciding[0].size))
        split = biased + z > plan.theta
        leaves.append(tuple(a[~split] for a in deciding))
        active = tree.children(*(a[split] for a in deciding))[:4]
        level += 1
    r0, r1, c0, c1 = (np.concatenate([part[k] for part in leaves]) for k in range(4))
    order = np.lexsort((c0, r0))
    return r0[order], r1[order], c0[order], c1[order]
