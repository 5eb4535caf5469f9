"""Quantiles of the noise: exact for one discrete draw, normal for sums of many.

One noisy count is its true value plus one draw ``Z`` of the kernel's discrete Laplace
(pure DP) or discrete Gaussian (zCDP). Its interval uses the exact tail: the smallest
integer ``k`` with ``P(|Z| > k) <= alpha``, so the interval ``[y - k, y + k]`` holds
the true count with probability at least ``1 - alpha`` (a normal approximation would
give 93.7% instead of 95% for the Laplace).

A weighted sum of many draws is close to normal, but one dominated by a few Laplace
draws (a bin of a tree, a short range) has heavier tails: with ``z`` standard
deviations its intervals held 93.9% of H's bins. Such a sum is matched, by variance
and fourth cumulant, to a normal plus an independent Laplace carrying the share ``r =
sqrt(excess kurtosis / 3)`` of the variance (``r = 1``: one Laplace, ``r = 0``: normal),
whose two-sided quantile has a closed-form tail (:func:`mixed_factor`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..errors import ValidationError

__all__ = [
    "Tail",
    "check_alpha",
    "fourth_cumulant",
    "mixed_factor",
    "mixed_tail",
    "normal_quantile",
]


def check_alpha(alpha: object) -> float:
    """``alpha`` as a float in (0, 1), or a clear error."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating):
        raise ValidationError(f"alpha must be a number in (0, 1); got {alpha!r}")
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValidationError(f"alpha must lie strictly between 0 and 1; got {alpha!r}")
    return a


def normal_quantile(alpha: float) -> float:
    """``z`` with ``P(|N(0, 1)| > z) = alpha``."""
    from scipy.special import ndtri  # scipy on first use: not loaded by a publish

    return float(ndtri(1.0 - alpha / 2.0))


@dataclass(frozen=True)
class Tail:
    """The law of one noise draw: ``"laplace"`` with scale ``t/s`` (``P(z)`` proportional
    to ``exp(-|z| s / t)``) or ``"gaussian"`` with ``sigma**2 = a/b`` (proportional to
    ``exp(-z**2 b / (2 a))``), the parameters the kernel drew with (its ledger's
    ``scale``)."""

    kind: str
    scale: Fraction

    def __post_init__(self) -> None:
        scale = self.scale  # a Fraction's sign is its numerator's (no rational comparison)
        positive = scale.numerator > 0 if type(scale) is Fraction else scale > 0
        if self.kind not in ("laplace", "gaussian") or not positive:
            raise ValidationError(f"unknown noise law {self.kind!r} or scale {self.scale!r}")

    def quantile(self, alpha: float) -> int:
        """The smallest integer ``k >= 0`` with ``P(|Z| > k) <= alpha``."""
        if self.kind == "laplace":
            return _laplace_quantile(float(self.scale), alpha)
        return _gaussian_quantile(float(self.scale), alpha)

    def exceed(self, k: int) -> float:
        """``P(|Z| > k)``."""
        if self.kind == "laplace":
            p = math.exp(-1.0 / float(self.scale))
            return 2.0 * p ** (k + 1) / (1.0 + p)
        y, w = _gaussian_weights(float(self.scale))
        return float(2.0 * w[y > k].sum() / (1.0 + 2.0 * w.sum()))


def _laplace_quantile(scale: float, alpha: float) -> int:
    # P(|Z| > k) = 2 p**(k+1) / (1 + p), p = exp(-1/scale)
    log_p = -1.0 / scale
    p = math.exp(log_p)
    k = max(0, math.ceil(math.log(alpha * (1.0 + p) / 2.0) / log_p) - 1)
    while k > 0 and 2.0 * math.exp((k) * log_p) / (1.0 + p) <= alpha:
        k -= 1  # float rounding: step down while k - 1 still suffices
    while 2.0 * math.exp((k + 1) * log_p) / (1.0 + p) > alpha:
        k += 1
    return k


