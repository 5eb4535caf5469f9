"""SORTaki's partitioner and weighted-average finalizer (Doudalis and Mehrotra)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import GroupSums, PrivateView
from .._numeric.bucketing import (
    dp_partition,
    dpcube_partition,
    greedy_partition,
    waf_variance,
    waf_weights,
)
from .._numeric.compact import labels_from_starts
from ..errors import CompositionError
from ..uncertainty import GroupNoise, ScatteredNoise
from .base import Block, State, planned_variance, to_original_order, weighting_variance
from .constraints import Options, rules
from .error_bars import grouping_model

__all__ = ["BucketPartition", "WeightedAverage"]

PARTITIONERS = ("greedy", "dp", "dp_pow2", "dpcube")
ERRORS = ("ahp", "uee")


def _variances(state: State, block: str, publisher: str) -> tuple[float, float]:
    """Initializer's per-bin noise variance and the finalizer's bucket-total variance."""
    eps_f = state.budgets.get(publisher)
    if state.noisy is None or state.variance is None or eps_f is None:
        raise CompositionError(f"{block} needs noisy counts and a publishing block {publisher!r}")
    var_in = float(weighting_variance(state.variance.max()))
    return var_in, float(weighting_variance(planned_variance(state, eps_f)))


@dataclass(frozen=True, kw_only=True)
class BucketPartition(Block):
    """SORTaki's partitioners on the noisy counts in working order.

    Doudalis and Mehrotra, §V.B: GP (greedy, Algorithm 5), DPP (exact dynamic
    program; ``dp_pow2`` keeps power-of-two buckets only) under the AHP error or the
    unbiased expected error UEE (eq. 5), and DPCube's split rule with ``xi`` = the
    initializer's noise variance (§IV; Xiao et al., ICDE 2012). Post-processing.
    """

    label = "partition"
    zcdp = True
    constraints = rules(partitioner=Options(*PARTITIONERS), error=Options(*ERRORS))
    partitioner: str = "dp"
    error: str = "ahp"
    publisher: str = "finalizer"

    def run(self, state: State, view: PrivateView | None) -> State:
        var_in, var_f = _variances(state, self.label, self.publisher)
        y = state.noisy
        if self.partitioner == "greedy":
            starts = greedy_partition(y, self.error, var_in=var_in, var_f=var_f)
        elif self.partitioner == "dpcube":
            starts = dpcube_partition(y, xi=var_in)
        else:
            lengths = "pow2" if self.partitioner == "dp_pow2" else "all"
            starts = dp_partition(y, self.error, var_in=var_in, var_f=var_f, lengths=lengths)
        return state.with_(labels=labels_from_starts(starts, state.n))


@dataclass(frozen=True, kw_only=True)
class WeightedAverage(Block):
    """WAF: per bucket, the minimum-variance mix of the initializer's mean and a fresh
    noisy bucket mean.

    Doudalis and Mehrotra, §V.B, Algorithm 4 (weights computed per bucket size,
    eq. 3). Privacy: one noisy total per bucket of a public grouping (sensitivity 1)
    with the block's share; the mix with earlier released values is
    post-processing.
    """

    label = "finalizer"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.labels is None or state.noisy is None or state.variance is None:
            raise CompositionError("finalizer needs noisy counts and a partition before it")
        labels = state.labels
        m = view.measure(GroupSums(to_original_order(labels, state.order)))
        sizes = np.bincount(labels)
        var_in = float(weighting_variance(state.variance.max()))
        var_f = float(weighting_variance(m.variance))
        alpha1, alpha2 = waf_weights(sizes, var_in=var_in, var_f=var_f)
        mean_in = np.bincount(labels, weights=state.noisy) / sizes
        mean_f = m.values / sizes
        bucket = alpha1 * mean_in + alpha2 * mean_f
        per_bin = waf_variance(sizes, var_in=var_in, var_f=var_f)
        original = to_original_order(labels, state.order)
        total_var = per_bin * sizes.astype(np.float64) ** 2
        if state.order is None:
            noise = GroupNoise(state.n, np.flatnonzero(np.diff(labels, prepend=-1)), total_var)
        else:
            noise = ScatteredNoise(original, total_var)
        return state.with_(
            estimate=bucket[labels],
            variance=per_bin[labels],
            uncertainty=grouping_model(state, noise, original),
        )
