"""Sorted-domain grouping: AHP's thresholding and clustering, SReB_GCA's relative-error grouping."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._kernel import PrivateView
from .._numeric.clustering import (
    EMPIRICAL_RULES,
    ahp_empirical,
    ahp_greedy,
    ahp_optimal,
)
from .._numeric.compact import label_dtype, labels_from_starts, scattered_labels
from .._numeric.ggs import greedy_group_relative
from .._numeric.segment import segment
from ..errors import CompositionError
from ..uncertainty import GroupNoise
from .base import Block, State, compact_first_stage, mean_absolute_noise, planned_variance
from .constraints import Interval, Options, rules
from .error_bars import grouping_model
from .smoothing import equivalent_epsilon

__all__ = [
    "AHPClustering",
    "FixedSizeGroups",
    "NoisyMeans",
    "RelativeErrorGrouping",
    "Threshold",
]

AHP_CLUSTERINGS = ("greedy", "optimal", "empirical")


def _publisher_epsilon(state: State, block: str, publisher: str) -> float:
    eps = state.budgets.get(publisher)
    if eps is None:
        raise CompositionError(f"{block}: no block named {publisher!r} publishes")
    return eps


def _sorted_noisy(state: State, block: str) -> np.ndarray:
    if state.noisy is None or state.order is None:
        raise CompositionError(f"{block} needs noisy counts sorted by an earlier block")
    return state.noisy


@dataclass(frozen=True, kw_only=True)
class Threshold(Block):
    """AHP's threshold: noisy counts below ``eta * ln(N) / epsilon1`` become 0.

    Zhang et al., SDM 2014, §4.2 (Algorithm 1, line 3). ``epsilon1`` is the budget of
    the block that produced the noisy counts (``source``). Under zCDP ``1/epsilon1``
    becomes the Laplace scale of the same variance, ``sqrt(Var/2)``, so the threshold
    stays ``eta ln(N)`` noise units. Post-processing.
    """

    label = "threshold"
    zcdp = True
    constraints = rules(eta=Interval(float, 0))
    eta: float = 0.35
    source: str = "noisy_bins"

    def run(self, state: State, view: PrivateView | None) -> State:
        eps1 = state.budgets.get(self.source)
        if state.noisy is None or eps1 is None:
            raise CompositionError("threshold needs noisy counts from an earlier block")
        if state.definition == "zcdp":
            unit = math.sqrt(planned_variance(state, eps1) / 2.0)
        else:
            unit = 1.0 / float(eps1)
        theta = self.eta * math.log(state.n) * unit
        noisy = np.where(state.noisy >= theta, state.noisy, 0.0)
        return state.with_(noisy=noisy, estimate=noisy, notes=compact_first_stage(state.notes))


@dataclass(frozen=True, kw_only=True)
class AHPClustering(Block):
    """AHP's clustering of the sorted noisy counts (greedy, optimal or empirical).

    Zhang et al., SDM 2014, §4.3 (Algorithms 2-3). A cluster's estimated error is
    its SSE on the noisy values plus the publication noise ``Var/|C|`` (Theorem 4.2);
    ``optimal`` minimises the total over all clusterings exactly (O(N log N) on the
    sorted domain, not the paper's O(N^4)). Post-processing of ``state.noisy``.
    """

    label = "ahp_clustering"
    zcdp = True
    constraints = rules(
        clustering=Options(*AHP_CLUSTERINGS),
        rule=Options(*EMPIRICAL_RULES, "all"),
    )
    clustering: str = "greedy"
    rule: str = "all"
    publisher: str = "group_totals"

    def run(self, state: State, view: PrivateView | None) -> State:
        y = _sorted_noisy(state, self.label)
        eps2 = _publisher_epsilon(state, self.label, self.publisher)
        eps2_cost = equivalent_epsilon(planned_variance(state, eps2))
        if self.clustering == "greedy":
            starts = ahp_greedy(y, eps2=eps2_cost)
        elif self.clustering == "optimal":
            starts = ahp_optimal(y, eps2=eps2_cost, method="monotone")
        else:
            starts = ahp_empirical(y, eps2=eps2_cost, rule=self.rule)
        # the last step on the sorted domain: the labels go straight to the original bin
        # order (the release's labels), marked as scattered; neither the order nor
        # the sorted noisy counts is passed on (the publisher needs only the labels, the
        # error bars keep the first-stage counts in ``notes``)
        return state.with_(
            labels=scattered_labels(starts, state.order),
            order=None,
            noisy=None,
            estimate=None,
            notes={**state.notes, "scattered": True},
        )


@dataclass(frozen=True, kw_only=True)
class RelativeErrorGrouping(Block):
    """SReB_GCA's greedy grouping of ascending noisy counts under relative error.

    Chen et al., Algorithms 17(7):293, 2024, §4 (Algorithm 2, with the fixes listed in
    the data-aware methods spec §8.4). ``delta`` floors every denominator.
    Post-processing of ``state.noisy``.
    """

    label = "relative_grouping"
    zcdp = True
    delta: float = 1.0
    publisher: str = "group_totals"

    def run(self, state: State, view: PrivateView | None) -> State:
        y = _sorted_noisy(state, self.label)
        eps2 = _publisher_epsilon(state, self.label, self.publisher)
        # the cost's noise term 1/eps2 is the publisher's expected absolute noise
        if state.definition == "zcdp":
            eps2 = 1.0 / mean_absolute_noise(state, eps2)
        starts = greedy_group_relative(y, eps2=float(eps2), delta=self.delta)
        return state.with_(labels=labels_from_starts(starts, state.n))


@dataclass(frozen=True, kw_only=True)
class FixedSizeGroups(Block):
    """GS's grouping: consecutive runs of ``width`` bins in the working order.

    Kellaris and Papadopoulos, PVLDB 6(5) 2013, §4 (Grouping and Smoothing): after a
    noisy ordering, groups of a fixed public size; the last group holds the
    remainder. Post-processing (the width is public).
    """

    label = "fixed_groups"
    zcdp = True
    constraints = rules(width=Interval(int, 1))
    width: int = 100

    def run(self, state: State, view: PrivateView | None) -> State:
        # min(): the same labels (bins are < n) with a divisor that fits int32 labels
        n = state.n
        return state.with_(labels=np.arange(n, dtype=label_dtype(n)) // min(self.width, n))


@dataclass(frozen=True, kw_only=True)
class NoisyMeans(Block):
    """NoiseFirst: the least-error grouping of the noisy counts, each bin replaced by
    its group's mean noisy count.

    Xu, Zhang, Xiao, Yang, Yu, ICDE 2012, §4 (NoiseFirst), in the penalised form of
    the data-aware spec §3.1: the V-optimal bracket ``T[k] - 2(N-2k)/eps^2`` equals
    ``sum_B (SSE(B) + 4/eps^2) - 2N/eps^2``, so the best ``k`` comes from one exact
    penalised segmentation (PELT), not an O(N^3) sweep. Post-processing of
    ``state.noisy``: no new noise.
    """

    label = "noisy_means"
    zcdp = True

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.noisy is None or state.variance is None:
            raise CompositionError("noisy_means needs noisy counts from an earlier block")
        var = float(state.variance.max())
        # segment() charges 2/eps1^2 + 1/eps2 per group with the paper's noise term;
        # choose them so the per-group penalty is 2 var (= 4/eps^2 for Laplace noise)
        penalty_eps = equivalent_epsilon(var)
        starts = segment(state.noisy, eps1=penalty_eps, eps2=penalty_eps**2 / 2, noise_term="paper")
        labels = labels_from_starts(starts, state.n)
        sizes = np.bincount(labels)
        means = np.bincount(labels, weights=state.noisy) / sizes
        noise = GroupNoise(state.n, starts, var * sizes)  # a group's total sums its noisy bins
        model = grouping_model(state.with_(labels=labels), noise, labels)
        return state.with_(
            labels=labels,
            estimate=means[labels],
            variance=var / sizes[labels].astype(float),
            uncertainty=model,
        )
