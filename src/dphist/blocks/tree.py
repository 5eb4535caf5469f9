"""Hierarchical blocks: a noisy tree of interval counts, and smoothing on tree nodes."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernel import BlockSums, IntervalSums, PrivateView, as_fraction
from .._numeric.compact import PerGroup, label_dtype
from .._numeric.pruned import frontier_cells, prune, s2_cut
from .._numeric.strategy import WORKLOADS, optimal_design
from .._numeric.tree import (
    TreeLayout,
    gls,
    level_consistency,
    tree_layout,
)
from .._numeric.tree_params import hb_branching, level_budgets
from ..errors import CompositionError
from ..uncertainty import ErrorModel, TreeNoise
from .base import Block, State, compact_first_stage, planned_variance, weighting_variance
from .constraints import AnyOf, Interval, Options, rules
from .error_bars import grouping_model, law_of, select_groups
from .smoothing import NOISE_MODES, l1_selection

__all__ = [
    "FrontierRelease",
    "Hierarchy",
    "OptimizedHierarchy",
    "TreeCutAbsolute",
    "TreeCutSquared",
    "split_epsilon",
]

ALLOCATIONS = ("uniform", "geometric")


def split_epsilon(
    total: Fraction, levels: int, allocation: str, noise: str = "laplace"
) -> list[Fraction]:
    """Exact per-level budgets summing to ``total``, root first.

    Uniform gives ``total/levels`` each; geometric shares (leaves get most) are read
    as decimals and the last level takes the exact remainder. Their ratio is
    Cormode et al.'s ``2**(1/3)`` for Laplace noise and ``2**(1/2)`` for Gaussian
    noise, where ``total`` is a rho (``level_budgets``).
    """
    if allocation == "uniform":
        return [total / levels] * levels
    ratio = 2.0 ** (1.0 / 3.0) if noise == "laplace" else 2.0**0.5
    shares = level_budgets(levels, allocation, ratio)
    parts = [total * as_fraction(float(s), name="level share") for s in shares[:-1]]
    return [*parts, total - sum(parts, Fraction(0))]


FANOUT = AnyOf(Interval(int, 2), Options("hb"))
TREE = rules(fanout=FANOUT, allocation=Options(*ALLOCATIONS))


def _fanout(value: object, n: int, definition: str = "pure") -> int:
    """The fan-out for ``n`` bins: the setting, or HB's branching for ``"hb"`` (for the
    definition's noise)."""
    if value == "hb":
        return hb_branching(n, _noise(definition))[0] if n > 1 else 2
    return int(value)


def _noise(definition: str) -> str:
    return "gaussian" if definition == "zcdp" else "laplace"


def _consistent_levels(
    view: PrivateView, layout: TreeLayout, eps: dict[int, Fraction], state: State
) -> State:
    """Measure the levels in ``eps`` (each a partition of the bins: one sensitivity-1
    :class:`BlockSums` query with its epsilon) into one node vector and make it
    consistent in place (:func:`level_consistency`); the leaves are the estimate.
    Memory: the node vector, one level's answers and the leaves' variances."""
    y = np.zeros(layout.n_nodes)
    var = np.full(layout.n_levels, np.inf)
    for lev, e in eps.items():
        m = view.measure(BlockSums(layout.n, int(layout.spans[lev])), epsilon=e)
        y[layout.level_slice(lev)] = m.values
        var[lev] = float(weighting_variance(m.variance))
        del m
    est_var = level_consistency(layout, y, var, return_var=True)
    model = ErrorModel(TreeNoise.levels(layout, var, law_of(view)))
    return state.with_(estimate=y[layout.leaf_slice], variance=est_var, uncertainty=model)


@dataclass(frozen=True, kw_only=True)
class Hierarchy(Block):
    """H: noisy counts of every node of a fan-out tree, made consistent.

    Hay et al., PVLDB 2010 (consistency); Qardaji et al., PVLDB 2013 (branching,
    ``fanout="hb"``); Kellaris et al., PVLDB 2017, §4 (fan-out 16). The tree covers
    any N (methods framework A.7). Privacy: each level's nodes partition the bins, so
    each level is one sensitivity-1 measurement with its share of the block's
    budget; the levels compose to the block's epsilon. Weighted least squares
    (two passes) is post-processing.
    """

    label = "tree"
    zcdp = True
    unbiased = True
    spends = True
    constraints = TREE
    fanout: object = 16
    allocation: str = "uniform"

    def run(self, state: State, view: PrivateView | None) -> State:
        layout = tree_layout(state.n, _fanout(self.fanout, state.n, state.definition))
        noise = _noise(view.definition)
        eps = split_epsilon(view.remaining, layout.n_levels, self.allocation, noise)
        return _consistent_levels(view, layout, dict(enumerate(eps)), state)


