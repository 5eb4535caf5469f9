"""Fixed queries: a workload-adapted strategy over the groups of a partition (MM, PMM)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import PrivateView
from .._kernel.operators import WeightedIntervalSums
from .._numeric.greedyh import estimate_totals, greedy_h, implicit_gram, total_variances
from ..errors import CompositionError
from .base import Block, State
from .constraints import Options, rules

__all__ = ["FixedQueries"]

WORKLOADS = ("all", "prefix")


@dataclass(frozen=True, kw_only=True)
class FixedQueries(Block):
    """Answer a GreedyH strategy over the groups, then least-squares group totals.

    DAWA's second stage (Li et al., PVLDB 2014, §4) as the MM (``workload="all"``,
    all ranges) and PMM (``workload="prefix"``) blocks of Kellaris et al., PVLDB
    2017, §4 and §5.2. The workload's Gram matrix reduced to the groups comes from
    closed forms and is kept implicit (``O(|G|)`` numbers); GreedyH picks a weighted
    tree of range queries over the groups, and least squares on that tree gives the
    group totals and their variances. No ``|G| x |G|`` matrix is built (time
    ``O(N + |G| log |G|)``, memory ``O(N)``), so the number of groups is not limited.
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
        answers = strategy.weight * m.values
        totals = estimate_totals(strategy, answers)
        # every weighted answer has (about) the same noise variance w^2 Var
        sigma2 = float(np.mean(strategy.weight**2 * m.variance))
        total_var = sigma2 * total_variances(strategy)
        per_bin = sizes[labels].astype(np.float64)
        return state.with_(
            estimate=totals[labels] / per_bin,
            variance=total_var[labels] / per_bin**2,
        )
