"""Interval deviations (around the mean) and the L1-partition DPs, against brute force."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._numeric import deviation as dv
from dphist._numeric import l1_dp
from dphist.errors import InputTypeError, ValidationError

SETTINGS = settings(max_examples=60, deadline=None)

# ------------------------------------------------------------------------------------
# Brute-force twins


def brute_dev(w) -> float:
    w = np.asarray(w, dtype=np.float64)
    return float(np.abs(w - w.mean()).sum())


def brute_matrix(x) -> np.ndarray:
    n = len(x)
    out = np.full((n, n), np.inf)
    for a in range(n):
        for b in range(a, n):
            out[a, b] = brute_dev(x[a : b + 1])
    return out


def exact_dev(w) -> Fraction:
    mean = Fraction(sum(int(v) for v in w), len(w))
    return sum((abs(int(v) - mean) for v in w), Fraction(0))


def assert_close(fast, brute, x):
    scale = float(np.abs(np.asarray(x, dtype=np.float64)).sum()) + 1.0
    np.testing.assert_allclose(fast, brute, rtol=1e-12, atol=1e-11 * scale)


def partitions(n):
    """Every contiguous partition of range(n) as a tuple of starts."""
    for cuts in itertools.product((False, True), repeat=n - 1):
        yield (0, *[i + 1 for i, c in enumerate(cuts) if c])


def groups(starts, n):
    ends = [*starts[1:], n]
    return list(zip(starts, ends, strict=True))


def brute_partition(n, cost, allowed, key):
    """Optimal partition by enumeration; ``cost(a, e)`` for group [a, e).

    Costs are summed left to right, as the DP does, so the optimum is bit-identical.
    Among optimal partitions the documented tie rule picks the one whose group keys,
    read from the last group to the first, are lexicographically smallest.
    """
    best, chosen = None, None
    for starts in partitions(n):
        gs = groups(starts, n)
        if not all(allowed(a, e) for a, e in gs):
            continue
        total = 0.0
        for a, e in gs:
            total += cost(a, e)
        rank = tuple(key(a, e) for a, e in reversed(gs))
        if best is None or total < best or (total == best and rank < chosen[1]):
            best, chosen = total, (starts, rank)
    return best, np.array(chosen[0], dtype=np.int64)


def objective(starts, n, cost):
    total = 0.0
    for a, e in groups([int(s) for s in starts], n):
        total += cost(a, e)
    return total


def is_pow2(k):
    return k >= 1 and k & (k - 1) == 0


# ------------------------------------------------------------------------------------
# Strategies

counts = st.lists(
    st.one_of(st.just(0), st.integers(0, 20), st.integers(0, 10**9)), min_size=1, max_size=60
)
signed_ints = st.lists(st.integers(-(10**9), 10**9), min_size=1, max_size=40)
reals = st.lists(
    st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        st.integers(-3, 3).map(float),
    ),
    min_size=1,
    max_size=60,
)
vectors = st.one_of(
    counts.map(lambda v: np.array(v, dtype=np.int64)),
    signed_ints.map(lambda v: np.array(v, dtype=np.int64)),
    reals.map(lambda v: np.array(v, dtype=np.float64)),
)


# ------------------------------------------------------------------------------------
# Oracles


def test_spec_oracles_deviation_around_the_mean():
    assert dv.window_deviations([0, 0, 4], 3)[0] == pytest.approx(16 / 3, rel=1e-15)
    assert dv.window_deviations([0, 0, 4], 3)[0] != 4.0  # 4 would be the median version
    assert dv.window_deviations([1, 1], 2)[0] == 0.0
    assert dv.window_deviations([5, 5, 5, 100], 4)[0] == 142.5
    assert dv.window_deviations(np.array([0.0, 0.0, 4.0]), 3)[0] == pytest.approx(16 / 3)


def test_spec_oracle_s1_partition_of_5_5_5_100():
    x = np.array([5, 5, 5, 100])
    costs = dv.all_interval_deviations(x) + 1.0  # zero noise, eps2 = 1
    np.testing.assert_array_equal(l1_dp.l1_partition_full(costs), [0, 3])
    assert objective([0, 3], 4, lambda a, e: costs[a, e - 1]) == 2.0
    assert costs[0, 3] == 143.5
    np.testing.assert_array_equal(
        dv.l1_partition_streamed(x, lambda b0, d: d + 1.0, block_rows=3), [0, 3]
    )


def test_pow2_oracle_ties_go_to_the_longer_candidate():
    # {0,1},{2},{3} and {0},{1,2},{3} both cost 3: the prefix [0,3) keeps the later,
    # longer last group [1,3).
    lengths, dev = dv.pow2_deviations([5, 5, 5, 100])
    np.testing.assert_array_equal(lengths, [1, 2, 4])
    np.testing.assert_array_equal(l1_dp.l1_partition_pow2(dev + 1.0), [0, 1, 3])


def test_single_bin():
    assert dv.window_deviations([7], 1).tolist() == [0.0]
    lengths, dev = dv.pow2_deviations([7])
    assert lengths.tolist() == [1] and dev.tolist() == [[0.0]]
    assert l1_dp.l1_partition_pow2(dev + 1).tolist() == [0]
    assert l1_dp.l1_partition_full([[3.0]]).tolist() == [0]
    assert dv.l1_partition_streamed([7]).tolist() == [0]


# ------------------------------------------------------------------------------------
# Deviations against brute force


@SETTINGS
@given(vectors, st.data())
def test_window_deviations_match_brute_force(x, data):
    length = data.draw(st.integers(1, len(x)))
    fast = dv.window_deviations(x, length)
    brute = [brute_dev(x[a : a + length]) for a in range(len(x) - length + 1)]
    assert fast.dtype == np.float64 and fast.shape == (len(x) - length + 1,)
    assert np.all(fast >= 0)
    assert_close(fast, brute, x)


@SETTINGS
@given(vectors)
def test_pow2_deviations_match_brute_force(x):
    n = len(x)
    lengths, dev = dv.pow2_deviations(x)
    assert lengths.tolist() == [2**k for k in range(n.bit_length())]
    assert dev.shape == (len(lengths), n)
    for k, length in enumerate(lengths):
        fits = n - length + 1
        assert_close(dev[k, :fits], [brute_dev(x[a : a + length]) for a in range(fits)], x)
        assert np.all(np.isposinf(dev[k, fits:]))


@SETTINGS
@given(vectors, st.data())
def test_interval_rows_and_matrix_match_brute_force(x, data):
    n = len(x)
    full = dv.all_interval_deviations(x)
    brute = brute_matrix(x)
    upper = np.triu(np.ones((n, n), dtype=bool))
    assert_close(full[upper], brute[upper], x)
    assert np.all(np.isposinf(full[~upper]))
    b0 = data.draw(st.integers(0, n))
    b1 = data.draw(st.integers(b0, n))
    rows = dv.all_interval_deviations_rows(x, b0, b1)
    assert rows.shape == (b1 - b0, n)
    np.testing.assert_array_equal(rows, full[:, b0:b1].T)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10**14), st.integers(0, 9)), min_size=1, max_size=24))
def test_integer_path_is_correctly_rounded(values):
    x = np.array(values, dtype=np.int64)
    full = dv.all_interval_deviations(x)
    for a in range(len(x)):
        for b in range(a, len(x)):
            exact = exact_dev(values[a : b + 1])
            if exact * (b - a + 1) < 2**50:  # documented: correctly rounded
                assert full[a, b] == float(exact)
            else:
                assert abs(Fraction(float(full[a, b])) - exact) <= 4 * math.ulp(float(exact))


def test_window_deviation_with_huge_counts_is_exact():
    # The mean of (2**59 - 1, 2**59 + 2, 2**59) is 2**59 + 1/3: float64 cannot hold the
    # counts' sum exactly, the integer path still returns dev = 10/3 correctly rounded.
    x = np.array([2**59 - 1, 2**59 + 2, 2**59], dtype=np.int64)
    assert dv.window_deviations(x, 3)[0] == float(exact_dev(x.tolist()))
    assert float(exact_dev(x.tolist())) == 10 / 3


@SETTINGS
@given(vectors)
def test_interval_index_equals_the_streamed_rows_bit_for_bit(x):
    n = len(x)
    full = dv.all_interval_deviations(x)
    a, b = np.triu_indices(n)
    got = dv.interval_deviations(x, a, b)
    if np.asarray(x).dtype.kind in "iu":
        np.testing.assert_array_equal(got, full[a, b])  # same count, sum and formula
    else:
        assert_close(got, full[a, b], x)
    index = dv.DeviationIndex(x)
    np.testing.assert_array_equal(index(a[::-1], b[::-1]), got[::-1])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10**14), st.integers(0, 9)), min_size=1, max_size=24))
def test_interval_index_with_huge_counts(values):
    x = np.array(values, dtype=np.int64)
    a, b = np.triu_indices(len(x))
    np.testing.assert_array_equal(
        dv.interval_deviations(x, a, b), dv.all_interval_deviations(x)[a, b]
    )


@SETTINGS
@given(st.lists(st.integers(0, 60), min_size=2, max_size=40), st.data())
def test_extending_an_interval_never_lowers_its_deviation(values, data):
    # the S1 sampler bounds whole blocks of starts by the shortest interval's dev
    x = np.array(values, dtype=np.int64)
    n = len(x)
    b = data.draw(st.integers(0, n - 1))
    starts = np.arange(b + 1)
    d = dv.interval_deviations(x, starts, np.full(b + 1, b))
    assert np.all(np.diff(d) <= 0)
    ends = np.arange(b, n)
    e = dv.interval_deviations(x, np.full(ends.size, 0), ends)
    assert np.all(np.diff(e) >= 0)


def test_interval_index_by_hand_and_validation():
    x = [0, 0, 4, 1, 1]
    assert dv.interval_deviations(x, [0, 3, 2], [2, 4, 2]).tolist() == [16 / 3, 0.0, 0.0]
    index = dv.DeviationIndex(np.array([5, 5, 5, 100]))
    assert index([0], [3])[0] == 142.5
    for lo, hi in (([1], [0]), ([-1], [2]), ([0], [4]), ([0, 1], [2])):
        with pytest.raises(ValidationError):
            index(lo, hi)
    with pytest.raises(ValidationError):
        index([0.5], [2])


# ------------------------------------------------------------------------------------
# Exact half deviations in lattice units (the biased split's score)


def exact_units(x, a, b, shift, cap=2**61) -> int:
    return min(math.floor(exact_dev(x[a : b + 1]) * 2**shift / 2), cap)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 2**53 // 24), st.integers(0, 9)), min_size=1, max_size=24),
    st.integers(0, 8),
    st.data(),
)
def test_half_units_are_exact_up_to_the_count_cap(values, shift, data):
    """Integers equal to the floor of the exact rational, for counts up to the kernel's
    cap 2**53 / N; the float path it replaces was off by several lattice units there."""
    x = np.array(values, dtype=np.int64)
    a, b = np.triu_indices(len(x))
    got = dv.DeviationIndex(x).half_units(a, b, shift, 2**61)
    assert got.dtype == np.int64
    assert got.tolist() == [exact_units(x, i, j, shift) for i, j in zip(a, b, strict=True)]


def test_half_units_where_float_rounding_crossed_lattice_units():
    x = np.array([1240843018859551, 431933818432602, 151824721224444, 1741237077798726])
    index = dv.DeviationIndex(x)
    exact = exact_units(x, 0, 2, 7)
    assert index.half_units([0], [2], 7, 2**61)[0] == exact == 80978239917314389
    floated = int(np.floor(np.ldexp(index([0], [2])[0] / 2.0, 7)))
    assert exact - floated == 5  # what the float score gave: 5 lattice units below
    cap = 10**6
    assert index.half_units([0], [3], 8, cap)[0] == cap  # clamped, never overflowing


@SETTINGS
@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=30), st.integers(0, 8), st.data())
def test_half_units_move_by_at_most_one_record_and_never_grow_into_children(values, shift, data):
    """The two facts the biased split's privacy argument needs, on the exact scores:
    one record more moves a node's score by less than 2**shift units, and a child's
    score is at most its parent's."""
    x = np.array(values, dtype=np.int64)
    n = len(x)
    i = data.draw(st.integers(0, n - 1))
    y = x.copy()
    y[i] += 1
    a, b = np.triu_indices(n)
    before = dv.DeviationIndex(x).half_units(a, b, shift, 2**61)
    after = dv.DeviationIndex(y).half_units(a, b, shift, 2**61)
    assert np.all(np.abs(after - before) <= 2**shift)
    m = data.draw(st.integers(0, n - 2))
    parent, left, right = dv.DeviationIndex(x).half_units([0, 0, m + 1], [n - 1, m, n - 1],
                                                          shift, 2**61)  # fmt: skip
    assert left <= parent and right <= parent


