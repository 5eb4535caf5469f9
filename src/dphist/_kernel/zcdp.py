"""Zero-concentrated DP arithmetic: what a rho costs and what it implies.

* A pure epsilon-DP step is ``epsilon**2 / 2``-zCDP (Bun and Steinke, TCC 2016,
  Proposition 1.4); :func:`pure_epsilon_within` gives the largest rational epsilon
  (on a fine grid) whose cost fits a rho.
* The Gaussian mechanism with L2 sensitivity ``D`` and variance ``sigma**2`` is
  ``D**2 / (2 sigma**2)``-zCDP, the discrete Gaussian too (Canonne, Kamath, Steinke,
  NeurIPS 2020, Theorem 14): :func:`gaussian_rho`.
* rho-zCDP implies ``(epsilon, delta)``-DP for every delta with the tight conversion of
  Canonne, Kamath and Steinke 2020, Corollary 13:
  ``delta = min over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1)
  * (1 - 1/alpha)**alpha``; :func:`approx_dp_epsilon` inverts it for epsilon.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..errors import ValidationError

__all__ = ["approx_dp_delta", "approx_dp_epsilon", "gaussian_rho", "pure_epsilon_within"]

_GRID = 1 << 40  # pure_epsilon_within returns a multiple of 2**-40


def gaussian_rho(sensitivity2: Fraction, variance: Fraction) -> Fraction:
    """Exact rho of Gaussian noise of ``variance`` on a query of squared L2 sensitivity."""
    return Fraction(sensitivity2) / (2 * Fraction(variance))


def pure_epsilon_within(rho: Fraction) -> Fraction:
    """The largest multiple of ``2**-40`` with ``epsilon**2 / 2 <= rho``."""
    rho = Fraction(rho)
    if rho <= 0:
        raise ValidationError(f"rho must be positive; got {rho}")
    # epsilon = k / G with k**2 <= 2 rho G**2: k = isqrt(floor(2 rho G**2))
    k = math.isqrt(2 * rho.numerator * _GRID * _GRID // rho.denominator)
    return Fraction(k, _GRID)


def _log_delta(rho: float, epsilon: float, alpha: float) -> float:
    return (
        (alpha - 1) * (alpha * rho - epsilon) - math.log(alpha - 1) + alpha * math.log1p(-1 / alpha)
    )


def _min_log_delta(rho: float, epsilon: float) -> float:
    from scipy.optimize import minimize_scalar  # scipy on first use: not loaded by a publish

    hi = max(2.0, 4 * (epsilon + 1) / rho + 2)
    res = minimize_scalar(
        lambda a: _log_delta(rho, epsilon, a), bounds=(1 + 1e-9, hi), method="bounded"
    )
    return min(0.0, float(res.fun))


def approx_dp_delta(rho: float, epsilon: float) -> float:
    """The smallest delta for which rho-zCDP implies (epsilon, delta)-DP (CKS20 Cor. 13)."""
    if rho <= 0 or epsilon < 0:
        raise ValidationError("rho must be positive and epsilon non-negative")
    return math.exp(_min_log_delta(rho, epsilon))


def approx_dp_epsilon(rho: float, delta: float) -> float:
    """The smallest epsilon with rho-zCDP => (epsilon, delta)-DP (CKS20 Cor. 13)."""
    if rho <= 0 or not 0 < delta < 1:
        raise ValidationError(f"rho must be positive and delta in (0, 1); got {rho!r}, {delta!r}")
    from scipy.optimize import brentq

    target = math.log(delta)
    if _min_log_delta(rho, 0.0) <= target:
        return 0.0
    upper = rho + 2 * math.sqrt(rho * math.log(1 / delta))  # Bun and Steinke's bound
    return brentq(lambda e: _min_log_delta(rho, e) - target, 0.0, upper * 1.01 + 1e-12)
