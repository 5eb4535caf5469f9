"""Isotonic regression, rounding and view conversions for group-size histograms.

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
* :func:`block_starts`, :func:`group_variances`, :func:`size_variances`: the block
  structure of a fit and the per-group variance heuristics of §7.3.
* :func:`round_half_up`, :func:`largest_remainder`, :func:`apportion`,
  :func:`cumulative_round`: integerisation.
* ``hist_to_*`` / ``cumulative_to_*`` / ``ranked_to_*``: the three views of one node,
  size histogram ``H``, cumulative ``Hc`` and ranked sizes ``Hg`` (§3.2).

Everything here is post-processing of released values: no budget, no noise.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Literal

import numpy as np
import numpy.typing as npt
from numba import njit

from ..errors import ValidationError
from .segment import check_flag

__all__ = [
    "METHODS", "NORMS", "apportion", "block_starts", "bounded_isotonic", "cumulative_round",
    "cumulative_to_hist", "cumulative_to_ranked", "group_variances", "hist_to_cumulative",
    "hist_to_ranked", "isotonic_l1", "isotonic_l2", "isotonic_l2_inplace", "largest_remainder",
    "project_simplex", "ranked_to_cumulative", "ranked_to_hist", "round_half_up",
    "size_variances",
]  # fmt: skip

Norm = Literal["l2", "l1"]
NORMS: tuple[str, ...] = ("l2", "l1")
Method = Literal["ranked", "cumulative", "naive"]
METHODS: tuple[str, ...] = ("ranked", "cumulative", "naive")

# Variance of one noisy cell is approximated by the Laplace variance 2/eps**2 (§7.3);
# a count of the cumulative method is a difference of two cells, hence 4/eps**2; a
# naive count carries noise of scale 2/eps, hence 8/eps**2 (our extension of §7.3).
_NOISE_FACTOR = {"ranked": 2.0, "cumulative": 4.0, "naive": 8.0}


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _first_nonfinite(y):
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return i
    return -1


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


# ------------------------------------------------------------------------ validation


def _real_vector(y: npt.ArrayLike, name: str, *, allow_empty: bool = True) -> np.ndarray:
    """``y`` as a fresh-or-shared contiguous float64 1-D array of finite values."""
    if isinstance(y, str | bytes):
        raise ValidationError(f"{name} must be a 1-D array of numbers, not a string")
    try:
        arr = np.asarray(y)
    except Exception as exc:  # ragged nested sequences and the like
        raise ValidationError(f"{name} must be a 1-D array of numbers ({exc})") from None
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValidationError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D; got an array with {arr.ndim} dimensions")
    if arr.size == 0 and not allow_empty:
        raise ValidationError(f"{name} is empty")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if _first_nonfinite(arr) >= 0:
        raise ValidationError(f"{name} contains NaN or infinite values")
    return arr


def count_vector(values: npt.ArrayLike, name: str) -> np.ndarray:
    """Non-negative integer counts (integer dtype, or floats with integral values)."""
    if isinstance(values, str | bytes):
        raise ValidationError(f"{name} must be a 1-D array of integers, not a string")
    try:
        arr = np.asarray(values)
    except Exception as exc:
        raise ValidationError(f"{name} must be a 1-D array of integers ({exc})") from None
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D; got an array with {arr.ndim} dimensions")
    if arr.dtype == np.bool_:
        raise ValidationError(f"{name} must hold integers, not booleans")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise ValidationError(f"{name} must hold whole numbers")
    elif not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError(f"{name} must hold integers; got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValidationError(f"{name} must be non-negative")
    if arr.max() >= 2**62:
        raise ValidationError(f"{name} holds values too large for int64 arithmetic")
    return arr.astype(np.int64)


def _bound(value: object, name: str) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise ValidationError(f"{name} must be a real number; got {type(value).__name__}")
    v = float(value)
    if math.isnan(v):
        raise ValidationError(f"{name} must not be NaN")
    return v


def _positive(value: object, name: str) -> float:
    v = _bound(value, name)
    if not (math.isfinite(v) and v > 0.0):
        raise ValidationError(f"{name} must be a finite number > 0; got {v!r}")
    return v


def _total(value: object, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise ValidationError(f"{name} must be an integer, not a boolean")
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real) and float(value).is_integer():
        return int(value)
    raise ValidationError(f"{name} must be an integer; got {value!r}")


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
    arr = _real_vector(y, "y")
    inc = check_flag(increasing, "increasing")
    w = None
    if weights is not None:
        w = _real_vector(weights, "weights")
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
    if _first_nonfinite(y) >= 0:
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
    arr = _real_vector(y, "y")
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
    arr = _real_vector(y, "y")
    lo = _bound(lower, "lower")
    hi = _bound(upper, "upper")
    if lo > hi:
        raise ValidationError(f"lower must be <= upper; got lower={lo!r} > upper={hi!r}")
    if norm not in NORMS:
        raise ValidationError(f"norm must be one of {', '.join(map(repr, NORMS))}; got {norm!r}")
    fit = isotonic_l2 if norm == "l2" else isotonic_l1
    if last is None:
        return np.clip(fit(arr), lo, hi)
    fixed = _bound(last, "last")
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
    v = _real_vector(y, "y", allow_empty=False)
    t = _bound(total, "total")
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
    arr = _real_vector(fit, "fit")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(arr[1:] != arr[:-1]) + 1)).astype(np.int64)


def _method(method: object) -> str:
    if method not in METHODS:
        raise ValidationError(
            f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}"
        )
    return str(method)


_CELLS = {"ranked": 1.0, "cumulative": 2.0, "naive": 1.0}  # noisy cells per released count


def size_variances(
    hist: npt.ArrayLike, eps: float, *, method: Method, cell_variance: float | None = None
) -> np.ndarray:
    """Per-size variance heuristic of §7.3 (Kuo et al. 2018, §5.1), from a released ``Ĥ``.

    ``V[i] = c / (eps**2 * Ĥ[i])`` for every size ``i`` with ``Ĥ[i] > 0`` and NaN for
    empty sizes, where ``c = 2`` for the ranked method (``method="ranked"``, Hg: a block
    of ``n`` noisy values of variance ``2/eps**2`` averaged, ``n`` approximated by the
    number of groups of that size; also used for L1 fits), ``c = 4`` for the
    cumulative method (``"cumulative"``, Hc: a count is the difference of two noisy
    cumulative cells, spread over its ``Ĥ[i]`` groups) and ``c = 8`` for the naive
    method (``"naive"``: one cell with noise of scale ``2/eps``; our extension, the
    paper gives no heuristic for it). ``eps`` is the budget of the
    node's level. Every group of size ``i`` gets ``V[i]``. O(len(hist)).

    ``cell_variance`` (any noise, e.g. Gaussian under zCDP): the variance ``v`` of one
    noisy cell of the level's measurement replaces ``2 (sensitivity/eps)**2``, so
    ``V[i] = m v / Ĥ[i]`` with ``m = 2`` cells per count for the cumulative method and
    1 otherwise (the factors ``c`` above are ``m`` times the Laplace ``v``).
    """
    h = count_vector(hist, "hist")
    m = _method(method)
    if cell_variance is None:
        e = _positive(eps, "eps")
        c = _NOISE_FACTOR[m] / (e * e)
    else:
        c = _CELLS[m] * _positive(cell_variance, "cell_variance")
    out = np.full(h.shape[0], np.nan)
    nz = h > 0
    out[nz] = c / h[nz]
    return out


def group_variances(
    ranked: npt.ArrayLike,
    eps: float,
    *,
    method: Method,
    blocks: npt.ArrayLike | None = None,
) -> np.ndarray:
    """Per-group variance heuristic of §7.3, one value per entry of the ranked sizes.

    ``V[k] = c / (eps**2 * n(k))`` with ``c`` as in :func:`size_variances` and ``n(k)`` the
    number of groups whose (rounded) size equals ``ranked[k]``. For the ranked method
    the exact-block refinement of §7.3 is available: pass ``blocks``, the block starts
    (:func:`block_starts`) of the unrounded isotonic fit, and ``n(k)`` becomes the length
    of the block containing ``k``. ``ranked`` must be sorted non-decreasing integer
    sizes. O(G).
    """
    r = count_vector(ranked, "ranked")
    e = _positive(eps, "eps")
    m = _method(method)
    if r.size and np.any(r[1:] < r[:-1]):
        raise ValidationError("ranked must be sorted in non-decreasing order")
    if blocks is None:
        starts = np.concatenate(([0], np.flatnonzero(r[1:] != r[:-1]) + 1)) if r.size else r
    else:
        if m != "ranked":
            raise ValidationError("blocks are only meaningful for method='ranked'")
        starts = count_vector(blocks, "blocks")
        if r.size == 0:
            if starts.size:
                raise ValidationError("blocks must be empty when ranked is empty")
        elif (
            starts.size == 0
            or starts[0] != 0
            or np.any(np.diff(starts) <= 0)
            or starts[-1] >= r.size
        ):
            raise ValidationError(
                "blocks must be strictly increasing starts beginning with 0, below len(ranked)"
            )
    lengths = np.diff(starts, append=r.size)
    return np.repeat(_NOISE_FACTOR[m] / (e * e) / lengths, lengths)


# --------------------------------------------------------------------------- rounding


def round_half_up(x: npt.ArrayLike) -> np.ndarray:
    """``floor(x + 1/2)`` as ``int64``, computed exactly (spec §6.5).

    Halves go up (``0.5 -> 1``, ``2.5 -> 3``, ``-0.5 -> 0``); the reference code rounds
    half to even instead. Non-decreasing in ``x``, so sorted inputs stay sorted. Uses
    ``r = floor(x)`` and ``x - r >= 0.5`` (exact in floating point), so values such as
    0.49999999999999994 are not pushed up by the addition's rounding. O(n).
    """
    arr = np.asarray(x)
    scalar = arr.ndim == 0
    v = _real_vector(arr.reshape(-1), "x")
    if v.size and np.max(np.abs(v)) >= 2.0**62:
        raise ValidationError("x holds values too large for int64")
    r = np.floor(v)
    out = (r + (v - r >= 0.5)).astype(np.int64)
    return out.reshape(arr.shape) if not scalar else out.reshape(())


def largest_remainder(x: npt.ArrayLike, total: int) -> np.ndarray:
    """Largest-remainder ("Hamilton") rounding of reals ``x`` summing to the integer ``total``.

    ``LRR(x, T)`` of spec §6.5: floors, then ``k = T - sum(floor(x))`` entries with the
    largest fractional parts go up by one; ties go to the lower index. The result sums
    to ``T`` and every entry moves by less than 1; only entries with a fractional part
    move up. ``sum(x)`` must equal ``T`` up to floating-point rounding. Fractional parts
    are compared as computed floats: for proportional shares of integers use
    :func:`apportion`, which compares exact remainders. O(n log n).
    """
    v = _real_vector(x, "x")
    t = _total(total, "total")
    if v.size and np.max(np.abs(v)) >= 2.0**52:
        raise ValidationError("x holds values too large for exact floors")
    s = math.fsum(v.tolist())
    if abs(s - t) > 1e-9 * max(1.0, math.fsum(np.abs(v).tolist())):
        raise ValidationError(f"x must sum to total = {t}; its sum is {s!r}")
    f = np.floor(v)
    frac = v - f
    out = f.astype(np.int64)
    k = t - int(out.sum())
    if not 0 <= k <= int(np.count_nonzero(frac > 0.0)):
        raise ValidationError(f"x must sum to total = {t}; its sum is {s!r}")
    order = np.argsort(-frac, kind="stable")
    out[order[:k]] += 1
    return out


def apportion(weights: npt.ArrayLike, total: int) -> np.ndarray:
    """Exact largest-remainder split of the integer ``total`` in proportion to ``weights``.

    ``LRR(total * w / sum(w), total)`` (spec §6.5) in integer arithmetic: floors
    ``total*w_j // W`` and remainders ``total*w_j % W`` are exact, so equal fractional
    parts are recognised as ties and go to the lower index. Used by the proportional
    step of the matching (spec §7.4). ``weights`` are non-negative integers with a
    positive sum, ``total >= 0``. Each share is ``floor`` or ``ceil`` of its quota; with
    ``total <= sum(w)`` no share exceeds its weight. O(n log n).
    """
    w = count_vector(weights, "weights")
    t = _total(total, "total")
    if t < 0:
        raise ValidationError(f"total must be >= 0; got {t}")
    big = int(w.sum()) if w.size else 0
    if big <= 0:
        raise ValidationError("weights must have a positive sum")
    if t > 0 and int(w.max()) > (2**63 - 1) // t:
        raise ValidationError("total * max(weights) overflows int64")
    prod = w * t
    out = prod // big
    rem = prod % big
    k = t - int(out.sum())
    order = np.argsort(-rem, kind="stable")
    out[order[:k]] += 1
    return out


def cumulative_round(x: npt.ArrayLike) -> np.ndarray:
    """Round a non-negative real histogram through its prefix sums.

    ``out = diff(round_half_up(cumsum(x)))``, with ``cumsum`` starting at 0: integers
    ``>= 0`` whose prefix sums are the rounded prefix sums of ``x``. So
    ``sum(out) = round_half_up(sum(x))`` and every prefix sum is within 1/2 of the
    real one, hence the EMD to ``x`` is at most ``len(x)/2`` (spec §4.1). For an
    isotonic cumulative fit ``c`` this is ``cumulative_to_hist(round_half_up(c))``, the
    rounding of the cumulative method (spec §6.3 step 3). O(n).
    """
    v = _real_vector(x, "x")
    if v.size and v.min() < 0.0:
        raise ValidationError("x must be non-negative")
    c = round_half_up(np.cumsum(v))
    return np.diff(c, prepend=0)


# ------------------------------------------------------------------ view conversions


def hist_to_cumulative(hist: npt.ArrayLike) -> np.ndarray:
    """``Hc[i]`` = number of groups of size ``<= i`` (prefix sums of ``H``). Spec §3.2. O(len)."""
    return np.cumsum(count_vector(hist, "hist"))


def _check_cumulative(cumulative: npt.ArrayLike) -> np.ndarray:
    c = count_vector(cumulative, "cumulative")
    if c.size and np.any(c[1:] < c[:-1]):
        raise ValidationError("cumulative must be non-decreasing")
    return c


def cumulative_to_hist(cumulative: npt.ArrayLike) -> np.ndarray:
    """``H[0] = Hc[0]``, ``H[i] = Hc[i] - Hc[i-1]``; ``Hc`` non-decreasing, ``>= 0``. O(len)."""
    return np.diff(_check_cumulative(cumulative), prepend=0)


def hist_to_ranked(hist: npt.ArrayLike) -> np.ndarray:
    """Ranked sizes ``Hg``: size ``i`` written ``H[i]`` times, ascending. O(len + G) memory."""
    h = count_vector(hist, "hist")
    return np.repeat(np.arange(h.shape[0], dtype=np.int64), h)


def _length(length: object, default: int, needed: int) -> int:
    if length is None:
        return default
    n = _total(length, "length")
    if n < needed:
        raise ValidationError(f"length must be at least {needed} (largest size + 1); got {n}")
    return n


def ranked_to_hist(ranked: npt.ArrayLike, length: int | None = None) -> np.ndarray:
    """``H[i] = #{k : Hg[k] = i}`` on sizes ``0..length-1`` (default: largest size + 1). O(G)."""
    r = count_vector(ranked, "ranked")
    need = int(r.max()) + 1 if r.size else 0
    return np.bincount(r, minlength=_length(length, need, need)).astype(np.int64)


def cumulative_to_ranked(cumulative: npt.ArrayLike) -> np.ndarray:
    """``Hg[k] = min{i : Hc[i] >= k}`` for ``k = 1..G``, ``G = Hc[-1]``. O(G log len)."""
    c = _check_cumulative(cumulative)
    g = int(c[-1]) if c.size else 0
    return np.searchsorted(c, np.arange(1, g + 1), side="left").astype(np.int64)


def ranked_to_cumulative(ranked: npt.ArrayLike, length: int | None = None) -> np.ndarray:
    """``Hc[i] = #{k : Hg[k] <= i}`` on sizes ``0..length-1`` (default: largest + 1).

    ``ranked`` must be sorted non-decreasing. O(length log G).
    """
    r = count_vector(ranked, "ranked")
    if r.size and np.any(r[1:] < r[:-1]):
        raise ValidationError("ranked must be sorted in non-decreasing order")
    need = int(r[-1]) + 1 if r.size else 0
    n = _length(length, need, need)
    return np.searchsorted(r, np.arange(n), side="right").astype(np.int64)
