"""Grids sized from the data's noisy scale: UGrid and AGrid (Qardaji, Yang, Li, ICDE 2013),
and the publication of any tree of measured rectangles.

Both grids need the number of records ``N``: Qardaji et al. and DPBench take it as
known; here it is the public ``total=`` or the noisy total of an earlier
:class:`~dphist.twod.blocks.GridTotal` (whose measurement then also joins the least
squares as the root's). Grid sizes are computed from released values only, so choosing
them is post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernel import GridSums, PrivateView, RectangleSums, as_fraction
from .._numeric.rect_tree import grid_tree, nested_grid_tree
from ..blocks import Block, State
from ..blocks.base import weighting_variance
from ..blocks.constraints import Interval, Share, rules
from ..errors import CompositionError
from .blocks import equivalent_epsilon, grid_shape, publish_tree

__all__ = ["AdaptiveGrid", "UniformGrid", "grid_side", "square_edges"]


def release_epsilon(state: State) -> float:
    """The epsilon the papers' sizing rules read: the whole release's (the grid is sized
    as if all of it went to the counts, as in Qardaji et al. and DPBench), as the
    equivalent epsilon under zCDP. Public: the sum of the blocks' budgets."""
    return equivalent_epsilon(state, sum(state.budgets.values(), Fraction(0)))


def _records(state: State, total: float | None) -> tuple[float, float]:
    """``(N, its noise variance)``: the public total (variance 0) or the noisy one."""
    if total is not None:
        return float(total), 0.0
    noisy = state.notes.get("total")
    if noisy is None:
        raise CompositionError("a grid needs total= (public) or a noisy total block before it")
    return noisy


def square_edges(length: int, side: int) -> np.ndarray:
    """Edges of consecutive runs of ``side`` bins over ``length`` (the last may be shorter)."""
    return np.append(np.arange(0, length, max(int(side), 1), dtype=np.int64), length)


def grid_side(shape: tuple[int, int], cells: float) -> int:
    """The square cell side for about ``cells`` cells over the grid: ``floor(sqrt(rows
    cols / cells))``, at least 1, rounded down as DPBench's UG and AG do (so never fewer
    cells than asked); the whole grid when ``cells <= 1``."""
    if not cells > 1:
        return max(shape)
    return max(math.floor(math.sqrt(shape[0] * shape[1] / cells) + 1e-12), 1)


@dataclass(frozen=True, kw_only=True)
class UniformGrid(Block):
    """UGrid (Qardaji, Yang, Li, ICDE 2013, §IV, Guideline 1): an ``m x m`` grid of equal
    square cells with ``m = sqrt(N epsilon / c)`` (``c = 10``), one noisy count per cell
    spread evenly over it. Privacy: the cells partition the grid, one sensitivity-1
    :class:`~dphist._kernel.GridSums` measurement with the block's share; the size comes
    from public or released values."""

    label = "ugrid"
    zcdp = True
    spends = True
    constraints = rules(c=Interval(float, 1e-9, None), total=Interval(float, 0.0, None))
    optional = frozenset({"total"})
    c: float = 10.0
    total: float | None = None

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        n_records, total_var = _records(state, self.total)
        cells = n_records * release_epsilon(state) / self.c
        side = grid_side(shape, cells)
        re, ce = square_edges(shape[0], side), square_edges(shape[1], side)
        m = view.measure(GridSums(shape, re, ce))
        tree = grid_tree(shape, re, ce)
        y = np.concatenate(([n_records], m.values.astype(np.float64)))
        root = np.inf if total_var == 0.0 else total_var
        var = np.concatenate(
            ([root], np.full(m.values.size, float(weighting_variance(m.variance))))
        )
        out = publish_tree(state, view, tree, y, var)
        return out.with_(notes={**state.notes, "grid": (re.size - 1, ce.size - 1)})


@dataclass(frozen=True, kw_only=True)
class AdaptiveGrid(Block):
    """AGrid (Qardaji, Yang, Li, ICDE 2013, §V): a coarse ``m1 x m1`` grid (``m1 =
    max(10, sqrt(N epsilon / c) / 4)`` rounded down, as DPBench's AG) measured with
    ``alpha`` of the budget; each cell with noisy count ``N'`` is cut into an ``m2 x m2``
    grid (``m2 = ceil(sqrt(N' (1 - alpha) epsilon / c2))``, ``c2 = c / 2``, the paper's
    rounding) measured with the rest; constrained inference
    (least squares) makes every cell's sub-cells add up to it. Privacy: the coarse
    cells and the sub-cells each partition the grid (:class:`~dphist._kernel.GridSums`,
    :class:`~dphist._kernel.RectangleSums`, sensitivity 1 each, derived by the kernel);
    the sub-grids depend on released values only."""

    label = "agrid"
    zcdp = True
    spends = True
    constraints = rules(
        c=Interval(float, 1e-9, None),
        alpha=Share(),
        total=Interval(float, 0.0, None),
    )
    optional = frozenset({"total"})
    c: float = 10.0
    alpha: object = 0.5
    total: float | None = None

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        rows, cols = shape
        n_records, total_var = _records(state, self.total)
        budget = view.remaining
        alpha = as_fraction(self.alpha, name="alpha")
        eps1 = budget * alpha
        eps = release_epsilon(state)
        m1 = max(10, math.floor(math.sqrt(max(n_records, 0.0) * eps / self.c) / 4.0))
        side = grid_side(shape, m1 * m1)
        re, ce = square_edges(rows, side), square_edges(cols, side)
        coarse = view.measure(GridSums(shape, re, ce), epsilon=eps1)
        # each cell's sub-grid from its noisy count (released)
        eps2 = eps * (1.0 - float(alpha))
        # the paper's ceiling (DPBench's AG rounds down: coarser sub-grids, measured
        # worse on five of the six shared 2-D datasets at epsilon 0.01)
        m2 = np.ceil(np.sqrt(np.maximum(coarse.values, 0) * eps2 / (self.c / 2.0)))
        m2 = np.maximum(m2, 1.0)
        heights = np.repeat(np.diff(re), ce.size - 1)
        widths = np.tile(np.diff(ce), re.size - 1)
        sub = np.floor(np.sqrt(heights * widths / m2**2) + 1e-12).clip(1)
        parts_r = np.ceil(heights / sub).astype(np.int64)
        parts_c = np.ceil(widths / sub).astype(np.int64)
        tree = nested_grid_tree(shape, re, ce, parts_r, parts_c, sub.astype(np.int64))
        fine_nodes = slice(1 + coarse.values.size, tree.n_nodes)
        fine = view.measure(
            RectangleSums(shape, *(a[fine_nodes] for a in (tree.r0, tree.r1, tree.c0, tree.c1)))
        )
        y = np.concatenate(([n_records], coarse.values, fine.values)).astype(np.float64)
        var = np.concatenate(
            (
                [np.inf if total_var == 0.0 else total_var],
                np.full(coarse.values.size, float(weighting_variance(coarse.variance))),
                np.full(fine.values.size, float(weighting_variance(fine.variance))),
            )
        )
        out = publish_tree(state, view, tree, y, var)
        return out.with_(notes={**state.notes, "grid": (re.size - 1, ce.size - 1)})
