"""SORTaki building blocks: bucket error formulas, partitioners, the WAF finalizer.

Doudalis and Mehrotra, "SORTaki: a framework to integrate sorting with differentially
private histogramming algorithms" (§IV, §V), with the corrections of
methods-data-aware.md §7.2 and §12.4. A SORTaki method releases noisy counts ``y``
(the *initializer*, per-bin noise variance ``var_in``), optionally sorts them
(descending, stable), cuts the working order into contiguous buckets (the
*partitioner*) and publishes one fresh noisy total per bucket (the *finalizer*, noise
variance ``var_f`` on each bucket total). Everything here is post-processing of
``y`` and of the bucket totals: no data, no noise, no budgets. With Laplace noise of
sensitivity 1, ``var = 2/eps**2`` (:func:`laplace_variance`); the formulas only use
variances, so they hold for any independent zero-mean noise (Gaussian included).

Bucket error formulas (§V.A), for a bucket ``v`` of ``n`` working-order positions
and ``SSE_y(v) = S2 - S1**2/n`` of the noisy values:

* ``"ahp"``: ``SSE_y(v) + var_f/n``. On true counts this is the expected squared
  error of the AHP finalizer (bucket mean of a fresh noisy total); on noisy ``y`` it
  is AHP's plug-in estimate, biased upwards by ``(n-1)*var_in``.
* ``"uee"`` (eq. 5): ``SSE_y(v) - (n-1)*var_in + var_in*var_f/(var_f + n*var_in)``.
  ``E[SSE_y] = SSE_h + (n-1)*var_in``, so UEE is an unbiased estimate of the WAF
  error ``SSE_h(v) + var_in*var_f/(var_f + n*var_in)`` (eq. 4; with Laplace noise
  ``2/(eps_in**2 + n*eps_f**2)``). Unbiased only for a bucket fixed in advance: a
  bucket chosen by looking at ``y`` (sorting!) or thresholded values carries
  selection bias (§12.4).

Both, and any custom formula accepted here, have the form ``SSE_y(v) + g(|v|)``: the
partitioners take the length term ``g`` as a table, so every bucket costs O(1) from
the centred prefix sums of :func:`dphist._numeric.segment.centred_prefix_sums`.

A partition is an ``int64`` array of bucket starts beginning with 0 (``[0, 3, 7]``:
buckets ``[0,3), [3,7), [7,N)``); buckets are half-open ``[lo, hi)``.

Tie-break of the exact partitioners: when several last buckets give the same value,
the longest (smallest start) wins, as in :mod:`dphist._numeric.segment`.

Remark on §V.A. The paper says the noise term of eq. (4) is largest when
``eps_in = eps_f``. For a fixed ``eps_in + eps_f`` it is largest at
``eps_in = n*eps_f`` (``eps_in**2 + n*eps_f**2`` is smallest there); the two agree only
for ``n = 1``. Nothing below depends on that sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .compact import labels_from_starts
from .segment import (
    centred_prefix_sums,
    length_cost,
    monotone_queue,
    starts_from_back,
)

__all__ = [
    "ERRORS", "ahp_error", "bucket_errors", "check_nonnegative", "checked_prefix_sums",
    "dp_partition", "dpcube_kernel", "dpcube_partition", "greedy_partition",
    "laplace_variance", "partition_error", "reciprocals", "uee_error", "waf_estimate",
    "waf_variance", "waf_weights",
]  # fmt: skip

ErrorName = Literal["ahp", "uee"]
ERRORS: tuple[str, ...] = ("ahp", "uee")
#: An error formula: a name from ERRORS, or ``g(sizes) -> length terms`` (vectorised).
ErrorFormula = ErrorName | Callable[[np.ndarray], npt.ArrayLike]

_LENGTHS = ("all", "pow2")
_SOLVERS = ("auto", "dp", "monge")

# Relative tolerance of the convexity check of a custom length term.
_CONVEX_TOL = 1e-12


# --------------------------------------------------------------------------- kernels


_cost = length_cost  # EF([lo, hi)) = SSE + g[len]


@njit(cache=True)
def _costs_kernel(p1, p2, inv, g, lo, hi, out):
    for i in range(lo.shape[0]):
        out[i] = _cost(p1, p2, inv, g, lo[i], hi[i])


@njit(cache=True)
def _greedy(p1, p2, inv, g):
    """GP: extend the open bucket by the next position iff that lowers the error."""
    n = p1.shape[0] - 1
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    count = 1
    a = 0
    for i in range(1, n):
        merged = _cost(p1, p2, inv, g, a, i + 1)
        apart = _cost(p1, p2, inv, g, a, i) + _cost(p1, p2, inv, g, i, i + 1)
        if not merged < apart:
            starts[count] = i
            count += 1
            a = i
    return starts[:count].copy()


@njit(cache=True)
def _dp_all(p1, p2, inv, g, f, back):
    """F(t) = min over tau < t of F(tau) + EF([tau, t)); smallest tau wins ties."""
    n = p1.shape[0] - 1
    for t in range(1, n + 1):
        best = np.inf
        arg = -1
        for tau in range(t):
            v = f[tau] + _cost(p1, p2, inv, g, tau, t)
            if v < best:
                best = v
                arg = tau
        f[t] = best
        back[t] = arg


@njit(cache=True)
def _dp_pow2(p1, p2, inv, g, f, back):
    """As _dp_all over last buckets of length 1, 2, 4, ...; longest tried first."""
    n = p1.shape[0] - 1
    for t in range(1, n + 1):
        k = 1
        while 2 * k <= t:
            k *= 2
        best = np.inf
        arg = -1
        while k >= 1:
            v = f[t - k] + _cost(p1, p2, inv, g, t - k, t)
            if v < best:
                best = v
                arg = t - k
            k //= 2
        f[t] = best
        back[t] = arg


@njit(cache=True)
def _sse(p1, p2, inv, lo, hi):
    s1 = p1[hi] - p1[lo]
    return max((p2[hi] - p2[lo]) - s1 * s1 * inv[hi - lo], 0.0)


@njit(cache=True)
def dpcube_kernel(p1, p2, inv, xi, gain):
    """Split [a, b) at its first SSE-optimal cut while SSE/len > xi and the cut lowers
    the SSE by more than gain (explicit stack; -inf turns a test off)."""
    n = p1.shape[0] - 1
    is_start = np.zeros(n, dtype=np.bool_)
    is_start[0] = True
    st_lo = np.empty(n, dtype=np.int64)
    st_hi = np.empty(n, dtype=np.int64)
    st_lo[0] = 0
    st_hi[0] = n
    top = 1
    while top > 0:
        top -= 1
        a = st_lo[top]
        b = st_hi[top]
        m = b - a
        whole = _sse(p1, p2, inv, a, b) if m >= 2 else 0.0
        if m < 2 or not whole * inv[m] > xi:
            continue
        best = np.inf
        cut = a + 1
        for k in range(a + 1, b):
            v = _sse(p1, p2, inv, a, k) + _sse(p1, p2, inv, k, b)
            if v < best:
                best = v
                cut = k
        if not best + gain < whole:
            continue
        is_start[cut] = True
        st_lo[top] = a
        st_hi[top] = cut
        st_lo[top + 1] = cut
        st_hi[top + 1] = b
        top += 2
    return np.flatnonzero(is_start).astype(np.int64)


# --------------------------------------------------------------------------- inputs


def check_nonnegative(name: str, value: object, *, allow_inf: bool = False) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise ValidationError(
            f"{name} must be a non-negative real number; got {type(value).__name__}"
        )
    v = float(value)
    if math.isnan(v) or v < 0.0 or (math.isinf(v) and not allow_inf):
        bound = ">= 0 (inf allowed)" if allow_inf else "finite and >= 0"
        raise ValidationError(f"{name} must be {bound}; got {v!r}")
    return v


def checked_prefix_sums(y: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated float64 copy of y and its centred prefix sums."""
    p1, p2 = centred_prefix_sums(y)  # raises ValidationError for bad y
    return np.asarray(y, dtype=np.float64), p1, p2