def test_half_units_validation():
    with pytest.raises(ValidationError, match="integer vector"):
        dv.DeviationIndex(np.array([0.5, 1.0])).half_units([0], [1], 0, 10)
    index = dv.DeviationIndex(np.array([1, 2, 3]))
    for shift, cap in ((9, 10), (-1, 10), (0, -1)):
        with pytest.raises(ValidationError):
            index.half_units([0], [1], shift, cap)
    with pytest.raises(ValidationError):
        index.half_units([2], [1], 0, 10)


# ------------------------------------------------------------------------------------
# Sensitivity of one cost


@SETTINGS
@given(st.lists(st.integers(0, 50), min_size=1, max_size=30), st.data())
def test_one_record_moves_every_deviation_by_at_most_2_minus_2_over_len(values, data):
    x = np.array(values, dtype=np.int64)
    i = data.draw(st.integers(0, len(x) - 1))
    y = x.copy()
    y[i] += 1
    d0 = dv.all_interval_deviations(x)
    d1 = dv.all_interval_deviations(y)
    n = len(x)
    for a in range(n):
        for b in range(a, n):
            bound = 2.0 * (1.0 - 1.0 / (b - a + 1))
            assert abs(d1[a, b] - d0[a, b]) <= bound + 1e-9
            if not a <= i <= b:
                assert d1[a, b] == d0[a, b]


