"""Private selections: mechanisms that release a choice, not noisy values.

A selection is a small object (:class:`Selection`) that declares its primitive, the
sensitivity of its scores to one record, the noise scale it uses, how many values it
releases and where its privacy argument is; :meth:`PrivateView.select
<dphist._kernel.view.PrivateView.select>` charges the budget with those facts and
only then hands the sealed counts to :meth:`Selection.choose`. A new selection-based
method needs one selection here (if its mechanism is new), one block and one recipe.

The selections here are report-noisy-min ones: :class:`SFBoundaries` (StructureFirst),
:class:`PHPClusters` (P-HPartition), :class:`EFPASize` and :class:`WorstQuery` (MWEM);
the noisy L1 partition is :class:`~dphist._kernel.l1_partition.NoisyPartition` and
PrivTree's split :class:`~dphist._kernel.biased_split.BiasedSplit`.

Report noisy min (Dwork and Roth 2014, Claim 3.9, for scores of sensitivity ``D``):
add independent Laplace noise of scale ``2D/epsilon`` to every candidate's score and
return the index of the smallest noisy score; this is epsilon-DP whatever the scores.
Here scores are rounded to a power-of-two lattice ``g`` (which raises their
sensitivity to at most ``D + g``) and the noise is exact discrete Laplace on that
lattice with scale ``2(D + g)/epsilon``; ties go to the lowest index, a fixed rule.
It stands in for the exponential mechanism that some papers state: both are
epsilon-DP selections with the same exponent.

Under zero-concentrated DP the selections marked ``bounded_range`` (every noisy
choice a noisy min over scores of bounded sensitivity) run each choice as the exact
exponential mechanism instead (:func:`exponential_min`), whose epsilon-bounded range
costs ``epsilon**2 / 8`` (Cesar and Rogers 2021); :meth:`Selection.zcdp_cost` states
what the whole selection costs at a run epsilon, adding up its steps in rho.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from .._jit import njit
from .._numeric.deviation import all_interval_deviations_rows
from .budget import Primitive
from .noise import NoiseSource, rational_scale

__all__ = [
    "EFPASize",
    "PHPClusters",
    "SFBoundaries",
    "Selection",
    "WorstQuery",
    "exponential_min",
    "fourier_coefficients",
    "noisy_argmin",
    "php_partition",
    "report_noisy_min",
    "structure_first_boundaries",
]


@dataclass(frozen=True)
class Selection:
    """A private choice from the sealed counts, charged by ``PrivateView.select``.

    Subclasses set ``primitive`` and ``proof`` (where the privacy argument is) and
    implement :meth:`sensitivity` (of the scores to one record, for ``n`` bins),
    :meth:`scale` (the noise scale actually used at a run epsilon), :meth:`choose`;
    ``released`` is the number of values the choice reveals (for the ledger).
    """

    primitive: ClassVar[Primitive] = Primitive.NOISY_MIN
    proof: ClassVar[str] = ""
    #: True when every noisy choice is a noisy min over scores of bounded sensitivity:
    #: under zCDP ``choose(..., mechanism="exponential")`` runs each as the exponential
    #: mechanism, and :meth:`zcdp_cost` counts each at ``epsilon**2 / 8``.
    bounded_range: ClassVar[bool] = False

    def zcdp_cost(self, n: int) -> Fraction:
        """``c`` with :meth:`choose` at run epsilon ``e`` being ``c e**2``-zCDP for one
        record: 1/2 for any pure ``e``-DP selection (Bun and Steinke 2016, Prop. 1.4);
        a bounded-range selection adds up its exponential-mechanism steps."""
        return Fraction(1, 2)

    @property
    def certified(self) -> bool:
        """False only for reference modes known not to be epsilon-DP."""
        return True

    def sensitivity(self, n: int) -> Fraction:
        raise NotImplementedError

    def scale(self, n: int, epsilon: Fraction) -> Fraction:
        """Noise scale used at ``epsilon`` (report-noisy-min: ``2 D / epsilon``)."""
        return 2 * self.sensitivity(n) / epsilon

    def released(self, n: int) -> int:
        return 0

    def describe(self, n: int) -> str:
        return type(self).__name__

    def for_unit(self, records: int) -> Selection:
        """This selection when one privacy unit holds ``records`` records: settings that
        predict a later step's noise grow with it (privacy is handled by the view)."""
        return self

    def choose(self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource) -> Any:
        """The choice at run ``epsilon``; bounded-range selections also take
        ``mechanism="laplace"`` (report noisy min) or ``"exponential"``."""
        raise NotImplementedError


