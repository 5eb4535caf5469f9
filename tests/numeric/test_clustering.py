"""AHP clustering (greedy, optimal, empirical) and SReB_GCA's GGS against hand oracles,
brute force and exact-rational replays."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._numeric.clustering import (
    EMPIRICAL_RULES,
    ahp_empirical,
    ahp_err_star,
    ahp_greedy,
    ahp_k_clustering,
    ahp_optimal,
    ahp_total_error,
    empirical_k,
)
from dphist._numeric.ggs import greedy_group_relative, group_relative_errors
from dphist.errors import ValidationError

EXAMPLE = [1, 1, 3, 3, 4, 6, 7]  # AHP Example 3.1, eps2 = 0.5 (2/eps2**2 = 8)
EPS2S = [0.25, 0.5, 1.0, 3.0]

sorted_ints = st.lists(st.integers(-20, 60), min_size=1, max_size=12).map(sorted)
eps2s = st.sampled_from(EPS2S)
SETTINGS = settings(max_examples=60, deadline=None)

# ------------------------------------------------------------------ reference twins


def direct_err(g, eps2):
    """err(C) = SSE + 2/(|C| eps2**2), two-pass, independent of the module."""
    g = [float(v) for v in g]
    mean = math.fsum(g) / len(g)
    return math.fsum((v - mean) ** 2 for v in g) + 2.0 / (len(g) * eps2**2)


def objective(y, starts, eps2):
    bounds = [*map(int, starts), len(y)]
    return math.fsum(direct_err(y[a:b], eps2) for a, b in itertools.pairwise(bounds))


def clusterings(n, k=None):
    """Every contiguous clustering of n bins (with exactly k clusters if given)."""
    sizes = range(n) if k is None else [k - 1]
    for r in sizes:
        for cuts in itertools.combinations(range(1, n), r):
            yield (0, *cuts)


def brute_minimum(y, eps2, k=None):
    n = len(y)
    cost = {(a, b): direct_err(y[a:b], eps2) for a in range(n) for b in range(a + 1, n + 1)}
    return min(
        math.fsum(cost[a, b] for a, b in itertools.pairwise([*s, n])) for s in clusterings(n, k)
    )


def brute_err_star(y, j, eps2):
    n = len(y)
    return min(
        (y[j] - math.fsum(y[j : j + m]) / m) ** 2 + 2.0 / (m * m * eps2**2)
        for m in range(1, n - j + 1)
    )


def tol(y, eps2):
    y = np.asarray(y, dtype=float)
    return 1e-9 * (float(np.sum((y - y.mean()) ** 2)) + len(y) * 2.0 / eps2**2 + 1.0)


def exact_score(g, lam, delta):
    """SReB_GCA group score E(C) in exact rationals."""
    g = [Fraction(v) for v in g]
    n = len(g)
    mean = sum(g) / n
    return sum((abs(h - mean) + lam / n) / max(h, delta) for h in g) / n


def ggs_reference(s, eps2, delta=1.0):
    """GGS as the spec words it (§8.3), recomputing every score from scratch."""
    lam, n = 1.0 / eps2, len(s)

    def score(g):
        mean = sum(g) / len(g)
        return sum((abs(h - mean) + lam / len(g)) / max(h, delta) for h in g) / len(g)

    starts, a = [0], 0
    for r in range(1, n):
        grp = s[a:r]
        bound = lam / ((n - r) * max(s[r], delta))
        if score([*grp, s[r]]) < (len(grp) * score(grp) + bound) / (len(grp) + 1):
            continue
        starts.append(r)
        a = r
    return starts


# --------------------------------------------------------------- AHP: hand oracles


def test_example_3_1_greedy_clusters_and_trace():
    starts, trace = ahp_greedy(EXAMPLE, eps2=0.5, return_trace=True)
    assert starts.tolist() == [0, 2, 5]  # {1,1}, {3,3,4}, {6,7}
    # Merge value vs keep value for j = 1..6 (spec §2.4; the paper's 16/9 is 16/3).
    merge = [4, 16 / 3, 4, 10 / 3, 8, 9 / 2]
    keep = [8 + 8 / 3, 4 + 1, 8 + 9 / 4, 4 + 3, 10 / 3 + 9 / 4, 8 + 8]
    np.testing.assert_allclose(trace.merge, merge, rtol=1e-12)
    np.testing.assert_allclose(trace.keep, keep, rtol=1e-12)
    # Testing s_2 = 3 against C = {1, 1}: err(C + 3) = 16/3 > err(C) + err*(2) = 4 + 1.
    assert trace.merge[1] == pytest.approx(16 / 3) and trace.merge[1] > trace.keep[1]
    assert ahp_total_error(EXAMPLE, starts, eps2=0.5) == pytest.approx(71 / 6)
    assert ahp_greedy(EXAMPLE, eps2=0.5, err_star="scan").tolist() == [0, 2, 5]


def test_example_3_1_err_star_values():
    # err*(2) = 1/9 + 8/9, attained by the potential cluster {3, 3, 4}.
    expected = [4 / 3, 8 / 3, 1, 9 / 4, 3, 9 / 4, 8]
    for method in ("search", "scan"):
        got = ahp_err_star(EXAMPLE, eps2=0.5, method=method)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert expected == pytest.approx([brute_err_star(EXAMPLE, j, 0.5) for j in range(7)])


def test_example_3_1_optimal_and_k_clusterings():
    for method in ("dp", "monotone"):
        assert ahp_optimal(EXAMPLE, eps2=0.5, method=method).tolist() == [0, 2, 5]
    values = {1: 230 / 7, 2: 133 / 10}
    clusters = {1: [0], 2: [0, 5]}
    for k in range(1, 8):
        starts = ahp_k_clustering(EXAMPLE, k, eps2=0.5)
        assert starts.tolist() == clusters.get(k, [0, 2, 5])
        assert ahp_total_error(EXAMPLE, starts, eps2=0.5) == pytest.approx(values.get(k, 71 / 6))
    assert ahp_k_clustering(EXAMPLE, 4, eps2=0.5, exact_k=True).size == 4


def test_empirical_k_oracles():
    assert [empirical_k(EXAMPLE, r) for r in ("sqrt", "sturges", "rice")] == [3, 4, 4]
    # Doane on Example 3.1: standard skewness 4.384 -> 5, the paper's formula 4.648 -> 5.
    assert empirical_k(EXAMPLE, "doane") == 5
    assert empirical_k(EXAMPLE, "doane", doane="paper") == 5
    ks = [empirical_k(np.zeros(1024), r) for r in ("sqrt", "sturges", "rice", "doane")]
    assert ks == [32, 11, 21, 11]  # Doane = Sturges without skewness
    # Two-point data (9 zeros, one 100): g1 = 0.8/0.3, sigma = sqrt(48/143).
    y = [0.0] * 9 + [100.0]
    sigma = math.sqrt(48 / 143)
    std = 1 + math.log2(10) + math.log2(1 + (8 / 3) / sigma)  # 6.81
    paper = 1 + math.log2(10) + math.log2(1 + ((8 / 3) / math.sqrt(10)) ** (1 / 3) / sigma)
    assert (math.ceil(std), math.ceil(paper)) == (7, 6)
    assert empirical_k(y, "doane") == 7
    assert empirical_k(y, "doane", doane="paper") == 6
    # Exact integer rounding at perfect powers and clamping to [1, N].
    assert empirical_k(np.zeros(1000), "rice") == 20  # 2 * 10 exactly
    assert empirical_k(np.zeros(64), "sqrt") == 8
    assert empirical_k(np.zeros(65), "sqrt") == 9
    assert empirical_k(np.zeros(65), "sturges") == 8  # ceil(1 + 6.02)
    assert [empirical_k([3.0], r) for r in EMPIRICAL_RULES] == [1, 1, 1, 1]
    assert empirical_k([1.0, 2.0], "doane") == 2


def test_empirical_all_rules_on_example():
    # Every rule allows >= 3 clusters, and 3 is optimal: the paper's answer.
    for rule in (*EMPIRICAL_RULES, "all"):
        assert ahp_empirical(EXAMPLE, eps2=0.5, rule=rule).tolist() == [0, 2, 5]
    # Exactly k = 3 (sqrt 7 rounded up) gives the same; exactly 5 (Doane) cannot.
    assert ahp_empirical(EXAMPLE, eps2=0.5, rule="sqrt", exact_k=True).tolist() == [0, 2, 5]
    assert ahp_empirical(EXAMPLE, eps2=0.5, rule="doane", exact_k=True).size == 5
    # Among exact-k rules the paper keeps the least error: k = 3 wins over 4 and 5.
    assert ahp_empirical(EXAMPLE, eps2=0.5, rule="all", exact_k=True).tolist() == [0, 2, 5]


def test_descending_input_gives_the_mirrored_answer():
    y = np.array(EXAMPLE[::-1], dtype=float)
    assert ahp_greedy(y, eps2=0.5).tolist() == [0, 2, 5]  # {7,6}, {4,3,3}, {1,1}
    for method in ("dp", "monotone"):
        starts = ahp_optimal(y, eps2=0.5, method=method)
        assert ahp_total_error(y, starts, eps2=0.5) == pytest.approx(71 / 6)


def test_single_bin_and_constant_input():
    for fn in (ahp_greedy, ahp_optimal, ahp_empirical):
        assert fn([5.0], eps2=1.0).tolist() == [0]
    assert ahp_k_clustering([5.0], 1, eps2=1.0).tolist() == [0]
    assert ahp_err_star([5.0], eps2=2.0).tolist() == [0.5]
    zeros = np.zeros(3000)
    assert ahp_greedy(zeros, eps2=0.5).tolist() == [0]
    assert ahp_optimal(zeros, eps2=0.5, method="monotone").tolist() == [0]
    # Equal values: err*(j) = 2/((N-j)**2 eps2**2) by both methods.
    expected = 8.0 / np.arange(3000, 0, -1.0) ** 2
    np.testing.assert_allclose(ahp_err_star(zeros, eps2=0.5), expected, rtol=1e-12)
    np.testing.assert_allclose(ahp_err_star(zeros, eps2=0.5, method="scan"), expected, rtol=1e-12)


def test_thresholded_shape_keeps_zeros_together():
    rng = np.random.default_rng(3)
    y = np.sort(np.concatenate([np.zeros(500), 40 + rng.laplace(0, 2, 50)]))
    for starts in (
        ahp_greedy(y, eps2=0.5),
        ahp_optimal(y, eps2=0.5),
        ahp_empirical(y, eps2=0.5),
    ):
        assert starts[1] == 500  # one cluster of zeros, never mixed with the rest


# ------------------------------------------------------ AHP: brute force and properties


@SETTINGS
@given(y=sorted_ints, eps2=eps2s)
def test_optimal_equals_brute_force(y, eps2):
    best = brute_minimum(y, eps2)
    t = tol(y, eps2)
    for method in ("dp", "monotone"):
        assert objective(y, ahp_optimal(y, eps2=eps2, method=method), eps2) == pytest.approx(
            best, abs=t
        )
    assert objective(y, ahp_greedy(y, eps2=eps2), eps2) >= best - t
    neg = [-v for v in reversed(y)]  # descending order, same optimum
    assert objective(neg, ahp_optimal(neg, eps2=eps2, method="monotone"), eps2) == pytest.approx(
        best, abs=t
    )


@SETTINGS
@given(y=sorted_ints.filter(lambda v: len(v) <= 9), eps2=eps2s)
def test_k_clustering_equals_brute_force_per_k(y, eps2):
    n, t = len(y), tol(y, eps2)
    exact = [brute_minimum(y, eps2, k) for k in range(1, n + 1)]
    for k in range(1, n + 1):
        starts = ahp_k_clustering(y, k, eps2=eps2, exact_k=True)
        assert len(starts) == k
        assert objective(y, starts, eps2) == pytest.approx(exact[k - 1], abs=t)
        at_most = ahp_k_clustering(y, k, eps2=eps2)
        assert len(at_most) <= k
        assert objective(y, at_most, eps2) == pytest.approx(min(exact[:k]), abs=t)
    for rule in EMPIRICAL_RULES:
        k = empirical_k(y, rule)
        got = ahp_empirical(y, eps2=eps2, rule=rule)
        assert objective(y, got, eps2) == pytest.approx(min(exact[:k]), abs=t)
        got = ahp_empirical(y, eps2=eps2, rule=rule, exact_k=True)
        assert len(got) == k
        assert objective(y, got, eps2) == pytest.approx(exact[k - 1], abs=t)
    ks = [empirical_k(y, r) for r in EMPIRICAL_RULES]
    got = ahp_empirical(y, eps2=eps2, rule="all", exact_k=True)
    assert objective(y, got, eps2) == pytest.approx(min(exact[k - 1] for k in ks), abs=t)


@SETTINGS
@given(y=sorted_ints, eps2=eps2s, descending=st.booleans())
def test_greedy_replays_algorithm_3(y, eps2, descending):
    """Every decision of the greedy output is the paper's test, evaluated independently."""
    if descending:
        y = y[::-1]
    starts, trace = ahp_greedy(y, eps2=eps2, return_trace=True)
    stars = [brute_err_star(y, j, eps2) for j in range(len(y))]
    for method in ("search", "scan"):
        np.testing.assert_allclose(ahp_err_star(y, eps2=eps2, method=method), stars, rtol=1e-9)
    t, cut, a = tol(y, eps2), set(starts.tolist()), 0
    for j in range(1, len(y)):
        merged = direct_err(y[a : j + 1], eps2)
        keep = direct_err(y[a:j], eps2) + stars[j]
        assert trace.merge[j - 1] == pytest.approx(merged, abs=t)
        assert trace.keep[j - 1] == pytest.approx(keep, abs=t)
        if j in cut:
            assert merged >= keep - t
            a = j
        else:
            assert merged < keep + t


