"""Isotonic regression for group-size histograms.

Post-processing steps of the ranked ("Hg") and cumulative ("Hc") estimators of Kuo,
Chiu, Kifer, Hay, Machanavajjhala, *Differentially Private Hierarchical Count-of-Counts
Histograms*, PVLDB 11(11) 2018 (arXiv:1804.00370), §4.2-§4.3 and §5.1; formulas as
restored in the group-size spec (§3, §6.4, §6.5, §7.3):

* :func:`isotonic_l2`, :func:`isotonic_l2_inplace`: least-squares isotonic regression
  (pool-adjacent-violators, PAV), O(n).
* :func:`isotonic_l1`: least-absolute-deviation isotonic regression with lower-median
  block values, O(n log n).
* :func:`bounded_isotonic`: the cumulative method's fit, non-decreasing inside
  ``[lower, upper]`` with an optional fixed last entry.
* :func:`project_simplex`: the naive method's fit, Euclidean projection onto
  ``{x >= 0, sum(x) = G}`` in closed form (§6.1).
* :func:`block_starts`: the block structure of a fit.

The per-group variances, integerisation and the three views of a node are in
:mod:`.group_views`.

Everything here is post-processing of released values: no budget, no noise.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .segment import check_flag
from .vectors import first_nonfinite, real_number, real_vector

__all__ = [
    "NORMS", "block_starts", "bounded_isotonic", "isotonic_l1", "isotonic_l2",
    "isotonic_l2_inplace", "project_simplex",
]  # fmt: skip

Norm = Literal["l2", "l1"]
NORMS: tuple[str, ...] = ("l2", "l1")


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _reverse(y):
    i = 0
    j = y.shape[0] - 1
    while i < j:
        t = y[i]
        y[i] = y[j]
        y[j] = t
        i += 1
        j -= 1


@njit(cache=True)
def _is_long(marks, i):
    return (marks[i >> 3] >> (i & 7)) & 1


@njit(cache=True)
def _set_long(marks, i):
    marks[i >> 3] |= np.uint8(1 << (i & 7))


@njit(cache=True)
def _start_of_block_ending_at(y, marks, e):
    """Start of the finished block whose last index is ``e - 1``."""
    if _is_long(marks, e - 1):
        return np.int64(y[e - 1])
    return np.int64(e - 1)


@njit(cache=True)
def _pav_inplace(y, marks):
    """Unweighted PAV that keeps its block stack inside ``y``; returns the block count.

    A finished block ``[s, e)`` stores its value at ``y[s]``. A block of two or more
    entries also stores ``s`` (exactly, as a float) at ``y[e-1]`` and sets bit ``e-1``
    of ``marks``; an unmarked last entry means a one-entry block. Walking back from a
    block start therefore finds the previous block in O(1), and the only extra memory
    is the n/8-byte bit set.

    The pooling order and every floating-point operation follow Busing's PAVA (J. Stat.
    Softw. 102(1), 2022) as implemented by ``scipy.optimize.isotonic_regression`` with
    unit weights (merge while the previous value is ``>=``; block sums re-formed as
    weight * value), so the output is bit-for-bit scipy's.
    """
    n = y.shape[0]
    if n == 0:
        return 0
    top_s = 0  # start of the top block of the stack (it ends at i)
    xb_prev = y[0]
    wb_prev = 1.0
    nblocks = 1
    i = 1
    while i < n:
        xb = y[i]
        wb = 1.0
        s = i
        nblocks += 1
        if xb_prev >= xb:
            nblocks -= 1
            sb = wb_prev * xb_prev + wb * xb
            wb += wb_prev
            xb = sb / wb
            s = top_s
            while i < n - 1 and xb >= y[i + 1]:
                i += 1
                sb += 1.0 * y[i]
                wb += 1.0
                xb = sb / wb
            while s > 0:
                ps = _start_of_block_ending_at(y, marks, s)
                pv = y[ps]
                if not (pv >= xb):
                    break
                nblocks -= 1
                pw = float(s - ps)
                sb += pw * pv
                wb += pw
                xb = sb / wb
                s = ps
            y[s] = xb
            if i > s:
                y[i] = float(s)
                _set_long(marks, i)
        top_s = s
        xb_prev = xb
        wb_prev = wb
        i += 1
    # Expand back to front: a block's bookkeeping is read before it is overwritten,
    # and blocks to the left are untouched.
    e = n
    while e > 0:
        s = _start_of_block_ending_at(y, marks, e)
        v = y[s]
        for j in range(s, e):
            y[j] = v
        e = s
    return nblocks


@njit(cache=True)
def _sift_down(heap, size, v):
    """Put ``v`` at the root of the max-heap ``heap[:size]`` and restore the order."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] > heap[c]:
            c += 1
        if heap[c] <= v:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = v


