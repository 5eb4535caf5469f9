"""Tests of dphist.metrics against explicit enumeration and hand-worked values."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dphist import metrics as m
from dphist import workloads as wl
from dphist.errors import ValidationError, WorkloadError

SETTINGS = settings(max_examples=100, deadline=None)

# --------------------------------------------------------------------------- brute force


def range_error(t, x, i, j):
    """Error of range [i, j) from direct sums of the bins."""
    return math.fsum(float(v) for v in x[i:j]) - math.fsum(float(v) for v in t[i:j])


def brute_mean_sq(t, x, pairs):
    return math.fsum(range_error(t, x, i, j) ** 2 for i, j in pairs) / len(pairs)


def all_pairs(n):
    return [(i, j) for i in range(n) for j in range(i + 1, n + 1)]


def length_pairs(n, length):
    return [(i, i + length) for i in range(n - length + 1)]


@st.composite
def histograms(draw, max_n=60):
    """(true, estimate): true counts (ints or floats, >= 0) and a real-valued estimate.
    No subnormal floats: a probability of 5e-324 / 2 underflows to zero in one order of
    operations and not in another, so the KLD and its twin would disagree on noise."""
    n = draw(st.integers(1, max_n))
    if draw(st.booleans()):
        true = np.array(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)))
    else:
        true = np.array(draw(st.lists(st.floats(0, 1000, allow_subnormal=False), min_size=n,
                                      max_size=n)))  # fmt: skip
    values = st.floats(-1500, 1500, allow_subnormal=False)
    est = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    return true, est


# --------------------------------------------------------------------------- brute-force twins


@SETTINGS
@given(h=histograms())
def test_point_and_interval_mse(h):
    t, x = h
    n = len(t)
    brute_point = math.fsum((float(a) - float(b)) ** 2 for a, b in zip(x, t, strict=True)) / n
    assert np.isclose(m.point_mse(t, x), brute_point, rtol=1e-9, atol=1e-9)
    assert np.isclose(m.interval_mse(t, x), brute_mean_sq(t, x, all_pairs(n)), rtol=1e-9, atol=1e-9)


@SETTINGS
@given(h=histograms(), data=st.data())
def test_range_mse(h, data):
    t, x = h
    n = len(t)
    length = data.draw(st.integers(1, n))
    expected = brute_mean_sq(t, x, length_pairs(n, length))
    assert np.isclose(m.range_mse(t, x, length), expected, rtol=1e-9, atol=1e-9)
    assert np.isclose(
        m.workload_mse(t, x, wl.fixed_length(n, length)), expected, rtol=1e-9, atol=1e-9
    )


@SETTINGS
@given(h=histograms(), data=st.data())
def test_workload_and_scaled_errors(h, data):
    t, x = h
    n = len(t)
    kind = data.draw(st.sampled_from(["all", "prefix", "small", "random"]))
    if kind == "all":
        w, pairs = wl.all_ranges(n), all_pairs(n)
    elif kind == "prefix":
        w, pairs = wl.prefix(n), [(0, j) for j in range(1, n + 1)]
    elif kind == "small":
        w = wl.small_ranges(n)
        pairs = [p for length in range(1, min(10, n) + 1) for p in length_pairs(n, length)]
    else:
        w = wl.random_ranges(n, data.draw(st.integers(1, 50)), data.draw(st.integers(0, 999)))
        pairs = list(zip(w.lo.tolist(), w.hi.tolist(), strict=True))
    sse = math.fsum(range_error(t, x, i, j) ** 2 for i, j in pairs)
    q = len(pairs)
    assert np.isclose(m.workload_mse(t, x, w), sse / q, rtol=1e-9, atol=1e-9)
    s = math.fsum(float(v) for v in t)
    assume(s > 0)
    assert np.isclose(m.scaled_mse(t, x, w), sse / (s * q), rtol=1e-9, atol=1e-12)
    assert np.isclose(m.scaled_l2(t, x, w), math.sqrt(sse) / (s * q), rtol=1e-9, atol=1e-12)


def brute_kld(t, x, tau):
    n = len(t)
    g = [max(float(v), 0.0) for v in x]
    pt = math.fsum(float(v) for v in t) + n * tau
    qt = math.fsum(g) + n * tau
    if qt == 0:  # no positive estimate at all (strict mode): q is 0 wherever p > 0
        return math.inf
    total = 0.0
    for h, e in zip(t, g, strict=True):
        p = (float(h) + tau) / pt
        q = (e + tau) / qt
        if p == 0:
            continue
        if q == 0:
            return math.inf
        total += p * math.log(p / q)
    return total


@SETTINGS
@given(h=histograms(), tau=st.sampled_from([1e-3, 0.5, 1.0, 0.0]))
def test_kld_and_nonpositive_bins(h, tau):
    t, x = h
    if tau == 0:
        assume(float(np.sum(t)) > 0)
    expected = brute_kld(t, x, tau)
    got = m.kld(t, x, tau)
    if math.isinf(expected):
        assert got == math.inf
    else:
        assert np.isclose(got, expected, rtol=1e-9, atol=1e-9)
        assert got >= 0
    nonpos = sum(1 for a, b in zip(t, x, strict=True) if b <= 0 < a)
    assert m.nonpositive_bins(t, x) == nonpos
    if tau == 0:
        assert (got == math.inf) == (nonpos > 0 or not np.any(x > 0))


@SETTINGS
@given(h=histograms(), delta=st.sampled_from([1.0, 0.5, 7.0]), data=st.data())
def test_mre(h, delta, data):
    t, x = h
    n = len(t)
    groups = defaultdict(list)
    for a, b in zip(t, x, strict=True):
        groups[a].append(abs(float(a) - float(b)) / max(float(a), delta))
    values, mre = m.mre_single(t, x, delta)
    assert values.tolist() == sorted(groups)
    assert np.allclose(mre, [np.mean(groups[k]) for k in sorted(groups)], rtol=1e-9, atol=1e-12)

    length = data.draw(st.integers(1, n))
    rel = []
    for i, j in length_pairs(n, length):
        q = math.fsum(float(v) for v in t[i:j])
        rel.append(abs(range_error(t, x, i, j)) / max(q, delta))
    assert np.isclose(m.mre_range(t, x, length, delta), np.mean(rel), rtol=1e-9, atol=1e-9)


@SETTINGS
@given(
    n=st.integers(1, 60),
    data=st.data(),
)
def test_emd_equal_totals_matches_unit_matching(n, data):
    # in 1-D the optimal plan matches the k-th unit of a with the k-th unit of b
    units = data.draw(st.integers(0, 80))
    pos_a = data.draw(st.lists(st.integers(0, n - 1), min_size=units, max_size=units))
    pos_b = data.draw(st.lists(st.integers(0, n - 1), min_size=units, max_size=units))
    a = np.bincount(np.array(pos_a, dtype=np.int64), minlength=n)
    b = np.bincount(np.array(pos_b, dtype=np.int64), minlength=n)
    expected = sum(abs(i - j) for i, j in zip(sorted(pos_a), sorted(pos_b), strict=True))
    assert m.emd(a, b) == pytest.approx(expected, abs=1e-9)
    assert m.emd(b.astype(float), a.astype(float)) == pytest.approx(expected, abs=1e-9)


@SETTINGS
@given(h=histograms())
def test_emd_normalized(h):
    t, x = h
    a = np.maximum(t.astype(float), 0)
    b = np.maximum(x, 0)
    assume(a.sum() > 0 and b.sum() > 0)
    sa, sb = math.fsum(a), math.fsum(b)
    total, ca, cb = 0.0, 0.0, 0.0
    for k in range(len(a) - 1):
        ca += a[k] / sa
        cb += b[k] / sb
        total += abs(ca - cb)
    assert np.isclose(m.emd(t, x, normalize=True), total, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- hand-worked oracles


def test_hand_worked_interval_example():
    t, x = np.array([1, 2]), np.array([2.0, 2.0])  # e = (0, 1, 1)
    assert m.point_mse(t, x) == pytest.approx(0.5)
    assert m.interval_mse(t, x) == pytest.approx(2 / 3)
    assert m.workload_mse(t, x, wl.all_ranges(2)) == pytest.approx(2 / 3)
    assert m.range_mse(t, x, 1) == pytest.approx(0.5)
    assert m.range_mse(t, x, 2) == pytest.approx(1.0)
    assert m.workload_mse(t, x, wl.prefix(2)) == pytest.approx(1.0)


def test_hand_worked_scaled_errors():
    t, x = np.array([1, 3]), np.array([3.0, 1.0])  # squared errors 4 + 4, s = 4, q = 2
    w = wl.identity(2)
    assert m.scaled_mse(t, x, w) == pytest.approx(1.0)
    assert m.scaled_l2(t, x, w) == pytest.approx(math.sqrt(8) / 8)


def test_kld_perfect_estimate_is_zero():
    for t in ([0, 3, 1], [5], [0.0, 0.0, 2.5, 7.0]):
        t = np.array(t)
        for tau in (0.0, 1e-3, 2.0):
            assert m.kld(t, t.astype(float), tau) == 0.0
    assert m.kld(np.zeros(4), np.zeros(4)) == 0.0  # default tau makes both uniform


def test_kld_hand_values():
    # tau = 0: p = (1, 0), q = (1/2, 1/2)
    assert m.kld([1, 0], [1.0, 1.0], 0.0) == pytest.approx(math.log(2))
    # tau = 1: p = (4/6, 2/6), q = (2/4, 2/4)
    expected = 2 / 3 * math.log(4 / 3) + 1 / 3 * math.log(2 / 3)
    assert m.kld([3, 1], [1.0, 1.0], 1.0) == pytest.approx(expected)
    # a negative estimate is clipped to 0 before normalising
    assert m.kld([1, 0], [1.0, -5.0], 0.0) == 0.0


def test_kld_strict_mode_infinite():
    t, x = np.array([1, 1]), np.array([2.0, 0.0])
    assert m.kld(t, x, 0.0) == math.inf
    assert math.isfinite(m.kld(t, x))  # default tau keeps it finite
    assert m.kld(t, x) > 1.0
    assert m.nonpositive_bins(t, x) == 1
    assert m.kld(t, np.array([-1.0, 0.0]), 0.0) == math.inf  # no positive estimate at all
    assert m.nonpositive_bins(t, np.array([-1.0, 0.0])) == 2


def test_kld_strict_mode_zero_truth_rejected():
    with pytest.raises(ValidationError, match="tau > 0"):
        m.kld([0, 0], [1.0, 1.0], 0.0)


def test_mre_hand_values():
    values, mre = m.mre_single([0, 1, 1, 4], [1.0, 1.0, 3.0, 2.0])
    assert values.tolist() == [0, 1, 4]
    assert values.dtype.kind == "i"
    assert mre.tolist() == pytest.approx([1.0, 1.0, 0.5])
    t, x = [0, 2, 2], [1.0, 2.0, 4.0]
    assert m.mre_range(t, x, 2) == pytest.approx(0.5)  # windows: 1/2 and 2/4
    assert m.mre_range(t, x, 1) == pytest.approx(2 / 3)  # 1/max(0,1), 0, 2/2


def test_emd_hand_values():
    assert m.emd([1, 0, 0], [0, 0, 1]) == pytest.approx(2.0)  # one unit moved two bins
    assert m.emd([1, 0], [0, 1]) == pytest.approx(1.0)
    assert m.emd([3, 1, 0], [3, 1, 0]) == 0.0
    assert m.emd([5], [5]) == 0.0
    assert m.emd([2, 0], [0, 5], normalize=True) == pytest.approx(1.0)
    assert m.emd([2, -1, 0], [1, 0, 0], normalize=True) == 0.0  # negatives clipped


def test_large_counts_are_exact():
    t = 10**12 + np.arange(5, dtype=np.int64)
    x = t.astype(float) + 0.5
    assert m.point_mse(t, x) == 0.25
    assert m.range_mse(t, x, 2) == 1.0
    assert m.interval_mse(t, x) == pytest.approx(
        np.mean([(0.5 * (j - i)) ** 2 for i, j in all_pairs(5)]), rel=1e-12
    )
    assert m.mre_range(t, x, 5) == pytest.approx(2.5 / float(t.sum()), rel=1e-9)


# --------------------------------------------------------------------------- statistical sanity


@pytest.mark.statistical
def test_laplace_range_mse_is_2b2L():
    rng = np.random.default_rng(20240601)
    n, b = 200_000, 2.0
    t = rng.integers(0, 50, size=n)
    x = t + rng.laplace(scale=b, size=n)
    assert m.point_mse(t, x) == pytest.approx(2 * b**2, rel=0.05)
    for length in (1, 10, 100):
        assert m.range_mse(t, x, length) == pytest.approx(2 * b**2 * length, rel=0.1)
    assert m.workload_mse(t, x, wl.identity(n)) == pytest.approx(m.point_mse(t, x))
    mean_len = np.mean([1, 2, 3])
    small = wl.windows(n, (1, 2, 3))
    assert m.workload_mse(t, x, small) == pytest.approx(2 * b**2 * mean_len, rel=0.1)


# --------------------------------------------------------------------------- bad input


TWO_ARG = [m.point_mse, m.interval_mse, m.nonpositive_bins, m.kld, m.mre_single]


@pytest.mark.parametrize("fn", TWO_ARG)
def test_bad_pairs(fn):
    with pytest.raises(ValidationError, match="estimate has 2 bins but true has 3"):
        fn([1, 2, 3], [1.0, 2.0])
    with pytest.raises(ValidationError, match="true contains NaN"):
        fn([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValidationError, match="estimate contains NaN or infinite"):
        fn([1, 2], [1.0, np.inf])
    with pytest.raises(ValidationError, match="true is empty"):
        fn([], [])
    with pytest.raises(ValidationError, match="true must be 1-D"):
        fn([[1, 2]], [[1.0, 2.0]])
    with pytest.raises(ValidationError, match="estimate must hold integers or floats"):
        fn([1, 2], ["a", "b"])
    with pytest.raises(ValidationError, match="true must hold integers or floats"):
        fn([True, False], [1.0, 2.0])


@pytest.mark.parametrize("length", [0, 4, -1, 1.0, True, None])
def test_bad_length(length):
    with pytest.raises(ValidationError, match="length"):
        m.range_mse([1, 2, 3], [1.0, 2.0, 3.0], length)
    with pytest.raises(ValidationError, match="length"):
        m.mre_range([1, 2, 3], [1.0, 2.0, 3.0], length)


def test_bad_workload():
    t, x = [1, 2, 3], [1.0, 2.0, 3.0]
    with pytest.raises(WorkloadError, match="n=4"):
        m.workload_mse(t, x, wl.prefix(4))
    with pytest.raises(ValidationError, match="workload must be"):
        m.workload_mse(t, x, "prefix")
    with pytest.raises(ValidationError, match="true sums to 0"):
        m.scaled_mse([0, 0, 0], x, wl.prefix(3))
    with pytest.raises(ValidationError, match="true sums to 0"):
        m.scaled_l2([0, 0, 0], x, wl.prefix(3))


@pytest.mark.parametrize("tau", [-1e-3, float("nan"), float("inf"), "0.1", True])
def test_bad_tau(tau):
    with pytest.raises(ValidationError, match="tau"):
        m.kld([1, 2], [1.0, 2.0], tau)


def test_kld_rejects_negative_truth():
    with pytest.raises(ValidationError, match="non-negative"):
        m.kld([1, -2], [1.0, 2.0])


@pytest.mark.parametrize("delta", [0, -1.0, float("nan"), None])
def test_bad_delta(delta):
    with pytest.raises(ValidationError, match="delta"):
        m.mre_single([1, 2], [1.0, 2.0], delta)
    with pytest.raises(ValidationError, match="delta"):
        m.mre_range([1, 2], [1.0, 2.0], 1, delta)


def test_bad_emd():
    with pytest.raises(ValidationError, match="normalize=True"):
        m.emd([1, 2], [1, 1])
    with pytest.raises(ValidationError, match="normalize=True"):
        m.emd([1.0, 2.0], [1.0, 1.5])
    with pytest.raises(ValidationError, match="b has no positive mass"):
        m.emd([1, 2], [-1.0, 0.0], normalize=True)
    with pytest.raises(ValidationError, match="b has 1 bins but a has 2"):
        m.emd([1, 2], [3])


def test_messages_do_not_quote_counts():
    t = np.array([123457, 98765])
    for call in (
        lambda: m.emd(t, [1, 1]),
        lambda: m.point_mse(t, [1.0]),
        lambda: m.scaled_mse(t, [1.0, 2.0], wl.prefix(3)),
    ):
        with pytest.raises(ValidationError) as info:
            call()
        assert "123457" not in str(info.value) and "98765" not in str(info.value)
