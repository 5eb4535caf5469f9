"""Data-dependent 2-D blocks: PrivTree's quadtree decomposition and MWEM over rectangles.

* :class:`QuadDecomposition` + :class:`~dphist.twod.privtree.LeafTotals`: PrivTree
  (Zhang, Xiao, Xie, SIGMOD 2016, §4: the quadtree of a spatial domain split by biased
  noisy counts, then noisy leaf counts); the kernel's :class:`~dphist._kernel.QuadSplit`
  releases the leaves.
* :class:`GridMWEM`: MWEM (Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1) with
  rectangle queries, as DPBench's ``mwemND``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import GridSums, PrivateView, QuadSplit, RectangleSums, WorstRectangle, as_fraction
from .._numeric.grid2d import prefix2d, rect_totals
from .._numeric.rect_tree import QuadLayout, paint
from ..blocks import Block, State
from ..blocks.constraints import Interval, Options, Share, rules
from ..blocks.mwem import replay_updates
from ..errors import CompositionError
from ..uncertainty.rectangles import RectErrorModel
from .blocks import grid_shape

__all__ = ["GridMWEM", "QuadDecomposition", "quadtree_rectangles"]


@dataclass(frozen=True, kw_only=True)
class QuadDecomposition(Block):
    """PrivTree's decomposition of the grid (SIGMOD 2016, Algorithm 2; fan-out 4, bias
    ``lambda ln 4`` per level, ``threshold`` theta in records): the leaf rectangles, in
    ``notes["leaves"]``. Privacy: one kernel selection
    (:class:`~dphist._kernel.QuadSplit`) with the block's share, whose epsilon accounts
    for every level (the bias makes it independent of the depth)."""

    label = "quad_split"
    zcdp = True
    spends = True
    constraints = rules(threshold=Interval(float, -1e9, 1e9))
    threshold: float = 0.0

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        leaves = view.select(QuadSplit(QuadLayout(shape), "count", float(self.threshold)))
        return state.with_(notes={**state.notes, "leaves": leaves})


def quadtree_rectangles(shape: tuple[int, int], depth: int) -> tuple[np.ndarray, ...]:
    """The nodes of the grid's quadtree down to ``depth`` levels below the root, as
    rectangles ``(r0, r1, c0, c1)`` (public candidates for MWEM)."""
    layout = QuadLayout(shape)
    level = layout.root()
    parts = [level]
    for _ in range(depth):
        level = layout.children(*level)[:4]
        if level[0].size == 0:
            break
        parts.append(level)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


QUERIES = ("quadtree",)


@dataclass(frozen=True, kw_only=True)
class GridMWEM(Block):
    """MWEM over rectangles (Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1; DPBench's
    ``mwemND`` defaults: 10 rounds, half the budget for the choices, 100 replays).

    From the uniform grid at a noisy total, each round picks the candidate rectangle the
    estimate answers worst (kernel selection :class:`~dphist._kernel.WorstRectangle`),
    measures it, and replays every measurement ``replays`` times through the
    multiplicative-weights update. Candidates: the quadtree's nodes down to ``depth``
    levels (public), or the rectangles of ``workload`` (a public
    :class:`~dphist.workloads.Rectangles`; DPBench scores MWEM with its own workload as
    candidates). The estimate is constant on the cells cut out by the measured
    rectangles, so the updates run on at most ``(2 rounds + 1)**2`` blocks. DPBench takes
    the total as known; here it is measured. Privacy: ``rounds`` selections and ``rounds
    + 1`` rectangle totals of sensitivity 1, charged by the kernel; updates are
    post-processing. No error bars (the estimate is nonlinear in its noisy inputs).
    """

    label = "mwem"
    zcdp = True
    spends = True
    constraints = rules(
        rounds=Interval(int, 1, 1000),
        ratio=Share(),
        replays=Interval(int, 1, 10_000),
        depth=Interval(int, 0, 12),
        queries=Options(*QUERIES),
    )
    optional = frozenset({"workload"})
    rounds: int = 10
    ratio: object = 0.5
    replays: int = 100
    depth: int = 5
    queries: str = "quadtree"
    workload: object = None

    def _candidates(self, shape: tuple[int, int]) -> tuple[np.ndarray, ...]:
        if self.workload is None:
            return quadtree_rectangles(shape, self.depth)
        if tuple(getattr(self.workload, "shape", ())) != shape:
            raise CompositionError(f"the MWEM workload must be a rectangle workload over {shape}")
        return tuple(np.asarray(a, dtype=np.int64) for a in self.workload.rectangles())

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        rows, cols = shape
        cand = self._candidates(shape)
        rounds = min(self.rounds, cand[0].size)
        eps, ratio = view.remaining, as_fraction(self.ratio, name="ratio")
        choose_eps = eps * ratio / rounds
        measure_eps = eps * (1 - ratio) / (rounds + 1)
        m = view.measure(
            GridSums(shape, np.array([0, rows]), np.array([0, cols])), epsilon=measure_eps
        )
        total = max(float(m.values[0]), 1.0)
        row_cuts, col_cuts = np.array([0, rows]), np.array([0, cols])
        mass = np.array([total])
        chosen: list[int] = []
        values: list[float] = []
        pool = np.ones(cand[0].size, dtype=bool)
        for _ in range(rounds):
            left = np.flatnonzero(pool)
            p = prefix2d(_paint(shape, row_cuts, col_cuts, mass))
            answers = rect_totals(p, *(a[left] for a in cand))
            pick = int(left[view.select(WorstRectangle(shape, *(a[left] for a in cand), answers),
                                        epsilon=choose_eps)])  # fmt: skip
            pool[pick] = False
            q = tuple(a[[pick]] for a in cand)
            values.append(
                float(view.measure(RectangleSums(shape, *q), epsilon=measure_eps).values[0])
            )
            chosen.append(pick)
            row_cuts, col_cuts, mass = _refine(shape, row_cuts, col_cuts, mass, q)
            inside = _inside(row_cuts, col_cuts, tuple(a[chosen] for a in cand))
            mass = replay_updates(mass, inside, np.array(values), total, self.replays)
        cells = _paint(shape, row_cuts, col_cuts, mass)
        model = RectErrorModel.without(
            "MWEM's estimate is a nonlinear function of its noisy answers and of queries "
            "chosen from the data; nothing released bounds its error"
        )
        return state.with_(estimate=cells.ravel(), uncertainty=model)


def _paint(shape, row_cuts, col_cuts, mass) -> np.ndarray:
    """The cells, each block's mass spread evenly (``mass`` row-major over the blocks)."""
    nr, nc = row_cuts.size - 1, col_cuts.size - 1
    a, b = np.divmod(np.arange(nr * nc), nc)
    return paint(shape, row_cuts[a], row_cuts[a + 1], col_cuts[b], col_cuts[b + 1], mass)


def _refine(shape, row_cuts, col_cuts, mass, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add the measured rectangle's edges to the cuts; blocks split by area."""
    new_r = np.union1d(row_cuts, [q[0][0], q[1][0]])
    new_c = np.union1d(col_cuts, [q[2][0], q[3][0]])
    p = prefix2d(_paint(shape, row_cuts, col_cuts, mass))
    sums = p[np.ix_(new_r, new_c)]
    blocks = sums[1:, 1:] - sums[:-1, 1:] - sums[1:, :-1] + sums[:-1, :-1]
    return new_r, new_c, np.maximum(blocks.ravel(), 0.0)


def _inside(row_cuts, col_cuts, rects) -> np.ndarray:
    """``inside[q, s]``: block ``s`` (row-major) lies in measured rectangle ``q``."""
    r0, r1, c0, c1 = rects
    rows_in = (row_cuts[None, :-1] >= r0[:, None]) & (row_cuts[None, 1:] <= r1[:, None])
    cols_in = (col_cuts[None, :-1] >= c0[:, None]) & (col_cuts[None, 1:] <= c1[:, None])
    return (rows_in[:, :, None] & cols_in[:, None, :]).reshape(r0.size, -1)
