"""A cut of the fan-out tree and the pruned tree above it, computed level by level.

S2+H and S1+H (Kellaris et al., PVLDB 2017, §6; methods framework A.8) publish a cut
of the fan-out tree of :mod:`dphist._numeric.tree`: a set of nodes whose intervals
partition the bins. Only the nodes not strictly inside a cut node matter afterwards
(the *pruned tree*: the cut nodes are its leaves). Everything here works from the
layout's spans and level offsets, never its per-node arrays (six int64 per node:
5 GB at 10**8 bins), so memory follows the pruned tree, small wherever the cut is
coarse, plus a few arrays of the level above the leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit
from ..errors import ValidationError
from .tree import TreeLayout

__all__ = ["PrunedTree", "frontier_cells", "level_children", "prune", "s2_cut"]


def level_children(layout: TreeLayout, lev: int) -> np.ndarray:
    """Number of children of each node of level ``lev`` (0 on the leaf level)."""
    counts = layout.level_counts
    if lev == layout.n_levels - 1:
        return np.zeros(int(counts[lev]), dtype=np.int64)
    first = np.arange(int(counts[lev]), dtype=np.int64) * layout.fanout
    return np.minimum(int(counts[lev + 1]) - first, layout.fanout)


def _level_lengths(layout: TreeLayout, lev: int) -> np.ndarray:
    span = int(layout.spans[lev])
    lo = np.arange(int(layout.level_counts[lev]), dtype=np.int64) * span
    return (np.minimum(lo + span, layout.n) - lo).astype(np.float64)


@njit(cache=True)
def _block_moments(y, centre, span):  # pragma: no cover - compiled
    """Sums of ``y - centre`` and of its square over consecutive blocks of ``span``."""
    m = (y.size + span - 1) // span
    s1 = np.zeros(m)
    s2 = np.zeros(m)
    for i in range(y.size):
        d = y[i] - centre
        s1[i // span] += d
        s2[i // span] += d * d
    return s1, s2


def s2_cut(
    layout: TreeLayout, noisy: np.ndarray, sigma1: float, final_var: np.ndarray
) -> np.ndarray:
    """S2+H's least-cost cut (a mask over the layout's nodes).

    Node cost = SSE of the noisy counts - (|v| - 1) ``sigma1`` + ``final_var[l]`` / |v|
    for a node ``v`` of level ``l`` (Kellaris et al. §6): the smoothing error less the
    noise it averages away, plus the publication noise. ``best(v) = min(cost(v), sum of
    the children's best)`` bottom up, ties keeping ``v`` (the coarsest of the least-cost
    cuts), then top down. A leaf's cost is ``final_var`` of the leaf level (no SSE), so
    the leaves need no array. Post-processing of released values; ``O(N)`` time.
    """
    t, off = layout.n_levels, layout.level_offsets
    cut = np.zeros(layout.n_nodes, dtype=bool)
    if t == 1:
        cut[0] = True
        return cut
    y = np.asarray(noisy, dtype=np.float64)
    s1, s2 = _block_moments(y, float(y.mean()), int(layout.fanout))
    keep: list[np.ndarray] = [np.empty(0, dtype=bool)] * (t - 1)
    best = level_children(layout, t - 2) * float(final_var[t - 1])
    for lev in range(t - 2, -1, -1):
        if lev < t - 2:
            starts = np.arange(int(layout.level_counts[lev]), dtype=np.int64) * layout.fanout
            s1, s2 = np.add.reduceat(s1, starts), np.add.reduceat(s2, starts)
            best = np.add.reduceat(best, starts)
        length = _level_lengths(layout, lev)
        cost = (s2 - s1 * s1 / length) - (length - 1.0) * sigma1 + float(final_var[lev]) / length
        keep[lev] = cost <= best
        best = np.where(keep[lev], cost, best)
    reached = np.ones(1, dtype=bool)
    for lev in range(t - 1):
        cut[off[lev] : off[lev + 1]] = reached & keep[lev]
        reached = np.repeat(reached & ~keep[lev], level_children(layout, lev))
    cut[off[t - 1] : off[t]] = reached
    return cut


@dataclass(frozen=True, eq=False)
class PrunedTree:
    """The nodes of a layout not strictly inside a cut node, in level order.

    ``lo, hi, level``: each node's interval and level; ``cut``: whether it is a cut
    node (a leaf here); ``first_child, n_children``: its children in this numbering
    (children of a node are consecutive, and node ``k >= 1`` is a child of exactly one
    earlier node, so the children of all nodes in order are ``1, 2, ...``).
    """

    n: int
    lo: np.ndarray
    hi: np.ndarray
    level: np.ndarray
    cut: np.ndarray
    first_child: np.ndarray
    n_children: np.ndarray

    @property
    def size(self) -> int:
        return int(self.lo.size)

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Children in CSR form ``(ptr, kids)``."""
        ptr = np.zeros(self.size + 1, dtype=np.int64)
        np.cumsum(self.n_children, out=ptr[1:])
        return ptr, np.arange(1, self.size, dtype=np.int64)


def prune(layout: TreeLayout, cut: np.ndarray) -> PrunedTree:
    """The pruned tree of ``cut`` (a mask over ``layout``'s nodes that is a cut)."""
    off, spans, n = layout.level_offsets, layout.spans, layout.n
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("lo", "hi", "level", "cut", "kids")}
    reached = np.ones(1, dtype=bool)
    for lev in range(layout.n_levels):
        j = np.flatnonzero(reached)
        here = cut[off[lev] : off[lev + 1]][j]
        lo = j * int(spans[lev])
        parts["lo"].append(lo)
        parts["hi"].append(np.minimum(lo + int(spans[lev]), n))
        parts["level"].append(np.full(j.size, lev, dtype=np.int64))
        parts["cut"].append(here)
        kids = level_children(layout, lev)
        parts["kids"].append(np.where(here, 0, kids[j]))
        if lev < layout.n_levels - 1:
            inner = np.zeros(reached.size, dtype=bool)
            inner[j[~here]] = True
            reached = np.repeat(inner, kids)
    lo, hi, level, is_cut, n_children = (np.concatenate(parts[k]) for k in parts)
    if not np.all(is_cut | (n_children > 0)):
        raise ValidationError("the mask is not a cut: a leaf has no cut node above it")
    first_child = np.cumsum(n_children) - n_children + 1
    return PrunedTree(n, lo, hi, level, is_cut, first_child, n_children)


def frontier_cells(tree: PrunedTree, levels: int) -> list[np.ndarray]:
    """Per level ``l < levels`` of the layout (root first), the cells ``F_l``: the
    pruned nodes of level ``l`` and the cut nodes above it, as node indices sorted by
    position. Each ``F_l`` partitions the bins (methods framework A.8)."""
    bounds = np.searchsorted(tree.level, np.arange(levels + 1))
    out, above = [], np.empty(0, dtype=np.int64)
    for lev in range(bounds.size - 1):
        own = np.arange(bounds[lev], bounds[lev + 1], dtype=np.int64)
        cells = np.concatenate((own, above)) if above.size else own
        out.append(cells[np.argsort(tree.lo[cells], kind="stable")] if above.size else cells)
        new = own[tree.cut[own]]
        if new.size:
            above = np.concatenate((above, new))
    return out
