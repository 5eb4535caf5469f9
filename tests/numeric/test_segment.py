"""Exact S2 grouping (penalised least squares): DP, PELT and the sorted-input solver."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dphist._numeric.compact import labels_from_starts
from dphist._numeric.segment import (
    centred_prefix_sums,
    s2_costs,
    segment,
    segment_dp,
    segment_objective,
    segment_pelt,
    segment_sorted,
)
from dphist.errors import ValidationError

ONE = {"eps1": 1.0, "eps2": 1.0}

# ------------------------------------------------------------------ reference twin


def direct_cost(y, lo, hi, eps1, eps2, noise_term):
    """c([lo, hi)) computed directly (two-pass SSE), independent of the prefix sums."""
    g = np.asarray(y[lo:hi], dtype=np.float64)
    n = hi - lo
    sse = math.fsum(((g - g.mean()) ** 2).tolist())
    nu = 2.0 / (n * eps2**2) if noise_term == "first_principles" else 1.0 / eps2
    return sse - 2.0 * (n - 1) / eps1**2 + nu


def direct_objective(y, starts, eps1, eps2, noise_term):
    bounds = [*map(int, starts), len(y)]
    return math.fsum(
        direct_cost(y, a, b, eps1, eps2, noise_term) for a, b in itertools.pairwise(bounds)
    )


def brute_force_minimum(y, eps1, eps2, noise_term):
    """Minimum objective over all 2**(N-1) contiguous partitions."""
    n = len(y)
    cost = {
        (a, b): direct_cost(y, a, b, eps1, eps2, noise_term)
        for a in range(n)
        for b in range(a + 1, n + 1)
    }
    best = math.inf
    for mask in range(1 << (n - 1)):
        bounds = [0, *(i + 1 for i in range(n - 1) if mask >> i & 1), n]
        best = min(best, math.fsum(cost[a, b] for a, b in itertools.pairwise(bounds)))
    return best


def tolerance(y, eps1, eps2):
    """Absolute tolerance: 1e-9 of the problem's scale (data spread plus penalties)."""
    yc = np.asarray(y, dtype=np.float64) - np.mean(y)
    return 1e-9 * (float(np.sum(yc * yc)) + len(y) * (2 / eps1**2 + 2 / eps2**2 + 1 / eps2))


# --------------------------------------------------------------------- hand oracles


def test_oracle_far_apart_pair_is_split():
    assert segment((0.0, 10.0), **ONE).tolist() == [0, 1]
    merged, single = s2_costs((0.0, 10.0), [0, 0], [2, 1], **ONE)
    assert merged == pytest.approx(49.0)  # 50 - 2 + 1
    assert single == pytest.approx(2.0)
    assert segment_objective((0.0, 10.0), [0, 1], **ONE) == pytest.approx(4.0)


def test_oracle_close_pair_is_merged():
    assert segment((1.0, 3.0), **ONE).tolist() == [0]
    assert segment_objective((1.0, 3.0), [0], **ONE) == pytest.approx(1.0)  # 2 - 2 + 1


def test_oracle_three_bins():
    y = (0.0, 1.0, 10.0)
    for solver in (segment, segment_dp, segment_pelt):
        assert solver(y, **ONE).tolist() == [0, 2]
    assert segment_objective(y, [0, 2], **ONE) == pytest.approx(1.5)  # negative group is legal
    assert s2_costs(y, [0], [2], **ONE)[0] == pytest.approx(-0.5)
    assert segment_objective(y, [0], **ONE) == pytest.approx(546 / 9 - 4 + 2 / 3)
    assert segment_objective(y, [0, 1], **ONE) == pytest.approx(41.5)
    assert segment_objective(y, [0, 1, 2], **ONE) == pytest.approx(6.0)


def test_noise_term_changes_the_decision():
    # eps1 = 1, eps2 = 0.1, y = (0, 20): SSE - bias = 198 for the pair.
    # First principles: merged 198 + 100 = 298 < split 2 * 200 -> merge.
    # Paper (1/eps2 = 10 per group): merged 208 > split 20 -> split.
    y = (0.0, 20.0)
    assert segment(y, eps1=1, eps2=0.1).tolist() == [0]
    assert segment(y, eps1=1, eps2=0.1, noise_term="paper").tolist() == [0, 1]
    assert segment_objective(y, [0], eps1=1, eps2=0.1) == pytest.approx(298.0)
    assert segment_objective(y, [0, 1], eps1=1, eps2=0.1, noise_term="paper") == pytest.approx(20)