def _gaussian_weights(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(1, int(40 * math.sqrt(sigma2)) + 41, dtype=np.float64)
    return y, np.exp(-(y * y) / (2.0 * sigma2))


def _gaussian_quantile(sigma2: float, alpha: float) -> int:
    y, w = _gaussian_weights(sigma2)
    total = 1.0 + 2.0 * w.sum()
    beyond = 2.0 * (w.sum() - np.cumsum(w)) / total  # P(|Z| > y) for y = 1, 2, ...
    if (1.0 - 1.0 / total) <= alpha:  # P(|Z| > 0)
        return 0
    return int(y[np.argmax(beyond <= alpha)])


def fourth_cumulant(variance, kind: str) -> np.ndarray:
    """Fourth cumulant of one draw of variance ``variance``: for the discrete Laplace
    (a difference of two geometric draws, ``p`` from the variance ``2p / (1-p)**2``)
    ``2 p (1 + 4p + p**2) / (1 - p)**4``, 3 variance**2 in the continuous limit; 0 for
    the (discrete) Gaussian."""
    if isinstance(variance, float):  # one number (most releases): no array round trip
        if kind == "gaussian":
            return 0.0
        safe = max(variance, 1e-300)
        p = safe / 2.0 if safe < 1e-6 else ((safe + 1.0) - math.sqrt(2.0 * safe + 1.0)) / safe
        return 2.0 * p * (1.0 + 4.0 * p + p * p) / (1.0 - p) ** 4
    v = np.asarray(variance, dtype=np.float64)
    if kind == "gaussian":
        return np.zeros_like(v)
    if v.size == 1:
        return np.full(v.shape, fourth_cumulant(float(v.flat[0]), kind))
    safe = np.maximum(v, 1e-300)
    p = ((safe + 1.0) - np.sqrt(2.0 * safe + 1.0)) / safe
    small = safe < 1e-6  # p ~ v/2: avoid cancellation
    p = np.where(small, safe / 2.0, p)
    return 2.0 * p * (1.0 + 4.0 * p + p * p) / (1.0 - p) ** 4


_GRID = np.linspace(0.0, 1.0, 201)


def _mixed_tail(x: float, r: float) -> float:
    """``P(|N + L| > x)``, ``N`` normal of variance ``1 - r``, ``L`` Laplace of variance
    ``r``."""
    from scipy.special import log_ndtr

    if r <= 0.0:
        return float(2.0 * np.exp(log_ndtr(-x)))
    b = math.sqrt(r / 2.0)
    if r >= 1.0:
        return math.exp(-x / b)
    s = math.sqrt(1.0 - r)
    shift = s * s / (2.0 * b * b)
    t1 = math.exp(shift - x / b + log_ndtr(x / s - s / b))
    t2 = math.exp(shift + x / b + log_ndtr(-s / b - x / s))
    return float(2.0 * (np.exp(log_ndtr(-x / s)) + 0.5 * (t1 - t2)))


@lru_cache(maxsize=32)
def _factors(alpha: float) -> np.ndarray:
    from scipy.optimize import brentq

    hi = math.log(2.0 / alpha) + 10.0
    return np.array([brentq(lambda x, r=r: _mixed_tail(x, r) - alpha, 0.0, hi) for r in _GRID])


def mixed_factor(alpha: float, kurtosis: np.ndarray) -> np.ndarray:
    """Standard deviations to the two-sided ``1 - alpha`` quantile of a sum with excess
    kurtosis ``kurtosis`` (see the module docstring); ``z`` for kurtosis <= 0."""
    r = np.sqrt(np.clip(np.asarray(kurtosis, dtype=np.float64), 0.0, 3.0) / 3.0)
    return np.interp(r, _GRID, _factors(float(alpha)))


def mixed_tail(x: np.ndarray, kurtosis: np.ndarray) -> np.ndarray:
    """``P(|E| > x sd)`` for the kurtosis-matched law of :func:`mixed_factor`
    (vectorised ``_mixed_tail``)."""
    from scipy.special import log_ndtr

    x = np.asarray(x, dtype=np.float64)
    r = np.broadcast_to(
        np.sqrt(np.clip(np.asarray(kurtosis, dtype=np.float64), 0.0, 3.0) / 3.0), x.shape
    )
    out = 2.0 * np.exp(log_ndtr(-x))
    lap = r >= 1.0 - 1e-12
    b = np.sqrt(np.maximum(r, 1e-300) / 2.0)
    out = np.where(lap, np.exp(-x / b), out)
    mid = (r > 1e-12) & ~lap
    if np.any(mid):
        xm, bm = x[mid], b[mid]
        s = np.sqrt(1.0 - r[mid])
        shift = s * s / (2.0 * bm * bm)
        t1 = np.exp(shift - xm / bm + log_ndtr(xm / s - s / bm))
        t2 = np.exp(shift + xm / bm + log_ndtr(-s / bm - xm / s))
        out[mid] = 2.0 * (np.exp(log_ndtr(-xm / s)) + 0.5 * (t1 - t2))
    return out