def reciprocals(n: int) -> np.ndarray:
    inv = np.empty(n + 1)
    inv[0] = 0.0
    inv[1:] = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    return inv


def _length_term(error: object, n: int, var_in: object, var_f: object) -> tuple[np.ndarray, bool]:
    """Table g[0..n] (g[0] = 0) of the formula's length term, and whether g is convex."""
    k = np.arange(n + 1, dtype=np.float64)
    g = np.zeros(n + 1)
    if callable(error):
        if var_in is not None or var_f is not None:
            raise ValidationError(
                "var_in and var_f are only used by the named error formulas "
                f"{', '.join(map(repr, ERRORS))}; a custom formula carries its own terms"
            )
        try:
            vals = np.asarray(error(np.arange(1, n + 1, dtype=np.int64)), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"the custom error formula failed: {exc}") from None
        if vals.shape != (n,) or not np.all(np.isfinite(vals)):
            raise ValidationError(
                f"a custom error formula must map the {n} sizes 1..N to {n} finite numbers"
            )
        g[1:] = vals
        d2 = g[3:] - 2.0 * g[2:-1] + g[1:-2]
        scale = max(1.0, float(np.max(np.abs(vals))))
        return g, bool(np.all(d2 >= -_CONVEX_TOL * scale))
    if not isinstance(error, str) or error not in ERRORS:
        raise ValidationError(
            f"error must be one of {', '.join(map(repr, ERRORS))} or a callable "
            f"g(sizes) giving the length term of SSE + g(|v|); got {error!r}"
        )
    if var_f is None:
        raise ValidationError(f"var_f (finalizer noise variance) is required by error={error!r}")
    vf = check_nonnegative("var_f", var_f)
    if error == "ahp":
        if var_in is not None:
            check_nonnegative("var_in", var_in)
        g[1:] = vf / k[1:]
    else:
        if var_in is None:
            raise ValidationError(
                "var_in (initializer noise variance per bin) is required by 'uee'"
            )
        vi = check_nonnegative("var_in", var_in)
        if vi > 0.0 or vf > 0.0:
            g[1:] = vi * vf / (vf + k[1:] * vi)
        g[1:] -= (k[1:] - 1.0) * vi
    if not np.all(np.isfinite(g)):
        raise ValidationError("var_in / var_f are too large: the error terms overflow float64")
    return g, True  # var_f/n and a/(b + c n) are convex; the linear part does not matter


