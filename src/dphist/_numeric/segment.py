"""Exact squared-error grouping of noisy counts (the S2 smoothing step).

Kellaris et al., PVLDB 2017, §5.1, with the corrections of methods-framework.md A.4:
given noisy counts ``y`` (Laplace noise with budget ``eps1``, variance ``2/eps1**2``
per bin) find the partition of ``0..N-1`` into contiguous groups that minimises

    sum over groups g of  c(g) = SSE_y(g) - 2(|g|-1)/eps1**2 + nu(g),

where ``SSE_y(g)`` is the squared deviation of ``y`` from the group mean and
``nu(g)`` the expected squared error of publishing the group total with one Laplace
draw of budget ``eps2``: ``2/(|g| eps2**2)`` (``noise_term="first_principles"``,
the default) or the paper's constant ``1/eps2`` (``noise_term="paper"``, Eq. 2).

Because the bias terms add up to ``2(N-|G|)/eps1**2``, the objective equals
``sum_g C(g) + beta*|G| - 2N/eps1**2`` with ``C = SSE + nu`` and a per-group
penalty ``beta = 2/eps1**2`` (A.4.1): penalised least-squares segmentation. All
solvers below work on that form: ``F(0) = 0``,
``F(t) = min_{tau<t} F(tau) + C(tau..t) + beta`` (the group is ``[tau, t)``), and the
optimum of the objective is ``F(N) - 2N/eps1**2``.

A partition is an ``int64`` array of group starts beginning with 0: ``[0, 3, 7]``
means the groups ``[0,3), [3,7), [7,N)``.

Tie-break: when several last groups give the same value of ``F(t)``, the one with
the smallest start ``tau`` (the longest group) wins. The plain DP and PELT evaluate
every candidate with the same floating-point expression, so they return identical
partitions, not merely equally good ones; the sorted-input solver follows the same
rule up to rounding.

Numerics: group sums come from prefix sums of ``y - mean(y)``. Centring removes the
cancellation that raw prefix sums of squares suffer for large counts (performance
notes §4); the remaining absolute error of one group cost is a few units of
``2**-52 * sum((y - mean(y))**2)``. Inputs with several far-apart levels (e.g.
plateaus at 0 and 10**6) keep that much absolute error, which can only matter for
partitions whose objectives differ by less than it.

Everything here is post-processing of already released values: no budget, no noise.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .vectors import positive_number, real_vector

__all__ = [
    "NOISE_TERMS", "PeltStats", "centred_prefix_sums", "check_flag", "check_monotone",
    "check_starts", "length_cost",
    "s2_costs", "segment", "segment_dp", "segment_objective", "segment_pelt",
    "segment_sorted",
]  # fmt: skip

NoiseTerm = Literal["first_principles", "paper"]
NOISE_TERMS: tuple[str, ...] = ("first_principles", "paper")

# Relative slack of the PELT pruning test, in units of the problem's scale (see
# _Problem.slack). The rounding error of the test is below ~50 ulp of that scale, so
# 1e-10 leaves a margin of about 10**4 and costs no measurable pruning.
_PRUNE_SLACK = 1e-10


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def segment_cost(p1, p2, inv, nu_a, nu_b, lo, hi):
    """C([lo, hi)) = SSE + nu from centred prefix sums; nu = nu_a/len + nu_b."""
    k = hi - lo
    s1 = p1[hi] - p1[lo]
    return ((p2[hi] - p2[lo]) - s1 * s1 * inv[k]) + (nu_a * inv[k] + nu_b)


@njit(cache=True)
def length_cost(p1, p2, inv, g, lo, hi):
    """C([lo, hi)) = SSE + g[len] from centred prefix sums (any per-length term g)."""
    k = hi - lo
    s1 = p1[hi] - p1[lo]
    return ((p2[hi] - p2[lo]) - s1 * s1 * inv[k]) + g[k]


@njit(cache=True)
def _costs_kernel(p1, p2, inv, nu_a, nu_b, lo, hi, out):
    for i in range(lo.shape[0]):
        out[i] = segment_cost(p1, p2, inv, nu_a, nu_b, lo[i], hi[i])


@njit(cache=True)
def dp_from(p1, p2, inv, nu_a, nu_b, beta, f, back, t0):
    """Plain DP for the right ends t0+1..N; f[0..t0] and back[1..t0] are given.

    Every start 0..t-1 is tried in increasing order and replaced only on strict
    improvement, so the smallest optimal start wins.
    """
    n = p1.shape[0] - 1
    for t in range(t0 + 1, n + 1):
        best = np.inf
        arg = -1
        for tau in range(t):
            v = f[tau] + segment_cost(p1, p2, inv, nu_a, nu_b, tau, t)
            if v < best:
                best = v
                arg = tau
        f[t] = best + beta
        back[t] = arg


@njit(cache=True)
def _pelt(p1, p2, inv, nu_a, nu_b, beta, k_const, slack, max_cand, f, back):
    """PELT over right ends; switches to the plain DP once the candidate set is large.

    Returns (number of cost evaluations, right end at which it switched or -1).
    """
    n = p1.shape[0] - 1
    cand = np.empty(n + 1, dtype=np.int64)
    vals = np.empty(n + 1, dtype=np.float64)
    cand[0] = 0
    m = 1
    evals = 0
    for t in range(1, n + 1):
        best = np.inf
        arg = -1
        # Candidates are kept in increasing order: same tie-break as dp_from.
        for i in range(m):
            tau = cand[i]
            v = f[tau] + segment_cost(p1, p2, inv, nu_a, nu_b, tau, t)
            vals[i] = v
            if v < best:
                best = v
                arg = tau
        evals += m
        f[t] = best + beta
        back[t] = arg
        if t == n:
            break
        # Prune tau when F(tau) + C(tau..t) + K > F(t) (+ slack): then for every
        # later t', F(tau) + C(tau..t') >= F(tau) + C(tau..t) + C(t..t') + K
        # > F(t) + C(t..t'), i.e. tau is strictly worse than t and can never be
        # chosen (not even in a tie). The slack exceeds the rounding error of this
        # chain, so the statement also holds for the computed values.
        thr = (f[t] - k_const) + slack
        kept = 0
        for i in range(m):
            if vals[i] <= thr:
                cand[kept] = cand[i]
                kept += 1
        cand[kept] = t
        m = kept + 1
        if m > max_cand:
            # Pruning is failing (little structure). F(0..t) are already exact and
            # identical to the DP's, so the plain DP can simply take over.
            dp_from(p1, p2, inv, nu_a, nu_b, beta, f, back, t)
            return evals, t
    return evals, -1


@njit(cache=True)
def monotone_queue(p1, p2, inv, g, beta, f, back):
    """O(N log N) solver for segment costs with the quadrangle (Monge) inequality.

    For a < b the difference val(b, t) - val(a, t) of the two candidate values is
    non-increasing in t, so once the newer start b is strictly better it stays so.
    A queue holds the starts that are best on consecutive ranges of right ends;
    ranges are found by binary search. Ties keep the older (smaller) start.
    """
    n = p1.shape[0] - 1
    q_tau = np.empty(n + 1, dtype=np.int64)
    q_from = np.empty(n + 1, dtype=np.int64)
    q_tau[0] = 0
    q_from[0] = 1
    head = 0
    tail = 1
    for t in range(1, n + 1):
        while head + 1 < tail and q_from[head + 1] <= t:
            head += 1
        tau = q_tau[head]
        f[t] = f[tau] + length_cost(p1, p2, inv, g, tau, t) + beta
        back[t] = tau
        if t == n:
            break
        # Insert start t, usable for right ends t+1..n.
        while head < tail:
            last = q_tau[tail - 1]
            s = max(q_from[tail - 1], t + 1)
            v_new = f[t] + length_cost(p1, p2, inv, g, t, s)
            v_old = f[last] + length_cost(p1, p2, inv, g, last, s)
            if v_new < v_old:
                tail -= 1
            else:
                break
        if head == tail:
            q_tau[tail] = t
            q_from[tail] = t + 1
            tail += 1
            continue
        last = q_tau[tail - 1]
        v_new = f[t] + length_cost(p1, p2, inv, g, t, n)
        v_old = f[last] + length_cost(p1, p2, inv, g, last, n)
        if not v_new < v_old:
            continue  # never strictly better: t is useless
        lo = max(q_from[tail - 1], t + 1)  # not better here (checked above)
        hi = n  # better here
        while hi - lo > 1:
            mid = (lo + hi) // 2
            v_new = f[t] + length_cost(p1, p2, inv, g, t, mid)
            v_old = f[last] + length_cost(p1, p2, inv, g, last, mid)
            if v_new < v_old:
                hi = mid
            else:
                lo = mid
        q_tau[tail] = t
        q_from[tail] = hi
        tail += 1


@njit(cache=True)
def starts_from_back(back):
    n = back.shape[0] - 1
    count = 0
    t = n
    while t > 0:
        t = back[t]
        count += 1
    starts = np.empty(count, dtype=np.int64)
    t = n
    i = count
    while t > 0:
        t = back[t]
        i -= 1
        starts[i] = t
    return starts


# ----------------------------------------------------------------- problem set-up


class _Problem(NamedTuple):
    n: int
    p1: np.ndarray
    p2: np.ndarray
    inv: np.ndarray  # inv[k] = 1/k (inv[0] unused)
    nu_a: float  # nu(k) = nu_a/k + nu_b
    nu_b: float
    beta: float  # per-group penalty 2/eps1**2
    k_const: float  # PELT constant K
    slack: float  # absolute slack of the pruning test


def check_y(y: npt.ArrayLike) -> np.ndarray:
    """The values to segment: a non-empty 1-D float64 array of finite numbers."""
    return real_vector(y, "y", allow_empty=False)


def check_eps(name: str, value: object) -> float:
    """A budget share: a finite real number above zero."""
    return positive_number(value, name)


def centred_prefix_sums(y: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums ``P1, P2`` (length N+1, ``P[0] = 0``) of ``y - mean(y)`` and its square.

    ``SSE([l, r)) = (P2[r] - P2[l]) - (P1[r] - P1[l])**2 / (r - l)``; SSE is
    shift-invariant, and centring keeps the subtraction accurate. O(N) time and memory.
    """
    arr = check_y(y)
    return prefix_moments(arr)