def test_fast_solvers_match_the_plain_dp_on_noisy_data():
    rng = np.random.default_rng(7)
    for n, eps2 in ((400, 0.2), (400, 2.0), (1500, 0.5)):
        y = np.sort(np.floor(rng.pareto(1.2, n) * 3) + rng.laplace(0, 2, n))
        dp = ahp_optimal(y, eps2=eps2)
        mono = ahp_optimal(y, eps2=eps2, method="monotone")
        assert mono.tolist() == dp.tolist()
        best = ahp_total_error(y, dp, eps2=eps2)
        assert ahp_total_error(y, ahp_greedy(y, eps2=eps2), eps2=eps2) >= best
        assert ahp_greedy(y, eps2=eps2, err_star="scan").tolist() == (
            ahp_greedy(y, eps2=eps2).tolist()
        )
        # The layered k-DP with k >= the optimum's cluster count finds the optimum.
        k = len(dp)
        kc = ahp_k_clustering(y, k, eps2=eps2, exact_k=True)
        assert ahp_total_error(y, kc, eps2=eps2) == pytest.approx(best, rel=1e-10)


def test_k_layers_match_a_plain_quadratic_dp():
    rng = np.random.default_rng(11)
    y = np.sort(rng.normal(0, 5, 80) ** 2)
    n, eps2 = len(y), 0.7
    cost = np.full((n + 1, n + 1), np.inf)
    for a in range(n):
        for b in range(a + 1, n + 1):
            cost[a, b] = direct_err(y[a:b], eps2)
    d = np.full(n + 1, np.inf)
    d[0] = 0.0
    for k in range(1, 13):
        d = np.min(d[:, None] + cost, axis=0)  # exactly k clusters
        got = ahp_k_clustering(y, k, eps2=eps2, exact_k=True)
        assert ahp_total_error(y, got, eps2=eps2) == pytest.approx(d[n], rel=1e-10)


