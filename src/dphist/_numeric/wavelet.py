"""Unnormalised Haar transform for Privelet (Xiao, Wang, Gehrke; methods framework B.4).

The ``n`` bins are zero-padded to ``N' = 2**m`` with ``m = ceil(log2 n)`` and viewed as
the leaves of a complete binary tree. The coefficients are

* the total ``S = sum(x)`` (the *base* coefficient), and
* for every internal node ``v`` covering ``2**l`` leaves (``l = 1 .. m``) the difference
  ``d_v = S(left half) - S(right half)``.

A node covering only padding has ``d_v = 0`` whatever the data; it is dropped (like the
padding nodes of :mod:`dphist._numeric.tree`), which leaves every estimate of a real bin
unchanged. Level ``l`` therefore keeps ``ceil(n / 2**l)`` coefficients.

Coefficient order: ``S`` first, then the differences level by level from the root
(``l = m``) down to the pairs of leaves (``l = 1``), left to right inside a level.

Sensitivity: one record changes ``S`` by 1 and, on each level, the ``d_v`` of the one node
containing its bin by 1 (``+1`` in a left half, ``-1`` in a right half); all other
coefficients are unchanged. The coefficient vector has L1 sensitivity ``m + 1``, so
uniform ``Lap((m + 1)/eps)`` noise on every coefficient is eps-DP. In the normalised
form ``c = d / W`` with the level weight ``W = 2**l`` (``N'`` for the base, where
``c = S / N'`` is the mean), which is Privelet's weighted noise ``Lap(lambda / W)``.

Reconstruction: each child total is ``(parent total +- d) / 2``. Everything here is exact
linear algebra on released values; no noise.
"""

from __future__ import annotations

import numbers
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from dphist.errors import ValidationError

from .._jit import njit

__all__ = [
    "haar_depth",
    "haar_forward",
    "haar_intervals",
    "haar_inverse",
    "haar_inverse_adjoint",
    "haar_level_counts",
    "haar_sensitivity",
    "haar_size",
    "haar_weights",
    "privelet_bin_variance",
    "privelet_range_moment",
    "privelet_range_variance",
]


def _check_n(n: object) -> int:
    if type(n) is int and n >= 1:
        return n
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or int(n) < 1:
        raise ValidationError(f"n must be a positive integer, got {n!r}")
    return int(n)


def haar_depth(n: int) -> int:
    """``m = ceil(log2 n)`` (exact), the number of detail levels; ``0`` for ``n = 1``."""
    n = _check_n(n)
    return (n - 1).bit_length()


def haar_level_counts(n: int) -> np.ndarray:
    """Number of kept detail coefficients on levels ``l = m, m - 1, .., 1`` (root first)."""
    n = _check_n(n)
    m = haar_depth(n)
    return np.array([-(-n >> lev) for lev in range(m, 0, -1)], dtype=np.int64)


def haar_size(n: int) -> int:
    """Total number of coefficients: ``1 + sum_l ceil(n / 2**l)`` (less than ``2 n``)."""
    return _haar_size(_check_n(n))


@lru_cache(maxsize=64)  # asked several times a release (the query's size, its ledger entry)
def _haar_size(n: int) -> int:
    return 1 + sum(-(-n >> lev) for lev in range(1, haar_depth(n) + 1))


def haar_sensitivity(n: int) -> int:
    """L1 sensitivity ``m + 1`` of the coefficient vector (see module docstring)."""
    return haar_depth(n) + 1


def haar_weights(n: int) -> np.ndarray:
    """Level weight ``W`` of every coefficient: ``2**m`` for ``S``, ``2**l`` for a level-``l``
    difference. The normalised Haar coefficient is ``coefficient / W``."""
    n = _check_n(n)
    m = haar_depth(n)
    counts = haar_level_counts(n)
    levels = np.repeat(np.arange(m, 0, -1, dtype=np.int64), counts)
    return np.concatenate(([np.int64(1) << m], np.int64(1) << levels))


