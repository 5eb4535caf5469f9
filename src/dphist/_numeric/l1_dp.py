"""Minimum-cost partitions of ``[0, N)`` into contiguous groups, over given costs.

The dynamic programs behind DAWA's L1 partition (Li, Hay, Miklau, Wang, PVLDB 7(5)
2014, §3) and the S1 / S~ smoothing of Kellaris, Papadopoulos, Papadias (PVLDB 2017,
§4): the costs of the candidate groups (deviations from
:mod:`dphist._numeric.deviation`, plus a constant and the kernel's noise) are given,
and the partition minimising their sum is returned as ``int64`` group starts
(increasing, first 0). Deterministic; the noise is added by the privacy kernel.

* :func:`l1_partition_pow2` -- groups of power-of-two length, ``O(N log N)``.
* :func:`dp_step`, :func:`dp_rows`, :func:`l1_partition_full` -- all intervals,
  ``O(N^2)`` time; :func:`~dphist._numeric.deviation.l1_partition_streamed` feeds
  streamed cost rows to :func:`dp_rows` in ``O(N)`` memory.

Tie-breaking. Both DPs prefer the **longest last group** among equally good
candidates at every prefix (the earliest start). For the power-of-two family this is
exactly the DAWA reference rule (the singleton is tried first, then lengths 2, 4, ...,
replacing on ``<=``). For all intervals the reference instead keeps the singleton when
it ties and otherwise prefers the earliest start; ``prefer_singleton=True``
reproduces that rule. Over the whole partition (with exactly representable sums,
e.g. integer-valued costs), the result is the optimal partition whose starts, read
from right to left, are lexicographically smallest; with ``prefer_singleton=True`` a
group of one bin ranks before any other group at the same position.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..errors import ValidationError
from .segment import starts_from_back

__all__ = [
    "dp_rows",
    "dp_rows_checked",
    "dp_step",
    "l1_partition_full",
    "l1_partition_pow2",
    "partition_from_argmins",
]


@njit(cache=True)
def dp_step(F, costs_row, b, prefer_singleton=False):
    """One step of the all-interval DP: ``min_{0 <= a <= b} F[a] + costs_row[a]``.

    ``F[a]`` is the optimal cost of the prefix ``x[:a]`` (``F[0] = 0``) and
    ``costs_row[a]`` the (noisy) cost of the group ``x[a : b + 1]``. Returns
    ``(best, argbest)``; the caller stores them as ``F[b + 1]`` and the argmin.
    Ties go to the smallest ``a`` (longest group); with ``prefer_singleton`` a tie
    with the singleton ``a = b`` keeps the singleton (DAWA reference rule).
    ``O(b)``; entries ``costs_row[b + 1:]`` are not read.
    """
    if prefer_singleton:
        best = F[b] + costs_row[b]
        arg = b
        for a in range(b):
            v = F[a] + costs_row[a]
            if v < best:
                best = v
                arg = a
    else:
        best = F[0] + costs_row[0]
        arg = 0
        for a in range(1, b + 1):
            v = F[a] + costs_row[a]
            if v < best:
                best = v
                arg = a
    return best, arg


@njit(cache=True)
def dp_rows(F, argmin, cost_rows, b0, prefer_singleton=False):
    """Feed a block of cost rows (last bins ``b0, b0 + 1, ...``) to the all-interval DP.

    ``cost_rows[r, a]`` is the cost of ``x[a : b0 + r + 1]`` (the layout of
    :func:`all_interval_deviations_rows`). Requires ``F[0 .. b0]`` filled; writes
    ``F[b + 1]`` and ``argmin[b + 1]`` for every row. Blocks must be fed in order.
    No validation: the costs read (``a <= b``) must be finite. Then
    :func:`partition_from_argmins` gives the partition. ``O(b)`` per row.
    """
    for r in range(cost_rows.shape[0]):
        b = b0 + r
        best, a = dp_step(F, cost_rows[r], b, prefer_singleton)
        F[b + 1] = best
        argmin[b + 1] = a


@njit(cache=True)
def dp_rows_checked(F, argmin, cost_rows, b0, prefer_singleton):
    """:func:`dp_rows` that first checks the costs it reads; -1 or the bad row."""
    for r in range(cost_rows.shape[0]):
        for a in range(b0 + r + 1):
            if not np.isfinite(cost_rows[r, a]):
                return r
    dp_rows(F, argmin, cost_rows, b0, prefer_singleton)
    return -1


@njit(cache=True)
def _pow2_dp(costs):
    n_len = costs.shape[0]
    n = costs.shape[1]
    F = np.empty(n + 1, dtype=np.float64)
    argmin = np.empty(n + 1, dtype=np.int64)
    F[0] = 0.0
    argmin[0] = 0
    for j in range(1, n + 1):
        best = F[j - 1] + costs[0, j - 1]
        arg = j - 1
        k = 1
        length = 2
        while k < n_len and length <= j:
            v = F[j - length] + costs[k, j - length]
            if v <= best:  # later (longer) candidate wins ties
                best = v
                arg = j - length
            k += 1
            length *= 2
        F[j] = best
        argmin[j] = arg
    return starts_from_back(argmin), F[n]


@njit(cache=True)
def _full_dp(costs, prefer_singleton):
    n = costs.shape[0]
    F = np.empty(n + 1, dtype=np.float64)
    argmin = np.empty(n + 1, dtype=np.int64)
    F[0] = 0.0
    argmin[0] = 0
    row = np.empty(n, dtype=np.float64)
    for b in range(n):
        for a in range(b + 1):
            row[a] = costs[a, b]
        best, arg = dp_step(F, row, b, prefer_singleton)
        F[b + 1] = best
        argmin[b + 1] = arg
    return starts_from_back(argmin), F[n]


def _check_finite_region(costs: np.ndarray, mask: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(costs[mask])):
        raise ValidationError(f"{what} must be finite on every candidate interval")


def l1_partition_pow2(costs) -> np.ndarray:
    """Optimal partition into power-of-two-length groups given their (noisy) costs.

    ``costs`` has the layout of :func:`pow2_deviations`: shape ``(m, N)``,
    ``1 <= m <= floor(log2 N) + 1``, ``costs[k, a]`` the cost of ``x[a : a + 2**k]``;
    entries for windows that do not fit are ignored. DP over right ends
    ``F(j) = min_k F(j - 2**k) + costs[k, j - 2**k]``, ``O(N log N)``. Ties go to the
    later, longer candidate (lengths tried in increasing order, replaced on ``<=``),
    as in the DAWA reference. Returns the group starts (``int64``, first 0).
    (Li et al., PVLDB 2014, §3; Kellaris et al., §4, S~.)
    """
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] == 0:
        raise ValidationError(f"costs must have shape (m, N) with N >= 1, got {c.shape}")
    n = c.shape[1]
    max_rows = int(n).bit_length()  # floor(log2 N) + 1
    if not 1 <= c.shape[0] <= max_rows:
        raise ValidationError(
            f"costs must have between 1 and floor(log2 N) + 1 = {max_rows} rows, got {c.shape[0]}"
        )
    lengths = np.left_shift(1, np.arange(c.shape[0]))
    mask = np.arange(n)[None, :] <= (n - lengths)[:, None]
    _check_finite_region(c, mask, "costs")
    starts, _ = _pow2_dp(np.ascontiguousarray(c))
    return starts


def l1_partition_full(costs, *, prefer_singleton: bool = False) -> np.ndarray:
    """Optimal partition over all intervals given a full cost matrix (small N).

    ``costs[a, b]`` is the cost of ``x[a : b + 1]`` (``a <= b``; the part below the
    diagonal is ignored), the layout of :func:`all_interval_deviations`. DP
    ``F(b + 1) = min_{a <= b} F(a) + costs[a, b]`` in ``O(N^2)``. Ties: longest group
    (smallest ``a``); ``prefer_singleton=True`` keeps a tied singleton (DAWA
    reference). Returns the group starts. (Li et al., PVLDB 2014, §3; Kellaris et al.,
    §4, S1.)
    """
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] == 0:
        raise ValidationError(f"costs must be a non-empty square matrix, got {c.shape}")
    _check_finite_region(c, np.triu(np.ones(c.shape, dtype=bool)), "costs")
    starts, _ = _full_dp(np.ascontiguousarray(c), bool(prefer_singleton))
    return starts


def partition_from_argmins(argmin) -> np.ndarray:
    """Group starts from the DP argmins (``argmin[j]`` = start of the last group of
    the optimal partition of ``x[:j]``, ``j = 1..N``; ``argmin[0]`` unused)."""
    arg = np.ascontiguousarray(argmin, dtype=np.int64)
    if arg.ndim != 1 or arg.shape[0] < 2:
        raise ValidationError("argmin must be a 1-D array of length N + 1 >= 2")
    j = np.arange(1, arg.shape[0])
    if np.any(arg[1:] < 0) or np.any(arg[1:] >= j):
        raise ValidationError("argmin[j] must lie in [0, j) for every j >= 1")
    return starts_from_back(arg)