@dataclass(frozen=True)
class SFBoundaries(Selection):
    """StructureFirst's ``k`` buckets (Xu et al., ICDE 2012, §5): bucket starts.

    ``bound`` is the public upper bound F on a count; the scores' sensitivity is
    ``2F + 1`` (see :func:`structure_first_boundaries`).
    """

    k: int
    bound: int
    proof: ClassVar[str] = "structure_first_boundaries; Xu et al. 2012 §5"
    bounded_range: ClassVar[bool] = True

    def sensitivity(self, n: int) -> Fraction:
        return Fraction(2 * self.bound + 1)

    def zcdp_cost(self, n: int) -> Fraction:
        """``k - 1`` choices at ``e/(k-1)`` each: ``(k-1) (e/(k-1))**2 / 8``."""
        return Fraction(1, 8 * max(self.k - 1, 1))

    def released(self, n: int) -> int:
        return max(self.k - 1, 0)

    def describe(self, n: int) -> str:
        return f"StructureFirst boundaries (k={self.k}, F={self.bound})"

    def choose(
        self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource, mechanism: str = "laplace"
    ) -> np.ndarray:
        return structure_first_boundaries(x, self.k, self.bound, epsilon, noise, mechanism)


@dataclass(frozen=True)
class PHPClusters(Selection):
    """P-HPartition's clusters (Acs et al., ICDM 2012): cluster starts.

    ``count_epsilon`` is the epsilon of the later count step (it sets the scores'
    expected noise term, a public utility setting).
    """

    count_epsilon: Fraction
    max_clusters: int
    proof: ClassVar[str] = "php_partition; Acs, Castelluccia, Chen 2012 §4"
    bounded_range: ClassVar[bool] = True

    def sensitivity(self, n: int) -> Fraction:
        return Fraction(2)

    def zcdp_cost(self, n: int) -> Fraction:
        """A record enters at most one bisection per level (``D`` levels at ``e/(2D)``)
        and the final choice at ``e/2``: ``D (e/(2D))**2 / 8 + (e/2)**2 / 8``."""
        depth = max(1, n.bit_length() - 1)
        return Fraction(1, 32 * depth) + Fraction(1, 32)

    def describe(self, n: int) -> str:
        return f"P-HPartition (max {self.max_clusters})"

    def for_unit(self, records: int) -> PHPClusters:
        return replace(self, count_epsilon=Fraction(self.count_epsilon) / records)

    def choose(
        self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource, mechanism: str = "laplace"
    ) -> np.ndarray:
        ce = Fraction(self.count_epsilon)
        return php_partition(x, epsilon, ce, self.max_clusters, noise, mechanism)


@dataclass(frozen=True)
class EFPASize(Selection):
    """EFPA's number ``K`` of kept Fourier coefficients (Acs et al. 2012), by
    report-noisy-min over ``K = 1, 3, 5, ...`` and ``N``.

    Score ``||v[K:]||_2 + r(K)``: the discarded energy plus the root mean square L2
    norm of the publishing step's noise on ``K`` coefficients, both in the units of
    ``v``. Laplace noise of scale ``D(K)/noise_epsilon`` gives ``r = sqrt(2 K) D(K) /
    noise_epsilon`` with ``D(K) = K/sqrt(N)`` the L1 sensitivity of ``K`` coefficients
    (``operators.fourier_l1_bound``; the paper's ``sqrt(K)`` is the L2 argument, far
    looser when ``K << N``). With ``gaussian=True`` ``noise_epsilon`` is the
    publisher's rho and the noise discrete Gaussian of variance ``D2(K)/(2 rho)``,
    ``D2(K) = K/N`` the squared L2 sensitivity: ``r = K / sqrt(2 N rho)``. One record
    moves ``v`` by a unit vector, so the data term has sensitivity 1.
    """

    noise_epsilon: Fraction
    gaussian: bool = False
    proof: ClassVar[str] = "EFPASize; orthonormal basis, Acs et al. 2012 §3"
    bounded_range: ClassVar[bool] = True

    def sensitivity(self, n: int) -> Fraction:
        return Fraction(1)

    def zcdp_cost(self, n: int) -> Fraction:
        return Fraction(1, 8)

    def released(self, n: int) -> int:
        return 1

    def describe(self, n: int) -> str:
        return f"EFPA size (n={n})"

    def for_unit(self, records: int) -> EFPASize:
        # the publisher's noise grows K-fold: epsilon / K, or rho / K**2
        per = records * records if self.gaussian else records
        return replace(self, noise_epsilon=Fraction(self.noise_epsilon) / per)

    def choose(
        self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource, mechanism: str = "laplace"
    ) -> int:
        n = x.shape[0]
        candidates = np.unique(np.append(np.arange(1, n + 1, 2), n))
        v = fourier_coefficients(x)
        tail = np.sqrt(np.append(np.cumsum((v * v)[::-1])[::-1], 0.0))
        budget = float(self.noise_epsilon)
        if self.gaussian:
            rms = candidates / math.sqrt(2.0 * n * budget)
        else:
            noise_l1 = np.minimum(candidates / math.sqrt(n), np.sqrt(candidates))
            rms = np.sqrt(2.0 * candidates) * noise_l1 / budget
        scores = tail[candidates] + rms
        return int(candidates[noisy_argmin(scores, Fraction(1), epsilon, noise, mechanism)])


