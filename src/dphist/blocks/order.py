"""Ordering bins by their noisy counts (Kellaris's O; AHP's noisy sort)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import PrivateView
from ..errors import CompositionError
from .base import Block, State, compact_first_stage

__all__ = ["SortByNoisy"]


@dataclass(frozen=True, kw_only=True)
class SortByNoisy(Block):
    """Reorder the working domain by the released noisy counts (stable sort).

    Kellaris et al., PVLDB 2017, §4 (ordering O). Post-processing of
    ``state.noisy``: reads no data, spends nothing. Later blocks work on the sorted
    domain; the session restores the original bin order at the end.
    """

    label = "order"
    zcdp = True
    descending: bool = True

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.noisy is None:
            raise CompositionError("order needs noisy counts from an earlier block")
        key = -state.noisy if self.descending else state.noisy
        order = np.argsort(key, kind="stable")
        if state.n < 2**31:  # half the memory for the permutation every later block keeps
            order = order.astype(np.int32)

        def permute(a):
            return a if a is None or a.strides == (0,) else a[order]

        noisy = state.noisy[order]
        same = state.estimate is state.noisy  # one array, permuted once
        return state.with_(
            order=order,
            noisy=noisy,
            estimate=noisy if same else permute(state.estimate),
            variance=permute(state.variance),
            uncertainty=state.uncertainty,  # kept in the original bin order
            notes=compact_first_stage(state.notes),  # the unsorted counts' only holder
        )