@dataclass(frozen=True, kw_only=True)
class OptimizedHierarchy(Block):
    """A tree whose fan-out and per-level budgets minimise the workload's exact expected
    error under least squares, made consistent.

    The strategy optimization of HDMM (McKenna et al., VLDB 2018, §4) over the family
    of fan-out trees with one budget share per level (Hay et al., PVLDB 2010; Qardaji
    et al., PVLDB 2013): :func:`dphist._numeric.strategy.optimal_design` finds, for the
    public ``n`` and ``workload`` (``"all"`` ranges or ``"prefix"`` queries), the design
    with least expected error in closed form (for Gaussian noise under zCDP, where a
    level's variance falls as ``1/share``); a level whose share is 0 is not measured.
    The strategy stays implicit (``O(N)`` nodes), so 10**6 bins take seconds. Privacy:
    as :class:`Hierarchy`, each measured level is one sensitivity-1 measurement of a
    partition of the bins with its exact share of the block's budget.
    """

    label = "tree"
    zcdp = True
    unbiased = True
    spends = True
    constraints = rules(workload=Options(*WORKLOADS))
    workload: str = "all"

    def run(self, state: State, view: PrivateView | None) -> State:
        design = optimal_design(state.n, self.workload, _noise(view.definition))
        layout = tree_layout(state.n, design.fanout)
        measured = [lev for lev, w in enumerate(design.shares) if w > 0]
        # four decimals keep the ledger readable; the leaves take the exact remainder
        eps = [view.remaining * Fraction(f"{design.shares[lev]:.4f}") for lev in measured]
        eps[-1] = view.remaining - sum(eps[:-1], Fraction(0))
        return _consistent_levels(view, layout, dict(zip(measured, eps, strict=True)), state)


def _final_variance(
    state: State, epsilon: Fraction, layout: TreeLayout, allocation: str
) -> np.ndarray:
    """Variance of each node's total after the frontier release averages its own level
    and every level below (inverse-variance weights), indexed by level."""
    level_eps = split_epsilon(epsilon, layout.n_levels, allocation, _noise(state.definition))
    level_var = weighting_variance(np.array([planned_variance(state, e) for e in level_eps]))
    return 1.0 / np.cumsum((1.0 / level_var)[::-1])[::-1]


@dataclass(frozen=True, kw_only=True)
class _TreeCut(Block):
    """Shared settings of the blocks that choose a cut of the fan-out tree."""

    zcdp = True
    constraints = TREE
    fanout: object = 16
    allocation: str = "uniform"
    publisher: str = "frontier_release"

    def _setup(self, state: State) -> tuple[TreeLayout, np.ndarray]:
        if state.order is not None:
            raise CompositionError(f"{self.label} needs the natural bin order")
        eps2 = state.budgets.get(self.publisher)
        if eps2 is None:
            raise CompositionError(f"{self.label}: no block named {self.publisher!r} publishes")
        layout = tree_layout(state.n, _fanout(self.fanout, state.n, state.definition))
        return layout, _final_variance(state, eps2, layout, self.allocation)


@dataclass(frozen=True, kw_only=True)
class TreeCutSquared(_TreeCut):
    """S2+H's grouping: the cut of tree nodes with least expected squared error.

    Kellaris et al., PVLDB 2017, §6 (methods framework A.8). Node cost = SSE of the
    noisy counts - (|v|-1) sigma1**2 + (final noise variance of v's total)/|v|,
    minimised over cuts by a tree DP. Post-processing of ``state.noisy``, their last
    use: the float counts are not passed on (the frontier release publishes the
    estimate; the error bars keep the first-stage counts in ``notes``).
    """

    label = "tree_cut"

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.noisy is None or state.variance is None:
            raise CompositionError("tree_cut needs noisy counts from an earlier block")
        layout, final_var = self._setup(state)
        sigma1 = float(weighting_variance(state.variance.max()))
        cut = s2_cut(layout, state.noisy, sigma1, final_var)
        # the cut as its pruned tree: nodes above the cut only, not a mask of every node
        notes = {**compact_first_stage(state.notes), "tree": layout, "cut": prune(layout, cut)}
        return state.with_(noisy=None, estimate=None, notes=notes)