def test_sensitivity_bound_is_tight():
    for n in (1, 2, 5, 16):
        e0 = np.zeros(n, dtype=np.int64)
        e0[0] = 1
        assert dv.window_deviations(e0, n)[0] == pytest.approx(2 * (1 - 1 / n), abs=1e-15)
        assert dv.window_deviations(np.zeros(n, dtype=np.int64), n)[0] == 0.0


# ------------------------------------------------------------------------------------
# Partition DPs against enumeration of all 2^(N-1) partitions

small_n = st.integers(1, 12)


def cost_table(data, shape, integer):
    if integer:  # small integers: exact sums and many exact ties
        elems = st.integers(0, 4).map(float)
    else:
        elems = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
    flat = data.draw(st.lists(elems, min_size=math.prod(shape), max_size=math.prod(shape)))
    return np.array(flat, dtype=np.float64).reshape(shape)


@settings(max_examples=80, deadline=None)
@given(small_n, st.booleans(), st.data())
def test_pow2_partition_matches_enumeration(n, integer, data):
    n_rows = data.draw(st.integers(1, n.bit_length()))
    costs = cost_table(data, (n_rows, n), integer)
    lengths = 2 ** np.arange(n_rows)
    costs[np.arange(n)[None, :] > (n - lengths)[:, None]] = np.nan  # must be ignored

    def cost(a, e):
        return costs[(e - a).bit_length() - 1, a]

    def allowed(a, e):
        return is_pow2(e - a) and e - a <= lengths[-1]

    best, expected = brute_partition(n, cost, allowed, key=lambda a, e: a)
    starts = l1_dp.l1_partition_pow2(costs)
    assert starts.dtype == np.int64 and starts[0] == 0
    assert all(allowed(a, e) for a, e in groups(starts.tolist(), n))
    assert objective(starts, n, cost) == best
    if integer:
        np.testing.assert_array_equal(starts, expected)