# ------------------------------------------------------------------- SReB_GCA (GGS)


def test_ggs_oracle_1_with_exact_trace():
    s = [1, 1, 2, 10, 10, 11]
    starts, trace = greedy_group_relative(s, eps2=1.0, return_trace=True)
    assert starts.tolist() == [0, 2, 3, 5]  # [1,1], [2], [10,10], [11]
    merge = [Fraction(1, 2), Fraction(11, 18), Fraction(27, 20), Fraction(1, 20), Fraction(37, 495)]
    keep = [Fraction(3, 5), Fraction(3, 8), Fraction(4, 15), Fraction(3, 40), Fraction(7, 110)]
    np.testing.assert_allclose(trace.merge, [float(v) for v in merge], rtol=1e-12)
    np.testing.assert_allclose(trace.keep, [float(v) for v in keep], rtol=1e-12)
    scores = group_relative_errors(s, starts, eps2=1.0)
    expected = [exact_score(g, Fraction(1), 1) for g in ([1, 1], [2], [10, 10], [11])]
    np.testing.assert_allclose(scores, [float(v) for v in expected], rtol=1e-12)


def test_ggs_oracles_2_and_3():
    assert greedy_group_relative([1, 1, 2, 10, 10, 11], eps2=0.1).tolist() == [0, 3]
    assert greedy_group_relative([5, 5, 5, 5], eps2=0.5).tolist() == [0]
    assert greedy_group_relative([7.0], eps2=1.0).tolist() == [0]