@dataclass(frozen=True, kw_only=True)
class TreeCutAbsolute(_TreeCut):
    """S1+H's grouping: DAWA's noisy L1 costs restricted to tree nodes.

    Kellaris et al., PVLDB 2017, §6 (methods framework A.8). Node cost = dev(v) +
    the expected absolute publication error sqrt(V_v/2). ``noise="certified"``: the cut
    comes from PrivTree's biased top-down splitting of the same tree by deviation
    (``smoothing.l1_selection``, ``dphist._kernel.biased_split``); ``"coupled"``: the
    noisy minimum-cost cut (``dphist._kernel.l1_partition``). Only the cut is released.
    """

    label = "tree_cut"
    spends = True
    constraints = rules(
        fanout=FANOUT, allocation=Options(*ALLOCATIONS), noise=Options(*NOISE_MODES)
    )
    noise: str = "certified"

    def run(self, state: State, view: PrivateView | None) -> State:
        layout, level_var = self._setup(state)
        final_var = level_var[layout.level]
        # expected absolute publication error: sqrt(V/2) for Laplace, sqrt(2V/pi) Gaussian
        spread = 2.0 / np.pi if state.definition == "zcdp" else 0.5
        selection = l1_selection(self.noise, layout, np.sqrt(final_var * spread), state.n)
        notes = {**state.notes, "tree": layout}
        if self.noise == "certified":
            cut, notes["split_bound"] = select_groups(view, selection, layout)
        else:
            cut = view.select(selection)
        # the cut as its pruned tree (nodes above the cut), as the frontier release reads it
        return state.with_(notes={**notes, "cut": prune(layout, cut)})


@dataclass(frozen=True, kw_only=True)
class FrontierRelease(Block):
    """Release a tree cut with the averaging optimisation, then make it consistent.

    Kellaris et al., PVLDB 2017, §6, made precise in the methods framework A.8. For
    every level the frontier cells (level nodes not inside a cut node, plus cut
    nodes above the level) partition the bins, so each level is one sensitivity-1
    measurement with its share of the block's budget; the cut is public (released
    earlier), so the levels compose to the block's epsilon. A cut node's repeated
    measurements are averaged by inverse variance, the pruned tree is made
    consistent (weighted least squares) and each cut node's total is spread evenly
    over its bins: post-processing.
    """

    label = "frontier_release"
    zcdp = True
    spends = True
    constraints = rules(allocation=Options(*ALLOCATIONS))
    allocation: str = "uniform"

    def run(self, state: State, view: PrivateView | None) -> State:
        layout, cut = state.notes.get("tree"), state.notes.get("cut")
        if layout is None or cut is None:
            raise CompositionError("frontier_release needs a tree cut block before it")
        tree = cut  # the pruned tree: only nodes above the cut, small where it is coarse
        cells = frontier_cells(tree, layout.n_levels)
        eps = split_epsilon(
            view.remaining, layout.n_levels, self.allocation, _noise(view.definition)
        )
        info = np.zeros(tree.size)
        y = np.zeros(tree.size)
        for idx, e in zip(cells, eps, strict=True):
            m = view.measure(IntervalSums(layout.n, tree.lo[idx], tree.hi[idx]), epsilon=e)
            v = float(weighting_variance(m.variance))
            info[idx] += 1.0 / v
            y[idx] += m.values / v
            del m  # its query holds the cells' bounds
        del cells, idx
        # every pruned node is a frontier cell of its own level at least
        y /= info
        var = 1.0 / info
        del info
        est, est_var = gls(tree.first_child, tree.n_children, y, var, return_var=True)
        del y

        # per group first, every node-sized temporary freed before the per-bin arrays
        groups = np.flatnonzero(tree.cut)
        groups = groups[np.argsort(tree.lo[groups], kind="stable")]
        sizes = tree.hi[groups] - tree.lo[groups]
        per_bin = sizes.astype(np.float64)
        group_est, group_var = est[groups] / per_bin, est_var[groups] / per_bin**2
        del est, est_var, per_bin
        ptr, kids = tree.csr()
        noise = TreeNoise.nodes(layout.n, tree.lo, tree.hi, ptr, kids, var, law=law_of(view))
        del ptr, kids, var
        labels = np.repeat(np.arange(groups.size, dtype=label_dtype(layout.n)), sizes)
        del groups, sizes
        estimate = group_est[labels]
        del group_est
        return state.with_(
            labels=labels,
            estimate=estimate,
            variance=PerGroup(group_var, labels),  # spread over the bins when read
            uncertainty=grouping_model(state.with_(labels=labels), noise, labels),
        )