def _check_bounds(lo: npt.ArrayLike, hi: npt.ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray]:
    lo_a = np.asarray(lo)
    hi_a = np.asarray(hi)
    for name, a in (("lo", lo_a), ("hi", hi_a)):
        if a.ndim != 1 or a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
            raise ValidationError(f"{name} must be a 1-D array of integers")
    if lo_a.shape != hi_a.shape:
        raise ValidationError("lo and hi must have the same length")
    lo_a = lo_a.astype(np.int64)
    hi_a = hi_a.astype(np.int64)
    if np.any(lo_a < 0) or np.any(hi_a > n) or np.any(lo_a >= hi_a):
        raise ValidationError(f"buckets must satisfy 0 <= lo < hi <= N = {n}")
    return lo_a, hi_a


def _check_sizes(sizes: npt.ArrayLike) -> np.ndarray:
    arr = np.asarray(sizes)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError("sizes must be integers (bucket sizes)")
    if np.any(arr < 1):
        raise ValidationError("sizes must be >= 1")
    return arr.astype(np.float64)


def _waf_parts(sizes: np.ndarray, var_in: object, var_f: object) -> tuple[np.ndarray, np.ndarray]:
    """alpha1 and the per-bin variance of the WAF estimate, with the limits at 0 and inf."""
    vi = check_nonnegative("var_in", var_in, allow_inf=True)
    vf = check_nonnegative("var_f", var_f, allow_inf=True)
    if math.isinf(vi) and math.isinf(vf):
        raise ValidationError("var_in and var_f are both infinite: no estimate of the bucket mean")
    if vi == 0.0 and vf == 0.0:
        raise ValidationError("var_in and var_f are both 0: the weights are undefined")
    n = sizes
    if math.isinf(vi):  # no initializer: the AHP finalizer
        return np.zeros_like(n), vf / (n * n)
    if math.isinf(vf):  # no finalizer: the initializer's bucket mean
        return np.ones_like(n), vi / n
    denom = vf + n * vi
    return vf / denom, vi * vf / (n * denom)


# ------------------------------------------------------------------------ public API


def laplace_variance(eps: float, sensitivity: float = 1.0) -> float:
    """Variance ``2*(sensitivity/eps)**2`` of ``Lap(sensitivity/eps)``; ``inf`` for eps = 0.

    ``eps = 0`` stands for a stage that gets no budget (its estimate is absent).
    """
    e = check_nonnegative("eps", eps)
    s = check_nonnegative("sensitivity", sensitivity)
    if e == 0.0:
        return math.inf
    r = s / e
    v = 2.0 * r * r
    if math.isinf(v):
        raise ValidationError(f"eps = {e!r} is too small: the variance overflows float64")
    return v


