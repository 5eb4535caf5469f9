"""SReB_GCA's greedy grouping (GGS) of sorted noisy counts by relative error.

SReB_GCA (Chen et al., Algorithms 17(7):293, 2024, §5; spec §8). With
``lam = 1/eps2``, ``d(H) = max(H, delta)`` and a cluster ``C`` of size ``n`` and mean
``M``, the estimated relative error of a bin is ``e(H; C) = (|H - M| + lam/n)/d(H)``
(Theorem 1, upper bound of the exact mean absolute error) and the cluster score is
``E(C) = mean_{H in C} e(H; C)``; :func:`greedy_group_relative` implements GGS.

Input ``s`` must be sorted ascending (non-decreasing). A grouping is an ``int64`` array
of group starts beginning with 0. Everything here is post-processing of released
values: no noise, no budget, no randomness.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .clustering import GreedyTrace
from .segment import check_eps, check_flag, check_monotone, check_starts, check_y

__all__ = ["greedy_group_relative", "group_relative_errors"]


@njit(cache=True)
def _ggs(s, lam, delta, merge_out, keep_out, starts):
    """GGS (seed 001 Algorithm 2, corrected); returns the number of clusters.

    Inside the open cluster ``[a, r)`` values are shifted by ``s_a`` (``t = s - s_a``,
    so sums stay small) and the running sums ``T = sum t``, ``A = sum w``,
    ``B = sum t w`` (``w = 1/max(s, delta)``) are kept, plus the same sums over the
    bins at or below the trial mean (a pointer that only moves right, because the
    mean of an ascending run never decreases). Then
    ``sum |t - mu| w = mu (A_lo - A_hi) - (B_lo - B_hi)``: O(1) amortised per bin.
    """
    n = s.shape[0]
    starts[0] = 0
    k = 1
    x0 = s[0]
    w0 = 1.0 / max(s[0], delta)
    size = 1
    t_sum = 0.0
    w_sum = w0
    tw_sum = 0.0
    p = 1  # bins a..p-1 are at or below the mean
    w_lo = w0
    tw_lo = 0.0
    score = lam * w0  # E(C) of the singleton
    for r in range(1, n):
        x = s[r]
        w = 1.0 / max(x, delta)
        t = x - x0
        size1 = size + 1
        t1 = t_sum + t
        w1 = w_sum + w
        tw1 = tw_sum + t * w
        mu = t1 / size1
        pp = p
        wl = w_lo
        twl = tw_lo
        while pp <= r and s[pp] - x0 <= mu:
            tp = s[pp] - x0
            wp = 1.0 / max(s[pp], delta)
            wl += wp
            twl += tp * wp
            pp += 1
        absdev = mu * (wl - (w1 - wl)) - (twl - (tw1 - twl))
        if absdev < 0.0:
            absdev = 0.0
        merged = (absdev + (lam / size1) * w1) / size1
        keep = (size * score + lam * w / (n - r)) / size1
        merge_out[r - 1] = merged
        keep_out[r - 1] = keep
        if merged < keep:
            size = size1
            t_sum = t1
            w_sum = w1
            tw_sum = tw1
            p = pp
            w_lo = wl
            tw_lo = twl
            score = merged
        else:
            starts[k] = r
            k += 1
            x0 = x
            size = 1
            t_sum = 0.0
            w_sum = w
            tw_sum = 0.0
            p = r + 1
            w_lo = w
            tw_lo = 0.0
            score = lam * w
    return k


def _sreb_params(eps2: float, delta: float) -> tuple[float, float]:
    e2 = check_eps("eps2", eps2)
    if isinstance(delta, bool | np.bool_) or not isinstance(delta, Real):
        raise ValidationError(f"delta must be a positive real number; got {delta!r}")
    dl = float(delta)
    if not (math.isfinite(dl) and dl > 0.0):
        raise ValidationError(f"delta must be a finite number > 0; got {dl!r}")
    lam = 1.0 / e2
    if not math.isfinite(lam):
        raise ValidationError("eps2 is too small: 1/eps2 overflows float64")
    return lam, dl


def group_relative_errors(
    y: npt.ArrayLike, starts: npt.ArrayLike, *, eps2: float, delta: float = 1.0
) -> np.ndarray:
    """Score ``E(C) = mean_{H in C} (|H - mean(C)| + lam/|C|)/max(H, delta)`` per cluster.

    Seed 001 Theorem 1 and Eq. (12) with ``lam = 1/eps2`` and the floor ``delta``
    (spec §8.2). Two-pass per-cluster sums, O(N); any order of ``y``.
    """
    arr = check_y(y)
    lam, dl = _sreb_params(eps2, delta)
    s = check_starts(starts, arr.shape[0])
    sizes = np.diff(np.append(s, arr.shape[0]))
    means = np.add.reduceat(arr, s) / sizes
    rep = np.repeat(sizes, sizes)
    e = (np.abs(arr - np.repeat(means, sizes)) + lam / rep) / np.maximum(arr, dl)
    return np.add.reduceat(e, s) / sizes


def greedy_group_relative(
    y: npt.ArrayLike,
    *,
    eps2: float,
    delta: float = 1.0,
    return_trace: bool = False,
) -> np.ndarray | tuple[np.ndarray, GreedyTrace]:
    """GGS, SReB_GCA's greedy grouping (seed 001 §5.2, Definition 5 and Algorithm 2).

    ``y`` sorted ascending, ``lam = 1/eps2``, ``d(H) = max(H, delta)``. Start with
    ``G = {y_0}``; for ``r = 1..N-1`` (0-based) add ``y_r`` iff
    ``E(G + y_r) < (|G| E(G) + lam/((N - r) d(y_r))) / (|G| + 1)``, else close ``G``
    (it ends at ``r - 1``) and open ``{y_r}``; close the last group. ``E`` is
    :func:`group_relative_errors`' score; ``lam/((N - r) d(y_r))`` is Theorem 7's lower
    bound on ``y_r``'s relative error in any later group (all remaining bins, no
    reconstruction error). Corrections (spec §8.4, §12.2): the scale is ``lam2`` (the
    listing names it ``lam1``); line 8's ``d < r`` is the assignment of the cut; the
    restart uses ``r``, not a stale ``d + 1``; Eq. (26) means ``1/H_r``; every
    denominator is floored at ``delta`` (noisy counts may be <= 0).

    Guarantee: each group ``[a, b)`` satisfies
    ``|G| E(G) < lam/d(y_a) + sum_{a<r<b} lam/((N - r) d(y_r))`` (the merge tests add
    up), hence the total estimated relative error never exceeds that of singletons.
    O(N) time (amortised), O(N) memory. ``return_trace=True`` also returns a
    :class:`GreedyTrace`.
    """
    arr = check_y(y)
    lam, dl = _sreb_params(eps2, delta)
    check_monotone(arr, "greedy_group_relative", ascending_only=True)
    trace = check_flag(return_trace, "return_trace")
    n = arr.shape[0]
    merge = np.empty(n - 1)
    keep = np.empty(n - 1)
    starts = np.empty(n, dtype=np.int64)
    k = _ggs(arr, lam, dl, merge, keep, starts)
    out = starts[:k].copy()
    return (out, GreedyTrace(merge, keep)) if trace else out