def test_exact_tie_goes_to_the_longest_last_group():
    # eps1 = 2, eps2 = 0.5, y = (0, 5): merged 12.5 - 0.5 + 4 = 16 = split 8 + 8,
    # and every quantity is exact in binary, so both candidates tie exactly.
    kw = {"eps1": 2.0, "eps2": 0.5}
    y = (0.0, 5.0)
    assert segment_objective(y, [0], **kw) == segment_objective(y, [0, 1], **kw) == 16.0
    assert segment_dp(y, **kw).tolist() == [0]
    assert segment_pelt(y, **kw, max_candidates=10).tolist() == [0]


def test_single_bin():
    for solver in (segment, segment_dp, segment_pelt, segment_sorted):
        assert solver([7.0], **ONE).tolist() == [0]
    assert segment_objective([7.0], [0], **ONE) == pytest.approx(2.0)


# ------------------------------------------------------------- helpers and costs


def test_labels_from_starts():
    assert labels_from_starts([0, 3, 7], 9).tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert labels_from_starts(np.array([0]), 4).tolist() == [0, 0, 0, 0]
    for bad in ([1, 3], [0, 3, 3], [0, 9], [], [[0]], [0.0, 1.0]):
        with pytest.raises(ValidationError):
            labels_from_starts(bad, 9)
    with pytest.raises(ValidationError):
        labels_from_starts([0], 0)


def test_centred_prefix_sums_give_interval_sse():
    rng = np.random.default_rng(3)
    y = 1e6 + rng.laplace(0, 3, 500)
    p1, p2 = centred_prefix_sums(y)
    assert p1.shape == p2.shape == (501,)
    assert p1[0] == p2[0] == 0.0
    assert abs(p1[-1]) < 1e-6  # centred
    for lo, hi in [(0, 500), (10, 11), (37, 402), (499, 500)]:
        sse = (p2[hi] - p2[lo]) - (p1[hi] - p1[lo]) ** 2 / (hi - lo)
        g = y[lo:hi]
        assert sse == pytest.approx(np.sum((g - g.mean()) ** 2), rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("noise_term", ["first_principles", "paper"])
@pytest.mark.parametrize("base", [0.0, 2.6e6])
def test_s2_costs_match_direct_computation(noise_term, base):
    rng = np.random.default_rng(11)
    y = base + rng.integers(0, 50, 300) + rng.laplace(0, 10, 300)
    lo = rng.integers(0, 299, 200)
    hi = lo + 1 + rng.integers(0, 300 - lo)
    got = s2_costs(y, lo, hi, eps1=0.1, eps2=0.3, noise_term=noise_term)
    want = [direct_cost(y, a, b, 0.1, 0.3, noise_term) for a, b in zip(lo, hi, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-6)


# ------------------------------------------------------------------- brute force

EPS = st.floats(min_value=-2.0, max_value=1.0).map(lambda e: 10.0**e)  # 0.01 .. 10


@st.composite
def problems(draw, max_n=12):
    """(y, eps1, eps2, noise_term) with y of several kinds, N = 1 .. max_n."""
    n = draw(st.integers(1, max_n))
    eps1, eps2 = draw(EPS), draw(EPS)
    noise_term = draw(st.sampled_from(["first_principles", "paper"]))
    kind = draw(st.sampled_from(["real", "zeros", "huge", "small_int", "levels", "matched"]))
    small = st.floats(-3.0, 3.0, allow_nan=False)
    if kind == "zeros":
        y = np.zeros(n)
    elif kind == "real":
        y = np.array(draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n)))
    elif kind == "huge":
        y = 1e6 + np.array(draw(st.lists(small, min_size=n, max_size=n)))
    elif kind == "small_int":
        y = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), float)
    elif kind == "levels":
        levels = draw(st.lists(st.sampled_from([0.0, 1e3, 1e6]), min_size=n, max_size=n))
        y = np.array(levels) + np.array(draw(st.lists(small, min_size=n, max_size=n)))
    else:  # a few plateaus plus Laplace noise of the scale eps1 claims
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        y = (rng.integers(0, 3, n) * rng.uniform(0, 20)) / eps1 + rng.laplace(0, 1 / eps1, n)
    return y, eps1, eps2, noise_term


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems())
def test_dp_and_pelt_are_optimal_and_identical(problem):
    y, eps1, eps2, noise_term = problem
    kw = {"eps1": eps1, "eps2": eps2, "noise_term": noise_term}
    best = brute_force_minimum(y, eps1, eps2, noise_term)
    tol = tolerance(y, eps1, eps2)
    dp = segment_dp(y, **kw)
    assert dp[0] == 0 and np.all(np.diff(dp) > 0) and dp[-1] < len(y)
    assert direct_objective(y, dp, eps1, eps2, noise_term) == pytest.approx(best, rel=1e-9, abs=tol)
    assert segment_objective(y, dp, **kw) == pytest.approx(best, rel=1e-9, abs=tol)
    # PELT without fallback, with the default fallback, and forced to fall back at once.
    for cap in (len(y) + 1, None, 1):
        assert np.array_equal(segment_pelt(y, **kw, max_candidates=cap), dp)
    assert np.array_equal(segment(y, **kw), dp)


