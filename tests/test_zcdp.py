"""zCDP arithmetic (``dphist._kernel.zcdp``): costs of pure steps and Gaussian noise, the
conversion to (epsilon, delta), and the queries' exact L2 sensitivities."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm

from dphist._kernel.operators import (
    FourierCoefficients,
    GroupSums,
    Identity,
    IntervalSums,
    SignedIntervalSums,
    WeightedIntervalSums,
)
from dphist._kernel.zcdp import (
    approx_dp_delta,
    approx_dp_epsilon,
    gaussian_rho,
    pure_epsilon_within,
)
from dphist.errors import ValidationError


def gaussian_delta(rho: float, eps: float) -> float:
    """Exact privacy profile of the Gaussian mechanism with mu = sqrt(2 rho) (Balle and
    Wang 2018): every rho-zCDP conversion must lie above it."""
    mu = math.sqrt(2 * rho)
    return norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def grid_delta(rho: float, eps: float) -> float:
    """Corollary 13 minimised over a dense grid of alpha (the definition)."""
    alpha = 1 + np.geomspace(1e-6, 1e5, 200_001)
    log = (alpha - 1) * (alpha * rho - eps) - np.log(alpha - 1) + alpha * np.log1p(-1 / alpha)
    return float(min(1.0, np.exp(log.min())))


@pytest.mark.parametrize(("rho", "eps"), [(0.5, 2.0), (0.5, 6.0), (0.015, 1.0), (2.0, 8.0)])
def test_conversion_matches_its_definition_and_covers_the_gaussian(rho, eps):
    got = approx_dp_delta(rho, eps)
    assert got == pytest.approx(grid_delta(rho, eps), rel=1e-3)
    assert gaussian_delta(rho, eps) <= got <= 1.0


def test_epsilon_for_delta_inverts_and_beats_bun_steinke():
    for rho, delta in [(0.5, 1e-9), (0.015, 1e-9), (0.1, 1e-5)]:
        eps = approx_dp_epsilon(rho, delta)
        assert approx_dp_delta(rho, eps) == pytest.approx(delta, rel=1e-6)
        assert eps < rho + 2 * math.sqrt(rho * math.log(1 / delta))
    # epsilon = 1 at delta = 1e-9 is about rho = 0.015
    assert approx_dp_epsilon(0.014973, 1e-9) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ValidationError):
        approx_dp_epsilon(0.5, 0.0)


def test_pure_step_cost_and_gaussian_rho_are_exact():
    for rho in (Fraction(1, 2), Fraction(1, 8), Fraction(3, 1000)):
        eps = pure_epsilon_within(rho)
        assert eps * eps / 2 <= rho < (eps + Fraction(1, 2**40)) ** 2 / 2
    assert pure_epsilon_within(Fraction(1, 2)) == 1
    assert gaussian_rho(Fraction(3), Fraction(6)) == Fraction(1, 4)


def brute_l2_squared(query, n: int) -> Fraction:
    """max over bins of ||q(x + e_i) - q(x)||_2**2 (the queries are linear)."""
    x = np.zeros(n, dtype=np.int64)
    weights = getattr(query, "weights", None)
    best = Fraction(0)
    for i in range(n):
        e = x.copy()
        e[i] = 1
        if isinstance(query, FourierCoefficients):
            moved = query.apply_real(e) - query.apply_real(x)
            best = max(best, Fraction(float(np.sum(moved**2))))
            continue
        moved = [Fraction(int(v)) for v in query.apply(e) - query.apply(x)]
        if weights is not None:
            moved = [m * w for m, w in zip(moved, weights, strict=True)]
        best = max(best, sum((m * m for m in moved), Fraction(0)))
    return best


def test_l2_sensitivities_are_the_brute_force_maximum():
    n = 12
    rng = np.random.default_rng(5)
    lo = rng.integers(0, n - 1, 9)
    hi = lo + rng.integers(1, n - lo + 1)
    mid = np.minimum(lo + 1, hi)
    exact = [
        Identity(n),
        GroupSums(np.arange(n) % 4),
        IntervalSums(n, lo, hi),
        SignedIntervalSums(n, lo, mid, hi),
        WeightedIntervalSums(n, lo, hi, tuple(Fraction(k + 1, 4) for k in range(9))),
    ]
    for q in exact:
        assert q.sensitivity2 == brute_l2_squared(q, n), type(q).__name__
    for k in range(1, n + 1):  # an upper bound, exact for odd k and k = n
        q = FourierCoefficients(n, k)
        brute = brute_l2_squared(q, n)
        assert float(q.sensitivity2) >= float(brute) - 1e-12
        if k % 2 == 1 or k == n:
            assert float(q.sensitivity2) == pytest.approx(float(brute), abs=1e-12)
