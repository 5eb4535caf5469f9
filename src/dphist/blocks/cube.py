"""DPCube's two phases in 1-D: noisy cell counts, then a split judged on them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import BlockSums, PrivateView
from .._numeric.compact import labels_from_starts
from .._numeric.cube import cube_split
from ..errors import CompositionError
from .base import Block, State, mean_absolute_noise
from .constraints import Interval, rules

__all__ = ["CubeSplit", "NoisyCells"]


@dataclass(frozen=True, kw_only=True)
class NoisyCells(Block):
    """One noisy total per cell of ``width`` consecutive bins (the last cell holds the
    remainder), spread evenly over the cell's bins into ``state.noisy``.

    DPCube's first phase (Xiao et al., TDP 2014: noisy cell counts; DPBench's cells
    of 11 bins by default, the paper's single bins with ``width=1``). Privacy: the
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
        return state.with_(noisy=noisy, variance=(m.variance / sizes**2)[cell])


@dataclass(frozen=True, kw_only=True)
class CubeSplit(Block):
    """DPCube's second phase: top-down cuts of the noisy counts
    (:func:`~dphist._numeric.cube.cube_split`), a cut kept when it lowers the parts'
    squared spread by more than the expected absolute noise of one more part total
    from ``publisher`` (``1/epsilon`` under pure DP). Xiao et al., TDP 2014 (kd-tree
    partitioning), in DPBench's 1-D form. Post-processing of ``state.noisy``.
    """

    label = "cube_split"
    zcdp = True
    publisher: str = "group_totals"

    def run(self, state: State, view: PrivateView | None) -> State:
        budget = state.budgets.get(self.publisher)
        if state.noisy is None or budget is None:
            raise CompositionError(
                f"cube_split needs noisy counts and a publishing block {self.publisher!r}"
            )
        starts = cube_split(state.noisy, gain=mean_absolute_noise(state, budget))
        return state.with_(noisy=None, labels=labels_from_starts(starts, state.n))
