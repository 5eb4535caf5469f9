"""Hierarchical blocks: a noisy tree of interval counts, and smoothing on tree nodes."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernel import IntervalSums, PrivateView, as_fraction, noise_variance
from .._numeric.segment import centred_prefix_sums
from .._numeric.tree import (
    TreeLayout,
    best_cut,
    consistency,
    frontiers,
    hb_branching,
    level_budgets,
    tree_layout,
)
from ..errors import CompositionError, ValidationError
from .base import Block, State, weighting_variance

__all__ = ["HierarchicalSmoothing", "Hierarchy", "split_epsilon"]

ALLOCATIONS = ("uniform", "geometric")


def split_epsilon(total: Fraction, levels: int, allocation: str) -> list[Fraction]:
    """Exact per-level budgets summing to ``total``, root first.

    Uniform gives ``total/levels`` each; geometric shares (leaves get most) are read
    as decimals and the last level takes the exact remainder.
    """
    if allocation == "uniform":
        return [total / levels] * levels
    shares = level_budgets(levels, allocation)
    parts = [total * as_fraction(float(s), name="level share") for s in shares[:-1]]
    return [*parts, total - sum(parts, Fraction(0))]


def _fanout(value: object, n: int) -> int:
    if value == "hb":
        return hb_branching(n)[0] if n > 1 else 2
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValidationError(f"fanout must be an integer >= 2 or 'hb'; got {value!r}")
    return value


def _check_tree_args(fanout: object, allocation: str) -> None:
    if fanout != "hb" and (isinstance(fanout, bool) or not isinstance(fanout, int) or fanout < 2):
        raise ValidationError(f"fanout must be an integer >= 2 or 'hb'; got {fanout!r}")
    if allocation not in ALLOCATIONS:
        raise ValidationError(f"allocation must be one of {ALLOCATIONS}; got {allocation!r}")


def _measure_levels(
    view: PrivateView, layout: TreeLayout, cells: list[np.ndarray], allocation: str
) -> tuple[list[np.ndarray], list[float]]:
    """Noisy counts of each level's cells (each level a partition of the bins)."""
    eps = split_epsilon(view.remaining, layout.n_levels, allocation)
    values, variances = [], []
    for idx, e in zip(cells, eps, strict=True):
        m = view.measure(IntervalSums(layout.n, layout.lo[idx], layout.hi[idx]), epsilon=e)
        values.append(m.values.astype(np.float64))
        variances.append(float(weighting_variance(m.variance)))
    return values, variances


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
    spends = True
    fanout: object = 16
    allocation: str = "uniform"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_tree_args(self.fanout, self.allocation)

    def run(self, state: State, view: PrivateView | None) -> State:
        layout = tree_layout(state.n, _fanout(self.fanout, state.n))
        cells = [
            np.arange(layout.level_offsets[i], layout.level_offsets[i + 1])
            for i in range(layout.n_levels)
        ]
        values, variances = _measure_levels(view, layout, cells, self.allocation)
        y = np.concatenate(values)
        var = np.repeat(variances, layout.level_counts)
        est, est_var = consistency(layout, y, var, return_var=True)
        leaves = layout.leaf_slice
        return state.with_(estimate=est[leaves], variance=est_var[leaves])


@dataclass(frozen=True, kw_only=True)
class HierarchicalSmoothing(Block):
    """S2+H: smooth over tree nodes, then release the cut with the averaging trick.

    Kellaris et al., PVLDB 2017, §6, made precise in the methods framework A.8.
    Post-processing chooses a cut of the fan-out tree from ``state.noisy`` (node cost
    = noisy SSE - (|v|-1) sigma1**2 + the node's final noise variance / |v|). Then
    for every level the frontier cells (level nodes not inside a cut node, plus cut
    nodes above the level) are measured; each frontier partitions the bins, so each
    level is a sensitivity-1 measurement with its share, and the cut, an output of
    the earlier epsilon1 measurement, is public: epsilon1 + epsilon2 by adaptive
    composition. A cut node's repeated measurements are averaged by inverse
    variance, the pruned tree is made consistent and each cut node's total is spread
    evenly over its bins (post-processing).
    """

    label = "tree_smoothing"
    spends = True
    fanout: object = 16
    allocation: str = "uniform"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_tree_args(self.fanout, self.allocation)

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.noisy is None or state.variance is None:
            raise CompositionError("tree_smoothing needs noisy counts from an earlier block")
        if state.order is not None:
            raise CompositionError("tree_smoothing needs the natural bin order")
        n = state.n
        layout = tree_layout(n, _fanout(self.fanout, n))
        t = layout.n_levels
        level_eps = split_epsilon(view.remaining, t, self.allocation)
        level_var = weighting_variance(np.array([noise_variance(1, e) for e in level_eps]))
        # variance of a node's total after averaging its own and all lower levels
        final_var = 1.0 / np.cumsum((1.0 / level_var)[::-1])[::-1]
        length = (layout.hi - layout.lo).astype(np.float64)
        p1, p2 = centred_prefix_sums(state.noisy)
        sse = (p2[layout.hi] - p2[layout.lo]) - (p1[layout.hi] - p1[layout.lo]) ** 2 / length
        sigma1 = float(state.variance.max())
        cost = sse - (length - 1) * sigma1 + final_var[layout.level] / length
        cut = best_cut(layout, cost)

        cells = frontiers(layout, cut)
        values, variances = _measure_levels(view, layout, cells, self.allocation)
        # inverse-variance sums per node over the levels where it is a frontier cell
        info = np.zeros(layout.n_nodes)
        weighted = np.zeros(layout.n_nodes)
        for idx, vals, v in zip(cells, values, variances, strict=True):
            info[idx] += 1.0 / v
            weighted[idx] += vals / v
        measured = info > 0
        y = np.where(measured, weighted / np.where(measured, info, 1.0), np.nan)
        # nodes strictly inside a cut subtree are never frontier cells: variance inf
        var = np.where(measured, 1.0 / np.where(measured, info, 1.0), np.inf)
        est, est_var = consistency(layout, y, var, return_var=True)

        groups = np.flatnonzero(cut)
        sizes = layout.hi[groups] - layout.lo[groups]
        order = np.argsort(layout.lo[groups], kind="stable")
        groups, sizes = groups[order], sizes[order]
        labels = np.repeat(np.arange(groups.size), sizes)
        per_bin = sizes[labels].astype(np.float64)
        return state.with_(
            labels=labels,
            estimate=est[groups][labels] / per_bin,
            variance=est_var[groups][labels] / per_bin**2,
        )
