"""Private selection inside the kernel: report-noisy-min and the selection-based partitions.

These routines receive the true counts from :class:`~dphist._kernel.view.PrivateView`
*after* it has charged the budget, and return only the selected candidates.

Report noisy min (Dwork and Roth 2014, Claim 3.9, for scores of sensitivity ``D``):
add independent Laplace noise of scale ``2D/epsilon`` to every candidate's score and
return the index of the smallest noisy score; this is epsilon-DP whatever the scores.
Here scores are rounded to a power-of-two lattice ``g`` (which raises their
sensitivity to at most ``D + g``) and the noise is exact discrete Laplace on that
lattice with scale ``2(D + g)/epsilon``; ties go to the lowest index, a fixed rule.
It stands in for the exponential mechanism that some papers state: both are
epsilon-DP selections with the same exponent.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit

from .._numeric.deviation import all_interval_deviations_rows
from .noise import NoiseSource, rational_scale

__all__ = [
    "fourier_coefficients",
    "php_partition",
    "report_noisy_min",
    "structure_first_boundaries",
]


def _lattice(sensitivity: Fraction) -> Fraction:
    step = Fraction(1)
    target = Fraction(sensitivity) / (1 << 21)
    while step > target:
        step /= 2
    return step


def report_noisy_min(
    scores: np.ndarray, sensitivity: Fraction, epsilon: Fraction, noise: NoiseSource
) -> int:
    """Index of the smallest ``score + Laplace(2(D+g)/epsilon)`` (exact, on a lattice)."""
    g = _lattice(sensitivity)
    t, s = rational_scale(2 * (Fraction(sensitivity) + g), Fraction(epsilon) * g)
    gf = float(g)
    noisy = np.rint(np.asarray(scores, dtype=np.float64) / gf) + noise.discrete_laplace(
        t, s, len(scores)
    )
    return int(np.argmin(noisy))


# ------------------------------------------------------------------ StructureFirst


@njit(cache=True)
def _vopt_table(p1, p2, k):  # pragma: no cover - compiled
    """T[j, i] = least SSE of x[0:i+1] in j+1 contiguous buckets (V-optimal DP)."""
    n = p1.shape[0] - 1
    table = np.full((k, n), np.inf)
    for i in range(n):
        m = i + 1
        s = p1[m]
        table[0, i] = p2[m] - s * s / m
    for j in range(1, k):
        for i in range(j, n):
            best = np.inf
            for a in range(j, i + 1):
                m = i + 1 - a
                s = p1[i + 1] - p1[a]
                c = table[j - 1, a - 1] + p2[i + 1] - p2[a] - s * s / m
                if c < best:
                    best = c
            table[j, i] = best
    return table


def structure_first_boundaries(
    x: np.ndarray, k: int, bound: int, epsilon: Fraction, noise: NoiseSource
) -> np.ndarray:
    """StructureFirst's bucket starts (Xu et al., ICDE 2012, §5; data-aware spec §3.2).

    Counts are clipped at the public ``bound`` F; the V-optimal table on the clipped
    counts scores every position of boundary ``t`` (right to left, given the
    boundary chosen after it), and each of the ``k - 1`` boundaries is picked by
    report-noisy-min with ``epsilon/(k-1)``. One count in ``[0, F]`` moving by one
    changes any such SSE sum by at most ``2F + 1`` (the scores' sensitivity), so the
    whole selection is epsilon-DP. O(k N^2) time, O(k N) memory.
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
        right = int(a[report_noisy_min(scores, sensitivity, each, noise)])
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
        choice = report_noisy_min(scores, Fraction(2), eps_step, noise)
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
    best = report_noisy_min(totals, Fraction(2), Fraction(epsilon) / 2, noise)
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