def prefix_moments(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = arr.shape[0]
    p1 = np.zeros(n + 1)
    p2 = np.zeros(n + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        yc = arr - arr.mean()
        np.cumsum(yc, out=p1[1:])
        np.cumsum(yc * yc, out=p2[1:])
    if not (math.isfinite(p2[-1]) and math.isfinite(p1[-1])):
        raise ValidationError("y is too large: the sum of squared deviations overflows float64")
    return p1, p2


def _problem(y: npt.ArrayLike, eps1: float, eps2: float, noise_term: str) -> _Problem:
    arr = check_y(y)
    e1 = check_eps("eps1", eps1)
    e2 = check_eps("eps2", eps2)
    if noise_term not in NOISE_TERMS:
        raise ValidationError(
            f"noise_term must be one of {', '.join(map(repr, NOISE_TERMS))}; got {noise_term!r}"
        )
    n = arr.shape[0]
    p1, p2 = prefix_moments(arr)
    beta = 2.0 / e1 / e1
    if noise_term == "first_principles":
        nu_a, nu_b = 2.0 / e2 / e2, 0.0
        # C(A u B) >= C(A) + C(B) + K for adjacent A, B (PELT's condition): SSE is
        # superadditive (the difference is ab/(a+b) * (mean_A - mean_B)**2 >= 0, an
        # identity that holds for any prefix arrays), and
        # 1/a + 1/b - 1/(a+b) <= 3/2 (largest at a = b = 1), so
        # nu(A u B) - nu(A) - nu(B) >= -(2/eps2**2) * 3/2 = -3/eps2**2.
        k_const = -3.0 / e2 / e2
    else:
        # A constant nu per group is a plain penalty: with it moved into the penalty
        # (beta' = beta + 1/eps2, C = SSE) superadditivity gives K = 0. Here C keeps
        # the constant, C(A u B) - C(A) - C(B) >= -1/eps2, so the same test reads
        # K = -1/eps2.
        nu_a, nu_b = 0.0, 1.0 / e2
        k_const = -nu_b
    nu1 = nu_a + nu_b
    for label, val in (("eps1", beta), ("eps2", nu1 - k_const)):
        if not math.isfinite(val):
            raise ValidationError(f"{label} is too small: the cost terms overflow float64")
    inv = np.empty(n + 1)
    inv[0] = 0.0
    inv[1:] = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    # Scale bounding every quantity in the pruning test: group sums of squares are at
    # most P2[N]; 0 <= F(t) <= t*(nu(1) + beta) up to rounding.
    scale = float(p2[-1]) + n * (nu1 + beta) + abs(k_const)
    return _Problem(n, p1, p2, inv, nu_a, nu_b, beta, k_const, _PRUNE_SLACK * scale)


def check_starts(starts: npt.ArrayLike, n: int) -> np.ndarray:
    arr = np.asarray(starts)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError("starts must be a non-empty 1-D array of integer group starts")
    arr = arr.astype(np.int64)
    if arr[0] != 0:
        raise ValidationError("starts must begin with 0")
    if np.any(np.diff(arr) <= 0):
        raise ValidationError("starts must be strictly increasing")
    if arr[-1] >= n:
        raise ValidationError(f"starts must be < n = {n}; got a start at {int(arr[-1])}")
    return arr


def check_monotone(arr: np.ndarray, who: str, *, ascending_only: bool) -> None:
    d = np.diff(arr)
    if np.all(d >= 0):
        return
    if not ascending_only and np.all(d <= 0):
        return
    want = "sorted ascending" if ascending_only else "sorted (non-decreasing or non-increasing)"
    raise ValidationError(f"{who} needs y {want}; sort the noisy counts first")


def check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValidationError(f"{name} must be True or False; got {value!r}")
    return bool(value)


# ------------------------------------------------------------------------ public API


def s2_costs(
    y: npt.ArrayLike,
    lo: npt.ArrayLike,
    hi: npt.ArrayLike,
    *,
    eps1: float,
    eps2: float,
    noise_term: NoiseTerm = "first_principles",
) -> np.ndarray:
    """Group costs ``c([lo_i, hi_i)) = SSE_y - 2(len-1)/eps1**2 + nu(len)``, vectorised.

    O(N) for the centred prefix sums, then O(1) per group (Kellaris et al., PVLDB
    2017, §5.1). ``lo`` and ``hi`` are integer arrays of equal shape with
    ``0 <= lo < hi <= N``.
    """
    pb = _problem(y, eps1, eps2, noise_term)
    lo_a = np.asarray(lo)
    hi_a = np.asarray(hi)
    for name, a in (("lo", lo_a), ("hi", hi_a)):
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValidationError(f"{name} must be a 1-D array of integers")
    if lo_a.shape != hi_a.shape:
        raise ValidationError("lo and hi must have the same length")
    lo_a = lo_a.astype(np.int64)
    hi_a = hi_a.astype(np.int64)
    if np.any(lo_a < 0) or np.any(hi_a > pb.n) or np.any(lo_a >= hi_a):
        raise ValidationError(f"groups must satisfy 0 <= lo < hi <= N = {pb.n}")
    out = np.empty(lo_a.shape[0])
    _costs_kernel(pb.p1, pb.p2, pb.inv, pb.nu_a, pb.nu_b, lo_a, hi_a, out)
    return out - pb.beta * (hi_a - lo_a - 1)


def segment_objective(
    y: npt.ArrayLike,
    starts: npt.ArrayLike,
    *,
    eps1: float,
    eps2: float,
    noise_term: NoiseTerm = "first_principles",
) -> float:
    """Objective ``sum_g c(g)`` of the partition given by ``starts``. O(N)."""
    arr = check_y(y)
    s = check_starts(starts, arr.shape[0])
    hi = np.append(s[1:], arr.shape[0])
    costs = s2_costs(arr, s, hi, eps1=eps1, eps2=eps2, noise_term=noise_term)
    return math.fsum(costs.tolist())


def segment_dp(
    y: npt.ArrayLike,
    *,
    eps1: float,
    eps2: float,
    noise_term: NoiseTerm = "first_principles",
) -> np.ndarray:
    """Optimal S2 grouping by the plain dynamic program over right ends.

    ``F(0) = 0``, ``F(t) = min_{tau<t} F(tau) + C(tau..t) + beta``; ties go to the
    smallest ``tau``. Exact; O(N**2) time (about 1.5 ns per pair: ~0.8 s at N = 32768,
    ~15 min at 10**6), O(N) memory. Kellaris et al., PVLDB 2017, §5.1.
    """
    pb = _problem(y, eps1, eps2, noise_term)
    f = np.empty(pb.n + 1)
    back = np.empty(pb.n + 1, dtype=np.int64)
    f[0] = 0.0
    back[0] = 0
    dp_from(pb.p1, pb.p2, pb.inv, pb.nu_a, pb.nu_b, pb.beta, f, back, 0)
    return starts_from_back(back)


class PeltStats(NamedTuple):
    """Work done by :func:`segment_pelt`."""

    evaluations: int  # group costs evaluated (PELT part plus DP part, if any)
    fallback_at: int | None  # right end after which the plain DP took over, or None
    max_candidates: int  # the candidate-set size that triggers the fallback


def _default_max_candidates(n: int) -> int:
    return max(n // 4, 32)


def segment_pelt(
    y: npt.ArrayLike,
    *,
    eps1: float,
    eps2: float,
    noise_term: NoiseTerm = "first_principles",
    max_candidates: int | None = None,
    return_stats: bool = False,
) -> np.ndarray | tuple[np.ndarray, PeltStats]:
    """Optimal S2 grouping by PELT (Killick, Fearnhead, Eckley, JASA 2012).

    Same recursion and tie-break as :func:`segment_dp`, hence the same partition.
    Candidate starts are pruned with ``K = -3/eps2**2`` (first-principles ``nu``) or
    ``K = 0`` for the paper's constant ``nu`` once that constant is counted in the
    penalty, plus a tiny slack relative to the problem's scale that absorbs rounding,
    so no start that could still win is ever dropped.

    When more than ``max_candidates`` starts survive (default ``max(N//4, 32)``),
    the plain DP takes over for the remaining right ends, reusing the values computed
    so far (they are the DP's own). Pruning fails when the optimum has few long
    groups and ``K`` is loose, e.g. nearly constant ``y`` or ``eps2`` much smaller
    than ``eps1`` with the first-principles ``nu``. Cost: expected ~O(N) when the
    number of groups grows linearly with N; worst case O(N**2), at most about 1.3x
    the plain DP (a PELT evaluation costs ~2.3 DP evaluations, and PELT never handles
    more than N/4 candidates per right end). O(N) memory.
    Kellaris et al., PVLDB 2017, §5.1.

    With ``return_stats=True`` also returns a :class:`PeltStats`.
    """
    starts, stats = _run_pelt(y, eps1, eps2, noise_term, max_candidates)
    return (starts, stats) if return_stats else starts


def _run_pelt(
    y: npt.ArrayLike, eps1: float, eps2: float, noise_term: str, max_candidates: int | None
) -> tuple[np.ndarray, PeltStats]:
    pb = _problem(y, eps1, eps2, noise_term)
    if max_candidates is None:
        cap = _default_max_candidates(pb.n)
    else:
        if isinstance(max_candidates, bool) or not isinstance(max_candidates, int | np.integer):
            raise ValidationError("max_candidates must be an integer or None")
        if max_candidates < 1:
            raise ValidationError(f"max_candidates must be >= 1; got {max_candidates}")
        cap = int(max_candidates)
    f = np.empty(pb.n + 1)
    back = np.empty(pb.n + 1, dtype=np.int64)
    f[0] = 0.0
    back[0] = 0
    evals, switched = _pelt(
        pb.p1, pb.p2, pb.inv, pb.nu_a, pb.nu_b, pb.beta, pb.k_const, pb.slack, cap, f, back
    )
    evals = int(evals)
    fallback_at = None
    if switched >= 0:
        n, fallback_at = pb.n, int(switched)
        evals += (n * (n + 1) - fallback_at * (fallback_at + 1)) // 2
    return starts_from_back(back), PeltStats(evals, fallback_at, cap)


def segment(
    y: npt.ArrayLike,
    *,
    eps1: float,
    eps2: float,
    noise_term: NoiseTerm = "first_principles",
) -> np.ndarray:
    """Optimal S2 grouping of noisy counts ``y``: group starts, beginning with 0.

    Minimises ``sum_g SSE_y(g) - 2(|g|-1)/eps1**2 + nu(g)`` over contiguous
    partitions (Kellaris et al., PVLDB 2017, §5.1, corrected as in the module
    docstring); ``eps1`` is the budget that produced ``y``, ``eps2`` the budget that
    will publish the group totals. PELT with a plain-DP fallback
    (:func:`segment_pelt`): exact, ~O(N) on structured inputs, O(N**2) worst case.
    Use :func:`segment_objective` for the optimal value.
    """
    return _run_pelt(y, eps1, eps2, noise_term, None)[0]


def segment_sorted(
    y: npt.ArrayLike,
    *,
    eps1: float,
    eps2: float,
    noise_term: NoiseTerm = "first_principles",
) -> np.ndarray:
    """Optimal S2 grouping of a monotone (sorted) ``y`` in O(N log N) time, O(N) memory.

    On sorted values the interval SSE satisfies the quadrangle (Monge) inequality and
    ``nu`` is convex in the group length (A.4.1 'Sorted input'), so the best start is
    monotone in the right end and a queue of candidate starts with binary search
    finds the optimum (Hirschberg and Larmore, SIAM J. Comput. 1987). Exact up to
    rounding: where candidate values are within rounding of each other the partition
    may differ from :func:`segment_dp`'s, with the same objective to that precision.
    Raises if ``y`` is not monotone.
    """
    arr = check_y(y)
    d = np.diff(arr)
    if not (np.all(d >= 0) or np.all(d <= 0)):
        raise ValidationError(
            "segment_sorted needs y sorted (non-decreasing or non-increasing); "
            "use segment() for unsorted input"
        )
    pb = _problem(arr, eps1, eps2, noise_term)
    f = np.empty(pb.n + 1)
    back = np.empty(pb.n + 1, dtype=np.int64)
    f[0] = 0.0
    back[0] = 0
    monotone_queue(pb.p1, pb.p2, pb.inv, pb.nu_a * pb.inv + pb.nu_b, pb.beta, f, back)
    return starts_from_back(back)