def haar_intervals(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin intervals defining each coefficient as a linear map of ``x``.

    Returns int64 arrays ``lo, mid, hi`` (one entry per coefficient, in coefficient order)
    with ``coefficient = sum(x[lo:mid]) - sum(x[mid:hi])``. Bounds are clipped to ``n``:
    the left part is never empty, the right part ``[mid, hi)`` is empty when the node's
    right half is all padding (and for ``S``, encoded as ``(0, n, n)``); such a
    coefficient is a single interval sum. Time ``O(n)``.
    """
    n = _check_n(n)
    m = haar_depth(n)
    counts = haar_level_counts(n)
    size = 1 + int(counts.sum())
    lo = np.empty(size, dtype=np.int64)
    mid = np.empty(size, dtype=np.int64)
    hi = np.empty(size, dtype=np.int64)
    lo[0], mid[0], hi[0] = 0, n, n
    pos = 1
    for lev, c in zip(range(m, 0, -1), counts.tolist(), strict=True):
        width = 1 << lev
        start = np.arange(c, dtype=np.int64) * width
        lo[pos : pos + c] = start
        mid[pos : pos + c] = np.minimum(start + width // 2, n)
        hi[pos : pos + c] = np.minimum(start + width, n)
        pos += c
    return lo, mid, hi


def haar_forward(x: ArrayLike) -> np.ndarray:
    """Coefficients ``[S, d (root level), .., d (leaf pairs)]`` of the counts ``x``.

    Integer input gives int64 coefficients (exact); float input gives float64.
    Time and memory ``O(n)``.
    """
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
        raise ValidationError("x must be a non-empty 1-D array of integers or floats")
    totals = arr.astype(np.int64 if arr.dtype.kind in "iu" else np.float64)
    out = np.empty(haar_size(arr.size), dtype=totals.dtype)
    _forward(totals, out)
    return out


@njit(cache=True)
def _forward(totals, out):  # pragma: no cover - compiled
    """Fill ``out`` with :func:`haar_forward`'s coefficients, overwriting ``totals``
    with the node totals level by level (pairs of leaves first, an odd last node
    paired with zero)."""
    k = totals.size
    end = out.size
    while k > 1:
        half = (k + 1) // 2
        start = end - half
        for i in range(half):
            left = totals[2 * i]
            right = totals[2 * i + 1] if 2 * i + 1 < k else 0
            out[start + i] = left - right
            totals[i] = left + right  # i <= 2 i: read before it is written
        end = start
        k = half
    out[0] = totals[0]


def haar_inverse(coeffs: ArrayLike, n: int) -> np.ndarray:
    """Leaf estimates (length ``n``, padding dropped) from coefficients in forward order.

    Top-down, each node's total splits into ``(total + d) / 2`` and ``(total - d) / 2``.
    Linear in the coefficients; applied to noisy coefficients it gives Privelet's estimate.
    Time and memory ``O(n)``.
    """
    n = _check_n(n)
    c = np.asarray(coeffs, dtype=np.float64)
    if c.shape != (haar_size(n),):
        raise ValidationError(f"coeffs must have {haar_size(n)} entries for n={n}, got {c.shape}")
    out = np.empty(n + (n & 1))  # room for the last level's padded pair
    _inverse(c, haar_depth(n), n, out)
    return out[:n]


@njit(cache=True)
def _inverse(c, m, n, out):  # pragma: no cover - compiled
    """Top-down :func:`haar_inverse` in ``out``: a level's totals split in place, the
    last node first so that no total is overwritten before it is read."""
    out[0] = c[0]
    k = 1
    pos = 1
    for lev in range(m, 0, -1):
        for i in range(k - 1, -1, -1):
            t = out[i]
            d = c[pos + i]
            out[2 * i] = (t + d) / 2
            out[2 * i + 1] = (t - d) / 2
        pos += k
        k = -(-n >> (lev - 1))


def haar_inverse_adjoint(a: ArrayLike, n: int) -> np.ndarray:
    """The transpose of :func:`haar_inverse` applied to ``a`` (length ``n``): the weight
    of each coefficient in ``sum_i a[i] * haar_inverse(c, n)[i]``. Bottom-up, a node
    passes ``(g_left + g_right) / 2`` to its total and ``(g_left - g_right) / 2`` to its
    difference. Time ``O(n)``."""
    n = _check_n(n)
    g = np.asarray(a, dtype=np.float64)
    if g.shape != (n,):
        raise ValidationError(f"a must have {n} entries, got shape {g.shape}")
    counts = haar_level_counts(n)  # root level first
    out = np.empty(haar_size(n))
    end = out.size
    for k in counts[::-1].tolist():
        children = np.zeros(2 * k)
        children[: g.size] = g
        left, right = children[0::2], children[1::2]
        out[end - k : end] = (left - right) / 2
        end -= k
        g = (left + right) / 2
    out[0] = g[0]
    return out


def privelet_range_variance(n: int, lo: ArrayLike, hi: ArrayLike, lam: float) -> np.ndarray:
    """Noise variance of the Privelet answer to ``sum(x[lo:hi])`` (methods framework B.4).

    With i.i.d. ``Lap(lam)`` on every unnormalised coefficient, the reconstructed range
    sum is ``|Q| S / N' + sum_v d_v (|Q & L_v| - |Q & R_v|) / 2**l_v``, so

    ``Var = 2 lam**2 [(|Q| / N')**2 + sum_v ((|Q & L_v| - |Q & R_v|) / 2**l_v)**2]``.

    Only nodes that contain an end of ``Q`` without lying inside it contribute (at most
    two per level). ``lo`` and ``hi`` broadcast (half-open, ``0 <= lo < hi <= n``);
    time ``O(m)`` per range.
    """
    return 2.0 * float(lam) ** 2 * privelet_range_moment(n, lo, hi, 2)


def privelet_bin_variance(n: int, lam: float) -> float:
    """:func:`privelet_range_variance` of any one bin (all are equal): the bin's weight
    is ``2**-m`` in the base coefficient and ``2**-l`` in its node's difference on each
    level ``l``, so the sum is ``4**-m + sum_l 4**-l`` (no range arithmetic)."""
    m = haar_depth(n)
    total = 4.0**-m
    for lev in range(1, m + 1):
        total += 4.0**-lev
    return 2.0 * float(lam) ** 2 * total


def privelet_range_moment(n: int, lo: ArrayLike, hi: ArrayLike, power: int) -> np.ndarray:
    """``sum_c |w_c|**power`` over the coefficients ``c``, ``w_c`` the weight of
    coefficient ``c`` in the Privelet answer to ``sum(x[lo:hi])`` (see
    :func:`privelet_range_variance`, which is ``2 lam**2`` times the ``power = 2`` sum).
    ``O(m)`` per range."""
    n = _check_n(n)
    lo_a, hi_a = np.broadcast_arrays(np.asarray(lo), np.asarray(hi))
    if lo_a.dtype.kind not in "iu" or hi_a.dtype.kind not in "iu":
        raise ValidationError("lo and hi must be integers")
    lo_a, hi_a = lo_a.astype(np.int64), hi_a.astype(np.int64)
    if np.any(lo_a < 0) or np.any(hi_a > n) or np.any(lo_a >= hi_a):
        raise ValidationError(f"ranges must satisfy 0 <= lo < hi <= n={n}")
    return _moments(haar_depth(n), lo_a.ravel(), hi_a.ravel(), int(power)).reshape(lo_a.shape)


@njit(cache=True)
def _moments(m, qlo, qhi, power):  # pragma: no cover - compiled
    """Per range: the base coefficient's weight and, per level, the (at most two) nodes
    holding an end of the range without lying inside it."""
    out = np.empty(qlo.size)
    for q in range(qlo.size):
        a, b = qlo[q], qhi[q]
        total = abs((b - a) / float(1 << m)) ** power
        for lev in range(1, m + 1):
            width = 1 << lev
            first = (a // width) * width
            last = ((b - 1) // width) * width
            total += abs(_signed_overlap(a, b, first, width)) ** power
            if last != first:
                total += abs(_signed_overlap(a, b, last, width)) ** power
        out[q] = total
    return out


@njit(cache=True)
def _signed_overlap(a, b, start, width):  # pragma: no cover - compiled
    half = width // 2
    left = max(min(b, start + half) - max(a, start), 0)
    right = max(min(b, start + width) - max(a, start + half), 0)
    return (left - right) / float(width)