@settings(max_examples=80, deadline=None)
@given(small_n, st.booleans(), st.booleans(), st.data())
def test_full_partition_matches_enumeration(n, integer, prefer_singleton, data):
    costs = cost_table(data, (n, n), integer)
    costs[np.tril_indices(n, -1)] = np.nan  # below the diagonal: ignored

    def cost(a, e):
        return costs[a, e - 1]

    if prefer_singleton:

        def key(a, e):
            return (0 if e - a == 1 else 1, a)

    else:

        def key(a, e):
            return (0, a)

    best, expected = brute_partition(n, cost, lambda a, e: True, key)
    starts = l1_dp.l1_partition_full(costs, prefer_singleton=prefer_singleton)
    assert starts.dtype == np.int64 and starts[0] == 0
    assert objective(starts, n, cost) == best
    if integer:
        np.testing.assert_array_equal(starts, expected)


def test_the_two_s1_tie_rules_differ_as_documented():
    # Singletons cost 1 and [0,2) costs 2, so {0,1} and {0},{1} tie at 2.
    costs = np.array([[1.0, 2.0], [np.nan, 1.0]])
    assert l1_dp.l1_partition_full(costs).tolist() == [0]
    assert l1_dp.l1_partition_full(costs, prefer_singleton=True).tolist() == [0, 1]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=40),
    st.integers(1, 9),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_streamed_partition_equals_full_matrix_partition(values, block, prefer, in_place, seed):
    x = np.array(values, dtype=np.int64)
    n = len(x)
    noise = np.random.default_rng(seed).integers(-3, 4, size=(n, n)).astype(np.float64)
    full = dv.all_interval_deviations(x) + 1.0 + noise
    seen = []

    def to_costs(b0, rows):
        seen.append((b0, rows.shape[0]))
        z = 1.0 + noise[:, b0 : b0 + rows.shape[0]].T
        if in_place:
            rows += z
            return rows
        return rows + z

    starts = dv.l1_partition_streamed(x, to_costs, block_rows=block, prefer_singleton=prefer)
    np.testing.assert_array_equal(starts, l1_dp.l1_partition_full(full, prefer_singleton=prefer))
    assert [b0 for b0, _ in seen] == list(range(0, n, block))
    assert all(r <= block for _, r in seen)


