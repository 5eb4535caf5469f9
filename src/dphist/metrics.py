"""Error metrics comparing a private estimate with the true histogram.

Every metric is exact and costs ``O(N)`` or ``O(N log N)`` for ``N`` bins. Range
metrics never enumerate ranges: with ``d = estimate - true`` and prefix errors
``e_0 = 0``, ``e_k = d_0 + ... + d_{k-1}``, the error of the half-open range
``[lo, hi)`` is ``e_hi - e_lo``, and sums of squared range errors have closed forms
(see :mod:`dphist.workloads`).

All functions take the true histogram and the estimate as the first two
(positional-only) arguments: equal-length, non-empty 1-D arrays of finite ints or
floats. Computations run in float64; the difference ``d`` is formed after casting
both inputs, so integer counts up to about ``2**53`` are handled exactly. Bad input
raises :class:`~dphist.errors.ValidationError` naming the argument; messages never
quote counts.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from dphist.errors import ValidationError, WorkloadError
from dphist.workloads import AllRanges, Workload

__all__ = [
    "emd",
    "interval_mse",
    "kld",
    "mre_range",
    "mre_single",
    "nonpositive_bins",
    "point_mse",
    "range_mse",
    "scaled_l2",
    "scaled_mse",
    "workload_mse",
]


# --------------------------------------------------------------------------- helpers


def _vector(values: ArrayLike, name: str) -> np.ndarray:
    """Validate a non-empty 1-D array of finite ints or floats (dtype kept)."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D numeric array: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise ValidationError(f"{name} must hold integers or floats, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValidationError(f"{name} is empty; pass at least one bin")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} contains NaN or infinite values")
    return arr


def _pair(
    first: ArrayLike, second: ArrayLike, names: tuple[str, str] = ("true", "estimate")
) -> tuple[np.ndarray, np.ndarray]:
    """Validate two histograms over the same bins."""
    a = _vector(first, names[0])
    b = _vector(second, names[1])
    if a.shape != b.shape:
        raise ValidationError(
            f"{names[1]} has {b.shape[0]} bins but {names[0]} has {a.shape[0]}; "
            "both must describe the same bins"
        )
    return a, b


def _f64(arr: np.ndarray) -> np.ndarray:
    return arr.astype(np.float64, copy=False)


