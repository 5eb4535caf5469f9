"""Tests of dphist.workloads: implicit range workloads against explicit enumeration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist import workloads as wl
from dphist.errors import ValidationError, WorkloadError

# --------------------------------------------------------------------------- brute force


def windows_of(n, lengths):
    return [(i, i + length) for length in sorted(set(lengths)) for i in range(n - length + 1)]


def all_pairs(n):
    return [(i, j) for i in range(n) for j in range(i + 1, n + 1)]


def brute_sse(e, pairs):
    return math.fsum((float(e[j]) - float(e[i])) ** 2 for i, j in pairs)


@st.composite
def cases(draw):
    """A workload together with its queries enumerated independently."""
    n = draw(st.integers(1, 60))
    kind = draw(
        st.sampled_from(
            [
                "identity",
                "all",
                "prefix",
                "fixed",
                "percent",
                "small",
                "windows",
                "random",
                "explicit",
            ]
        )
    )
    if kind == "identity":
        return wl.identity(n), [(i, i + 1) for i in range(n)]
    if kind == "all":
        return wl.all_ranges(n), all_pairs(n)
    if kind == "prefix":
        return wl.prefix(n), [(0, j) for j in range(1, n + 1)]
    if kind == "fixed":
        length = draw(st.integers(1, n))
        return wl.fixed_length(n, length), windows_of(n, [length])
    if kind == "percent":
        r = draw(st.floats(0.01, 100.0))
        length = max(1, round(r * n / 100))
        return wl.length_percent(n, r), windows_of(n, [length])
    if kind == "small":
        return wl.small_ranges(n), windows_of(n, range(1, min(10, n) + 1))
    if kind == "windows":
        lengths = draw(st.lists(st.integers(1, n), min_size=1, max_size=6))
        return wl.Windows(n, tuple(lengths)), windows_of(n, lengths)
    if kind == "random":
        seed = draw(st.integers(0, 2**32 - 1))
        count = draw(st.integers(1, 80))
        w = wl.random_ranges(n, count, seed)
        pairs = list(zip(w.lo.tolist(), w.hi.tolist(), strict=True))
        assert all(0 <= i < j <= n for i, j in pairs)
        return w, pairs
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, n), st.integers(0, n)).filter(lambda t: t[0] != t[1]),
            min_size=1,
            max_size=40,
        )
    )
    pairs = [(min(p), max(p)) for p in pairs]
    lo, hi = zip(*pairs, strict=True)
    return wl.explicit(n, list(lo), list(hi)), pairs


@settings(max_examples=150, deadline=None)
@given(case=cases(), data=st.data())
def test_matches_enumeration(case, data):
    w, pairs = case
    n = w.n
    assert w.size == len(pairs)
    assert isinstance(w.size, int)

    los, his = w.intervals()
    assert los.dtype == np.int64 and his.dtype == np.int64
    assert list(zip(los.tolist(), his.tolist(), strict=True)) == pairs

    d = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n)))
    e = np.concatenate(([0.0], np.cumsum(d)))
    assert np.isclose(w.squared_error_sum(e), brute_sse(e, pairs), rtol=1e-9, atol=1e-9)

    counts = np.array(data.draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n)))
    p = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    expected = [int(counts[i:j].sum()) for i, j in pairs]
    got = w.answers(p)
    assert got.dtype == np.int64
    assert got.tolist() == expected
    assert np.allclose(w.answers(p.astype(float)), expected)


# --------------------------------------------------------------------------- closed forms


def test_hand_worked_all_ranges():
    # true = (1, 2), estimate = (2, 2): d = (1, 0), e = (0, 1, 1)
    e = np.array([0.0, 1.0, 1.0])
    w = wl.all_ranges(2)
    assert w.size == 3
    assert w.squared_error_sum(e) == pytest.approx(2.0)
    assert w.squared_error_sum(e) / w.size == pytest.approx(2 / 3)
    assert w.intervals()[0].tolist() == [0, 0, 1]
    assert w.intervals()[1].tolist() == [1, 2, 2]


def test_all_ranges_large_n_closed_form():
    # e_k = k: the error of [i, j) is j - i, and there are N + 1 - L ranges of length L
    n = 20_000
    e = np.arange(n + 1, dtype=float)
    lengths = np.arange(1, n + 1, dtype=float)
    expected = float(np.sum((n + 1 - lengths) * lengths**2))
    assert wl.all_ranges(n).squared_error_sum(e) == pytest.approx(expected, rel=1e-12)


def test_all_ranges_has_no_cancellation():
    rng = np.random.default_rng(1)
    e = np.concatenate(([0.0], np.cumsum(rng.normal(size=500))))
    w = wl.all_ranges(500)
    base = w.squared_error_sum(e)
    # a large common offset leaves every range error unchanged
    assert w.squared_error_sum(e + 1e9) == pytest.approx(base, rel=1e-6)


def test_big_ranges_against_enumeration():
    n = 250
    w = wl.big_ranges(n)
    assert w.lengths == (100, 200)
    pairs = windows_of(n, [100, 200])
    assert w.size == len(pairs) == 151 + 51
    e = np.concatenate(([0.0], np.cumsum(np.random.default_rng(3).normal(size=n))))
    assert np.isclose(w.squared_error_sum(e), brute_sse(e, pairs), rtol=1e-9)
    assert wl.big_ranges(450).lengths == (100, 200, 300, 400)
    assert wl.big_ranges(5000).lengths == tuple(range(100, 1001, 100))


def test_small_ranges_clips_to_n():
    assert wl.small_ranges(4).lengths == (1, 2, 3, 4)
    assert wl.small_ranges(100).lengths == tuple(range(1, 11))


def test_length_percent_rounding():
    assert wl.length_percent(1000, 1).lengths == (10,)
    assert wl.length_percent(50, 1).lengths == (1,)  # round(0.5) = 0, floored at 1
    assert wl.length_percent(4096, 64).lengths == (2621,)
    assert wl.length_percent(10, 100).lengths == (10,)
    assert wl.length_percent(250, 1).lengths == (2,)  # tie goes to even
    assert wl.length_percent(350, 1).lengths == (4,)


def test_identity_is_windows_of_one():
    assert wl.identity(7) == wl.Windows(7, (1,))
    assert wl.identity(7).size == 7


def test_windows_normalises_lengths():
    w = wl.Windows(10, [3, 1, 3])
    assert w.lengths == (1, 3)
    assert w == wl.Windows(10, (1, 3))
    assert hash(w) == hash(wl.Windows(10, (3, 1)))
    assert wl.Windows(10, 4).lengths == (4,)
    assert wl.windows(10, (3, 11, 20), drop_longer=True).lengths == (3,)


def test_prefix_order():
    los, his = wl.prefix(4).intervals()
    assert los.tolist() == [0, 0, 0, 0]
    assert his.tolist() == [1, 2, 3, 4]


def test_explicit_keeps_order_and_duplicates():
    w = wl.explicit(5, [3, 0, 3], [5, 2, 5])
    assert w.size == 3
    p = np.array([0, 1, 3, 6, 10, 15])
    assert w.answers(p).tolist() == [9, 3, 9]
    e = np.array([0.0, 1.0, 1.0, 2.0, 0.0, -1.0])
    assert w.squared_error_sum(e) == pytest.approx(9 + 1 + 9)
    assert not w.lo.flags.writeable and not w.hi.flags.writeable
    assert w == wl.explicit(5, np.array([3, 0, 3]), np.array([5, 2, 5]))
    assert w != wl.explicit(5, [3, 0], [5, 2])
    assert hash(w) == hash(wl.explicit(5, [3, 0, 3], [5, 2, 5]))
    assert "size=3" in repr(w)


def test_explicit_copies_input():
    lo = np.array([0, 1])
    w = wl.explicit(3, lo, [1, 3])
    lo[0] = 2
    assert w.lo.tolist() == [0, 1]


# --------------------------------------------------------------------------- random ranges


def test_random_ranges_reproducible():
    a = wl.random_ranges(100, 50, 7)
    b = wl.random_ranges(100, 50, np.random.default_rng(7))
    assert a == b
    assert a != wl.random_ranges(100, 50, 8)


def test_random_ranges_uniform_over_all_ranges():
    n, count = 3, 60_000
    w = wl.random_ranges(n, count, 12345)
    index = {pair: k for k, pair in enumerate(all_pairs(n))}
    codes = [index[pair] for pair in zip(w.lo.tolist(), w.hi.tolist(), strict=True)]
    freq = np.bincount(codes, minlength=6) / count
    assert np.allclose(freq, 1 / 6, atol=0.01)  # sd per cell is about 0.0015
    big = wl.random_ranges(200, 60_000, 5)
    assert np.mean(big.hi - big.lo) == pytest.approx((200 + 2) / 3, rel=0.02)


# --------------------------------------------------------------------------- size limits


def test_max_queries_refuses_to_materialise():
    huge = wl.all_ranges(20_000)
    assert huge.size == 20_000 * 20_001 // 2
    with pytest.raises(WorkloadError, match="max_queries"):
        huge.intervals()
    with pytest.raises(WorkloadError, match="max_queries"):
        wl.all_ranges(10).intervals(max_queries=54)
    with pytest.raises(WorkloadError, match="max_queries"):
        wl.all_ranges(10).answers(np.arange(11), max_queries=10)
    assert wl.all_ranges(10).intervals(max_queries=55)[0].shape == (55,)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("n", [0, -3, True, 2.5, "4", None])
def test_bad_n(n):
    with pytest.raises(WorkloadError, match="n must"):
        wl.all_ranges(n)
    with pytest.raises(WorkloadError, match="n must"):
        wl.prefix(n)


@pytest.mark.parametrize("length", [0, 6, 2.0, True])
def test_bad_fixed_length(length):
    with pytest.raises(WorkloadError, match="length"):
        wl.fixed_length(5, length)


@pytest.mark.parametrize("r", [0, -1, 100.5, float("nan"), float("inf"), True, "5"])
def test_bad_percent(r):
    with pytest.raises(WorkloadError, match="r must"):
        wl.length_percent(100, r)


def test_bad_windows():
    with pytest.raises(WorkloadError, match="exceed the domain size"):
        wl.Windows(5, (2, 6))
    with pytest.raises(WorkloadError, match="empty"):
        wl.Windows(5, ())
    with pytest.raises(WorkloadError, match="lengths"):
        wl.Windows(5, (0,))
    with pytest.raises(WorkloadError, match="lengths"):
        wl.Windows(5, "12")
    with pytest.raises(WorkloadError, match="no length"):
        wl.windows(5, (6, 7), drop_longer=True)
    with pytest.raises(WorkloadError, match="no length"):
        wl.big_ranges(99)


@pytest.mark.parametrize(
    ("lo", "hi", "match"),
    [
        ([2], [2], "lo < hi"),
        ([3], [1], "lo < hi"),
        ([-1], [2], "lo must be >= 0"),
        ([0], [6], "hi must be <= n=5"),
        ([0, 1], [2], "same shape"),
        ([], [], "empty"),
        ([0.0], [1.0], "integer dtype"),
        ([[0]], [[1]], "1-D"),
        ([True], [True], "integer dtype"),
    ],
)
def test_bad_explicit(lo, hi, match):
    with pytest.raises(WorkloadError, match=match):
        wl.explicit(5, lo, hi)


@pytest.mark.parametrize(
    ("count", "rng", "match"),
    [(0, 1, "count"), (2.0, 1, "count"), (3, "seed", "rng"), (3, 1.5, "rng"), (3, -1, "rng")],
)
def test_bad_random_ranges(count, rng, match):
    with pytest.raises(WorkloadError, match=match):
        wl.random_ranges(10, count, rng)


def test_bad_prefix_arrays():
    w = wl.small_ranges(5)
    with pytest.raises(ValidationError, match="length n \\+ 1 = 6"):
        w.squared_error_sum(np.zeros(5))
    with pytest.raises(ValidationError, match="NaN"):
        w.squared_error_sum(np.array([0, 1, np.nan, 2, 3, 4.0]))
    with pytest.raises(ValidationError, match="prefix"):
        w.answers(np.zeros((2, 3)))
    with pytest.raises(ValidationError, match="dtype"):
        w.answers(np.array(list("abcdef")))


def test_workload_is_abstract_and_frozen():
    with pytest.raises(TypeError):
        wl.Workload(3)
    w = wl.prefix(3)
    with pytest.raises(AttributeError):
        w.n = 4