def test_ggs_floors_non_positive_values():
    s = [-3.0, -1.0, 0.0, 0.0, 0.4, 2.0, 50.0]
    starts, trace = greedy_group_relative(s, eps2=1.0, return_trace=True)
    assert np.all(np.isfinite(trace.merge)) and np.all(np.isfinite(trace.keep))
    assert starts.tolist() == ggs_reference(s, 1.0)
    # With delta = 1 the first bins all divide by 1, so the first score is |.| + lam/n.
    assert group_relative_errors([-3.0], [0], eps2=1.0)[0] == pytest.approx(1.0)
    assert group_relative_errors([-3.0], [0], eps2=1.0, delta=0.5)[0] == pytest.approx(2.0)


def test_ggs_matches_a_direct_reference_on_noisy_data():
    rng = np.random.default_rng(5)
    for n, eps2 in ((300, 0.1), (300, 1.0), (300, 10.0)):
        s = np.sort(np.floor(rng.pareto(1.0, n) * 2) + rng.laplace(0, 1.0, n))
        assert greedy_group_relative(s, eps2=eps2).tolist() == ggs_reference(s.tolist(), eps2)


@SETTINGS
@given(
    y=st.lists(st.integers(-3, 40), min_size=1, max_size=25).map(sorted),
    eps2=st.sampled_from([0.125, 0.5, 1.0, 4.0]),
)
def test_ggs_keeps_its_promised_bounds(y, eps2):
    """Exact-rational replay: each merge passed the test, each cut failed it, and the
    merge tests add up to the group bound, so no group beats its singletons' bound."""
    starts, trace = greedy_group_relative(y, eps2=eps2, return_trace=True)
    lam, n, delta = Fraction(1) / Fraction(eps2), len(y), Fraction(1)
    bounds = [*starts.tolist(), n]
    cuts = set(starts.tolist())

    def lower(r):  # Theorem 7's bound for bin r starting a later group
        return lam / ((n - r) * max(Fraction(y[r]), delta))

    a = 0
    for r in range(1, n):
        size = r - a
        left = exact_score(y[a : r + 1], lam, delta)
        right = (size * exact_score(y[a:r], lam, delta) + lower(r)) / (size + 1)
        t = 1e-9 * float(max(left, right))
        assert trace.merge[r - 1] == pytest.approx(float(left), abs=t)
        assert trace.keep[r - 1] == pytest.approx(float(right), abs=t)
        if r in cuts:
            assert float(left - right) >= -t
            a = r
        else:
            assert float(left - right) < t
    total_groups = Fraction(0)
    for a, b in itertools.pairwise(bounds):
        total = (b - a) * exact_score(y[a:b], lam, delta)
        bound = lam / max(Fraction(y[a]), delta) + sum(lower(r) for r in range(a + 1, b))
        assert float(total - bound) <= 1e-9 * float(bound)
        total_groups += total
    singletons = sum(lam / max(Fraction(v), delta) for v in y)
    assert float(total_groups - singletons) <= 1e-9 * float(singletons)
    scores = group_relative_errors(y, starts, eps2=eps2)
    exact = [exact_score(y[a:b], lam, delta) for a, b in itertools.pairwise(bounds)]
    np.testing.assert_allclose(scores, [float(v) for v in exact], rtol=1e-9)


