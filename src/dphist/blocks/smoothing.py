"""Smoothing: grouping adjacent bins whose counts are alike (Kellaris et al. §4-§5)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._kernel import BiasedSplit, NoisyPartition, PrivateView, Selection
from .._numeric.compact import labels_from_starts
from .._numeric.segment import segment, segment_sorted
from .._numeric.tree import TreeLayout, tree_layout
from ..errors import CompositionError
from .base import Block, State, mean_absolute_noise, planned_variance, weighting_variance
from .constraints import Interval, Options, rules
from .error_bars import select_groups

__all__ = [
    "AbsoluteErrorGrouping",
    "DensitySplit",
    "SquaredErrorGrouping",
    "equivalent_epsilon",
    "l1_selection",
]

NOISE_TERMS = ("first_principles", "paper")
CANDIDATES = ("all", "pow2")
NOISE_MODES = ("certified", "coupled", "reference")


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
    zcdp = True
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
        if self.noise_term == "first_principles" or state.definition == "zcdp":
            eps2_cost = equivalent_epsilon(planned_variance(state, eps2))
        else:
            eps2_cost = float(eps2)
        solve = segment_sorted if state.order is not None else segment
        starts = solve(state.noisy, eps1=eps1, eps2=eps2_cost, noise_term=self.noise_term)
        return state.with_(labels=labels_from_starts(starts, state.n))


def l1_selection(
    noise: str,
    family: str | TreeLayout,
    penalty: float | np.ndarray,
    n: int,
    order: np.ndarray | None = None,
    fanout: int = 2,
) -> Selection:
    """The kernel selection behind a private L1 partition, by noise mode.

    ``"certified"``: PrivTree's biased top-down splitting (Zhang et al., SIGMOD 2016)
    of a public tree (``family`` when it is a tree, else the tree of fan-out
    ``fanout`` over the bins) scored by half the L1 deviation, with threshold half the
    mean ``penalty``: a node stays whole when its deviation is below about one group's
    publication error plus the depth bias. Its budget does not grow with the depth, and
    empty regions stay whole. Returns a node mask. ``"coupled"``: the noisy
    minimum-cost partition over all candidates (private by the coupling argument of
    ``dphist._kernel.l1_partition``, but its noise, unfloored, splits sparse regions).
    ``"reference"``: the published DAWA noise, not epsilon-DP. Both return group starts
    (a node mask for a tree).
    """
    if noise == "certified":
        tree = family if isinstance(family, TreeLayout) else tree_layout(n, fanout)
        return BiasedSplit(tree, "deviation", float(np.mean(penalty)) / 2.0, order)
    mode = "coupled" if noise == "coupled" else "reference"
    return NoisyPartition(family, penalty=penalty, mode=mode, order=order)


@dataclass(frozen=True, kw_only=True)
class AbsoluteErrorGrouping(Block):
    """S1 / S~: a private L1 partition of the bins into groups of alike counts.

    Kellaris et al., PVLDB 2017, §4 (S1: all intervals; S~: intervals of power-of-two
    length); Li et al. (DAWA), PVLDB 2014, §3. A group costs ``dev(B) + 1/epsilon2``
    (its L1 deviation plus the expected absolute publication noise). The published
    noisy minimum over candidates is not epsilon-DP, and its private (coupled) version
    splits empty regions into thousands of groups; ``noise="certified"`` (default)
    therefore splits the public binary tree top-down with PrivTree's bias
    (:func:`l1_selection`), which is epsilon-DP with a budget independent of the depth.
    Under it the candidate family does not matter: S1 and S~ share the tree of fan-out
    ``split_fanout`` (2: aligned power-of-two intervals). A wider tree has less noise
    (PrivTree's loss ``2x + (e^x - 1)/(fan-out - 1)``) and less depth bias per halving
    of the interval length, at the price of coarser splits: fan-out 4 lowers DAWA's
    all-range error by a quarter over the shared datasets (``benchmarks/partitions.py``)
    while 2 stays best for S1 and S~, which have no hierarchical second stage.
    Where no grouping pays (dense, rough histograms at high epsilon) that makes S1 and
    S~ identity at ``(1 - ratio)`` epsilon at best, and the published design loses
    there as well: all-range MSE over identity's at epsilon = 1, 20 seeds, certified
    against published (DAWA's noise, not DP): 1.69 against 1.73 on bids_all_4096, 1.48
    against 1.53 on hepth_citations_4096; DAWA and S1+H are 0.20-0.36 on both
    (``benchmarks/partitions.py``).
    ``noise="coupled"`` keeps the minimum over ``candidates``
    with certified noise; ``noise="reference"`` reproduces the published DAWA code and
    marks the release as not private.
    """

    label = "l1_grouping"
    zcdp = True
    spends = True
    constraints = rules(
        candidates=Options(*CANDIDATES),
        noise=Options(*NOISE_MODES),
        split_fanout=Interval(int, 2, 1 << 16),
    )
    candidates: str = "all"
    publisher: str = "group_totals"
    noise: str = "certified"
    split_fanout: int = 2

    def run(self, state: State, view: PrivateView | None) -> State:
        eps2 = state.budgets.get(self.publisher)
        if eps2 is None:
            raise CompositionError(f"l1_grouping: no block named {self.publisher!r} publishes")
        selection = l1_selection(
            self.noise,
            self.candidates,
            mean_absolute_noise(state, eps2),
            state.n,
            state.order,
            int(self.split_fanout),
        )
        if not isinstance(selection, BiasedSplit):
            chosen = view.select(selection)
            return state.with_(labels=labels_from_starts(chosen, state.n))
        chosen, bound = select_groups(view, selection, selection.tree)
        starts = np.sort(selection.tree.lo[chosen])
        notes = {**state.notes, "split_bound": bound}
        return state.with_(labels=labels_from_starts(starts, state.n), notes=notes)


@dataclass(frozen=True, kw_only=True)
class DensitySplit(Block):
    """PrivTree's decomposition of the bins by counts (Zhang, Xiao, Xie, SIGMOD 2016, §3).

    The public tree of fan-out ``fanout`` is split top-down while a node's biased noisy
    count exceeds ``threshold`` (PrivTree's theta, 0 by default); the leaves become the
    groups. Dense regions end in small groups, empty ones stay whole. The kernel's
    biased-split primitive carries the privacy argument (``dphist._kernel.biased_split``).
    """

    label = "density_split"
    zcdp = True
    spends = True
    constraints = rules(
        fanout=Interval(int, 2, 1 << 16), threshold=Interval(float, -(2.0**40), 2.0**40)
    )
    fanout: int = 2
    threshold: float = 0.0

    def run(self, state: State, view: PrivateView | None) -> State:
        tree = tree_layout(state.n, int(self.fanout))
        selection = BiasedSplit(tree, "count", float(self.threshold), state.order)
        chosen, bound = select_groups(view, selection, tree)
        starts = np.sort(tree.lo[chosen])
        notes = {**state.notes, "split_bound": bound}
        return state.with_(labels=labels_from_starts(starts, state.n), notes=notes)