def bucket_errors(
    y: npt.ArrayLike,
    lo: npt.ArrayLike,
    hi: npt.ArrayLike,
    error: ErrorFormula,
    *,
    var_in: float | None = None,
    var_f: float | None = None,
) -> np.ndarray:
    """Errors ``SSE_y([lo_i, hi_i)) + g(hi_i - lo_i)`` of the formula ``error``, vectorised.

    ``error`` is ``"ahp"`` (needs ``var_f``), ``"uee"`` (needs ``var_in`` and ``var_f``)
    or a callable ``g(sizes) -> terms`` (then pass neither variance). Doudalis and
    Mehrotra §V.A, eq. (5). O(N) for the prefix sums, then O(1) per bucket.
    """
    _, p1, p2 = checked_prefix_sums(y)
    n = p1.shape[0] - 1
    g, _ = _length_term(error, n, var_in, var_f)
    lo_a, hi_a = _check_bounds(lo, hi, n)
    out = np.empty(lo_a.shape[0])
    _costs_kernel(p1, p2, reciprocals(n), g, lo_a, hi_a, out)
    return out


def ahp_error(
    y: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike, *, var_f: float
) -> np.ndarray:
    """AHP bucket error ``SSE_y(v) + var_f/|v|`` (Laplace: ``+ 2/(|v| eps_f**2)``).

    Expected squared error of publishing the bucket mean of a fresh noisy total, when
    ``y`` are the true counts; AHP's plug-in estimate on noisy ``y``. Zhang et al.,
    SDM 2014, Thm 4.2; Doudalis and Mehrotra §IV.B. O(N) set-up, O(1) per bucket.
    """
    return bucket_errors(y, lo, hi, "ahp", var_f=var_f)


def uee_error(
    y: npt.ArrayLike,
    lo: npt.ArrayLike,
    hi: npt.ArrayLike,
    *,
    var_in: float,
    var_f: float,
) -> np.ndarray:
    """Unbiased expected error of a bucket under the WAF finalizer (eq. 5).

    ``UEE(v) = S2 - S1**2/n - (n-1)*var_in + var_in*var_f/(var_f + n*var_in)`` on the
    noisy values; with Laplace noise the last term is ``2/(eps_in**2 + n*eps_f**2)``.
    Its mean over the initializer's noise is the WAF error of eq. (4),
    ``SSE_h(v) + var_in*var_f/(var_f + n*var_in)``, for a bucket fixed in advance.
    Doudalis and Mehrotra §V.A; methods-data-aware.md §7.2. O(N) set-up, O(1) per bucket.
    """
    return bucket_errors(y, lo, hi, "uee", var_in=var_in, var_f=var_f)


def partition_error(
    y: npt.ArrayLike,
    starts: npt.ArrayLike,
    error: ErrorFormula,
    *,
    var_in: float | None = None,
    var_f: float | None = None,
) -> float:
    """Objective ``sum_v EF(v)`` of the partition given by ``starts``. O(N)."""
    arr, _, _ = checked_prefix_sums(y)
    n = arr.shape[0]
    labels_from_starts(starts, n)  # validates the starts
    s = np.asarray(starts).astype(np.int64)
    hi = np.append(s[1:], n)
    errs = bucket_errors(arr, s, hi, error, var_in=var_in, var_f=var_f)
    return math.fsum(errs.tolist())


def greedy_partition(
    y: npt.ArrayLike,
    error: ErrorFormula,
    *,
    var_in: float | None = None,
    var_f: float | None = None,
) -> np.ndarray:
    """GP: greedy left-to-right partition of the working order under ``error``.

    The open bucket ``v`` absorbs the next position ``u`` iff
    ``EF(v + u) < EF(v) + EF(u)``; otherwise ``v`` is closed and ``u`` opens the next
    one. Doudalis and Mehrotra §V.B, Algorithm 5. Unlike AHP's greedy clustering it
    compares with the singleton's own error rather than a lower bound on it
    (methods-data-aware.md §7.2), so it merges more readily. O(N) time and memory.
    """
    _, p1, p2 = checked_prefix_sums(y)
    n = p1.shape[0] - 1
    g, _ = _length_term(error, n, var_in, var_f)
    return _greedy(p1, p2, reciprocals(n), g)


