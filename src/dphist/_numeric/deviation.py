"""Interval deviation costs for DAWA's L1 partition.

DAWA's first stage (Li, Hay, Miklau, Wang, "A Data- and Workload-Aware Algorithm for
Range Queries Under Differential Privacy", PVLDB 7(5) 2014, §3) and the smoothing
blocks S1 and S~ of Kellaris, Papadopoulos, Papadias ("Engineering Methods for
Differentially Private Histograms: Efficiency Beyond Utility", §4) score a candidate
bucket ``B`` of contiguous bins by

    dev(B) = sum_{i in B} |x_i - mean(B)|,

the absolute error of replacing every count of ``B`` by the bucket **mean** (not the
median), plus a constant, add noise to every score (done by the privacy kernel, not
here) and choose the partition of ``[0, N)`` that minimises the sum of the noisy
scores. This module computes the deviations of the candidates; the partition dynamic
programs over given costs are in :mod:`dphist._numeric.l1_dp`.

Conventions (0-based, used by every function below):

* ``x`` is a 1-D vector of length ``N``: an integer count vector (computed in exact
  ``int64`` arithmetic) or any finite float vector (``float64``).
* Intervals are written ``x[a : b + 1]``: start ``a``, last bin ``b`` (inclusive).
* A partition is an ``int64`` array of group starts, increasing, beginning with 0;
  group ``g`` is ``[starts[g], starts[g + 1])`` with ``starts[m] = N`` implied.

Evaluation. Let ``c`` and ``s`` be the number and the sum of the values of ``B`` that
are ``<= mean(B)``. Because the deviations above and below the mean cancel,
``dev(B) = 2 (c * mean(B) - s)``. ``c`` and ``s`` come from a Fenwick tree over the
ranks of the distinct values of ``x`` (coordinate compression) that stores counts and
sums; a single descent of the tree, steered by the sorted distinct values, finds the
rank of the mean and accumulates ``c`` and ``s`` in ``O(log N)``.

Accuracy. For integer input the window sums and tree sums are exact ``int64``
(requires ``sum |x| < 2**61``). With ``mean = q + r/L`` (``q = floor(sum / L)``,
``0 <= r < L``) the values ``<= mean`` are those ``<= q``, and
``L dev / 2 = (c q - s) L + c r`` is an integer. When ``(c q - s) L + L**2 < 2**51``
(all but astronomically large counts) ``dev`` is computed as one division of exact
integers, i.e. it is the correctly rounded value of the true rational; otherwise as
``2 ((c q - s) + c r / L)``, within a few units in the last place. Float input is
summed in ``float64`` (sliding sums add and subtract); its absolute error is of order
``N u max|x|`` (``u = 2**-53``). Results are clamped at 0.

Public functions and cost:

* :func:`window_deviations` – every window of one length, ``O(N log N)``.
* :func:`pow2_deviations` – every window of length ``1, 2, 4, ... <= N`` at every
  start (the S~ candidates), ``O(N log^2 N)`` time, ``8 N (floor(log2 N) + 1)`` bytes.
* :func:`all_interval_deviations_rows` – the S1 candidates ending at bins
  ``b0 .. b1 - 1``, ``O(N log N)`` per last bin; stream blocks, never hold all
  ``N (N + 1) / 2`` values. :func:`all_interval_deviations` – the full matrix, only
  for ``N <= 4096`` (tests, small problems).
* :func:`interval_deviations` – any list of intervals, ``O(log m)`` each after an
  ``O(N log m)`` build (``m`` distinct values), by a wavelet matrix over value ranks
  (:class:`DeviationIndex` keeps the index for repeated queries). Bit-identical to the
  streamed rows on integer input: the same count and sum of the low values feed the
  same final formula.
* :meth:`DeviationIndex.half_units` – ``floor(2**k dev / 2)`` of any intervals of an
  integer vector exactly, in int64: the biased split's deviation score on the lattice
  ``2**-k`` (its privacy argument needs the exact value: one count moves it by less
  than ``2**k`` and it never grows from a node to its children).
* :func:`l1_partition_streamed` – the all-interval (S1) partition, the rows above
  streamed into :func:`dphist._numeric.l1_dp.dp_rows`: ``O(N^2 log N)`` time and
  ``O(N)`` memory.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._jit import njit
from ..errors import InputTypeError, ValidationError
from .l1_dp import dp_rows_checked
from .mean_split import above_all, dev_from_low, mean_split
from .segment import starts_from_back

__all__ = [
    "MAX_FULL_MATRIX_N",
    "DeviationIndex",
    "all_interval_deviations",
    "all_interval_deviations_rows",
    "interval_deviations",
    "l1_partition_streamed",
    "pow2_deviations",
    "window_deviations",
]

MAX_FULL_MATRIX_N = 4096
_MAX_ABS_SUM = 2.0**61  # int64 window/tree sums and c*q products stay far from overflow
_BLOCK_ELEMENTS = 1 << 22  # default streamed block: about 32 MB of float64 per block


# --------------------------------------------------------------------------------------
# Fenwick tree over value ranks: column 0 counts, column 1 sums (same dtype as x).


@njit(cache=True)
def _compress(x):
    """Ranks of x among its sorted distinct values.

    Returns ``(vals, ranks, m, top, tree)``: ``vals`` the ``m`` distinct values padded
    to length ``2 * top`` with a value above every mean, ``top`` the largest power of
    two ``<= m`` and ``tree`` an empty Fenwick tree (``2 * top`` rows, only rows
    ``1..m`` are ever written; column 0 counts, column 1 sums, dtype of x).
    """
    distinct = np.unique(x)
    m = distinct.shape[0]
    ranks = np.searchsorted(distinct, x).astype(np.int64)
    top = 1
    while top * 2 <= m:
        top *= 2
    vals = np.empty(2 * top, dtype=x.dtype)
    vals[:m] = distinct
    vals[m:] = above_all(distinct)
    tree = np.zeros((2 * top, 2), dtype=x.dtype)
    return vals, ranks, m, top, tree


@njit(cache=True, inline="always")
def _tree_add(tree, m, rank, dc, dv):
    i = rank + 1
    while i <= m:
        tree[i, 0] += dc
        tree[i, 1] += dv
        i += i & (-i)


@njit(cache=True, inline="always")
def _tree_dev(tree, vals, top, total, length):
    """dev of the multiset in the tree (``length`` values summing to ``total``)."""
    q, r = mean_split(total, length)
    pos = 0
    c = tree[0, 0]  # row 0 is never written: typed zeros
    s = tree[0, 1]
    step = top
    while step > 0:  # branch-free Fenwick descent, log2(top) + 1 steps
        nxt = pos + step
        t = vals[nxt - 1] <= q  # padding is above every mean: rows > m never taken
        c += tree[nxt, 0] * t
        s += tree[nxt, 1] * t
        pos = nxt if t else pos
        step >>= 1
    d = dev_from_low(c, s, q, r, length)
    return d if d > 0.0 else 0.0


@njit(cache=True)
def _slide(x, vals, ranks, m, top, tree, length, out):
    """out[a] = dev(x[a : a + length]) for a = 0 .. N - length (tree must be empty)."""
    n = x.shape[0]
    if length == 1:
        out[:n] = 0.0
        return
    total = x[0] - x[0]
    for i in range(length):
        total += x[i]
        _tree_add(tree, m, ranks[i], 1, x[i])
    last = n - length
    for a in range(last + 1):
        out[a] = _tree_dev(tree, vals, top, total, length)
        if a < last:
            old = x[a]
            new = x[a + length]
            total += new - old
            _tree_add(tree, m, ranks[a], -1, -old)
            _tree_add(tree, m, ranks[a + length], 1, new)
    tree[:, :] = 0


@njit(cache=True)
def _window_kernel(x, length):
    n = x.shape[0]
    out = np.empty(n - length + 1, dtype=np.float64)
    vals, ranks, m, top, tree = _compress(x)
    _slide(x, vals, ranks, m, top, tree, length, out)
    return out


@njit(cache=True)
def _pow2_kernel(x):
    n = x.shape[0]
    n_len = 1
    while (1 << n_len) <= n:
        n_len += 1
    lengths = np.empty(n_len, dtype=np.int64)
    out = np.full((n_len, n), np.inf)
    vals, ranks, m, top, tree = _compress(x)
    for k in range(n_len):
        length = 1 << k
        lengths[k] = length
        _slide(x, vals, ranks, m, top, tree, length, out[k])
    return lengths, out


@njit(cache=True)
def _rows_into(x, vals, ranks, m, top, tree, b0, out):
    """out[r, a] = dev(x[a : b0 + r + 1]) for a <= b0 + r, +inf for a > b0 + r."""
    for row in range(out.shape[0]):
        b = b0 + row
        out[row, b + 1 :] = np.inf
        total = x[0] - x[0]
        for a in range(b, -1, -1):
            v = x[a]
            total += v
            _tree_add(tree, m, ranks[a], 1, v)
            out[row, a] = _tree_dev(tree, vals, top, total, b - a + 1)
        tree[:, :] = 0


@njit(cache=True)
def _rows_kernel(x, b0, b1):
    out = np.empty((b1 - b0, x.shape[0]), dtype=np.float64)
    vals, ranks, m, top, tree = _compress(x)
    _rows_into(x, vals, ranks, m, top, tree, b0, out)
    return out


# --------------------------------------------------------------------------------------
# Wavelet matrix over value ranks: count and sum of the values <= q in any x[a : b + 1].
#
# Level l (most significant rank bit first) stores, for the sequence as permuted by the
# levels above, the running number of elements whose bit is 0 (``zeros_before``) and
# the running sum of their values (``low_sums``); elements with bit 0 move, stably, to
# the front of the next level (Claude, Navarro, Ordonez, "The wavelet matrix", SPIRE
# 2012). A query walks down the levels once: ``O(log m)`` for ``m`` distinct values.


@njit(cache=True)
def _wavelet_build(x, ranks, levels):
    n = x.shape[0]
    zeros = np.zeros(levels, dtype=np.int64)
    zeros_before = np.zeros((levels, n + 1), dtype=np.int64)
    low_sums = np.zeros((levels, n + 1), dtype=x.dtype)
    cur_r = ranks.copy()
    cur_x = x.copy()
    nxt_r = np.empty_like(cur_r)
    nxt_x = np.empty_like(cur_x)
    for lev in range(levels):
        shift = levels - 1 - lev
        count = 0
        acc = x[0] - x[0]
        for i in range(n):
            if (cur_r[i] >> shift) & 1 == 0:
                count += 1
                acc += cur_x[i]
            zeros_before[lev, i + 1] = count
            low_sums[lev, i + 1] = acc
        zeros[lev] = count
        lo = 0
        hi = count
        for i in range(n):
            if (cur_r[i] >> shift) & 1 == 0:
                nxt_r[lo] = cur_r[i]
                nxt_x[lo] = cur_x[i]
                lo += 1
            else:
                nxt_r[hi] = cur_r[i]
                nxt_x[hi] = cur_x[i]
                hi += 1
        cur_r, nxt_r = nxt_r, cur_r
        cur_x, nxt_x = nxt_x, cur_x
    return zeros, zeros_before, low_sums


@njit(cache=True, inline="always")
def _wavelet_low(zeros, zeros_before, low_sums, vals, m, lo, hi, q):
    """Count and sum of the values ``<= q`` among ``x[lo:hi]``."""
    c = 0
    s = vals[0] - vals[0]
    top = np.searchsorted(vals[:m], q, side="right") - 1  # largest rank with value <= q
    if top < 0:
        return c, s
    levels = zeros.shape[0]
    for lev in range(levels):
        z_lo = zeros_before[lev, lo]
        z_hi = zeros_before[lev, hi]
        if (top >> (levels - 1 - lev)) & 1:
            c += z_hi - z_lo
            s += low_sums[lev, hi] - low_sums[lev, lo]
            lo = zeros[lev] + (lo - z_lo)
            hi = zeros[lev] + (hi - z_hi)
        else:
            lo = z_lo
            hi = z_hi
    c += hi - lo
    s += (hi - lo) * vals[top]
    return c, s


@njit(cache=True)
def interval_dev(zeros, zeros_before, low_sums, vals, m, prefix, a, b):
    """dev(x[a : b + 1]) from the wavelet matrix; the formula of ``_tree_dev``."""
    if a == b:
        return 0.0
    length = b - a + 1
    total = prefix[b + 1] - prefix[a]
    q, r = mean_split(total, length)
    c, s = _wavelet_low(zeros, zeros_before, low_sums, vals, m, a, b + 1, q)
    d = dev_from_low(c, s, q, r, length)
    return d if d > 0.0 else 0.0


@njit(cache=True)
def _interval_devs_kernel(zeros, zeros_before, low_sums, vals, m, prefix, lo, hi, out):
    for i in range(lo.shape[0]):
        out[i] = interval_dev(zeros, zeros_before, low_sums, vals, m, prefix, lo[i], hi[i])


@njit(cache=True)
def _half_units_kernel(zeros, zeros_before, low_sums, vals, m, prefix, lo, hi, shift, cap, out):
    """out[i] = min(floor(2**shift * dev(x[lo_i : hi_i + 1]) / 2), cap) in integers:
    ``2**shift A + u1 r + floor(u0 r / L)`` (:meth:`DeviationIndex.half_units`)."""
    for i in range(lo.shape[0]):
        a = lo[i]
        length = hi[i] - a + 1
        total = prefix[hi[i] + 1] - prefix[a]
        q = total // length
        r = total - q * length
        c, s = _wavelet_low(zeros, zeros_before, low_sums, vals, m, a, hi[i] + 1, q)
        whole = c * q - s  # sum over the low values of q - x_i: exact, >= 0
        if whole > (cap >> shift):
            out[i] = cap
            continue
        u1, u0 = divmod(c << shift, length)
        out[i] = min((whole << shift) + u1 * r + (u0 * r) // length, cap)


class DeviationIndex:
    """Deviation of any interval of one vector in ``O(log m)`` (``m`` distinct values).

    Built once in ``O(N log m)`` time and ``16 N log2 m`` bytes: prefix sums and a
    wavelet matrix over the ranks of the values, from which the count ``c`` and sum
    ``s`` of the values ``<= floor(mean)`` of any interval follow, then
    ``dev = 2 (c * mean - s)`` exactly as in the module docstring. On integer input
    the result is bit-identical to :func:`all_interval_deviations_rows`.
    (Li et al., PVLDB 2014, §3.)
    """

    __slots__ = ("m", "n", "prefix", "tables", "vals")

    def __init__(self, x):
        xv = _as_vector(x)
        self.n = xv.shape[0]
        vals = np.unique(xv)
        self.m = int(vals.shape[0])
        self.vals = vals
        ranks = np.searchsorted(vals, xv).astype(np.int64)
        levels = max(1, (self.m - 1).bit_length())
        self.tables = _wavelet_build(xv, ranks, levels)
        self.prefix = np.concatenate((np.zeros(1, dtype=xv.dtype), np.cumsum(xv)))

    def parts(self) -> tuple:
        """The arrays the jitted query ``interval_dev`` takes, in order."""
        return (*self.tables, self.vals, self.m, self.prefix)

    def _intervals(self, lo, hi) -> tuple[np.ndarray, np.ndarray]:
        lo_a = np.atleast_1d(np.asarray(lo))
        hi_a = np.atleast_1d(np.asarray(hi))
        for name, a in (("lo", lo_a), ("hi", hi_a)):
            if a.ndim != 1 or a.dtype.kind not in "iu":
                raise ValidationError(f"{name} must be a 1-D array of integers")
        if lo_a.shape != hi_a.shape:
            raise ValidationError("lo and hi must have the same length")
        lo_a = np.ascontiguousarray(lo_a, dtype=np.int64)
        hi_a = np.ascontiguousarray(hi_a, dtype=np.int64)
        if np.any(lo_a < 0) or np.any(hi_a >= self.n) or np.any(lo_a > hi_a):
            raise ValidationError(f"intervals must satisfy 0 <= lo <= hi < N = {self.n}")
        return lo_a, hi_a

    def __call__(self, lo, hi) -> np.ndarray:
        """``dev(x[lo_i : hi_i + 1])`` for integer arrays ``lo <= hi`` (last bin inclusive)."""
        lo_a, hi_a = self._intervals(lo, hi)
        out = np.empty(lo_a.shape[0], dtype=np.float64)
        _interval_devs_kernel(*self.parts(), lo_a, hi_a, out)
        return out

    def half_units(self, lo, hi, shift: int, cap: int) -> np.ndarray:
        """``min(floor(2**shift * dev / 2), cap)`` of each interval, exactly, as int64.

        For the biased split's deviation score on the lattice ``2**-shift``. With
        ``A = c q - s`` (module doc: ``L dev / 2 = A L + c r``) the score is
        ``2**shift A + floor(u r / L)``, ``u = 2**shift c = u1 L + u0``, which is
        ``u1 r + floor(u0 r / L)``: ``u1 <= 2**shift``, ``u0 r < L**2``, so every
        product stays in int64 for ``N <= 2**31`` and ``shift <= 8``, and ``2**shift A``
        below ``cap + 2**shift`` once clamped. Integer vectors only.
        """
        if self.prefix.dtype != np.int64:
            raise ValidationError("exact half deviations need an integer vector")
        if not 0 <= shift <= 8 or not 0 <= cap <= 2**62 or self.n > 2**31:
            raise ValidationError("need 0 <= shift <= 8, 0 <= cap <= 2**62 and N <= 2**31")
        lo_a, hi_a = self._intervals(lo, hi)
        out = np.empty(lo_a.shape[0], dtype=np.int64)
        _half_units_kernel(*self.parts(), lo_a, hi_a, int(shift), int(cap), out)
        return out


def interval_deviations(x, lo, hi) -> np.ndarray:
    """``dev(x[lo_i : hi_i + 1])`` for each pair (last bin inclusive), vectorised.

    ``O(N log m)`` to index ``x`` (``m`` distinct values), then ``O(log m)`` per
    interval; see :class:`DeviationIndex` to reuse the index.
    (Li et al., PVLDB 2014, §3; Kellaris et al., §4.)
    """
    return DeviationIndex(x)(lo, hi)


# --------------------------------------------------------------------------------------
# Validated wrappers.


def _as_vector(x) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise InputTypeError(
            f"x must be a numeric (integer or float) vector, got dtype {arr.dtype}"
        )
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValidationError(f"x must be a non-empty 1-D vector, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        out = np.ascontiguousarray(arr, dtype=np.float64)
        if not np.all(np.isfinite(out)):
            raise ValidationError("x must be finite (found NaN or infinity)")
        return out
    if float(np.abs(arr.astype(np.float64)).sum()) >= _MAX_ABS_SUM:
        raise ValidationError(
            "sum(|x|) must be below 2**61 for exact integer arithmetic; pass a float vector instead"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def _as_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputTypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def window_deviations(x, length: int) -> np.ndarray:
    """Deviation around the mean of every window of one length.

    Returns ``out`` (``float64``, length ``N - length + 1``) with
    ``out[a] = sum_{i=a}^{a+length-1} |x_i - mean(x[a : a + length])|``.
    Sliding window over a Fenwick tree of value ranks: ``O(N log N)`` time, ``O(N)``
    memory. (Li et al., PVLDB 2014, §3; Kellaris et al., §4.)
    """
    xv = _as_vector(x)
    length = _as_int(length, "length")
    if not 1 <= length <= xv.shape[0]:
        raise ValidationError(f"length must be in [1, N={xv.shape[0]}], got {length}")
    return _window_kernel(xv, length)


def pow2_deviations(x) -> tuple[np.ndarray, np.ndarray]:
    """Deviations of the S~ candidates: every power-of-two length at every start.

    Returns ``(lengths, dev)``: ``lengths = [1, 2, 4, ..., 2**K]`` (``int64``,
    ``K = floor(log2 N)``) and ``dev`` of shape ``(K + 1, N)`` with
    ``dev[k, a] = dev(x[a : a + lengths[k]])`` for ``a <= N - lengths[k]`` and
    ``+inf`` where the window does not fit (``+inf`` survives adding noise and is
    never chosen by :func:`~dphist._numeric.l1_dp.l1_partition_pow2`). Row 0 is all zeros.
    ``O(N log^2 N)`` time (one sliding window per length), ``8 N (K + 1)`` bytes.
    (Li et al., PVLDB 2014, §3, approximate partition; Kellaris et al., §4, S~.)
    """
    xv = _as_vector(x)
    return _pow2_kernel(xv)


def all_interval_deviations_rows(x, b0: int, b1: int) -> np.ndarray:
    """Deviations of every interval whose last bin lies in ``[b0, b1)`` (S1, streamed).

    Returns ``rows`` of shape ``(b1 - b0, N)`` with
    ``rows[r, a] = dev(x[a : b0 + r + 1])`` for ``a <= b0 + r`` and ``+inf`` for
    ``a > b0 + r``. Row ``r`` is built by inserting ``x[b], x[b - 1], ..., x[0]`` into a
    Fenwick tree of value ranks: ``O(N log N)`` per row, ``O(N^2 log N)`` over all
    ``N`` rows. Feed consecutive blocks (plus constant and noise) to
    :func:`~dphist._numeric.l1_dp.dp_rows` or use :func:`l1_partition_streamed`; never
    more than one block is held.
    (Li et al., PVLDB 2014, §3; Kellaris et al., §4, S1.)
    """
    xv = _as_vector(x)
    n = xv.shape[0]
    b0 = _as_int(b0, "b0")
    b1 = _as_int(b1, "b1")
    if not 0 <= b0 <= b1 <= n:
        raise ValidationError(f"need 0 <= b0 <= b1 <= N={n}, got b0={b0}, b1={b1}")
    return _rows_kernel(xv, b0, b1)


def all_interval_deviations(x) -> np.ndarray:
    """Full deviation matrix ``D[a, b] = dev(x[a : b + 1])`` (``a <= b``), ``+inf`` below.

    ``O(N^2 log N)`` time and ``8 N^2`` bytes, so refused for ``N > 4096``: stream
    :func:`all_interval_deviations_rows` instead.
    """
    xv = _as_vector(x)
    n = xv.shape[0]
    if n > MAX_FULL_MATRIX_N:
        raise ValidationError(
            f"all_interval_deviations holds N*N values and is limited to "
            f"N <= {MAX_FULL_MATRIX_N} (got N={n}); stream all_interval_deviations_rows"
        )
    return np.ascontiguousarray(_rows_kernel(xv, 0, n).T)


def l1_partition_streamed(
    x,
    to_costs: Callable[[int, np.ndarray], np.ndarray] | None = None,
    *,
    block_rows: int | None = None,
    prefer_singleton: bool = False,
) -> np.ndarray:
    """All-interval (S1) partition with costs streamed block by block: ``O(N)`` memory.

    For ``b0 = 0, B, 2B, ...`` computes ``dev = all_interval_deviations_rows(x, b0,
    b0 + B)`` and ``cost = to_costs(b0, dev)`` (same shape; entry ``[r, a]`` is the
    cost of ``x[a : b0 + r + 1]``; only ``a <= b0 + r`` is read, the rest may hold
    anything). The callback is where a caller adds its constant and noise, e.g.
    ``dev + 1/eps2 + Z``; it may modify ``dev`` in place and return it (``dev`` is a
    buffer reused for the next block: do not keep it). ``None`` uses the deviations
    themselves. Each block is checked (finite where read), consumed by the DP of
    :func:`~dphist._numeric.l1_dp.dp_rows` and dropped, so one block of ``B * N``
    values exists at a time (the default ``B`` keeps it near 32 MB). Time
    ``O(N^2 log N)``. Same tie rules as :func:`~dphist._numeric.l1_dp.l1_partition_full`,
    and the same result on the same costs. Returns the group starts.
    """
    xv = _as_vector(x)
    n = xv.shape[0]
    if block_rows is None:
        block_rows = max(1, _BLOCK_ELEMENTS // n)
    block_rows = _as_int(block_rows, "block_rows")
    if block_rows < 1:
        raise ValidationError(f"block_rows must be >= 1, got {block_rows}")
    F = np.empty(n + 1, dtype=np.float64)
    F[0] = 0.0
    argmin = np.zeros(n + 1, dtype=np.int64)
    flag = bool(prefer_singleton)
    vals, ranks, m, top, tree = _compress(xv)  # once for all blocks
    buffer = np.empty((min(block_rows, n), n), dtype=np.float64)
    for b0 in range(0, n, block_rows):
        b1 = min(n, b0 + block_rows)
        rows = buffer[: b1 - b0]
        _rows_into(xv, vals, ranks, m, top, tree, b0, rows)
        if to_costs is not None:
            rows = np.asarray(to_costs(b0, rows), dtype=np.float64)
            if rows.shape != (b1 - b0, n):
                raise ValidationError(
                    f"to_costs must return shape {(b1 - b0, n)}, got {rows.shape}"
                )
            rows = np.ascontiguousarray(rows)
        bad = dp_rows_checked(F, argmin, rows, b0, flag)
        if bad >= 0:
            raise ValidationError(
                f"to_costs(...) must be finite on every candidate interval (row {bad} of "
                f"the block starting at b0={b0})"
            )
    return starts_from_back(argmin)
