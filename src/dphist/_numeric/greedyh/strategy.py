"""GreedyH's output: a weighted tree strategy over the groups, checked on construction.

A :class:`GreedyHStrategy` holds the tree's range queries in pre-order, their weights
and the number of groups; it refuses any set of ranges that is not a tree whose
childless nodes tile the groups. :func:`~.search.greedy_h` builds one;
:mod:`.estimate` answers and inverts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._jit import njit
from ...errors import ValidationError
from .gram import check_int, float_array, int_vector

__all__ = ["GreedyHStrategy"]


@njit(cache=True)
def _tree_parents(lo, hi, n_groups):  # pragma: no cover - compiled
    """Parent of each query (``-1``: none) when the queries, read in order, are the
    pre-order of a tree of nested ranges whose childless nodes partition
    ``[0, n_groups)`` left to right; and a status: 0 valid, 1 a range out of bounds or
    empty, 2 ranges that cross or are out of order, 3 childless ranges that do not
    tile the groups.
    """
    q = lo.size
    parent = np.full(q, -1, dtype=np.int64)
    stack = np.empty(q, dtype=np.int64)
    top = 0
    for i in range(q):
        a = lo[i]
        b = hi[i]
        if a < 0 or b > n_groups or a >= b:
            return parent, 1
        while top > 0 and hi[stack[top - 1]] <= a:
            top -= 1
        if top > 0:
            p = stack[top - 1]
            if a < lo[p] or b > hi[p]:
                return parent, 2
            parent[i] = p
        stack[top] = i
        top += 1
    # In pre-order a node's first child comes right after it.
    pos = 0
    for i in range(q):
        if i == q - 1 or parent[i + 1] != i:
            if lo[i] != pos:
                return parent, 3
            pos = hi[i]
    if pos != n_groups:
        return parent, 3
    return parent, 0


_TREE_ERRORS = {
    1: "every query needs 0 <= lo < hi <= n_groups",
    2: "queries must be nested or disjoint ranges listed in pre-order (a node before "
    "its descendants, children left to right)",
    3: "the queries without sub-queries must tile the groups [0, n_groups)",
}


@dataclass(frozen=True, eq=False)
class GreedyHStrategy:
    """A weighted range strategy over groups, as chosen by :func:`greedy_h`.

    Query ``k`` covers the groups ``lo[k] <= g < hi[k]`` and is answered as
    ``weight[k] * sum_{g in q} T_g`` plus noise. Queries are listed in pre-order of
    a tree of nested ranges (a node before its descendants, children left to right);
    the queries without sub-queries tile the groups. GreedyH omits the tree nodes
    that received weight 0, so a query's parent is its nearest weighted ancestor.
    The constructor checks that structure (``O(#queries)``); it does not require the
    path weights to sum to 1, so other tree strategies can use the estimator too.

    Attributes
    ----------
    lo, hi : ndarray of int64
        Half-open group-index range of each query.
    weight : ndarray of float64
        Positive weight of each query. From :func:`greedy_h` the weights of the
        queries containing any one group sum to 1 (L1 sensitivity 1).
    n_groups : int
        Number of groups ``|G|``.
    expected_error : float
        The objective value GreedyH reached at the root. With ``objective="trace"``
        it equals ``trace(M (A^T A)^+)`` for the weighted strategy matrix ``A`` (rows
        ``weight[k] * 1[lo[k]:hi[k]]``): the summed variance of the reduced workload's
        answers when each strategy answer carries unit-variance noise (multiply by
        ``2 / eps2**2`` for ``Lap(1/eps2)``). With ``objective="reference"`` it is
        DAWA's reference score: ``trace(M.T @ M @ (A^T A)^+)`` (``M`` read as if it
        were the workload) when only the root is an internal node; deeper nodes damp
        their own query with the depth factor, so in general it is a ranking score,
        not a variance.
    objective : str
        The objective that produced the strategy.
    """

    lo: np.ndarray
    hi: np.ndarray
    weight: np.ndarray
    n_groups: int
    expected_error: float = float("nan")
    objective: str = "reference"
    _parent: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n_groups = check_int(self.n_groups, "n_groups", 1)
        lo = np.array(int_vector(self.lo, "lo"))
        hi = np.array(int_vector(self.hi, "hi"))
        weight = float_array(self.weight, "weight")
        if not lo.shape == hi.shape == weight.shape:
            raise ValidationError(
                f"lo, hi and weight must have the same length, got {lo.size}, {hi.size}, "
                f"{weight.size}"
            )
        if np.any(weight <= 0.0):
            raise ValidationError("weight must be positive (omit queries of weight 0)")
        parent, status = _tree_parents(lo, hi, n_groups)
        if status:
            raise ValidationError(f"not a tree strategy: {_TREE_ERRORS[int(status)]}")
        for arr in (lo, hi, parent):
            arr.flags.writeable = False
        object.__setattr__(self, "n_groups", n_groups)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "expected_error", float(self.expected_error))
        object.__setattr__(self, "_parent", parent)

    @property
    def n_queries(self) -> int:
        """Number of weighted queries to answer."""
        return int(self.lo.shape[0])

    @property
    def parent(self) -> np.ndarray:
        """Each query's parent in the tree (its nearest enclosing query), ``-1`` for none."""
        return self._parent