def _diff(true: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """Per-bin error ``estimate - true`` in float64."""
    return _f64(estimate) - _f64(true)


def _prefix(values: np.ndarray) -> np.ndarray:
    """Prefix sums with a leading 0 (length ``N + 1``).

    Integer input is summed in int64 (exact) when that cannot overflow.
    """
    if values.dtype.kind in "iu" and float(np.abs(_f64(values)).sum()) < 2.0**62:
        out = np.zeros(values.shape[0] + 1, dtype=np.int64)
        np.cumsum(values, out=out[1:], dtype=np.int64)
        return out
    out = np.zeros(values.shape[0] + 1, dtype=np.float64)
    np.cumsum(_f64(values), out=out[1:])
    return out


def _window_sums(prefix_sums: np.ndarray, length: int) -> np.ndarray:
    """Sums over every window of ``length`` bins, in float64: O(N)."""
    n = prefix_sums.shape[0] - 1
    return _f64(prefix_sums[length:] - prefix_sums[: n + 1 - length])


def _length(length: object, n: int) -> int:
    if isinstance(length, bool | np.bool_) or not isinstance(length, int | np.integer):
        raise ValidationError(f"length must be an integer, got {type(length).__name__}")
    if not 1 <= int(length) <= n:
        raise ValidationError(f"length must lie in 1..N = 1..{n}, got {int(length)}")
    return int(length)


def _real(value: object, name: str, *, positive: bool) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValidationError(f"{name} must be a real number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out) or out < 0 or (positive and out == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValidationError(f"{name} must be finite and {bound}, got {out!r}")
    return out


def _workload_sse(true: np.ndarray, estimate: np.ndarray, workload: object) -> tuple[float, int]:
    """Sum of squared query errors over ``workload`` and its number of queries."""
    if not isinstance(workload, Workload):
        raise ValidationError(
            "workload must be a dphist.workloads.Workload (e.g. workloads.prefix(n)), "
            f"got {type(workload).__name__}"
        )
    n = true.shape[0]
    if workload.n != n:
        raise WorkloadError(
            f"workload is defined on n={workload.n} bins but the histograms have {n}"
        )
    return workload.squared_error_sum(_prefix(_diff(true, estimate))), workload.size


def _l1_total(true: np.ndarray) -> float:
    s = float(np.abs(_f64(true)).sum())
    if s == 0:
        raise ValidationError("true sums to 0, so the scaled error (divided by it) is undefined")
    return s


# --------------------------------------------------------------------------- squared errors


def point_mse(true: ArrayLike, estimate: ArrayLike, /) -> float:
    """Mean squared error per bin, ``mean((estimate - true)**2)``.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.

    Returns
    -------
    float

    Notes
    -----
    O(N).
    """
    d = _diff(*_pair(true, estimate))
    return float(np.dot(d, d) / d.shape[0])


def interval_mse(true: ArrayLike, estimate: ArrayLike, /) -> float:
    """Mean squared error over all ``N (N + 1) / 2`` ranges ``[lo, hi)``.

    Uses ``sum_{0<=i<j<=N} (e_j - e_i)**2 = (N + 1) sum_k (e_k - mean(e))**2`` on
    centred prefix errors, so the mean is ``2 sum_k (e_k - mean(e))**2 / N``.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.

    Returns
    -------
    float

    Notes
    -----
    O(N); no range is enumerated.
    """
    t, x = _pair(true, estimate)
    workload = AllRanges(t.shape[0])
    return workload.squared_error_sum(_prefix(_diff(t, x))) / workload.size


def range_mse(true: ArrayLike, estimate: ArrayLike, /, length: int) -> float:
    """Mean squared error over the ``N - length + 1`` ranges of one length.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.
    length : int
        Range length in ``1..N``; ``length=1`` gives :func:`point_mse`.

    Returns
    -------
    float

    Notes
    -----
    O(N).
    """
    t, x = _pair(true, estimate)
    w = _window_sums(_prefix(_diff(t, x)), _length(length, t.shape[0]))
    return float(np.dot(w, w) / w.shape[0])


def workload_mse(true: ArrayLike, estimate: ArrayLike, /, workload: Workload) -> float:
    """Mean squared error over the queries of a workload.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.
    workload : dphist.workloads.Workload
        Range workload on ``n = N`` bins (WorkloadError otherwise).

    Returns
    -------
    float

    Notes
    -----
    Cost of ``workload.squared_error_sum``: O(N) or O(N * number of lengths) for the
    implicit kinds, O(number of queries) for explicit ones.
    """
    t, x = _pair(true, estimate)
    sse, q = _workload_sse(t, x, workload)
    return sse / q


def scaled_mse(true: ArrayLike, estimate: ArrayLike, /, workload: Workload) -> float:
    """DPBench scaled average per-query error, squared-loss variant.

    ``sum_q (yhat_q - y_q)**2 / (s * q)``: the workload's summed squared query
    errors divided by the scale ``s = ||true||_1`` (the total count for a histogram
    of counts) and by the number of queries ``q``. This is the workload MSE divided
    by ``s``; for the point workload and Laplace noise of scale ``1/eps`` it is about
    ``2 / (eps**2 s)``. Dividing a squared error by ``s`` (not ``s**2``) means it is
    not invariant when the scale grows and epsilon shrinks by the same factor.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.
    workload : dphist.workloads.Workload
        Range workload on ``n = N`` bins.

    Returns
    -------
    float

    Raises
    ------
    ValidationError
        If ``true`` is all zeros (scale 0).

    See Also
    --------
    scaled_l2 : the Euclidean-norm variant.
    """
    t, x = _pair(true, estimate)
    s = _l1_total(t)
    sse, q = _workload_sse(t, x, workload)
    return sse / (s * q)


def scaled_l2(true: ArrayLike, estimate: ArrayLike, /, workload: Workload) -> float:
    """DPBench scaled average per-query error, Euclidean-norm variant (arguments and
    errors as for :func:`scaled_mse`).

    ``||yhat - y||_2 / (s * q)``: the Euclidean norm of the vector of query errors
    (the square root of the summed squared errors, not the sum itself) divided by
    the scale ``s = ||true||_1`` and the number of queries ``q``. It has the units of
    a count per record, so for data-independent Laplace methods it is unchanged
    when the scale is multiplied and epsilon divided by the same factor. Its
    magnitudes are far smaller than :func:`scaled_mse`; always say which is reported.
    """
    t, x = _pair(true, estimate)
    s = _l1_total(t)
    sse, q = _workload_sse(t, x, workload)
    return math.sqrt(sse) / (s * q)


# --------------------------------------------------------------------------- distribution shape


def kld(true: ArrayLike, estimate: ArrayLike, /, tau: float = 1e-3) -> float:
    """Kullback-Leibler divergence ``KL(p || q)`` of the normalised histograms.

    Convention (fixed so that results are deterministic and comparable):

    * ``p_i = (H_i + tau) / (sum(H) + N tau)`` with ``H = true`` (non-negative);
    * ``q_i = (max(E_i, 0) + tau) / (sum(max(E, 0)) + N tau)`` with ``E = estimate``,
      i.e. negative estimates are clipped to 0 first;
    * ``KLD = sum_i p_i ln(p_i / q_i)``, with ``0 ln(0 / q) = 0``.

    ``tau`` is a pseudo-count added to every bin of both sides, so a perfect
    estimate scores exactly 0 and an estimate that is zero or negative where the
    truth is positive gives a large but finite value. ``tau = 0`` is the strict
    mode: the plain divergence, ``+inf`` whenever some ``q_i = 0 < p_i`` (including
    an estimate with no positive bin at all). In strict mode ``true`` must have a
    positive total (ValidationError otherwise). Report it together with
    :func:`nonpositive_bins`.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins; ``true`` must be non-negative.
    tau : float, optional
        Pseudo-count per bin, finite and ``>= 0`` (default ``1e-3``, in counts).

    Returns
    -------
    float
        A value in ``[0, inf]``.

    Notes
    -----
    O(N).
    """
    t, x = _pair(true, estimate)
    tau = _real(tau, "tau", positive=False)
    h = _f64(t)
    if np.any(h < 0):
        raise ValidationError("true must be non-negative to be normalised into a distribution")
    g = np.maximum(_f64(x), 0.0)
    n = h.shape[0]
    p_total = float(h.sum()) + n * tau
    if p_total == 0:
        raise ValidationError(
            "true sums to 0 and tau = 0, so it is not a distribution; use tau > 0"
        )
    q_total = float(g.sum()) + n * tau
    if q_total == 0:
        return math.inf  # strict mode, no positive estimate: q is 0 wherever p > 0
    p = (h + tau) / p_total
    q = (g + tau) / q_total
    support = p > 0
    p, q = p[support], q[support]
    if np.any(q == 0):
        return math.inf
    value = float(np.dot(p, np.log(p) - np.log(q)))
    return max(value, 0.0)  # guard against a rounding-level negative


def nonpositive_bins(true: ArrayLike, estimate: ArrayLike, /) -> int:
    """Number of bins where the estimate is ``<= 0`` but the true count is positive
    (histograms over the same ``N`` bins; O(N)): the bins that make the strict KLD
    infinite."""
    t, x = _pair(true, estimate)
    return int(np.count_nonzero((x <= 0) & (t > 0)))


# --------------------------------------------------------------------------- relative errors


def mre_single(
    true: ArrayLike, estimate: ArrayLike, /, delta: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Mean relative error of single bins, as a curve over the true count.

    For each distinct value ``k`` in ``true``, the mean over bins with
    ``true_i == k`` of ``|true_i - estimate_i| / max(true_i, delta)``.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.
    delta : float, optional
        Floor of the denominator, finite and ``> 0`` (default 1), so that empty
        bins give an absolute error.

    Returns
    -------
    values : numpy.ndarray
        The distinct values of ``true``, sorted (dtype of ``true``).
    mre : numpy.ndarray
        float64, ``mre[j]`` is the mean relative error over bins equal to
        ``values[j]``.

    Notes
    -----
    O(N log N) (one sort).
    """
    t, x = _pair(true, estimate)
    delta = _real(delta, "delta", positive=True)
    rel = np.abs(_diff(t, x)) / np.maximum(_f64(t), delta)
    values, inverse = np.unique(t, return_inverse=True)
    inverse = inverse.ravel()
    sums = np.bincount(inverse, weights=rel, minlength=values.shape[0])
    counts = np.bincount(inverse, minlength=values.shape[0])
    return values, sums / counts


def mre_range(true: ArrayLike, estimate: ArrayLike, /, length: int, delta: float = 1.0) -> float:
    """Mean relative error over every range of one length.

    Mean over the ``N - length + 1`` windows of ``|q - qhat| / max(q, delta)``, with
    ``q`` the true window sum and ``qhat`` the estimated one.

    Parameters
    ----------
    true, estimate : array_like
        Histograms over the same ``N`` bins.
    length : int
        Window length in ``1..N``.
    delta : float, optional
        Floor of the denominator, finite and ``> 0`` (default 1).

    Returns
    -------
    float

    Notes
    -----
    O(N). True window sums of integer counts are formed exactly in int64.
    """
    t, x = _pair(true, estimate)
    length = _length(length, t.shape[0])
    delta = _real(delta, "delta", positive=True)
    q = _window_sums(_prefix(t), length)
    err = _window_sums(_prefix(_diff(t, x)), length)
    return float(np.mean(np.abs(err) / np.maximum(q, delta)))


# --------------------------------------------------------------------------- transport


def emd(a: ArrayLike, b: ArrayLike, /, *, normalize: bool = False) -> float:
    """Earth mover's distance between two histograms on the same ordered bins.

    Moving one unit of mass to an adjacent bin costs 1, so the distance is
    ``sum_{k=1..N-1} |A_k - B_k|`` with ``A_k``, ``B_k`` the sums of the first ``k``
    bins ("records to move", in bin widths).

    Parameters
    ----------
    a, b : array_like
        Histograms over the same ``N`` bins.
    normalize : bool, optional
        If false (default) the totals of ``a`` and ``b`` must be equal (up to a
        relative ``1e-9`` for floats); otherwise ValidationError, because mass
        cannot be moved into existence. Pass true to compare shapes instead:
        negative entries are clipped to 0 and each histogram is rescaled to sum to 1
        (ValidationError if nothing positive is left); the result is then in bin
        widths per unit of probability, in ``[0, N - 1]``.

    Returns
    -------
    float

    Notes
    -----
    O(N).
    """
    u, v = _pair(a, b, names=("a", "b"))
    if normalize:
        fu = np.maximum(_f64(u), 0.0)
        fv = np.maximum(_f64(v), 0.0)
        for name, arr in (("a", fu), ("b", fv)):
            if not arr.sum() > 0:
                raise ValidationError(
                    f"{name} has no positive mass after clipping negatives to 0, so it "
                    "cannot be normalised"
                )
        fu = fu / fu.sum()
        fv = fv / fv.sum()
    else:
        fu, fv = _f64(u), _f64(v)
        if u.dtype.kind in "iu" and v.dtype.kind in "iu":
            same = int(u.sum(dtype=np.int64)) == int(v.sum(dtype=np.int64))
        else:
            same = math.isclose(fu.sum(), fv.sum(), rel_tol=1e-9, abs_tol=1e-9)
        if not same:
            raise ValidationError(
                "a and b have different totals; the unnormalised EMD needs equal totals. "
                "Pass normalize=True to compare them as distributions (negatives clipped "
                "to 0, each rescaled to sum to 1)."
            )
    cumulative = np.cumsum(fv - fu)[:-1]
    return float(np.abs(cumulative).sum())