@pytest.mark.parametrize("noise_term", ["first_principles", "paper"])
def test_pure_pelt_equals_dp_on_many_small_problems(noise_term):
    # Cheap and dense: a pruning constant that is too tight shows up here within a
    # few hundred problems (wrong pruning needs a start that recovers later).
    rng = np.random.default_rng(17)
    for _ in range(1500):
        n = int(rng.integers(2, 30))
        eps1, eps2 = 10 ** rng.uniform(-2, 1, 2)
        y = (rng.integers(0, 3, n) * rng.uniform(0, 20)) / eps1 + rng.laplace(0, 1 / eps1, n)
        kw = {"eps1": eps1, "eps2": eps2, "noise_term": noise_term}
        assert np.array_equal(segment_pelt(y, **kw, max_candidates=n + 1), segment_dp(y, **kw))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems())
def test_sorted_solver_is_optimal(problem):
    y, eps1, eps2, noise_term = problem
    ys = np.sort(y)[::-1]  # descending, as the ordering block produces
    kw = {"eps1": eps1, "eps2": eps2, "noise_term": noise_term}
    starts = segment_sorted(ys, **kw)
    best = brute_force_minimum(ys, eps1, eps2, noise_term)
    got = direct_objective(ys, starts, eps1, eps2, noise_term)
    assert got == pytest.approx(best, rel=1e-9, abs=tolerance(ys, eps1, eps2))


# ---------------------------------------------------- PELT vs DP on larger inputs


def piecewise(rng, n, eps1):
    lengths = rng.geometric(1 / 50, n)
    x = np.repeat(rng.integers(0, 200, n), lengths)[:n].astype(float)
    return x + rng.laplace(0, 1 / eps1, n)


def sparse(rng, n, eps1):
    x = np.where(rng.random(n) < 0.1, rng.geometric(0.05, n), 0).astype(float)
    return x + rng.laplace(0, 1 / eps1, n)


def structure_free(rng, n, eps1):
    return 40.0 + rng.laplace(0, 1 / eps1, n)


@pytest.mark.parametrize("noise_term", ["first_principles", "paper"])
@pytest.mark.parametrize(
    "shape, n, eps1, eps2",
    [
        (piecewise, 2000, 0.25, 0.75),
        (piecewise, 1500, 0.025, 0.075),
        (sparse, 2000, 0.25, 0.75),
        (sparse, 800, 0.0025, 0.0075),
        (structure_free, 2000, 0.25, 0.75),
        (structure_free, 1200, 0.9, 0.1),
    ],
)
def test_pelt_equals_dp(shape, n, eps1, eps2, noise_term):
    rng = np.random.default_rng(n + int(1000 * eps1))
    y = shape(rng, n, eps1)
    kw = {"eps1": eps1, "eps2": eps2, "noise_term": noise_term}
    dp = segment_dp(y, **kw)
    starts, stats = segment_pelt(y, **kw, return_stats=True)
    assert np.array_equal(starts, dp)
    assert np.array_equal(segment(y, **kw), dp)
    assert np.array_equal(segment_pelt(y, **kw, max_candidates=n + 1), dp)  # pure PELT
    if shape is structure_free and eps2 < eps1 and noise_term == "first_principles":
        # A large publication-noise term favours few long groups, and K = -3/eps2**2
        # is then too loose to prune anything: the plain DP takes over.
        assert stats.fallback_at is not None
        assert stats.fallback_at <= n // 2
        assert len(dp) <= n // 20
    elif eps1 == 0.25:
        # The per-group penalty 2/eps1**2 is about the noise variance, so the optimum
        # has many short groups (even on structure-free data) and PELT is ~linear.
        assert stats.fallback_at is None
        assert stats.evaluations < 30 * n  # far below the DP's n**2 / 2


