"""Smoothing: grouping adjacent bins whose counts are alike (Kellaris et al. §4-§5)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._kernel import NoisyPartition, PrivateView, noise_variance
from .._numeric.segment import labels_from_starts, segment, segment_sorted
from ..errors import CompositionError
from .base import Block, State, weighting_variance
from .constraints import Options, rules

__all__ = ["AbsoluteErrorGrouping", "SquaredErrorGrouping", "equivalent_epsilon"]

NOISE_TERMS = ("first_principles", "paper")
CANDIDATES = ("all", "pow2")
NOISE_MODES = ("certified", "reference")


def equivalent_epsilon(variance: float) -> float:
    """The epsilon whose continuous Laplace noise has this variance: sqrt(2/variance)."""
    return math.sqrt(2.0 / float(weighting_variance(variance)))


@dataclass(frozen=True, kw_only=True)
class SquaredErrorGrouping(Block):
    """S2: the contiguous grouping of the noisy counts with least expected squared error.

    Kellaris et al., PVLDB 2017, §5.1, with the corrections of the methods framework
    A.4: the cost of a group is its SSE on the noisy counts, minus the bias
    ``(|g|-1) sigma1**2`` of that SSE, plus the publication noise ``nu(g)``
    (first principles: ``Var(total noise)/|g|``; ``noise_term="paper"``: ``1/epsilon2``).
    The minimum is exact (PELT with a dynamic-programming fallback; O(N log N) on a
    sorted domain). Post-processing of ``state.noisy``: reads no data.
    ``publisher`` names the block whose budget publishes the groups.
    """

    label = "s2_grouping"
    constraints = rules(noise_term=Options(*NOISE_TERMS))
    publisher: str = "group_totals"
    noise_term: str = "first_principles"

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.noisy is None or state.variance is None:
            raise CompositionError("s2_grouping needs noisy counts from an earlier block")
        eps2 = state.budgets.get(self.publisher)
        if eps2 is None:
            raise CompositionError(f"s2_grouping: no block named {self.publisher!r} publishes")
        eps1 = equivalent_epsilon(float(state.variance.max()))
        if self.noise_term == "first_principles":
            eps2_cost = equivalent_epsilon(noise_variance(1, eps2))
        else:
            eps2_cost = float(eps2)
        solve = segment_sorted if state.order is not None else segment
        starts = solve(state.noisy, eps1=eps1, eps2=eps2_cost, noise_term=self.noise_term)
        return state.with_(labels=labels_from_starts(starts, state.n))


@dataclass(frozen=True, kw_only=True)
class AbsoluteErrorGrouping(Block):
    """S1 / S~: DAWA's L1 partition by noisy interval costs.

    Kellaris et al., PVLDB 2017, §4 (S1: all intervals, O(N^2 log N); S~: intervals of
    power-of-two length at every start, O(N log^2 N)); Li et al. (DAWA), PVLDB 2014,
    §3. A group costs ``dev(B) + 1/epsilon2`` (its L1 deviation plus the expected
    absolute publication noise) plus noise; the kernel's noisy-partition primitive
    returns only the cheapest partition. Privacy: ``noise="certified"`` (default) is
    epsilon-DP by the coupling argument in ``PrivateView.noisy_partition``;
    ``noise="reference"`` reproduces the published DAWA code's scale, which is not
    epsilon-DP, and marks the release as not private.
    """

    label = "l1_grouping"
    spends = True
    constraints = rules(candidates=Options(*CANDIDATES), noise=Options(*NOISE_MODES))
    candidates: str = "all"
    publisher: str = "group_totals"
    noise: str = "certified"

    def run(self, state: State, view: PrivateView | None) -> State:
        eps2 = state.budgets.get(self.publisher)
        if eps2 is None:
            raise CompositionError(f"l1_grouping: no block named {self.publisher!r} publishes")
        starts = view.select(
            NoisyPartition(
                self.candidates, penalty=1.0 / float(eps2), mode=self.noise, order=state.order
            )
        )
        return state.with_(labels=labels_from_starts(starts, state.n))