def dp_partition(
    y: npt.ArrayLike,
    error: ErrorFormula,
    *,
    var_in: float | None = None,
    var_f: float | None = None,
    lengths: Literal["all", "pow2"] = "all",
    solver: Literal["auto", "dp", "monge"] = "auto",
) -> np.ndarray:
    """DPP: contiguous partition of the working order minimising ``sum_v EF(v)``.

    Prefix recursion ``F(0) = 0``, ``F(t) = min_{tau<t} F(tau) + EF([tau, t))``, which
    gives the same optimum as the paper's interval recursion (Doudalis and Mehrotra
    §V.B, Algorithm 6, ``O(N**3)``); ties go to the longest last bucket.

    * ``lengths="all"``, ``solver="dp"``: every bucket, O(N**2) time (~1-2 ns per
      pair: ~1 s at N = 32768).
    * ``lengths="all"``, ``solver="monge"``: O(N log N), exact when ``y`` is monotone
      and the length term is convex (true for ``"ahp"`` and ``"uee"``): then SSE and
      ``g`` satisfy the quadrangle inequality, and a queue of candidate starts with
      binary search finds the optimum (Hirschberg and Larmore, SIAM J. Comput. 1987).
      Where candidates tie within rounding the partition may differ from the DP's,
      with the same objective to that precision. Raises on non-monotone ``y``.
    * ``solver="auto"`` (default): ``"monge"`` when it applies, else ``"dp"``.
    * ``lengths="pow2"``: only buckets of length 1, 2, 4, ... (at any position), the
      DAWA-style restriction (the paper writes "multiple of 2", methods-data-aware.md
      §7.2); O(N log N) time (the paper states O(N log**2 N)).

    O(N) memory throughout.
    """
    if lengths not in _LENGTHS:
        raise ValidationError(f"lengths must be one of {_LENGTHS}; got {lengths!r}")
    if solver not in _SOLVERS:
        raise ValidationError(f"solver must be one of {_SOLVERS}; got {solver!r}")
    if lengths == "pow2" and solver == "monge":
        raise ValidationError("solver='monge' needs lengths='all'")
    arr, p1, p2 = checked_prefix_sums(y)
    n = arr.shape[0]
    g, convex = _length_term(error, n, var_in, var_f)
    f = np.empty(n + 1)
    back = np.empty(n + 1, dtype=np.int64)
    f[0] = 0.0
    back[0] = 0
    inv = reciprocals(n)
    if lengths == "pow2":
        _dp_pow2(p1, p2, inv, g, f, back)
        return starts_from_back(back)
    use_monge = solver == "monge"
    if solver != "dp":
        d = np.diff(arr)
        monotone = bool(np.all(d >= 0) or np.all(d <= 0))
        if solver == "monge" and not monotone:
            raise ValidationError(
                "solver='monge' needs y sorted (non-decreasing or non-increasing)"
            )
        if solver == "monge" and not convex:
            raise ValidationError("solver='monge' needs a length term g that is convex in |v|")
        use_monge = monotone and convex
    if use_monge:
        monotone_queue(p1, p2, inv, g, 0.0, f, back)
    else:
        _dp_all(p1, p2, inv, g, f, back)
    return starts_from_back(back)


def dpcube_partition(y: npt.ArrayLike, *, xi: float) -> np.ndarray:
    """DPCube's 1-D partitioner on noisy values (methods-data-aware.md §6.1).

    A bucket ``B`` with ``|B| >= 2`` and ``SSE_y(B)/|B| > xi`` is split where
    ``SSE(left) + SSE(right)`` is smallest (first such cut on ties), recursively.
    SORTaki sets ``xi`` to the initializer's noise variance, ``2/eps**2`` (Doudalis and
    Mehrotra §VI; read as ``eps_in``), so a bucket whose spread is no larger than pure
    noise is kept. Xiao, Gardner, Xiong, ICDE 2012. O(N * depth) time (O(N**2) worst
    case), O(N) memory.
    """
    _, p1, p2 = checked_prefix_sums(y)
    t = check_nonnegative("xi", xi, allow_inf=True)
    return dpcube_kernel(p1, p2, reciprocals(p1.shape[0] - 1), t, -np.inf)