def test_pelt_equals_dp_with_far_apart_levels():
    rng = np.random.default_rng(5)
    levels = rng.choice([0.0, 1e6, 2.6e6], 40)
    y = np.repeat(levels, 25) + rng.laplace(0, 2, 1000)
    kw = {"eps1": 0.5, "eps2": 1.5}
    dp = segment_dp(y, **kw)
    assert np.array_equal(segment(y, **kw), dp)
    # Every level change between plateaus is found.
    changes = set(np.flatnonzero(np.diff(np.repeat(levels, 25))) + 1)
    assert changes <= set(dp.tolist())


def test_sorted_solver_matches_dp_objective():
    rng = np.random.default_rng(9)
    for n, eps in [(1500, 1.0), (1200, 0.1)]:
        eps1, eps2 = 0.25 * eps, 0.75 * eps
        y = np.sort(piecewise(rng, n, eps1))
        kw = {"eps1": eps1, "eps2": eps2}
        want = segment_objective(y, segment_dp(y, **kw), **kw)
        got = segment_objective(y, segment_sorted(y, **kw), **kw)
        assert got == pytest.approx(want, rel=1e-9, abs=tolerance(y, eps1, eps2))


def test_sorted_solver_refuses_unsorted_input():
    with pytest.raises(ValidationError, match="sorted"):
        segment_sorted([1.0, 3.0, 2.0], **ONE)


# ----------------------------------------------------------------------- numerics


def test_constant_offset_gives_the_same_partition():
    rng = np.random.default_rng(2)
    y = piecewise(rng, 1000, 0.25)
    kw = {"eps1": 0.25, "eps2": 0.75}
    base = segment(y, **kw)
    shifted = segment(y + 1e7, **kw)
    assert len(base) > 10
    assert np.array_equal(shifted, base)
    assert np.array_equal(segment_dp(y + 1e7, **kw), base)
    assert segment_objective(y + 1e7, base, **kw) == pytest.approx(
        segment_objective(y, base, **kw), rel=1e-9
    )


# -------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "y, kw, msg",
    [
        ([], {}, "empty"),
        ([1.0, float("nan")], {}, "NaN"),
        ([1.0, float("inf")], {}, "NaN or infinite"),
        ([[1.0, 2.0], [3.0, 4.0]], {}, "1-D"),
        ("12", {}, "string"),
        ([True, False], {}, "real numbers"),
        ([1e200, -1e200], {}, "too large"),
        ([1.0, 2.0], {"eps1": 0.0}, "eps1"),
        ([1.0, 2.0], {"eps2": -1.0}, "eps2"),
        ([1.0, 2.0], {"eps1": float("nan")}, "eps1"),
        ([1.0, 2.0], {"eps2": "1"}, "eps2"),
        ([1.0, 2.0], {"eps1": True}, "eps1"),
        ([1.0, 2.0], {"eps1": 1e-200}, "too small"),
        ([1.0, 2.0], {"noise_term": "dawa"}, "noise_term"),
    ],
)
@pytest.mark.parametrize("solver", [segment, segment_dp, segment_pelt, segment_sorted])
def test_bad_input_is_refused(solver, y, kw, msg):
    args = {"eps1": 1.0, "eps2": 1.0, **kw}
    with pytest.raises(ValidationError, match=msg):
        solver(y, **args)


def test_bad_groups_and_options_are_refused():
    y = [1.0, 2.0, 3.0]
    with pytest.raises(ValidationError, match="lo < hi"):
        s2_costs(y, [1], [1], **ONE)
    with pytest.raises(ValidationError, match="lo < hi"):
        s2_costs(y, [0], [4], **ONE)
    with pytest.raises(ValidationError, match="same length"):
        s2_costs(y, [0, 1], [2], **ONE)
    with pytest.raises(ValidationError, match="begin with 0"):
        segment_objective(y, [1], **ONE)
    with pytest.raises(ValidationError, match="max_candidates"):
        segment_pelt(y, **ONE, max_candidates=0)