@dataclass(frozen=True, eq=False)
class WorstQuery(Selection):
    """MWEM's choice of the interval query worst answered by a public estimate
    (Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1): the index of the candidate
    ``[lo_q, hi_q)`` maximizing ``|q(x) - answers_q|`` by report noisy max.

    ``answers`` are the public estimate's answers. One record moves every interval
    count by at most 1, hence every score by at most 1 (sensitivity 1, in whichever
    direction); report noisy max with scale ``2/epsilon`` stands in for the paper's
    exponential mechanism with the same exponent.
    """

    lo: np.ndarray
    hi: np.ndarray
    answers: np.ndarray
    proof: ClassVar[str] = "report_noisy_min; Dwork and Roth 2014, Claim 3.9"
    bounded_range: ClassVar[bool] = True

    def sensitivity(self, n: int) -> Fraction:
        return Fraction(1)

    def zcdp_cost(self, n: int) -> Fraction:
        return Fraction(1, 8)

    def released(self, n: int) -> int:
        return 1

    def describe(self, n: int) -> str:
        return f"worst-answered interval of {len(self.lo)} (n={n})"

    def choose(
        self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource, mechanism: str = "laplace"
    ) -> int:
        prefix = np.concatenate(([0], np.cumsum(x, dtype=np.int64))).astype(np.float64)
        error = np.abs(prefix[self.hi] - prefix[self.lo] - self.answers)
        return noisy_argmin(-error, Fraction(1), epsilon, noise, mechanism)


@lru_cache(maxsize=256)
def _lattice(sensitivity: Fraction) -> Fraction:
    step = Fraction(1)
    target = Fraction(sensitivity) / (1 << 21)
    while step > target:
        step /= 2
    return step


_CAP = float(2**61)


def report_noisy_min(
    scores: np.ndarray, sensitivity: Fraction, epsilon: Fraction, noise: NoiseSource
) -> int:
    """Index of the smallest ``score + Laplace(2(D+g)/epsilon)`` (exact, on a lattice)."""
    g = _lattice(sensitivity)
    t, s = rational_scale(2 * (Fraction(sensitivity) + g), Fraction(epsilon) * g)
    # Clamping is 1-Lipschitz, so it keeps the sensitivity; it keeps the sum in int64
    # and maps an infinite score (a candidate never to be chosen) to the far end.
    units = np.clip(np.rint(np.asarray(scores, dtype=np.float64) / float(g)), -_CAP, _CAP)
    noisy = units.astype(np.int64) + noise.discrete_laplace(t, s, len(scores))
    return int(np.argmin(noisy))


_MAX_DEN = 1 << 56  # the exponent's denominator (Bernoulli(exp(-r/q)) coins)


