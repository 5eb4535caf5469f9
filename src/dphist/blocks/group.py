"""Publishing a grouping: one noisy total per group, spread evenly (Kellaris PUB)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import GroupSums, PrivateView
from .._numeric.compact import PerGroup, label_dtype, label_sizes
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
        # the groups in the original bin order: the run ends here, so the estimate is
        # built in that order at once (no working-order copies to restore at the end)
        original = to_original_order(state.labels, state.order, label_dtype(state.n))
        m = view.measure(GroupSums(original))
        totals, total_var, tail = m.values, m.variance, tail_of(m, view)
        del m  # its query holds a copy of the labels
        sizes = label_sizes(original).astype(np.float64)
        # groups found on a sorted domain are scattered over the bins, also when the
        # grouping block already wrote them in the original order
        if state.order is None and not state.notes.get("scattered", False):
            starts = np.flatnonzero(np.diff(original, prepend=-1))
            noise = GroupNoise(state.n, starts, total_var, tail)
        else:
            noise = ScatteredNoise(original, total_var, tail)
        estimate = (totals / sizes)[original]
        done = state.with_(order=None, noisy=None, labels=original)
        return done.with_(
            estimate=estimate,
            # one variance per group: a release spreads it over the bins when read
            variance=PerGroup(total_var / sizes**2, original),
            uncertainty=grouping_model(done, noise, original),
        )