@njit(cache=True)
def _sift_up(heap, size, v):
    """Append ``v`` to the max-heap ``heap[:size]`` (the caller grows ``size``)."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] >= v:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = v


@njit(cache=True)
def _l1_pav(y, out, heap):
    """Lower-median PAV in heap form; writes the fit into ``out``.

    Forward pass: the max-heap holds the breakpoints of the convex, piecewise-linear
    function ``f_i(t)`` = least L1 cost of a non-decreasing fit of ``y[:i+1]`` whose
    last value is at most ``t``. Adding ``y[i]`` adds ``|t - y[i]|``; taking the running
    minimum over ``t`` drops the breakpoint on the right, which is the heap maximum if
    it exceeds ``y[i]``. The maximum after step ``i`` is the smallest minimiser of
    ``f_i``. Backward pass: ``x[n-1]`` = that minimiser, ``x[i] = min(top_i, x[i+1])``,
    the smallest optimal value given ``x[i+1]``. Each step is O(log n).
    """
    n = y.shape[0]
    for i in range(n):  # the heap holds i entries before step i
        v = y[i]
        if i > 0 and heap[0] > v:
            _sift_down(heap, i, v)
        _sift_up(heap, i, v)
        out[i] = heap[0]
    for i in range(n - 2, -1, -1):
        if out[i + 1] < out[i]:
            out[i] = out[i + 1]


# ------------------------------------------------------------------ isotonic fits


def isotonic_l2(
    y: npt.ArrayLike,
    *,
    increasing: bool = True,
    weights: npt.ArrayLike | None = None,
) -> np.ndarray:
    """Least-squares isotonic regression: ``argmin sum_i w_i (x_i - y_i)**2``, x monotone.

    PAV (spec §6.4.1; Barlow et al. 1972) via ``scipy.optimize.isotonic_regression``:
    O(n) time. The solution is unique; each block value is the weighted mean of its
    inputs, so ``sum(w*x) == sum(w*y)`` up to rounding. Weights must be finite and > 0.
    Peak extra memory is about 24 bytes per entry (scipy copies ``y`` and the weights
    and keeps block boundaries); :func:`isotonic_l2_inplace` needs n/8 bytes.
    Used by the ranked method on noisy sorted group sizes (Kuo et al. 2018, §4.2).
    """
    arr = real_vector(y, "y")
    inc = check_flag(increasing, "increasing")
    w = None
    if weights is not None:
        w = real_vector(weights, "weights")
        if w.shape != arr.shape:
            raise ValidationError(
                f"weights must have the same length as y ({arr.shape[0]}); got {w.shape[0]}"
            )
        if np.any(w <= 0.0):
            raise ValidationError("weights must be > 0")
    if arr.size == 0:
        return arr.copy()
    from scipy.optimize import isotonic_regression  # on first use: not loaded by a publish

    return np.asarray(isotonic_regression(arr, weights=w, increasing=inc).x)


def isotonic_l2_inplace(y: np.ndarray, *, increasing: bool = True) -> np.ndarray:
    """Unweighted L2 isotonic regression that overwrites ``y`` and returns it.

    For very long vectors (the ranked method on 10**8 groups): O(n) time and n/8
    bytes of extra memory, against about 24n bytes for :func:`isotonic_l2`. The
    result is bit-for-bit that of ``scipy.optimize.isotonic_regression`` (same pooling
    order and arithmetic, see ``_pav_inplace``). ``y`` must be a writeable,
    C-contiguous float64 1-D array of finite values; it is checked before anything is
    written. ``increasing=False`` reverses ``y`` in place, fits, and reverses back.
    Spec §6.4.1.
    """
    if not isinstance(y, np.ndarray):
        raise ValidationError("y must be a numpy array (it is overwritten in place)")
    if y.dtype != np.float64 or y.ndim != 1:
        raise ValidationError(
            f"y must be a 1-D float64 array; got {y.ndim}-D {y.dtype} "
            "(use isotonic_l2 for other inputs)"
        )
    if not y.flags.c_contiguous or not y.flags.writeable:
        raise ValidationError("y must be C-contiguous and writeable")
    inc = check_flag(increasing, "increasing")
    if first_nonfinite(y) >= 0:
        raise ValidationError("y contains NaN or infinite values")
    if y.shape[0] >= 2**53:
        raise ValidationError("y is too long: block starts are stored as exact floats")
    marks = np.zeros((y.shape[0] + 7) // 8, dtype=np.uint8)
    if not inc:
        _reverse(y)
    _pav_inplace(y, marks)
    if not inc:
        _reverse(y)
    return y


def isotonic_l1(y: npt.ArrayLike, *, increasing: bool = True) -> np.ndarray:
    """Least-absolute-deviation isotonic regression: ``argmin sum_i |x_i - y_i|``.

    The L1 optimum is not unique. This returns the **lower-median PAV** solution
    (spec §6.4.3; Robertson and Waltman 1968): every block takes the lower median of
    its inputs, i.e. the ``ceil(m/2)``-th smallest of its ``m`` values, so for an even
    block the smaller of the two middle values. It is also the pointwise smallest L1
    minimiser. Any L1 minimiser serves the estimators equally; this convention only
    makes the output deterministic, so compare objectives, not vectors, with other
    solvers. Output entries are entries of ``y`` (integral on integral input).

    Computed in the heap form of median PAV (the priority-queue dynamic program, e.g.
    Rote, SOSA 2019), see ``_l1_pav``: O(n log n) time, 16 bytes per entry of extra
    memory (a heap and the output). ``increasing=False`` fits a reversed copy and
    reverses the result (again the pointwise smallest minimiser).
    """
    arr = real_vector(y, "y")
    inc = check_flag(increasing, "increasing")
    src = arr if inc else arr[::-1].copy()
    out = np.empty_like(src)
    if src.size:
        _l1_pav(src, out, np.empty_like(src))
    return out if inc else out[::-1].copy()


def bounded_isotonic(
    y: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    last: float | None = None,
    norm: Norm = "l2",
) -> np.ndarray:
    """Non-decreasing fit inside ``[lower, upper]``, optionally with a fixed last entry.

    The cumulative method's step 2 (spec §6.3, §6.4.4; Kuo et al. 2018, §4.3): minimise
    ``sum_i loss(x_i - y_i)`` (``norm`` "l2": squared, "l1": absolute) subject to
    ``lower <= x_0 <= ... <= x_{n-1} <= upper``. With ``last`` given, ``x_{n-1}`` is fixed
    to that public value (for Hc: the number of groups G) and ``y[-1]`` is ignored; the
    other entries are then also bounded by ``last``. Infinite bounds are allowed. Cells
    below a public minimum size ``m0`` (fixed to 0, no noise) are not passed: fit
    ``y[m0:]`` with ``lower=0`` and prepend the zeros.

    Solved by clipping the unconstrained fit (:func:`isotonic_l2` or
    :func:`isotonic_l1`) of the free entries to ``[lower, min(upper, last)]``. Why
    this is optimal: by monotonicity the box is just ``lower <= x_0`` and
    ``x_{n-1} <= upper``, i.e. the isotonic regression of the chain
    ``(lower, y_0, ..., y_{n-1}, upper)`` whose two end points have infinite weight (a
    fixed ``last`` is a third such point). PAV's result does not depend on the order in
    which adjacent violators are pooled, so pool the free entries first, which gives the
    unconstrained fit; then the end points absorb exactly the leading blocks below
    ``lower`` and the trailing blocks above ``upper``, and a block holding an
    infinite-weight point takes that point's value (as its weighted mean, or its
    weighted median for L1). For L1 the clipped vector is one of possibly many optima;
    the tests compare it with LP and QP solutions. O(n) for "l2", O(n log n) for "l1".
    """
    arr = real_vector(y, "y")
    lo = real_number(lower, "lower")
    hi = real_number(upper, "upper")
    if lo > hi:
        raise ValidationError(f"lower must be <= upper; got lower={lo!r} > upper={hi!r}")
    if norm not in NORMS:
        raise ValidationError(f"norm must be one of {', '.join(map(repr, NORMS))}; got {norm!r}")
    fit = isotonic_l2 if norm == "l2" else isotonic_l1
    if last is None:
        return np.clip(fit(arr), lo, hi)
    fixed = real_number(last, "last")
    if not (math.isfinite(fixed) and lo <= fixed <= hi):
        raise ValidationError(f"last must be finite and within [lower, upper]; got {fixed!r}")
    if arr.size == 0:
        raise ValidationError("y is empty; with last given it needs at least one entry")
    out = np.empty_like(arr)
    out[:-1] = np.clip(fit(arr[:-1]), lo, fixed)
    out[-1] = fixed
    return out


def project_simplex(y: npt.ArrayLike, total: float) -> np.ndarray:
    """Euclidean projection onto ``{x >= 0, sum(x) = total}``: the naive method's fit.

    ``argmin ||x - y||_2`` subject to ``x >= 0`` and ``sum(x) = total`` (spec §6.1 step
    2; Kuo et al. 2018, §4.1 solve it with a QP solver). Closed form
    ``x_i = max(y_i - tau, 0)`` with ``tau`` found from the decreasingly sorted ``y``:
    the largest ``j`` with ``u_j > (sum_{t<=j} u_t - total)/j`` fixes
    ``tau = (sum_{t<=j} u_t - total)/j``. ``total = 0`` gives zeros. O(n log n).
    """
    v = real_vector(y, "y", allow_empty=False)
    t = real_number(total, "total")
    if not (math.isfinite(t) and t >= 0.0):
        raise ValidationError(f"total must be finite and >= 0; got {t!r}")
    if t == 0.0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - t
    j = np.arange(1, v.shape[0] + 1)
    rho = int(np.flatnonzero(u - css / j > 0.0)[-1])
    tau = css[rho] / (rho + 1)
    return np.maximum(v - tau, 0.0)


# --------------------------------------------------------- blocks and variances


def block_starts(fit: npt.ArrayLike) -> np.ndarray:
    """Start indices of the blocks of an isotonic fit: maximal runs of equal values.

    ``int64`` array beginning with 0 (the convention of ``segment.py``); block ``j`` is
    ``fit[starts[j]:starts[j+1]]``; lengths are ``np.diff(starts, append=len(fit))``.
    For :func:`isotonic_l2` these are exactly the PAV blocks (PAV pools equal
    neighbours, so adjacent blocks differ). For :func:`isotonic_l1` a run may join
    several PAV blocks with a common value, which is still the lower median of the
    run. Spec §6.4.2. O(n).
    """
    arr = real_vector(fit, "fit")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(arr[1:] != arr[:-1]) + 1)).astype(np.int64)