def exponential_min(
    scores: np.ndarray, sensitivity: Fraction, epsilon: Fraction, noise: NoiseSource
) -> int:
    """Index ``i`` with probability proportional to ``exp(-epsilon s_i / (2(D+g)))``: the
    exponential mechanism (McSherry and Talwar 2007) on the lattice scores ``s_i`` of
    :func:`report_noisy_min` (same lattice ``g``, clamp and sensitivity ``D + g``). It
    is epsilon-DP with epsilon-bounded range, hence ``epsilon**2 / 8``-zCDP. The
    exponent per lattice unit ``epsilon g / (2(D+g))`` is rounded down to a rational
    the integer sampler holds (a smaller exponent is more private)."""
    g = _lattice(sensitivity)
    units = np.clip(np.rint(np.asarray(scores, dtype=np.float64) / float(g)), -_CAP, _CAP)
    d = units.astype(np.int64)
    d -= d.min()
    rate = Fraction(epsilon) * g / (2 * (Fraction(sensitivity) + g))
    if rate.denominator <= _MAX_DEN and rate.numerator < _CAP:
        p, q = rate.numerator, rate.denominator
    else:
        p, q = min(rate.numerator * _MAX_DEN // rate.denominator, int(_CAP)), _MAX_DEN
    return noise.exponential_index(d, p, q)


def noisy_argmin(
    scores: np.ndarray,
    sensitivity: Fraction,
    epsilon: Fraction,
    noise: NoiseSource,
    mechanism: str = "laplace",
) -> int:
    """:func:`report_noisy_min` (``"laplace"``) or :func:`exponential_min`."""
    if mechanism == "exponential":
        return exponential_min(scores, sensitivity, epsilon, noise)
    return report_noisy_min(scores, sensitivity, epsilon, noise)


# ------------------------------------------------------------------ StructureFirst


# Smallest block of the candidate scan in _vopt_table; larger blocks are reached by
# doubling while whole blocks are ruled out (4 measured best on the 4,096-bin data).
_BLOCK = 4


@njit(cache=True)
def _vopt_table(p1, p2, k):  # pragma: no cover - compiled
    """V-optimal table of the entries StructureFirst's selection reads (spec §3.2).

    ``T[j, i]`` is the least SSE of ``x[0:i+1]`` in ``j+1`` contiguous buckets, for
    rows ``j = 0 .. k-2`` and columns ``j <= i <= N-k+j`` (a boundary ``t`` of ``k``
    buckets lies in ``[t, N-k+t]``, so the selection needs no other entry; row
    ``k-1`` is never read). Other entries are ``inf``. ``p1``, ``p2`` are prefix sums
    of the centred values and their squares; ``SSE(a, i)`` (bucket ``x[a:i+1]``) is
    ``P2 - S*S/m`` from them. Recurrence: ``T[j, i] = min_{j<=a<=i} T[j-1, a-1] +
    SSE(a, i)``. The minimum is exact; the scan over the last bucket's start ``a``
    (from ``i`` down) skips candidates by two bounds that hold for any values:

    1. SSE only grows when a bucket grows: ``SSE(A u B) = SSE(A) + SSE(B) +
       |A||B|/(|A|+|B|) (mean A - mean B)**2 >= SSE(A) + SSE(B) >= SSE(B)``.
    2. ``T[j, i]`` is nondecreasing in ``i``: drop bin ``i+1`` from an optimal
       partition of ``x[0:i+2]``; if its bucket had more bins this costs no more by
       (1), if it was alone the ``j`` other buckets cover ``x[0:i+1]`` (``i+1 > j``
       bins) and splitting one of them costs no more either.

    Block bound: for every ``a'`` in ``[lo, hi]``, ``T[j-1, a'-1] + SSE(a', i) >=
    T[j-1, lo-1] + SSE(hi, i)`` by (2) and (1); a block whose bound is not below the
    best value so far is skipped whole. Stopping bound: for every ``a' < a``,
    ``T[j-1, a'-1] + SSE(a', i) >= T[j-1, a'-1] + SSE(a', a-1) + SSE(a, i) >=
    T[j, a-1] + SSE(a, i)`` by (1) and the definition of ``T[j, a-1]`` (the first
    two terms are one partition of ``x[0:a]`` in ``j+1`` buckets), so the scan stops
    once that is not below the best value. The scan starts from the optimal start
    for ``i-1``, which makes both bounds bite early. Skipped candidates are never
    strictly better, so each entry is the exact minimum up to floating-point
    rounding (in near-ties within rounding a different, equally good candidate may
    set it). Blocks double in length while they are skipped and fall back to
    ``_BLOCK`` when one is not.
    """
    n = p1.shape[0] - 1
    rows = k - 1
    width = n - k + 1
    table = np.full((max(rows, 0), n), np.inf)
    if rows < 1:
        return table
    inv = np.empty(n + 1)
    inv[0] = np.inf
    for m in range(1, n + 1):
        inv[m] = 1.0 / m
    for i in range(width):
        s = p1[i + 1]
        table[0, i] = p2[i + 1] - s * s * inv[i + 1]
    for j in range(1, rows):
        prev = table[j - 1]
        cur = table[j]
        start = j  # optimal start of the last bucket for the previous column
        for i in range(j, j + width):
            q1 = p1[i + 1]
            q2 = p2[i + 1]
            s = q1 - p1[start]
            best = prev[start - 1] + (q2 - p2[start] - s * s * inv[i + 1 - start])
            arg = start
            hi = i
            size = _BLOCK
            while hi >= j:
                lo = max(j, hi - size + 1)
                s = q1 - p1[hi]
                if prev[lo - 1] + (q2 - p2[hi] - s * s * inv[i + 1 - hi]) >= best:
                    size *= 2
                elif size > _BLOCK:
                    size //= 2
                    continue
                else:
                    for a in range(hi, lo - 1, -1):
                        s = q1 - p1[a]
                        c = prev[a - 1] + (q2 - p2[a] - s * s * inv[i + 1 - a])
                        if c < best:
                            best = c
                            arg = a
                s = q1 - p1[lo]
                if cur[lo - 1] + (q2 - p2[lo] - s * s * inv[i + 1 - lo]) >= best:
                    break
                hi = lo - 1
            cur[i] = best
            start = arg
    return table


def structure_first_boundaries(
    x: np.ndarray,
    k: int,
    bound: int,
    epsilon: Fraction,
    noise: NoiseSource,
    mechanism: str = "laplace",
) -> np.ndarray:
    """StructureFirst's bucket starts (Xu et al., ICDE 2012, §5; data-aware spec §3.2).

    Counts are clipped at the public ``bound`` F; the V-optimal table on the clipped
    counts scores every position of boundary ``t`` (right to left, given the
    boundary chosen after it), and each of the ``k - 1`` boundaries is picked by
    report-noisy-min with ``epsilon/(k-1)``. One count in ``[0, F]`` moving by one
    changes any such SSE sum by at most ``2F + 1`` (the scores' sensitivity), so the
    whole selection is epsilon-DP. O(k N) memory; O(k N^2) time in the worst case,
    far less in practice (see ``_vopt_table``).
    """
    n = x.size
    if k <= 1:
        return np.zeros(1, dtype=np.int64)
    clipped = np.minimum(x, bound).astype(np.float64)
    clipped -= clipped.mean()
    p1 = np.concatenate(([0.0], np.cumsum(clipped)))
    p2 = np.concatenate(([0.0], np.cumsum(clipped * clipped)))
    table = _vopt_table(p1, p2, k)
    each = Fraction(epsilon) / (k - 1)
    sensitivity = Fraction(2 * bound + 1)
    starts = [n]
    right = n
    for t in range(k - 1, 0, -1):
        a = np.arange(t, right)  # bucket t = [a, right)
        m = right - a
        s = p1[right] - p1[a]
        scores = table[t - 1, a - 1] + (p2[right] - p2[a]) - s * s / m
        right = int(a[noisy_argmin(scores, sensitivity, each, noise, mechanism)])
        starts.append(right)
    starts.append(0)
    return np.array(sorted(set(starts) - {n}), dtype=np.int64)


# ------------------------------------------------------------------ P-HPartition


def _split_deviations(x: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """dev(x[lo:p]) and dev(x[p:hi]) for p = lo+1 .. hi-1 (mean deviations)."""
    seg = np.ascontiguousarray(x[lo:hi])
    m = seg.size
    right = all_interval_deviations_rows(seg, m - 1, m)[0]  # dev(seg[a:m]) for a
    left = all_interval_deviations_rows(seg[::-1].copy(), m - 1, m)[0][::-1]
    # left[a] = dev(seg[0 : a+1]); want dev(seg[:p]) for p = 1..m-1 -> left[p-1]
    return left[: m - 1], right[1:m]


def php_partition(
    x: np.ndarray,
    epsilon: Fraction,
    count_epsilon: Fraction,
    max_clusters: int,
    noise: NoiseSource,
    mechanism: str = "laplace",
) -> np.ndarray:
    """P-HPartition's clusters (Acs, Castelluccia, Chen, ICDM 2012; spec §4.1).

    Recursive bisection, first unfinished cluster first: each decision ("stop" or
    "split at p") is a report-noisy-min over the cluster's error change (sensitivity
    2: a cluster's L1 deviation moves by at most 2(1 - 1/|C|)) with
    ``epsilon/(2D)``, ``D = floor(log2 N)``; a bin takes part in at most one
    decision per level, so the bisections cost ``epsilon/2``. The number of clusters
    is then chosen among every clustering visited by one more report-noisy-min with
    ``epsilon/2`` (sensitivity 2). The expected absolute noise ``1/count_epsilon`` of
    each published cluster total is a public constant in every error.
    """
    n = x.size
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    depth = max(1, n.bit_length() - 1)  # floor(log2 n)
    eps_step = Fraction(epsilon) / (2 * depth)
    b = 1.0 / float(count_epsilon)
    xf = x.astype(np.float64)

    def dev(lo: int, hi: int) -> float:
        seg = xf[lo:hi]
        return float(np.abs(seg - seg.mean()).sum())

    clusters = [(0, n, 1)]  # (lo, hi, level)
    ready = [False]
    errors = [dev(0, n) + b]
    visited = [(list(clusters), sum(errors))]
    while len(clusters) < n and len(clusters) <= max_clusters and not all(ready):
        c = ready.index(False)
        lo, hi, level = clusters[c]
        left, right = _split_deviations(xf, lo, hi)
        split_cost = left + right + 2 * b
        # score = error of the cluster after the decision (others are unchanged)
        scores = np.concatenate(([errors[c]], split_cost))
        choice = noisy_argmin(scores, Fraction(2), eps_step, noise, mechanism)
        if choice == 0:
            ready[c] = True
        else:
            p = lo + choice
            kids = [(lo, p, level + 1), (p, hi, level + 1)]
            clusters[c : c + 1] = []
            del ready[c], errors[c]
            for a, z, lev in kids:
                clusters.append((a, z, lev))
                ready.append(z - a == 1 or lev >= depth)
                errors.append(dev(a, z) + b)
        visited.append((list(clusters), sum(errors)))
    totals = np.array([t for _, t in visited])
    best = noisy_argmin(totals, Fraction(2), Fraction(epsilon) / 2, noise, mechanism)
    return np.array(sorted(lo for lo, _, _ in visited[best][0]), dtype=np.int64)


# ------------------------------------------------------------------ EFPA


def fourier_coefficients(x: np.ndarray) -> np.ndarray:
    """Coefficients of ``x`` in the orthonormal real Fourier basis, by frequency.

    Row 0 is ``1/sqrt(N)``; then for each frequency ``k`` a cosine and a sine row of
    norm 1; for even ``N`` the last row is ``(-1)^j / sqrt(N)`` (spec §4.2).
    """
    n = x.size
    f = np.fft.rfft(np.asarray(x, dtype=np.float64))
    out = np.empty(n)
    out[0] = f[0].real / math.sqrt(n)
    half = (n - 1) // 2
    scale = math.sqrt(2.0 / n)
    out[1 : 2 * half + 1 : 2] = f[1 : half + 1].real * scale
    out[2 : 2 * half + 2 : 2] = -f[1 : half + 1].imag * scale
    if n % 2 == 0 and n > 1:
        out[n - 1] = f[n // 2].real / math.sqrt(n)
    return out


def inverse_fourier(coeffs: np.ndarray) -> np.ndarray:
    """Inverse of :func:`fourier_coefficients` (the basis is orthonormal)."""
    n = coeffs.size
    f = np.zeros(n // 2 + 1, dtype=np.complex128)
    f[0] = coeffs[0] * math.sqrt(n)
    half = (n - 1) // 2
    scale = math.sqrt(n / 2.0)
    f[1 : half + 1] = (coeffs[1 : 2 * half + 1 : 2] - 1j * coeffs[2 : 2 * half + 2 : 2]) * scale
    if n % 2 == 0 and n > 1:
        f[n // 2] = coeffs[n - 1] * math.sqrt(n)
    return np.fft.irfft(f, n)
