"""Publishing a grouping: one noisy total per group, spread evenly (Kellaris PUB)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import GroupSums, PrivateView
from ..errors import CompositionError
from ..uncertainty import GroupNoise, ScatteredNoise
from .base import Block, State, to_original_order
from .error_bars import grouping_model, tail_of

__all__ = ["GroupTotals"]


@dataclass(frozen=True, kw_only=True)
class GroupTotals(Block):
    """One noisy total per group of ``state.labels``, spread evenly over its bins.

    Kellaris et al., PVLDB 2017, §4 (the publication step of every smoothing
    scheme; methods framework A.1). Privacy: the groups are public (an output of
    earlier measurements), disjoint and cover every bin, so the vector of group
    totals has sensitivity 1 and one discrete Laplace draw per group is
    epsilon-DP. Drawing per bin would cost |g| times more and is never done.
    """

    label = "group_totals"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.labels is None:
            raise CompositionError("group_totals needs a grouping block before it")
        labels = state.labels
        original = to_original_order(labels, state.order)
        m = view.measure(GroupSums(original))
        sizes = np.bincount(labels).astype(np.float64)
        tail = tail_of(m, view)
        if state.order is None:
            starts = np.flatnonzero(np.diff(labels, prepend=-1))
            noise = GroupNoise(state.n, starts, m.variance, tail)
        else:
            noise = ScatteredNoise(original, m.variance, tail)
        return state.with_(
            estimate=(m.values / sizes)[labels],
            variance=(m.variance / sizes**2)[labels],
            uncertainty=grouping_model(state, noise, original),
        )