# ------------------------------------------------------------------------ bad input


AHP_CALLS = [
    lambda y, e: ahp_greedy(y, eps2=e),
    lambda y, e: ahp_greedy(y, eps2=e, err_star="scan"),
    lambda y, e: ahp_optimal(y, eps2=e),
    lambda y, e: ahp_optimal(y, eps2=e, method="monotone"),
    lambda y, e: ahp_k_clustering(y, 1, eps2=e),
    lambda y, e: ahp_empirical(y, eps2=e),
    lambda y, e: ahp_err_star(y, eps2=e),
    lambda y, e: greedy_group_relative(y, eps2=e),
]


@pytest.mark.parametrize("call", AHP_CALLS)
def test_bad_input_is_rejected(call):
    for bad_y in ([], [[1.0, 2.0]], [1.0, np.nan], "abc", [3.0, 1.0, 2.0]):
        with pytest.raises(ValidationError):
            call(bad_y, 1.0)
    for bad_eps in (0.0, -1.0, math.inf, math.nan, True, "1"):
        with pytest.raises(ValidationError):
            call([1.0, 2.0], bad_eps)
    assert call([1.0, 2.0], 1.0) is not None  # the same call is fine with good input


def test_bad_options_are_rejected():
    y = [0.0, 1.0, 2.0]
    with pytest.raises(ValidationError, match="ascending"):
        greedy_group_relative([2.0, 1.0, 0.0], eps2=1.0)  # GGS needs ascending order
    for k in (0, 4, 1.5, True):
        with pytest.raises(ValidationError):
            ahp_k_clustering(y, k, eps2=1.0)
    for kw in ({"rule": "scott"}, {"doane": "exact"}, {"exact_k": 1}):
        with pytest.raises(ValidationError):
            ahp_empirical(y, eps2=1.0, **kw)
    with pytest.raises(ValidationError):
        ahp_optimal(y, eps2=1.0, method="pelt")
    with pytest.raises(ValidationError, match="too small"):
        ahp_optimal(y, eps2=1e-300)  # 2/eps2**2 overflows
    with pytest.raises(ValidationError):
        ahp_greedy(y, eps2=1.0, err_star="brute")
    with pytest.raises(ValidationError):
        empirical_k(y, "all")
    for delta in (0.0, -1.0, math.nan):
        with pytest.raises(ValidationError):
            greedy_group_relative(y, eps2=1.0, delta=delta)
    for starts in ([1, 2], [0, 0], [0, 3], [0.0]):
        with pytest.raises(ValidationError):
            ahp_total_error(y, starts, eps2=1.0)
    assert ahp_total_error(y, [0, 1, 2], eps2=1.0) == pytest.approx(6.0)
