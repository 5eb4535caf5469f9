"""Non-negative integer counts from a noisy histogram, by post-processing.

:func:`nonnegative_integers` turns an estimate (real, possibly negative) into a table
a statistical office would publish: whole numbers, none negative, adding up to the
estimate's total where that total is itself possible (rounded to a whole number; 0 when
it is negative). Two steps, both post-processing of released values:

1. **Projection** onto ``{x >= 0, sum(x) = T}``: ``x_i = max(y_i - tau, 0)`` with the
   threshold ``tau`` that keeps the total (the Euclidean projection, found by Michelot's
   iteration in ``O(n)`` passes over a shrinking set; a sort settles it if the
   iteration is slow). Negative bins rise to 0 and the mass they gain is taken evenly
   from the positive ones ("norm-sub" in the frequency-estimation literature).
2. **Largest-remainder rounding**: floors, then the ``T - sum(floor(x))`` bins with the
   largest fractional parts go up by one. Fractional parts are compared to 1e-9, so
   that the shift ``tau`` of integer estimates gives one tie for all; within a tie the
   units are spread evenly over the tied bins (never piled at the start of the domain).

Every bin moves by less than one unit in step 2; the result sums to ``T`` exactly.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .vectors import real_vector

__all__ = ["nonnegative_integers", "simplex_threshold"]

_MICHELOT_ROUNDS = 64
_TIE = 1e-9


def simplex_threshold(y: np.ndarray, total: float) -> float:
    """The ``tau`` with ``sum(max(y - tau, 0)) == total`` (``total > 0``)."""
    positive = y[y > 0.0]
    active = positive if positive.sum() >= total else y
    tau = (float(active.sum()) - total) / active.size
    for _ in range(_MICHELOT_ROUNDS):  # tau only grows; entries at or below it never return
        keep = active[active > tau]
        if keep.size == active.size:
            return tau
        active = keep
        tau = (float(active.sum()) - total) / active.size
    u = np.sort(active)[::-1]  # the closed form on what is left (few entries by now)
    css = np.cumsum(u) - total
    j = int(np.flatnonzero(u - css / np.arange(1, u.size + 1) > 0.0)[-1])
    return float(css[j] / (j + 1))


def _spread(candidates: np.ndarray, k: int) -> np.ndarray:
    """``k`` of the sorted indices ``candidates``, evenly spaced over them."""
    m = candidates.size
    return candidates[((np.arange(k) + 0.5) * m / k).astype(np.int64)]


def nonnegative_integers(estimate: npt.ArrayLike) -> np.ndarray:
    """Whole, non-negative counts (int64) closest to ``estimate`` with its total (module
    doc). O(n) time and a few copies of ``n`` values."""
    y = real_vector(estimate, "estimate")
    total = max(int(np.floor(float(y.sum()) + 0.5)), 0)
    if total == 0 or y.size == 0:
        return np.zeros(y.size, dtype=np.int64)
    frac = y - simplex_threshold(y, float(total))  # in place from here: few copies of n
    np.maximum(frac, 0.0, out=frac)
    floor = np.floor(frac)
    frac -= floor
    np.round(frac, 9, out=frac)
    out = floor.astype(np.int64)
    del floor
    k = total - int(out.sum())
    if k > 0:  # the k largest fractional parts go up
        kth = np.partition(frac, frac.size - k)[frac.size - k]
        up = np.flatnonzero(frac > kth + _TIE)
        tied = np.flatnonzero(np.abs(frac - kth) <= _TIE)
        out[up] += 1
        out[_spread(tied, k - up.size)] += 1
    elif k < 0:  # rounding of the threshold overshot: the smallest remainders go down
        k = -k
        pos = np.flatnonzero(out > 0)
        part = frac[pos]
        kth = np.partition(part, k - 1)[k - 1]
        down = pos[part < kth - _TIE]
        tied = pos[np.abs(part - kth) <= _TIE]
        out[down] -= 1
        out[_spread(tied, k - down.size)] -= 1
    return out
