"""Clustering of sorted noisy counts: AHP (greedy, optimal, empirical).

AHP (like SReB_GCA's GGS, :mod:`dphist._numeric.ggs`) sorts noisy counts and then cuts
the sorted vector ``s`` (length ``N``) into contiguous clusters; every cluster is later
published as one noisy total (one Laplace draw of budget ``eps2`` per cluster, done by
the privacy kernel). This module only chooses the cuts. Everything here is
post-processing of released values: no noise, no budget, no randomness.

AHP (Zhang, Chen, Xu, Meng, Xie, SDM 2014, §4.2; spec methods-data-aware §2). The
estimated error of a cluster ``C`` (Theorem 4.2) is

    err(C) = SSE_s(C) + c/|C|,   c = 2/eps2**2,

the squared deviation of the noisy values from their cluster mean (approximation
error, AE) plus the Laplace error of one draw of scale ``1/eps2`` shared by ``|C|``
bins. ``eps1`` (the budget behind ``s``) does not enter: the paper scores the noisy
values as they are (no ``-2(|C|-1)/eps1**2`` bias correction as in
:mod:`dphist._numeric.segment`).

* :func:`ahp_greedy` – Algorithm 3. Bin ``j`` joins the open cluster ``C`` iff
  ``err(C + s_j) < err(C) + err*(j)``, where
  ``err*(j) = min_{m=1..N-j} (s_j - mean(s[j:j+m]))**2 + c/m**2`` is a lower bound on
  what bin ``j`` costs if it starts a later cluster (its own AE plus its ``1/m`` share
  of that cluster's Laplace error).
* :func:`ahp_optimal` – minimum of ``sum_C err(C)`` over all contiguous clusterings
  with any number of clusters, ``O(N**2)`` (or ``O(N log N)``, see there).
* :func:`ahp_k_clustering`, :func:`ahp_empirical` – best clustering with (at most or
  exactly) ``k`` clusters, and the paper's Algorithm 2 with four rules of thumb for k.
* :func:`ahp_total_error`, :func:`ahp_err_star` – the objective and the bounds.

Conventions. ``s`` must be monotone: AHP accepts non-decreasing or non-increasing
input (its objective is invariant under ``s -> -s``, and every argument below only
needs monotonicity). A clustering is an ``int64``
array of cluster starts beginning with 0 (``[0, 2, 5]`` = ``[0,2), [2,5), [5,N)``).

Numerics: sums of squares use the centred prefix sums of :mod:`.segment` (absolute
error a few units of ``2**-52 * sum((s - mean(s))**2)``); the greedy scans keep
running sums inside the open cluster.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .segment import (
    check_eps,
    check_flag,
    check_monotone,
    check_starts,
    check_y,
    dp_from,
    monotone_queue,
    prefix_moments,
    segment_cost,
    starts_from_back,
)

__all__ = [
    "EMPIRICAL_RULES",
    "GreedyTrace",
    "ahp_empirical",
    "ahp_err_star",
    "ahp_greedy",
    "ahp_k_clustering",
    "ahp_optimal",
    "ahp_total_error",
    "empirical_k",
]

EmpiricalRule = Literal["sqrt", "sturges", "doane", "rice", "all"]
# The paper's order (Algorithm 2, line 1); "all" tries every rule.
EMPIRICAL_RULES: tuple[str, ...] = ("sqrt", "sturges", "doane", "rice")


class GreedyTrace(NamedTuple):
    """The two values compared when bin ``j`` (``j = 1..N-1``) is considered, at ``j-1``.

    ``merge[j-1]``: score of the open cluster with bin ``j`` added; ``keep[j-1]``: the
    value it must beat (AHP: ``err(C) + err*(j)``; GGS: the bound of seed 001
    Definition 5). Bin ``j`` joined the cluster iff ``merge < keep``.
    """

    merge: np.ndarray
    keep: np.ndarray


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _f_star(p1, s, mean, c, j, m):
    """(s_j - mean(s[j:j+m]))**2 + c/m**2 from the prefix sums ``p1`` of ``s - mean``."""
    if m == 1:
        return c
    dev = ((p1[j + m] - p1[j]) - m * (s[j] - mean)) / m
    return dev * dev + c / (m * m)


@njit(cache=True)
def _err_star_search(p1, s, mean, c, j):
    """err*(j) by galloping plus bisection on the unimodal f(m); O(log m*) evaluations.

    On monotone data ``f(m) = (D(m)**2 + c)/m**2`` with ``D(m) = sum_{i<m}(s_{j+i} -
    s_j)``, ``|D|`` convex, so ``sqrt(D**2 + c)`` is convex with a positive value at
    0 and ``f`` is strictly decreasing up to its first minimiser and non-decreasing
    after it. Hence ``f(m+1) >= f(m)`` is false before that minimiser and true from
    it on, and the smallest ``m`` where it holds is found by search.
    """
    big_m = p1.shape[0] - 1 - j
    lo = 1  # every m < lo fails the test
    probe = 1
    while True:
        if probe >= big_m or _f_star(p1, s, mean, c, j, probe + 1) >= _f_star(
            p1, s, mean, c, j, probe
        ):
            hi = min(probe, big_m)
            break
        lo = probe + 1
        probe *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if _f_star(p1, s, mean, c, j, mid + 1) >= _f_star(p1, s, mean, c, j, mid):
            hi = mid
        else:
            lo = mid + 1
    return _f_star(p1, s, mean, c, j, lo)


@njit(cache=True)
def _err_star_scan(p1, s, mean, c, j):
    """err*(j) by the paper's scan: grow the potential cluster one bin at a time and stop
    once the AE increase reaches the largest LE decrease still possible
    (``AE(m+1) - AE(m) >= LE(m) - c/(N-j)**2``); returns the running minimum.
    Worst case O(N - j) evaluations (e.g. constant data).
    """
    big_m = p1.shape[0] - 1 - j
    le_min = c / (big_m * big_m)
    best = c  # m = 1: AE 0, LE c
    ae_prev = 0.0
    le_prev = c
    for m in range(1, big_m):
        dev = ((p1[j + m + 1] - p1[j]) - (m + 1) * (s[j] - mean)) / (m + 1)
        ae = dev * dev
        if ae - ae_prev >= le_prev - le_min:
            break
        le = c / ((m + 1) * (m + 1))
        if ae + le < best:
            best = ae + le
        ae_prev = ae
        le_prev = le
    return best


@njit(cache=True)
def _err_star_all(p1, s, mean, c, scan, out):
    n = out.shape[0]
    for j in range(n):
        out[j] = _err_star_scan(p1, s, mean, c, j) if scan else _err_star_search(p1, s, mean, c, j)


@njit(cache=True)
def _ahp_greedy(s, p1, mean, c, scan, merge_out, keep_out):
    """Algorithm 3 of AHP; returns the cluster starts (``p1``: prefix sums of ``s -
    mean``). The open cluster's SSE is kept by Welford's update (mean ``mu``, SSE ``q``);
    the starts grow by doubling (as many as there are clusters, not bins).
    """
    n = s.shape[0]
    starts = np.empty(min(n, 1024), dtype=np.int64)
    starts[0] = 0
    k = 1
    size = 1
    mu = s[0]
    q = 0.0
    for j in range(1, n):
        x = s[j]
        d = x - mu
        mu1 = mu + d / (size + 1)
        q1 = q + d * (x - mu1)
        merged = q1 + c / (size + 1)
        es = _err_star_scan(p1, s, mean, c, j) if scan else _err_star_search(p1, s, mean, c, j)
        keep = (q + c / size) + es
        if merge_out.shape[0]:  # the trace, kept only when asked for
            merge_out[j - 1] = merged
            keep_out[j - 1] = keep
        if merged < keep:
            size += 1
            mu = mu1
            q = q1
        else:
            if k == starts.shape[0]:
                grown = np.empty(min(n, 2 * k), dtype=np.int64)
                grown[:k] = starts
                starts = grown
            starts[k] = j
            k += 1
            size = 1
            mu = x
            q = 0.0
    return starts[:k].copy()


@njit(cache=True)
def _centred_prefix(s, mean, p1):
    """``p1[i + 1] = p1[i] + (s[i] - mean)``: np.cumsum of ``s - mean`` (the same
    sequential sums) without the centred copy."""
    p1[0] = 0.0
    for i in range(s.shape[0]):
        p1[i + 1] = p1[i] + (s[i] - mean)


@njit(cache=True)
def _k_layers(p1, p2, inv, c, kmax, last, back):
    """Exactly-j-cluster DP for j = 1..kmax by divide and conquer over right ends.

    Row ``j`` is ``D_j[e] = min_a D_{j-1}[a] + err(s[a:e])`` (``inf`` when ``e < j``);
    ``last[j] = D_j[N]`` and ``back[j, e]`` = start of the last cluster. On monotone
    ``s`` the cost is Monge, so the leftmost best ``a`` is non-decreasing in ``e`` and
    each row costs O(N log N). Two rows of values are kept.
    """
    n = p1.shape[0] - 1
    prev = np.full(n + 1, np.inf)
    cur = np.full(n + 1, np.inf)
    prev[0] = 0.0
    stack = np.empty((2 * 64 + 8, 4), dtype=np.int64)
    for j in range(1, kmax + 1):
        stack[0, 0] = j  # right ends e in [j, n]
        stack[0, 1] = n
        stack[0, 2] = j - 1  # starts a in [j-1, n-1]
        stack[0, 3] = n - 1
        top = 1
        while top > 0:
            top -= 1
            e_lo = stack[top, 0]
            e_hi = stack[top, 1]
            a_lo = stack[top, 2]
            a_hi = stack[top, 3]
            if e_lo > e_hi:
                continue
            e = (e_lo + e_hi) // 2
            best = np.inf
            arg = a_lo
            for a in range(a_lo, min(a_hi, e - 1) + 1):
                v = prev[a] + segment_cost(p1, p2, inv, c, 0.0, a, e)
                if v < best:
                    best = v
                    arg = a
            cur[e] = best
            back[j, e] = arg
            # Depth-first: at most one pending sibling per level stays on the stack.
            stack[top, 0] = e + 1
            stack[top, 1] = e_hi
            stack[top, 2] = arg
            stack[top, 3] = a_hi
            stack[top + 1, 0] = e_lo
            stack[top + 1, 1] = e - 1
            stack[top + 1, 2] = a_lo
            stack[top + 1, 3] = arg
            top += 2
        last[j] = cur[n]
        # Row j+1 reads row j only at a >= j, all written above; entries of the
        # recycled row below j+1 are stale and never read.
        prev, cur = cur, prev


@njit(cache=True)
def _k_starts(back, j, n):
    starts = np.empty(j, dtype=np.int64)
    e = n
    for i in range(j, 0, -1):
        e = back[i, e]
        starts[i - 1] = e
    return starts


# ----------------------------------------------------------------------- validation


def _ahp_input(y: npt.ArrayLike, eps2: float, who: str) -> tuple[np.ndarray, float]:
    arr = check_y(y)
    e2 = check_eps("eps2", eps2)
    c = 2.0 / e2 / e2
    if not math.isfinite(c):
        raise ValidationError("eps2 is too small: 2/eps2**2 overflows float64")
    check_monotone(arr, who, ascending_only=False)
    return arr, c


def _choice(value: object, name: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValidationError(
            f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}"
        )
    return value


def _inv(n: int) -> np.ndarray:
    inv = np.empty(n + 1)
    inv[0] = 0.0
    inv[1:] = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    return inv


# ------------------------------------------------------------------------------ AHP


def ahp_total_error(y: npt.ArrayLike, starts: npt.ArrayLike, *, eps2: float) -> float:
    """Estimated error ``sum_C SSE_y(C) + 2/(|C| eps2**2)`` of a clustering of ``y``.

    AHP Theorems 4.2 and 5.2. Two-pass per-cluster sums, O(N); any order of ``y``.
    """
    arr = check_y(y)
    e2 = check_eps("eps2", eps2)
    s = check_starts(starts, arr.shape[0])
    sizes = np.diff(np.append(s, arr.shape[0]))
    means = np.add.reduceat(arr, s) / sizes
    dev = arr - np.repeat(means, sizes)
    sse = np.add.reduceat(dev * dev, s)
    return math.fsum((sse + 2.0 / (sizes * e2 * e2)).tolist())


def ahp_err_star(
    y: npt.ArrayLike, *, eps2: float, method: Literal["search", "scan"] = "search"
) -> np.ndarray:
    """``err*(j) = min_{m=1..N-j} (y_j - mean(y[j:j+m]))**2 + 2/(m**2 eps2**2)``, all j.

    AHP §4.2 (greedy clustering). ``method="scan"`` is the paper's early-stopped scan
    (O(N**2) worst case, e.g. on constant input); ``"search"`` uses the unimodality
    of the scanned sequence on monotone ``y`` (see :func:`ahp_greedy`), O(N log N).
    Both return the exact minimum over all ``m``, up to rounding.
    """
    arr, c = _ahp_input(y, eps2, "ahp_err_star")
    scan = _choice(method, "method", ("search", "scan")) == "scan"
    p1, _ = prefix_moments(arr)
    out = np.empty(arr.shape[0])
    _err_star_all(p1, arr, arr.mean(), c, scan, out)
    return out


def ahp_greedy(
    y: npt.ArrayLike,
    *,
    eps2: float,
    err_star: Literal["search", "scan"] = "search",
    return_trace: bool = False,
) -> np.ndarray | tuple[np.ndarray, GreedyTrace]:
    """AHP's greedy clustering (Algorithm 3) of sorted noisy counts ``y``.

    Start with ``C = {y_0}``; for ``j = 1..N-1`` add ``y_j`` to ``C`` iff
    ``err(C + y_j) < err(C) + err*(j)`` (strict), otherwise close ``C`` and open
    ``{y_j}``; close the last cluster. ``err(C) = SSE(C) + 2/(|C| eps2**2)``,
    ``err*`` as in :func:`ahp_err_star`. Listing slips of the paper fixed as in the
    spec (§12.3): the index advances every iteration, the last cluster is kept, new
    clusters hold the noisy value.

    The paper's early stop (stop scanning ``m`` once the AE step reaches
    ``LE(m) - 2/((N-j)**2 eps2**2)``) is valid because the AE is monotone in ``m`` on
    sorted data; it returns the running minimum, i.e. the exact ``min_m``, but scans up
    to ``N - j`` values (``err_star="scan"``, O(N**2) on long runs of equal counts).
    The default ``"search"`` returns the same minimum in O(log m*) evaluations: the
    scanned sequence is strictly decreasing up to its minimum and non-decreasing after
    it. Total O(N log N) time, O(N) memory.

    With ``return_trace=True`` also returns a :class:`GreedyTrace`.
    """
    arr, c = _ahp_input(y, eps2, "ahp_greedy")
    scan = _choice(err_star, "err_star", ("search", "scan")) == "scan"
    trace = check_flag(return_trace, "return_trace")
    n = arr.shape[0]
    mean = float(arr.mean())
    p1 = np.empty(n + 1)
    _centred_prefix(arr, mean, p1)  # the same centred sums as prefix_moments, without P2
    if not math.isfinite(p1[-1]):
        raise ValidationError("y is too large: its sum overflows float64")
    merge = np.empty(n - 1 if trace else 0)
    keep = np.empty(n - 1 if trace else 0)
    out = _ahp_greedy(arr, p1, mean, c, scan, merge, keep)
    return (out, GreedyTrace(merge, keep)) if trace else out


def ahp_optimal(
    y: npt.ArrayLike, *, eps2: float, method: Literal["dp", "monotone"] = "dp"
) -> np.ndarray:
    """Clustering of sorted ``y`` with the least ``sum_C SSE(C) + 2/(|C| eps2**2)``.

    Any number of clusters. AHP §4.2 iterates an "at most k clusters" DP over
    ``k = 1..n`` (O(n**4)). The objective is a sum over clusters with no other
    dependence on ``k``, so the best over all ``k`` is the best over all
    clusterings, and that obeys the unconstrained recursion ``F(0) = 0``,
    ``F(t) = min_{a<t} F(a) + err(y[a:t])``: the Laplace term ``2/(|C| eps2**2)``
    acts as a per-cluster penalty and no ``k`` is needed. Ties go to the longest last
    cluster.

    ``method="dp"``: the plain recursion, exact, O(N**2) time, O(N) memory.
    ``method="monotone"``: on monotone ``y`` the SSE satisfies the quadrangle (Monge)
    inequality and ``2/(|C| eps2**2)`` is convex in ``|C|``, so the best start is
    non-decreasing in ``t``; a queue of candidate starts with binary search
    (Hirschberg-Larmore) gives the same optimum in O(N log N). Exact up to rounding:
    near-ties may resolve differently from ``"dp"``, with equal objective to that
    precision. (The paper's footnote 2 rules out a different speed-up of its [6],
    which needs ``err`` to be superadditive; Monge does not.)
    """
    arr, c = _ahp_input(y, eps2, "ahp_optimal")
    how = _choice(method, "method", ("dp", "monotone"))
    n = arr.shape[0]
    p1, p2 = prefix_moments(arr)
    inv = _inv(n)
    f = np.empty(n + 1)
    back = np.empty(n + 1, dtype=np.int64)
    f[0] = 0.0
    back[0] = 0
    if how == "dp":
        dp_from(p1, p2, inv, c, 0.0, 0.0, f, back, 0)
    else:
        monotone_queue(p1, p2, inv, c * inv, 0.0, f, back)
    return starts_from_back(back)


def _check_k(k: object, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ValidationError(f"k must be a positive integer; got {k!r}")
    if not 1 <= k <= n:
        raise ValidationError(f"k must satisfy 1 <= k <= N = {n}; got {k}")
    return int(k)


def _layers(arr: np.ndarray, c: float, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """``last[j]`` = least error with exactly ``j`` clusters, and the back-pointers."""
    n = arr.shape[0]
    p1, p2 = prefix_moments(arr)
    last = np.full(kmax + 1, np.inf)
    back = np.zeros((kmax + 1, n + 1), dtype=np.int32 if n < 2**31 - 1 else np.int64)
    _k_layers(p1, p2, _inv(n), c, kmax, last, back)
    return last, back


def _pick(last: np.ndarray, k: int, exact_k: bool) -> int:
    """Number of clusters used for the bound ``k`` (smallest among equals)."""
    if exact_k:
        return k
    return int(np.argmin(last[1 : k + 1])) + 1


def ahp_k_clustering(y: npt.ArrayLike, k: int, *, eps2: float, exact_k: bool = False) -> np.ndarray:
    """Best clustering of sorted ``y`` with at most ``k`` (or exactly ``k``) clusters.

    AHP's ``OptimalCluster(s, k)`` (§4.2, spec §2.2): minimises
    ``sum_C SSE(C) + 2/(|C| eps2**2)``. Exactly-``j`` layers
    ``D_j[e] = min_a D_{j-1}[a] + err(y[a:e])`` for ``j = 1..k``; the "at most" answer
    is the best ``D_j[N]`` over ``j <= k`` (fewest clusters among equals). Each layer
    is solved by divide and conquer over the right end, valid because the cost is
    Monge on monotone input: O(k N log N) time instead of the paper's O(k N**2),
    ``O(k N)`` memory (4 bytes per back-pointer). Exact up to rounding.
    """
    arr, c = _ahp_input(y, eps2, "ahp_k_clustering")
    n = arr.shape[0]
    kk = _check_k(k, n)
    exact = check_flag(exact_k, "exact_k")
    last, back = _layers(arr, c, kk)
    return _k_starts(back, _pick(last, kk, exact), n)


def _ceil_sqrt(n: int) -> int:
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def _ceil_rice(n: int) -> int:
    """Smallest integer k with k >= 2 n**(1/3), i.e. k**3 >= 8 n (exact)."""
    k = max(1, math.floor(2.0 * n ** (1.0 / 3.0)) - 1)
    while k**3 < 8 * n:
        k += 1
    return k


def empirical_k(
    y: npt.ArrayLike,
    rule: Literal["sqrt", "sturges", "doane", "rice"],
    *,
    doane: Literal["standard", "paper"] = "standard",
) -> int:
    """Number of clusters from one of AHP's rules of thumb (§4.2, Algorithm 2).

    ``N = len(y)``; every value is rounded up and clamped to ``[1, N]`` (spec §2.2):
    square root ``sqrt(N)``; Sturges ``1 + log2 N``; Rice ``2 N**(1/3)``; Doane
    ``1 + log2 N + log2(1 + |g|/sigma)`` with ``sigma = sqrt(6(N-2)/((N+1)(N+3)))``.
    ``doane="standard"``: ``g`` is the sample skewness ``m3/m2**1.5`` (central moments
    with ``1/N``; 0 when ``m2 = 0``). ``doane="paper"``: the paper's printed
    ``|sum d**3 / (sum d**2)**1.5|**(1/3)``. For ``N < 3`` sigma is undefined and Doane
    falls back to Sturges (``g = 0``). Square root, Sturges and Rice are computed in
    exact integer arithmetic. O(N).
    """
    arr = check_y(y)
    n = arr.shape[0]
    which = _choice(rule, "rule", EMPIRICAL_RULES)
    how = _choice(doane, "doane", ("standard", "paper"))
    if which == "sqrt":
        k = _ceil_sqrt(n)
    elif which == "sturges":
        k = 1 + (n - 1).bit_length()  # ceil(1 + log2 n)
    elif which == "rice":
        k = _ceil_rice(n)
    else:
        g = 0.0
        if n >= 3:
            d = arr - arr.mean()
            d2 = math.fsum((d * d).tolist())
            d3 = math.fsum((d * d * d).tolist())
            if d2 > 0.0:
                if how == "standard":
                    g = abs((d3 / n) / (d2 / n) ** 1.5)
                else:
                    g = abs(d3 / d2**1.5) ** (1.0 / 3.0)
            sigma = math.sqrt(6.0 * (n - 2) / ((n + 1) * (n + 3)))
            k = math.ceil(1.0 + math.log2(n) + math.log2(1.0 + g / sigma))
        else:
            k = 1 + (n - 1).bit_length()
    return min(max(int(k), 1), n)


def ahp_empirical(
    y: npt.ArrayLike,
    *,
    eps2: float,
    rule: EmpiricalRule = "all",
    doane: Literal["standard", "paper"] = "standard",
    exact_k: bool = False,
) -> np.ndarray:
    """AHP's empirical clustering (Algorithm 2) of sorted noisy counts ``y``.

    For the number ``k`` given by ``rule`` (see :func:`empirical_k`) return the best
    clustering with at most ``k`` clusters (``exact_k=True``: exactly ``k``), as
    :func:`ahp_k_clustering`. ``rule="all"`` (the paper's algorithm) tries the four
    rules and keeps the clustering with the least estimated error (the first rule in
    the order sqrt, Sturges, Doane, Rice among equals). With "at most" semantics that
    is always the largest ``k``'s answer. All layers come from one DP run up to the
    largest ``k``: O(k N log N) time, O(k N) memory (``N = 4096``, ``k = 64``: ~1 MB).
    """
    arr, c = _ahp_input(y, eps2, "ahp_empirical")
    n = arr.shape[0]
    which = _choice(rule, "rule", (*EMPIRICAL_RULES, "all"))
    exact = check_flag(exact_k, "exact_k")
    rules = EMPIRICAL_RULES if which == "all" else (which,)
    ks = [empirical_k(arr, r, doane=doane) for r in rules]
    last, back = _layers(arr, c, max(ks))
    best_j, best_v = 0, np.inf
    for k in ks:
        j = _pick(last, k, exact)
        if last[j] < best_v:
            best_j, best_v = j, last[j]
    return _k_starts(back, best_j, n)
