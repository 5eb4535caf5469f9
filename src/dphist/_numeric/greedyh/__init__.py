"""GreedyH: a workload-adapted weighted hierarchy over a public grouping, plus its estimator.

This is the "fixed queries" stage of DAWA (Li, Hay, Miklau, Wang, "A data- and
workload-aware algorithm for range queries under differential privacy", PVLDB 7(5),
2014, Section 4, GreedyH) as used by the MM and PMM schemes of Kellaris et al.,
"Engineering methods for differentially private histograms" (Section 4, Fixed
Queries; Section 5.2, PMM). A public partition of ``N`` bins into ``|G|`` contiguous
groups is given together with a workload: all ``N(N+1)/2`` ranges (``"all"``, MM) or
the ``N`` prefixes (``"prefix"``, PMM).

* :func:`implicit_gram` gives the Gram matrix of the workload reduced to groups (a
  query puts weight ``|q ∩ g| / |g|`` on group ``g``) as an :class:`ImplicitGram`:
  three vectors of length ``|G|`` from closed forms; neither the workload nor the
  ``|G| x |G|`` matrix is built. :func:`reduced_gram` materialises the same matrix
  (tests, small cases).
* :func:`greedy_h` chooses, bottom-up over a tree on the group indices, how much of
  the budget each tree node's range query gets, and returns the weighted strategy.
* :func:`estimate_totals` turns noisy strategy answers into least-squares group
  totals by generalised least squares on the strategy's tree, and
  :func:`total_variances` gives their variances; :func:`strategy_answers` gives the
  noiseless answers.

Everything here is post-processing: no data, no noise, no budgets. Along every
root-to-leaf path of the tree the query weights add up to 1, so each group total
enters the weighted strategy with total weight 1 (L1 sensitivity 1): answering every
weighted query with ``Lap(1/eps2)`` noise is ``eps2``-DP.

Complexity for ``N`` bins and ``|G|`` groups, with an :class:`ImplicitGram`:
``O(N)`` time and memory for the Gram vectors, ``O(|G| log |G|)`` time and ``O(|G|)``
memory for GreedyH (a node of ``n`` cells costs ``O(n)``), ``O(|G|)`` for the
estimator. With a dense ``M`` (any symmetric matrix) GreedyH costs ``O(|G|)`` per
node, ``O(|G|^2)`` in total, besides the ``|G|^2`` numbers of ``M`` itself.
"""

from .estimate import estimate_totals, strategy_answers, total_variances
from .gram import WORKLOADS, ImplicitGram, implicit_gram, reduced_gram, sizes_from_starts
from .search import OBJECTIVES, greedy_h
from .strategy import GreedyHStrategy

__all__ = [
    "OBJECTIVES",
    "WORKLOADS",
    "GreedyHStrategy",
    "ImplicitGram",
    "estimate_totals",
    "greedy_h",
    "implicit_gram",
    "reduced_gram",
    "sizes_from_starts",
    "strategy_answers",
    "total_variances",
]
