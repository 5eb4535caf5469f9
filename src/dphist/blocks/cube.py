"""DPCube's phases in 1-D: noisy cell counts, a split judged on them, and the paper's
least-squares mix of the cells with the parts' noisy totals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import BlockSums, GroupSums, PrivateView
from .._numeric.bucketing import dpcube_partition
from .._numeric.compact import label_dtype, labels_from_starts
from .._numeric.cube import cube_least_squares, cube_split, cube_tree
from ..errors import CompositionError
from ..uncertainty import TreeNoise
from .base import Block, State, mean_absolute_noise, weighting_variance
from .constraints import Interval, Options, rules
from .error_bars import grouping_model, law_of

__all__ = ["CubeSplit", "NoisyCells", "PartsLeastSquares", "cell_edges"]


def cell_edges(width: int, n: int) -> np.ndarray:
    """Bin edges of the cells of ``width`` bins over ``n`` bins (the last one shorter)."""
    return np.minimum(np.arange(-(-n // width) + 1, dtype=np.int64) * width, n)


@dataclass(frozen=True, kw_only=True)
class NoisyCells(Block):
    """One noisy total per cell of ``width`` consecutive bins (the last cell holds the
    remainder), spread evenly over the cell's bins into ``state.noisy``.

    DPCube's first phase (Xiao et al., TDP 2014: noisy cell counts; DPBench's cells
    of 11 bins by default, single bins with ``width=1``). The cell totals stay in
    ``notes["cells"]`` (width, totals, their noise variance) for a split on whole
    cells and the least-squares mix. Privacy: the
    cells are public, disjoint and cover every bin, so the vector of cell totals has
    sensitivity 1 and one noise draw per cell is epsilon-DP with the block's share.
    """

    label = "cells"
    zcdp = True
    spends = True
    constraints = rules(width=Interval(int, 1))
    width: int = 11

    def run(self, state: State, view: PrivateView | None) -> State:
        n = state.n
        width = min(self.width, n)
        m = view.measure(BlockSums(n, width))
        sizes = np.full(m.values.shape[0], width, dtype=np.float64)
        sizes[-1] = n - width * (sizes.shape[0] - 1)
        cell = np.arange(n) // width
        noisy = (m.values / sizes)[cell]
        totals = m.values.astype(np.float64)
        notes = {**state.notes, "cells": (width, totals, float(m.variance))}
        return state.with_(noisy=noisy, variance=(m.variance / sizes**2)[cell], notes=notes)


@dataclass(frozen=True, kw_only=True)
class CubeSplit(Block):
    """DPCube's second phase: top-down cuts of the noisy counts
    (:func:`~dphist._numeric.cube.cube_split`), a cut kept when it lowers the parts'
    squared spread by more than the expected absolute noise of one more part total
    from ``publisher`` (``1/epsilon`` under pure DP). Xiao et al., TDP 2014 (kd-tree
    partitioning), in DPBench's 1-D form: cuts anywhere (``cuts="bins"``), or, as the
    paper partitions its cell histogram, between whole cells of
    :class:`NoisyCells` (``cuts="cells"``: the split of the cell means, the noise
    term divided by the cell width so that a full cell weighs as its bins). Between
    cells, ``rule="variance"`` is the paper's stopping rule as SORTaki reads it (§IV-A):
    a part is split while the variance of its noisy cell means exceeds their noise
    variance (:func:`~dphist._numeric.bucketing.dpcube_partition`, ``xi`` = the cell
    noise variance over the width squared), at the cut of least squared spread.
    Post-processing of released values.
    """

    label = "cube_split"
    zcdp = True
    constraints = rules(cuts=Options("bins", "cells"), rule=Options("gain", "variance"))
    publisher: str = "group_totals"
    cuts: str = "bins"
    rule: str = "gain"

    def run(self, state: State, view: PrivateView | None) -> State:
        budget = state.budgets.get(self.publisher)
        cells = state.notes.get("cells")
        if state.noisy is None or budget is None or (self.cuts == "cells" and cells is None):
            raise CompositionError(
                f"cube_split needs noisy cells and a publishing block {self.publisher!r}"
            )
        gain = mean_absolute_noise(state, budget)
        if self.cuts == "bins":
            starts = cube_split(state.noisy, gain=gain)
        else:
            width, totals, variance = cells
            edges = cell_edges(width, state.n)
            means = totals / np.diff(edges)
            if self.rule == "variance":
                cut = dpcube_partition(means, xi=float(variance) / width**2)
            else:
                cut = cube_split(means, gain=gain / width)
            starts = edges[cut]
        return state.with_(noisy=None, labels=labels_from_starts(starts, state.n))


@dataclass(frozen=True, kw_only=True)
class PartsLeastSquares(Block):
    """One noisy total per part of ``state.labels``, mixed with the noisy cells by least
    squares (:func:`~dphist._numeric.cube.cube_least_squares`): each cell keeps its own
    noisy total, moved by its share of the part's disagreement with the fresh total,
    and spreads it evenly over its bins. The cells are those of :class:`NoisyCells`
    (``notes["cells"]``), else the bins' noisy counts; the parts must be made of whole
    cells.

    DPCube's last step (Xiao et al., TDP 2014: the cell histogram and the partition
    counts combined by least squares), which DPBench's DPcube1D leaves out. Privacy:
    the parts are public (chosen from released counts), disjoint and cover every bin,
    so the vector of part totals has sensitivity 1; the mix is post-processing. The
    error bars: the exact GLS posterior of the two-level tree (parts over cells) given
    the parts, not modelling that the parts were chosen from the same noisy cells,
    plus the bracket of the even spread inside each cell (:func:`grouping_model`).
    """

    label = "part_totals"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.labels is None or state.variance is None:
            raise CompositionError("part_totals needs noisy cells and a partition before it")
        if state.order is not None:
            raise CompositionError("part_totals needs parts in the natural bin order")
        n, labels = state.n, state.labels
        m = view.measure(GroupSums(labels))
        var_parts = float(weighting_variance(m.variance))
        width, cells, var_cells = state.notes.get("cells") or (1, state.noisy, state.variance.max())
        edges = cell_edges(width, n)
        part_starts = np.flatnonzero(np.diff(labels, prepend=-1))
        starts = np.searchsorted(edges, part_starts)
        if cells is None or not np.array_equal(edges[starts], part_starts):
            raise CompositionError("part_totals needs parts made of whole noisy cells")
        var_cells = float(weighting_variance(var_cells))
        est, var = cube_least_squares(
            cells, starts, m.values, var_cells=var_cells, var_parts=var_parts
        )
        sizes = np.diff(edges).astype(np.float64)
        cell = np.arange(n) // width
        _, n_children, lo, hi = cube_tree(starts, cells.size)
        ptr = np.zeros(n_children.size + 1, dtype=np.int64)
        np.cumsum(n_children, out=ptr[1:])
        kids = np.arange(1, n_children.size, dtype=np.int64)  # level order: children follow
        node_var = np.concatenate(
            ([np.inf], np.full(starts.size, var_parts), np.full(cells.size, var_cells))
        )
        noise = TreeNoise.nodes(n, edges[lo], edges[hi], ptr, kids, node_var, law=law_of(view))
        # the noise is exact for every cell total; inside a cell the even spread is
        # biased, bounded like any publication of groups (the cells)
        cells_as_groups = cell.astype(label_dtype(n))
        return state.with_(
            noisy=None,
            estimate=(est / sizes)[cell],
            variance=(var / sizes**2)[cell],
            uncertainty=grouping_model(state, noise, cells_as_groups),
        )
