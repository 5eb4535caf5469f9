"""Unnormalised Haar transform (Privelet) vs direct definitions and exact variances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._numeric.wavelet import (
    haar_depth,
    haar_forward,
    haar_intervals,
    haar_inverse,
    haar_level_counts,
    haar_sensitivity,
    haar_size,
    haar_weights,
    privelet_range_variance,
)
from dphist.errors import ValidationError


def padded(x: np.ndarray) -> np.ndarray:
    m = haar_depth(x.size)
    return np.concatenate((x, np.zeros((1 << m) - x.size, dtype=x.dtype)))


def direct_coefficients(x: np.ndarray) -> np.ndarray:
    """S, then S(left) - S(right) of every non-padding node, root level first."""
    xp = padded(x)
    out = [xp.sum()]
    for lev in range(haar_depth(x.size), 0, -1):
        width = 1 << lev
        for start in range(0, x.size, width):
            block = xp[start : start + width]
            out.append(block[: width // 2].sum() - block[width // 2 :].sum())
    return np.array(out)


def inverse_matrix(n: int) -> np.ndarray:
    """R with haar_inverse(c, n) == R @ c, built column by column."""
    k = haar_size(n)
    return np.column_stack([haar_inverse(np.eye(k)[j], n) for j in range(k)])


@settings(max_examples=150, deadline=None)
@given(x=st.lists(st.integers(0, 1000), min_size=1, max_size=300))
def test_forward_matches_definition_and_inverts(x):
    x = np.array(x, dtype=np.int64)
    coeffs = haar_forward(x)
    assert coeffs.dtype == np.int64 and coeffs.size == haar_size(x.size)
    assert np.array_equal(coeffs, direct_coefficients(x))
    # halving sums of integers is exact in float64
    assert np.array_equal(haar_inverse(coeffs, x.size), x.astype(float))


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=200
    )
)
def test_float_round_trip(x):
    x = np.array(x)
    np.testing.assert_allclose(haar_inverse(haar_forward(x), x.size), x, rtol=1e-9, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(x=st.lists(st.integers(0, 50), min_size=1, max_size=200))
def test_intervals_express_coefficients_as_interval_sums(x):
    x = np.array(x, dtype=np.int64)
    n = x.size
    lo, mid, hi = haar_intervals(n)
    assert lo.size == haar_size(n)
    assert np.all(lo < mid) and np.all(mid <= hi) and np.all(hi <= n) and np.all(lo >= 0)
    prefix = np.concatenate(([0], np.cumsum(x)))
    linear = (prefix[mid] - prefix[lo]) - (prefix[hi] - prefix[mid])
    assert np.array_equal(linear, haar_forward(x))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 16, 31, 33, 100])
def test_sensitivity_by_unit_vectors(n):
    m = haar_depth(n)
    assert (1 << m) >= n and (m == 0 or (1 << (m - 1)) < n)
    l1 = [np.abs(haar_forward(np.eye(n, dtype=np.int64)[i])).sum() for i in range(n)]
    # every bin moves S and exactly one difference per level by 1
    assert l1 == [m + 1] * n
    assert haar_sensitivity(n) == m + 1


@pytest.mark.parametrize("n", [1, 6, 16, 21])
def test_weights_normalise_to_haar_means(n):
    x = np.random.default_rng(n).integers(0, 20, size=n)
    xp = padded(x).astype(float)
    coeffs = haar_forward(x)
    weights = haar_weights(n)
    assert weights.size == coeffs.size
    normalised = [xp.mean()]
    for lev in range(haar_depth(n), 0, -1):
        width = 1 << lev
        for start in range(0, n, width):
            block = xp[start : start + width]
            normalised.append((block[: width // 2].mean() - block[width // 2 :].mean()) / 2)
    np.testing.assert_allclose(coeffs / weights, normalised, rtol=1e-12, atol=1e-12)


def test_level_counts_drop_padding_nodes():
    assert haar_level_counts(20).tolist() == [1, 2, 3, 5, 10]  # l = 5 .. 1
    assert haar_size(20) == 22
    assert haar_size(1) == 1 and haar_forward(np.array([4])).tolist() == [4]
    assert haar_inverse([4.0], 1).tolist() == [4.0]


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [(0, 1, 24.046875), (0, 32, 72.0), (0, 16, 36.0), (3, 10, 64.546875), (5, 21, 99.84375)],
)
def test_privelet_variance_oracles(lo, hi, expected):
    assert privelet_range_variance(32, lo, hi, 6.0) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 20, 32, 37])
def test_closed_form_equals_exact_variance(n):
    lam = 1.7
    r = inverse_matrix(n)
    lo, hi = np.triu_indices(n + 1, k=1)  # every range 0 <= lo < hi <= n
    prefix_rows = np.vstack((np.zeros(r.shape[1]), np.cumsum(r, axis=0)))
    weights = prefix_rows[hi] - prefix_rows[lo]  # range answer = weights @ coeffs
    exact = 2 * lam**2 * (weights**2).sum(axis=1)
    closed = privelet_range_variance(n, lo, hi, lam)
    np.testing.assert_allclose(closed, exact, rtol=1e-12)
    m = haar_depth(n)
    assert np.all(closed <= 2 * lam**2 * (1 + m / 2) + 1e-9)


def test_point_variance_formula():
    for m in range(0, 7):
        n = 1 << m
        points = privelet_range_variance(n, np.arange(n), np.arange(1, n + 1), 2.0)
        np.testing.assert_allclose(points, 8.0 * (1 + 2 * 4.0**-m) / 3, rtol=1e-12)


def test_input_validation():
    with pytest.raises(ValidationError):
        haar_forward(np.zeros((2, 2)))
    with pytest.raises(ValidationError):
        haar_inverse(np.zeros(3), 5)
    with pytest.raises(ValidationError):
        privelet_range_variance(8, 3, 3, 1.0)
    with pytest.raises(ValidationError):
        privelet_range_variance(8, 0, 9, 1.0)
    with pytest.raises(ValidationError):
        haar_intervals(0)
