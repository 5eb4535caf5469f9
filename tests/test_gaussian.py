"""The exact discrete Gaussian sampler (``dphist._kernel.gaussian``): its law, its
parameters and its 128-bit arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dphist._kernel.gaussian import (
    _square,
    discrete_gaussian,
    discrete_gaussian_variance,
    gaussian_parameters,
)
from dphist._kernel.noise import GeneratorBits
from dphist.errors import ValidationError


def exact_pmf(sigma2: float, support: np.ndarray) -> np.ndarray:
    y = np.arange(-2000, 2001)
    norm = np.exp(-(y.astype(float) ** 2) / (2 * sigma2)).sum()
    return np.exp(-(support.astype(float) ** 2) / (2 * sigma2)) / norm


@pytest.mark.parametrize(("a", "b"), [(1, 3), (2, 1), (9, 1), (1000, 7)])
def test_law_is_the_discrete_gaussian(a, b):
    """Chi-square goodness of fit on 200,000 seeded draws (fixed seed: deterministic)."""
    draws = discrete_gaussian(GeneratorBits(np.random.default_rng(a + b)), a, b, 200_000)
    sigma2 = a / b
    half = int(4 * math.sqrt(sigma2)) + 1  # cells |y| <= half, the tails pooled
    support = np.arange(-half, half + 1)
    p = exact_pmf(sigma2, support)
    observed = np.array([np.sum(draws == y) for y in support] + [np.sum(np.abs(draws) > half)])
    expected = np.append(p, 1 - p.sum()) * draws.size
    keep = expected > 5
    chi2 = np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4
    assert np.var(draws) == pytest.approx(discrete_gaussian_variance(a, b), rel=0.02)


def test_variance_formula_is_below_sigma_squared_and_close_for_large_sigma():
    assert discrete_gaussian_variance(1, 4) < 0.25
    assert discrete_gaussian_variance(100, 1) == pytest.approx(100, rel=1e-9)


@pytest.mark.parametrize("u", [0, 1, 2**32 - 1, 2**32, 2**40 + 12345, 2**62 + 987654321, 2**63 - 1])
def test_square_in_128_bits(u):
    hi, lo = _square(np.uint64(u))
    assert (int(hi) << 64) + int(lo) == u * u


def test_parameters_are_exact_when_they_fit_and_round_up_otherwise():
    assert gaussian_parameters(Fraction(10)) == (10, 1)
    assert gaussian_parameters(Fraction(1, 3)) == (1, 3)
    sigma2 = Fraction(10**12 + 1, 10**9 + 7)  # ~1000, a denominator too big to keep
    a, b = gaussian_parameters(sigma2)
    assert Fraction(a, b) >= sigma2 and Fraction(a, b) - sigma2 < Fraction(1, b)
    assert b & (b - 1) == 0  # a power of two
    with pytest.raises(ValidationError):
        gaussian_parameters(Fraction(10**9))


def test_large_sigma_and_reproducible_seeds():
    a, b = gaussian_parameters(Fraction(4000**2))
    x = discrete_gaussian(GeneratorBits(np.random.default_rng(1)), a, b, 20_000)
    assert abs(x.mean()) < 4 * 4000 / math.sqrt(x.size)
    assert np.std(x) == pytest.approx(4000, rel=0.03)
    y = discrete_gaussian(GeneratorBits(np.random.default_rng(1)), a, b, 20_000)
    assert np.array_equal(x, y)


@pytest.mark.parametrize(("a", "b", "k"), [(1, 3, 2), (2, 1, 4), (9, 1, 8)])
def test_tails_match_the_exact_law(a, b, k):
    """P(|Y| >= k) beyond two to three sigma, against the exact pmf (400,000 draws)."""
    draws = discrete_gaussian(GeneratorBits(np.random.default_rng(7 * a + b)), a, b, 400_000)
    y = np.arange(-2000, 2001)
    p = exact_pmf(a / b, y)
    tail = float(p[np.abs(y) >= k].sum())
    se = math.sqrt(tail * (1 - tail) / draws.size)
    assert abs(np.mean(np.abs(draws) >= k) - tail) < 5 * se
    assert 0.001 < tail < 0.1  # a real tail, not the bulk