def waf_weights(
    sizes: npt.ArrayLike, *, var_in: float, var_f: float
) -> tuple[np.ndarray, np.ndarray]:
    """WAF weights ``(alpha1, alpha2)`` per bucket size ``n`` (Doudalis and Mehrotra eq. 3).

    The bucket mean is estimated by ``alpha1*avg_in + alpha2*avg_f`` from the
    initializer's mean ``avg_in`` (variance ``var_in/n``) and the finalizer's
    ``avg_f = noisy total/n`` (variance ``var_f/n**2``), independent and unbiased.
    Unbiasedness needs ``alpha1 + alpha2 = 1``; the variance
    ``alpha1**2*var_in/n + (1-alpha1)**2*var_f/n**2`` is smallest at

        alpha1 = var_f / (var_f + n*var_in),   alpha2 = n*var_in / (var_f + n*var_in)

    (inverse-variance weights; Laplace: ``eps_in**2/(eps_in**2 + n*eps_f**2)``). The
    paper's Algorithm 4 computes ``alpha1`` once for all buckets; it depends on ``n``
    and is computed per bucket here (methods-data-aware.md §12.4). ``var_in = inf``
    (no initializer) gives ``alpha1 = 0``, the AHP finalizer; ``var_f = inf`` gives
    ``alpha1 = 1``. Arrays of the shape of ``sizes``; O(1) per bucket.
    """
    a1, _ = _waf_parts(_check_sizes(sizes), var_in, var_f)
    return a1, 1.0 - a1


def waf_variance(sizes: npt.ArrayLike, *, var_in: float, var_f: float) -> np.ndarray:
    """Per-bin variance of the WAF estimate: ``var_in*var_f / (n*(var_f + n*var_in))``.

    The minimum of the variance over ``alpha1`` (:func:`waf_weights`), i.e.
    ``1/(n/var_in + n**2/var_f)``. Summed over a bucket it is the noise term
    ``var_in*var_f/(var_f + n*var_in)`` of eq. (4) and of UEE (Laplace:
    ``2/(eps_in**2 + n*eps_f**2)``). Doudalis and Mehrotra §V.A, eq. (2)-(4).
    """
    _, var = _waf_parts(_check_sizes(sizes), var_in, var_f)
    return var


def waf_estimate(
    y: npt.ArrayLike,
    starts: npt.ArrayLike,
    totals: npt.ArrayLike | None,
    *,
    var_in: float,
    var_f: float,
) -> np.ndarray:
    """WAF finalizer (Doudalis and Mehrotra §V.B, Algorithm 4), in the working order.

    ``y``: the initializer's noisy values; ``totals``: one fresh noisy total per
    bucket of ``starts``. Every bin of bucket ``v`` gets
    ``alpha1*mean(y[v]) + alpha2*totals[v]/|v|`` with the weights of
    :func:`waf_weights`; per-bin variance :func:`waf_variance`. With ``var_in = inf``
    the values of ``y`` are ignored (only its length is used): the AHP finalizer.
    ``totals`` may be None when ``var_f = inf``. Mapping back to the original bin
    order is the caller's. O(N).
    """
    arr, _, _ = checked_prefix_sums(y)
    n = arr.shape[0]
    labels = labels_from_starts(starts, n)  # validates the starts
    s = np.asarray(starts).astype(np.int64)
    sizes = np.diff(np.append(s, n))
    a1, _ = _waf_parts(sizes.astype(np.float64), var_in, var_f)
    est = np.zeros(s.shape[0])
    if a1.any():
        est += a1 * (np.add.reduceat(arr, s) / sizes)
    if totals is None:
        if not np.all(a1 == 1.0):
            raise ValidationError(
                "totals (one noisy total per bucket) is required unless var_f = inf"
            )
    else:
        tot = np.asarray(totals)
        if tot.dtype == np.bool_ or not (
            np.issubdtype(tot.dtype, np.integer) or np.issubdtype(tot.dtype, np.floating)
        ):
            raise ValidationError(f"totals must hold real numbers; got dtype {tot.dtype}")
        if tot.shape != s.shape:
            raise ValidationError(
                f"totals must hold one value per bucket ({s.shape[0]}); got shape {tot.shape}"
            )
        tot = tot.astype(np.float64)
        if not np.all(np.isfinite(tot)):
            raise ValidationError("totals contains NaN or infinite values")
        est += (1.0 - a1) * (tot / sizes)
    return est[labels]