def test_dp_step_and_dp_rows_by_hand():
    F = np.array([0.0, 1.0, 2.0, 0.0])
    row = np.array([3.0, 2.0, 1.0, np.inf])
    assert l1_dp.dp_step(F, row, 2) == (3.0, 0)  # all three tie: smallest start
    assert l1_dp.dp_step(F, row, 2, True) == (3.0, 2)  # tied singleton kept
    assert l1_dp.dp_step(F, np.array([5.0, 1.0, 1.0]), 2) == (2.0, 1)

    x = np.array([1, 1, 9, 9, 9], dtype=np.int64)
    F = np.zeros(6)
    arg = np.zeros(6, dtype=np.int64)
    for b0, b1 in ((0, 2), (2, 5)):
        l1_dp.dp_rows(F, arg, dv.all_interval_deviations_rows(x, b0, b1) + 1.0, b0)
    assert F[5] == 2.0
    assert l1_dp.partition_from_argmins(arg).tolist() == [0, 2]


# ------------------------------------------------------------------------------------
# Validation


def test_input_validation():
    with pytest.raises(ValidationError):
        dv.window_deviations([], 1)
    with pytest.raises(ValidationError):
        dv.pow2_deviations(np.zeros((2, 2)))
    with pytest.raises(ValidationError):
        dv.window_deviations([1.0, np.nan], 1)
    with pytest.raises(InputTypeError):
        dv.window_deviations(["a", "b"], 1)
    with pytest.raises(InputTypeError):
        dv.window_deviations([1, 2], 1.0)
    for bad in (0, 3):
        with pytest.raises(ValidationError):
            dv.window_deviations([1, 2], bad)
    with pytest.raises(ValidationError):
        dv.window_deviations(np.array([2**62, 2**62], dtype=np.int64), 2)
    with pytest.raises(ValidationError, match="4096"):
        dv.all_interval_deviations(np.zeros(4097, dtype=np.int64))
    with pytest.raises(ValidationError):
        dv.all_interval_deviations_rows([1, 2, 3], 2, 1)
    with pytest.raises(ValidationError):
        dv.all_interval_deviations_rows([1, 2, 3], 0, 4)


def test_cost_validation():
    with pytest.raises(ValidationError):
        l1_dp.l1_partition_pow2(np.zeros((3, 3)))  # N=3 allows lengths 1 and 2 only
    with pytest.raises(ValidationError):
        l1_dp.l1_partition_pow2(np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(ValidationError):
        l1_dp.l1_partition_full(np.zeros((2, 3)))
    with pytest.raises(ValidationError):
        l1_dp.l1_partition_full(np.array([[0.0, np.nan], [0.0, 0.0]]))
    with pytest.raises(ValidationError):
        dv.l1_partition_streamed([1, 2, 3], lambda b0, rows: rows[:, :2])
    with pytest.raises(ValidationError):
        dv.l1_partition_streamed([1, 2, 3], lambda b0, rows: rows * np.nan)
    with pytest.raises(ValidationError):
        dv.l1_partition_streamed([1, 2, 3], block_rows=0)
    with pytest.raises(ValidationError):
        l1_dp.partition_from_argmins([0, 1])


def test_accepts_other_numeric_dtypes():
    ref = dv.window_deviations(np.array([3, 0, 5, 1], dtype=np.int64), 3)
    for dtype in (np.uint8, np.int32, np.float32):
        got = dv.window_deviations(np.array([3, 0, 5, 1], dtype=dtype), 3)
        np.testing.assert_allclose(got, ref, rtol=1e-12)
