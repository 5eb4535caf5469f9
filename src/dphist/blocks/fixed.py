"""Fixed queries: a workload-adapted strategy over the groups of a partition (MM, PMM)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import PrivateView
from .._kernel.operators import WeightedIntervalSums
from .._numeric.greedyh import (
    GreedyHStrategy,
    estimate_totals,
    greedy_h,
    implicit_gram,
    total_variances,
)
from ..errors import CompositionError
from ..uncertainty import TreeNoise
from .base import Block, State, weighting_variance
from .constraints import Options, rules
from .error_bars import grouping_model

__all__ = ["FixedQueries"]

WORKLOADS = ("all", "prefix")


@dataclass(frozen=True, kw_only=True)
class FixedQueries(Block):
    """Answer a GreedyH strategy over the groups, then least-squares group totals.

    DAWA's second stage (Li et al., PVLDB 2014, §4) as the MM (``workload="all"``,
    all ranges) and PMM (``workload="prefix"``) blocks of Kellaris et al., PVLDB
    2017, §4 and §5.2. The workload's Gram matrix reduced to the groups comes from
    closed forms and is kept implicit (``O(|G|)`` numbers); GreedyH picks a weighted
    tree of range queries over the groups, and least squares on that tree (weighted by
    each answer's exact noise variance) gives the group totals and their variances. No
    ``|G| x |G|`` matrix is built (time ``O(N + |G| log |G|)``, memory ``O(N)``), so the
    number of groups is not limited.
    Privacy: the groups are public (released earlier); the strategy's queries are
    interval sums with weights, and the kernel computes their exact weighted coverage
    (1 when the weights along every root-to-leaf path sum to 1) and scales each
    query's noise to it, so the block spends exactly its share. Least squares and the
    even spread within groups are post-processing. Under zCDP the strategy is chosen
    for Gaussian noise: GreedyH with squared weights adding up to 1 along every path
    (L2 sensitivity 1, ``greedy_h(norm="l2")``).
    """

    label = "fixed_queries"
    zcdp = True
    constraints = rules(workload=Options(*WORKLOADS))
    spends = True
    workload: str = "prefix"

    def run(self, state: State, view: PrivateView | None) -> State:
        if state.labels is None:
            raise CompositionError("fixed_queries needs a grouping block before it")
        if state.order is not None:
            raise CompositionError("fixed_queries needs groups in the natural bin order")
        labels = state.labels
        sizes = np.bincount(labels)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        norm = "l2" if state.definition == "zcdp" else "l1"
        strategy = greedy_h(implicit_gram(sizes, self.workload), norm=norm)
        lo = starts[strategy.lo]
        hi = starts[strategy.hi - 1] + sizes[strategy.hi - 1]
        m = view.measure(WeightedIntervalSums(state.n, lo, hi, tuple(strategy.weight.tolist())))
        # query k observes its range total with variance m.variance[k]: least squares
        # with weights 1/sqrt(variance) and unit-variance answers is the exact GLS
        var = weighting_variance(np.broadcast_to(m.variance, strategy.weight.shape))
        exact = GreedyHStrategy(strategy.lo, strategy.hi, 1.0 / np.sqrt(var), strategy.n_groups)
        totals = estimate_totals(exact, exact.weight * m.values)
        total_var = total_variances(exact)
        per_bin = sizes[labels].astype(np.float64)
        noise = _strategy_noise(exact, lo, hi, var, sizes, labels)
        return state.with_(
            estimate=totals[labels] / per_bin,
            variance=total_var[labels] / per_bin**2,
            uncertainty=grouping_model(state, noise, labels),
        )


def _strategy_noise(
    strategy: GreedyHStrategy,
    lo: np.ndarray,
    hi: np.ndarray,
    var: np.ndarray,
    sizes: np.ndarray,
    labels: np.ndarray,
) -> TreeNoise:
    """The strategy's tree in bins: a root holding the top queries, each query's bins
    ``[lo, hi)`` and observation variance; a childless query spreads its total evenly
    over its groups, each group evenly over its bins."""
    q = strategy.n_queries
    parent = strategy.parent + 1  # node 0 is the root; query k is node k + 1
    order = np.argsort(parent, kind="stable")  # children in pre-order, left to right
    ptr = np.zeros(q + 2, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=q + 1), out=ptr[1:])
    kids = order + 1
    n = labels.size
    leaf = np.bincount(parent, minlength=q + 1)[1:] == 0
    groups_per_leaf = np.zeros(strategy.n_groups)
    for_group = np.repeat(np.flatnonzero(leaf), (strategy.hi - strategy.lo)[leaf])
    groups_per_leaf[:] = (strategy.hi - strategy.lo)[for_group]
    shares = 1.0 / (groups_per_leaf[labels] * sizes[labels])
    return TreeNoise.nodes(
        n,
        np.concatenate(([0], lo)),
        np.concatenate(([n], hi)),
        ptr,
        kids,
        np.concatenate(([np.inf], var)),
        shares,
    )
