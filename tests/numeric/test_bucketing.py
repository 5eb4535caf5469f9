"""SORTaki components: error formulas, GP / DPP / DPCube partitioners, WAF, Table II."""

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from dphist._numeric.bucketing import (
    ERRORS,
    ahp_error,
    bucket_errors,
    dp_partition,
    dpcube_partition,
    greedy_partition,
    laplace_variance,
    partition_error,
    uee_error,
    waf_estimate,
    waf_variance,
    waf_weights,
)
from dphist.errors import ValidationError
from dphist.methods.sortaki_configs import SORTAKI_CONFIGS, sortaki_config

SETTINGS = settings(max_examples=60, deadline=None)

# ------------------------------------------------------------------ reference twins


def direct_error(y, lo, hi, error, var_in, var_f):
    """EF([lo, hi)) written out as in the paper (two-pass SSE, no prefix sums)."""
    v = np.asarray(y[lo:hi], dtype=np.float64)
    n = hi - lo
    sse = math.fsum(((v - v.mean()) ** 2).tolist())
    if error == "ahp":
        return sse + var_f / n
    if error == "uee":
        noise = 0.0 if var_in == var_f == 0 else var_in * var_f / (var_f + n * var_in)
        return sse - (n - 1) * var_in + noise
    return sse + float(error(np.array([n]))[0])  # custom length term


def all_partitions(n):
    """Every contiguous partition of range(n), as bucket bounds [0, ..., n]."""
    for mask in range(1 << (n - 1)):
        yield [0, *(i + 1 for i in range(n - 1) if mask >> i & 1), n]


def is_pow2(k):
    return k & (k - 1) == 0


def brute_force_minimum(y, error, var_in, var_f, pow2=False):
    n = len(y)
    cost = {
        (a, b): direct_error(y, a, b, error, var_in, var_f)
        for a in range(n)
        for b in range(a + 1, n + 1)
    }
    best = math.inf
    for bounds in all_partitions(n):
        pairs = list(itertools.pairwise(bounds))
        if pow2 and not all(is_pow2(b - a) for a, b in pairs):
            continue
        best = min(best, math.fsum(cost[p] for p in pairs))
    return best


def objective(y, starts, error, var_in, var_f):
    bounds = [*map(int, starts), len(y)]
    return math.fsum(
        direct_error(y, a, b, error, var_in, var_f) for a, b in itertools.pairwise(bounds)
    )


def tolerance(y, var_in, var_f):
    yc = np.asarray(y, dtype=np.float64) - np.mean(y)
    return 1e-9 * (float(np.sum(yc * yc)) + len(y) * (1.0 + var_in + var_f))


def kwargs(error, var_in, var_f):
    if callable(error):
        return {}
    return {"var_in": var_in, "var_f": var_f}


def sqrt_term(sizes):
    """A concave custom length term (not Monge-friendly): 3*sqrt(|v|)."""
    return 3.0 * np.sqrt(sizes)


ERROR_CASES = [*ERRORS, sqrt_term]

values = st.lists(
    st.integers(-20, 20).map(float) | st.floats(-50, 50, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=12,
)
variances = st.sampled_from([0.0, 0.5, 2.0, 8.0, 200.0])


# --------------------------------------------------------------- spec §7.5 oracles


def test_oracle_waf_weights():
    var_in, var_f = laplace_variance(0.9), laplace_variance(0.1)
    a1, a2 = waf_weights(10, var_in=var_in, var_f=var_f)
    assert float(a1) == pytest.approx(0.81 / 0.91)  # 0.8901
    # The spec prints alpha2 = 0.0989; the weights must add to 1: 0.1/0.91 = 0.1099.
    assert float(a2) == pytest.approx(0.1 / 0.91)
    assert float(a1 + a2) == pytest.approx(1.0)


def test_oracle_uee():
    one = laplace_variance(1.0)  # 2
    errs = uee_error([4.0, 6.0], [0, 0], [2, 1], var_in=one, var_f=one)
    assert errs[0] == pytest.approx(2 - 2 + 2 / 3)
    assert errs[1] == pytest.approx(2 / (1 + 1))  # singleton: 2/(eps_in^2 + eps_f^2)


def test_oracle_gp_differs_from_ahp_greedy():
    s = [1.0, 1.0, 3.0, 3.0, 4.0, 6.0, 7.0]
    var_f = laplace_variance(0.5)  # 8
    merged, kept, single = ahp_error(s, [0, 0, 2], [3, 2, 3], var_f=var_f)
    assert (merged, kept, single) == pytest.approx((16 / 3, 4.0, 8.0))
    assert merged < kept + single  # GP merges s_2 = 3 (AHP's greedy, against 4 + 1, does not)
    starts = greedy_partition(s, "ahp", var_f=var_f)
    assert starts.tolist() == [0, 5]  # hand trace: split only before 6
    assert partition_error(s, starts, "ahp", var_f=var_f) == pytest.approx(133 / 10)


def test_oracle_dpp_on_ahp_example():
    s = [1.0, 1.0, 3.0, 3.0, 4.0, 6.0, 7.0]
    for solver in ("dp", "monge", "auto"):
        starts = dp_partition(s, "ahp", var_f=8.0, solver=solver)
        assert starts.tolist() == [0, 2, 5]  # methods-data-aware.md §2.4, oracle 2
        assert partition_error(s, starts, "ahp", var_f=8.0) == pytest.approx(71 / 6)


def test_oracle_dpcube():
    assert dpcube_partition([0, 0, 0, 0, 10, 10, 10, 10], xi=2.0).tolist() == [0, 4]
    assert dpcube_partition([3.5] * 9, xi=0.0).tolist() == [0]
    assert dpcube_partition([7.0], xi=2.0).tolist() == [0]


def test_edge_single_bin_is_one_bucket_everywhere():
    kw = {"var_in": 2.0, "var_f": 8.0}
    for error in ERRORS:
        assert greedy_partition([5.0], error, **kw).tolist() == [0]
        for lengths in ("all", "pow2"):
            assert dp_partition([5.0], error, **kw, lengths=lengths).tolist() == [0]
    assert dpcube_partition([5.0], xi=2.0).tolist() == [0]


def test_edge_waf_without_initializer_is_the_ahp_finalizer():
    a1, a2 = waf_weights([1, 4, 100], var_in=laplace_variance(0.0), var_f=8.0)
    assert a1.tolist() == [0.0, 0.0, 0.0] and a2.tolist() == [1.0, 1.0, 1.0]
    y = [100.0, -3.0, 7.0, 1.0]  # ignored
    out = waf_estimate(y, [0, 1], [6.0, 9.0], var_in=math.inf, var_f=8.0)
    assert out.tolist() == [6.0, 3.0, 3.0, 3.0]


def test_edge_sorting_needs_an_initializer_share():
    for cfg in SORTAKI_CONFIGS.values():
        if cfg.sorts:
            with pytest.raises(ValidationError, match="gamma_in"):
                cfg.shares(0)


# ------------------------------------------------------------------ error formulas


@SETTINGS
@given(values, variances, variances, st.data())
def test_bucket_errors_match_direct_formulas(y, var_in, var_f, data):
    n = len(y)
    lo = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=8))
    hi = [data.draw(st.integers(a + 1, n)) for a in lo]
    tol = tolerance(y, var_in, var_f)
    for error in ERROR_CASES:
        got = bucket_errors(y, lo, hi, error, **kwargs(error, var_in, var_f))
        want = [direct_error(y, a, b, error, var_in, var_f) for a, b in zip(lo, hi, strict=True)]
        assert got == pytest.approx(want, abs=tol)
    assert ahp_error(y, lo, hi, var_f=var_f) == pytest.approx(
        bucket_errors(y, lo, hi, "ahp", var_f=var_f)
    )


def test_uee_in_epsilon_form():
    """With Laplace variances the noise term is 2/(eps_in^2 + n eps_f^2) (eq. 5)."""
    y = [3.0, 8.0, 1.0, 4.0]
    e_in, e_f = 0.7, 0.2
    got = uee_error(y, [0], [4], var_in=laplace_variance(e_in), var_f=laplace_variance(e_f))
    sse = float(np.sum((np.array(y) - 4.0) ** 2))
    assert got[0] == pytest.approx(sse - 3 * 2 / e_in**2 + 2 / (e_in**2 + 4 * e_f**2))


def _bucketed(noisy):
    reps, n = noisy.shape
    lo = np.arange(0, reps * n, n)
    return noisy.ravel(), lo, lo + n


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_uee_is_unbiased_and_ahp_plugin_is_not(noise):
    rng = np.random.default_rng(20240611)
    h = np.array([5.0, 9.0, 9.0, 14.0, 2.0])
    n, reps = h.size, 200_000
    if noise == "laplace":
        var_in = laplace_variance(0.5)  # 8
        z = rng.laplace(0.0, math.sqrt(var_in / 2), (reps, n))
    else:
        var_in = 2.25
        z = rng.normal(0.0, 1.5, (reps, n))
    var_f = 3.0
    y, lo, hi = _bucketed(h + z)
    sse_h = float(np.sum((h - h.mean()) ** 2))
    target = sse_h + var_in * var_f / (var_f + n * var_in)  # eq. (4): the WAF error
    uee = uee_error(y, lo, hi, var_in=var_in, var_f=var_f)
    se = uee.std() / math.sqrt(reps)
    assert abs(uee.mean() - target) < 4.5 * se
    assert uee.mean() == pytest.approx(target, rel=0.02)
    # The AHP plug-in on noisy values overshoots by (n-1) var_in.
    ahp = ahp_error(y, lo, hi, var_f=var_f)
    bias = ahp.mean() - (sse_h + var_f / n)
    assert abs(bias - (n - 1) * var_in) < 4.5 * ahp.std() / math.sqrt(reps)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_waf_error_matches_eq4_and_ahp_error_on_true_counts(noise):
    """Realised squared errors of the finalizers, averaged, equal their closed forms."""
    rng = np.random.default_rng(7)
    h = np.array([0.0, 4.0, 4.0, 11.0, 6.0, 1.0])
    n, reps = h.size, 100_000
    var_in, var_f = 4.0, 18.0

    def draw(var, shape):
        if noise == "laplace":
            return rng.laplace(0.0, math.sqrt(var / 2), shape)
        return rng.normal(0.0, math.sqrt(var), shape)

    y, lo, _ = _bucketed(h + draw(var_in, (reps, n)))
    totals = h.sum() + draw(var_f, reps)
    truth = np.tile(h, reps)
    sse_h = float(np.sum((h - h.mean()) ** 2))
    for vi, want in (
        (var_in, sse_h + n * float(waf_variance(n, var_in=var_in, var_f=var_f))),
        (math.inf, float(ahp_error(h, [0], [n], var_f=var_f)[0])),  # AHP finalizer
    ):
        est = waf_estimate(y, lo, totals, var_in=vi, var_f=var_f)
        err = ((est - truth) ** 2).reshape(reps, n).sum(axis=1)
        assert abs(err.mean() - want) < 4.5 * err.std() / math.sqrt(reps)
        # unbiased for the bucket mean
        means = est.reshape(reps, n)[:, 0]
        assert abs(means.mean() - h.mean()) < 4.5 * means.std() / math.sqrt(reps)


# --------------------------------------------------------------------- partitioners


@SETTINGS
@given(values, variances, variances)
def test_dpp_equals_brute_force(y, var_in, var_f):
    tol = tolerance(y, var_in, var_f)
    for error in ERROR_CASES:
        kw = kwargs(error, var_in, var_f)
        best = brute_force_minimum(y, error, var_in, var_f)
        for solver in ("dp", "auto"):
            starts = dp_partition(y, error, **kw, solver=solver)
            assert objective(y, starts, error, var_in, var_f) == pytest.approx(best, abs=tol)
        assert partition_error(y, starts, error, **kw) == pytest.approx(best, abs=tol)
        greedy = greedy_partition(y, error, **kw)
        assert objective(y, greedy, error, var_in, var_f) >= best - tol


@SETTINGS
@given(values, variances, variances)
def test_pow2_dpp_equals_brute_force_over_pow2_partitions(y, var_in, var_f):
    tol = tolerance(y, var_in, var_f)
    for error in ERROR_CASES:
        starts = dp_partition(y, error, **kwargs(error, var_in, var_f), lengths="pow2")
        sizes = np.diff([*starts, len(y)])
        assert all(is_pow2(int(k)) for k in sizes)
        best = brute_force_minimum(y, error, var_in, var_f, pow2=True)
        assert objective(y, starts, error, var_in, var_f) == pytest.approx(best, abs=tol)


@SETTINGS
@given(
    st.lists(st.integers(0, 40).map(float), min_size=1, max_size=60),
    st.booleans(),
    variances,
    variances,
)
def test_monge_solver_matches_dp_on_sorted_input(y, descending, var_in, var_f):
    ys = sorted(y, reverse=descending)
    tol = tolerance(ys, var_in, var_f)
    for error in ERRORS:
        kw = {"var_in": var_in, "var_f": var_f}
        exact = objective(ys, dp_partition(ys, error, **kw, solver="dp"), error, var_in, var_f)
        fast = objective(ys, dp_partition(ys, error, **kw, solver="monge"), error, var_in, var_f)
        assert fast == pytest.approx(exact, abs=tol)


def test_monge_solver_matches_dp_on_large_noisy_sorted_input():
    rng = np.random.default_rng(3)
    h = rng.pareto(1.2, 3000).round()
    y = np.sort(h + rng.laplace(0.0, 1 / 0.9, h.size))[::-1]
    kw = {"var_in": laplace_variance(0.9), "var_f": laplace_variance(0.1)}
    tol = tolerance(y, **kw)
    for error in ERRORS:
        a = partition_error(y, dp_partition(y, error, **kw, solver="dp"), error, **kw)
        b = partition_error(y, dp_partition(y, error, **kw, solver="monge"), error, **kw)
        assert b == pytest.approx(a, abs=tol)
        pow2 = partition_error(y, dp_partition(y, error, **kw, lengths="pow2"), error, **kw)
        greedy = partition_error(y, greedy_partition(y, error, **kw), error, **kw)
        assert a <= pow2 + tol and a <= greedy + tol


def gp_twin(y, error, var_in, var_f):
    """Algorithm 5 written out with the direct error formulas."""
    starts, a = [0], 0
    for i in range(1, len(y)):
        merged = direct_error(y, a, i + 1, error, var_in, var_f)
        apart = direct_error(y, a, i, error, var_in, var_f) + direct_error(
            y, i, i + 1, error, var_in, var_f
        )
        if not merged < apart:
            starts.append(i)
            a = i
    return starts


def dpcube_twin(y, xi):
    """The §6.1 recursion with two-pass SSE."""
    y = np.asarray(y, dtype=np.float64)

    def sse(a, b):
        return float(np.sum((y[a:b] - y[a:b].mean()) ** 2))

    def rec(a, b):
        if b - a < 2 or not sse(a, b) / (b - a) > xi:
            return [a]
        cut = min(range(a + 1, b), key=lambda k: (sse(a, k) + sse(k, b), k))
        return rec(a, cut) + rec(cut, b)

    return rec(0, len(y))


def test_gp_and_dpcube_match_twins_on_continuous_data():
    rng = np.random.default_rng(11)
    for _ in range(150):
        n = int(rng.integers(1, 40))
        y = rng.normal(0.0, 1.0, n) * rng.choice([0.3, 3.0, 30.0]) + rng.choice([0.0, 5.0], n)
        var_in, var_f = rng.choice([0.5, 2.0, 8.0]), rng.choice([0.5, 2.0, 200.0])
        for error in ERROR_CASES:
            got = greedy_partition(y, error, **kwargs(error, var_in, var_f)).tolist()
            assert got == gp_twin(y, error, var_in, var_f)
        xi = float(rng.choice([0.1, 1.0, 4.0]))
        assert dpcube_partition(y, xi=xi).tolist() == dpcube_twin(y, xi)


def test_gp_merges_only_on_strict_improvement():
    # [0, 3] with var_f = 3: merged 9/2 + 3/2 = 6 equals apart 3 + 3 (exact in floats).
    assert greedy_partition([0.0, 3.0], "ahp", var_f=3.0).tolist() == [0, 1]
    assert greedy_partition([0.0, 2.9], "ahp", var_f=3.0).tolist() == [0]


def test_dp_tie_break_prefers_the_longest_last_bucket():
    # Constant values with a zero length term: every partition costs 0.
    y = [2.0] * 6
    for solver in ("dp", "monge"):
        assert dp_partition(y, lambda k: 0.0 * k, solver=solver).tolist() == [0]
    assert dp_partition(y, lambda k: 0.0 * k, lengths="pow2").tolist() == [0, 2]


# ----------------------------------------------------------------------------- WAF


@pytest.mark.parametrize(
    ("n", "var_in", "var_f"),
    [(1, 2.0, 2.0), (10, laplace_variance(0.9), laplace_variance(0.1)), (37, 0.3, 50.0)],
)
def test_waf_weights_minimise_the_variance(n, var_in, var_f):
    def var(a):
        return a * a * var_in / n + (1 - a) ** 2 * var_f / n**2

    a1, a2 = (float(v) for v in waf_weights(n, var_in=var_in, var_f=var_f))
    assert a1 + a2 == pytest.approx(1.0)
    best = var(a1)
    grid = np.linspace(-0.5, 1.5, 4001)
    assert best <= var(grid).min() * (1 + 1e-12)
    res = minimize_scalar(var, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
    assert a1 == pytest.approx(res.x, abs=1e-6)
    assert best == pytest.approx(res.fun, rel=1e-9)
    assert float(waf_variance(n, var_in=var_in, var_f=var_f)) == pytest.approx(best, rel=1e-12)


def test_waf_limits_and_shapes():
    a1, _ = waf_weights([[1, 2], [3, 4]], var_in=2.0, var_f=math.inf)
    assert a1.shape == (2, 2) and np.all(a1 == 1.0)
    assert waf_variance([1, 4], var_in=2.0, var_f=math.inf).tolist() == [2.0, 0.5]
    assert waf_variance([2], var_in=0.0, var_f=5.0).tolist() == [0.0]
    out = waf_estimate([1.0, 3.0, 5.0], [0, 2], None, var_in=2.0, var_f=math.inf)
    assert out.tolist() == [2.0, 2.0, 5.0]


def test_waf_estimate_noise_off_returns_piecewise_constant_input():
    h = np.array([4.0, 4.0, 4.0, 9.0, 0.0, 0.0])
    starts = [0, 3, 4]
    totals = [12.0, 9.0, 0.0]
    out = waf_estimate(h, starts, totals, var_in=2.0, var_f=8.0)
    assert out.tolist() == pytest.approx(h.tolist())


def test_waf_estimate_is_the_weighted_combination():
    y = np.array([1.0, 5.0, 2.0, 2.0, 8.0])
    starts, totals = [0, 2], [10.0, 9.0]
    a1, a2 = waf_weights([2, 3], var_in=3.0, var_f=7.0)
    out = waf_estimate(y, starts, totals, var_in=3.0, var_f=7.0)
    first = a1[0] * 3.0 + a2[0] * 5.0
    second = a1[1] * 4.0 + a2[1] * 3.0
    assert out.tolist() == pytest.approx([first, first, second, second, second])


# ---------------------------------------------------------------------- Table II


def test_table_ii_shares_sum_to_one():
    assert list(SORTAKI_CONFIGS) == [
        "Identity",
        "GAHP",
        "sGAHP",
        "stGAHP",
        "sDAHP",
        "sDWF",
        "DPC",
        "sDPC",
        "DAWA",
        "sDAWA",
    ]
    for cfg in SORTAKI_CONFIGS.values():
        for g in (None, *cfg.gamma_in_values):
            shares = cfg.shares(g)
            assert all(isinstance(s, Fraction) and s >= 0 for s in shares)
            assert sum(shares) == 1
            eps = Fraction(1, 10)  # budget accounting (§7.5.5): the parts add to eps
            assert sum(s * eps for s in shares) == eps


def test_table_ii_rows():
    assert sortaki_config("Identity").shares() == (0, 0, 1)
    assert sortaki_config("dawa").shares() == (0, Fraction(1, 4), Fraction(3, 4))
    assert sortaki_config("sDAWA").shares(0.9) == (
        Fraction(9, 10),
        Fraction(1, 40),
        Fraction(3, 40),
    )
    assert sortaki_config("sDWF").shares(0.7) == (Fraction(7, 10), 0, Fraction(3, 10))
    st_gahp = sortaki_config("stGAHP")
    assert (st_gahp.thresholds, st_gahp.sorts, st_gahp.partitioner) == (True, True, "greedy")
    assert (st_gahp.error, st_gahp.finalizer) == ("ahp", "ahp")
    dwf = sortaki_config("sDWF")
    assert (dwf.partitioner, dwf.error, dwf.finalizer) == ("dp", "uee", "waf")
    assert sortaki_config("DPC").sorts is False and sortaki_config("sDPC").sorts is True
    assert [c.name for c in SORTAKI_CONFIGS.values() if c.thresholds] == ["stGAHP"]


def test_table_ii_is_read_only():
    with pytest.raises(TypeError):
        SORTAKI_CONFIGS["new"] = SORTAKI_CONFIGS["DPC"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SORTAKI_CONFIGS["DPC"].sorts = True  # type: ignore[misc]


# -------------------------------------------------------------------- bad input

VAR = {"var_in": 2.0, "var_f": 8.0}

BAD_CALLS = {
    "empty y": lambda: greedy_partition([], "ahp", var_f=1.0),
    "2-D y": lambda: dp_partition([[1.0, 2.0]], "ahp", var_f=1.0),
    "NaN in y": lambda: dp_partition([1.0, math.nan], "uee", **VAR),
    "string y": lambda: dpcube_partition("abc", xi=1.0),
    "unknown error": lambda: dp_partition([1.0], "l1", **VAR),
    "uee without var_in": lambda: greedy_partition([1.0], "uee", var_f=1.0),
    "ahp without var_f": lambda: greedy_partition([1.0], "ahp"),
    "negative var_f": lambda: ahp_error([1.0], [0], [1], var_f=-1.0),
    "NaN var_in": lambda: uee_error([1.0], [0], [1], var_in=math.nan, var_f=1.0),
    "infinite var_f in EF": lambda: uee_error([1.0], [0], [1], var_in=1.0, var_f=math.inf),
    "boolean variance": lambda: ahp_error([1.0], [0], [1], var_f=True),
    "custom with variances": lambda: greedy_partition([1.0], sqrt_term, var_f=1.0),
    "custom wrong shape": lambda: dp_partition([1.0, 2.0], lambda k: [1.0]),
    "custom non-finite": lambda: dp_partition([1.0, 2.0], lambda k: np.full(k.shape, np.nan)),
    "lo >= hi": lambda: bucket_errors([1.0, 2.0], [1], [1], "uee", **VAR),
    "hi > N": lambda: bucket_errors([1.0, 2.0], [0], [3], "uee", **VAR),
    "float bounds": lambda: bucket_errors([1.0, 2.0], [0.0], [1.0], "uee", **VAR),
    "ragged bounds": lambda: bucket_errors([1.0, 2.0], [0, 1], [2], "uee", **VAR),
    "unknown lengths": lambda: dp_partition([1.0], "ahp", var_f=1.0, lengths="odd"),
    "unknown solver": lambda: dp_partition([1.0], "ahp", var_f=1.0, solver="fast"),
    "pow2 with monge": lambda: dp_partition(
        [1.0], "ahp", var_f=1.0, lengths="pow2", solver="monge"
    ),
    "monge unsorted": lambda: dp_partition([1.0, 3.0, 2.0], "ahp", var_f=1.0, solver="monge"),
    "monge non-convex": lambda: dp_partition([1.0, 2.0, 3.0], sqrt_term, solver="monge"),
    "negative xi": lambda: dpcube_partition([1.0, 2.0], xi=-1.0),
    "zero size": lambda: waf_weights([0, 2], **VAR),
    "float sizes": lambda: waf_weights([2.0], **VAR),
    "both variances inf": lambda: waf_weights([2], var_in=math.inf, var_f=math.inf),
    "both variances 0": lambda: waf_variance([2], var_in=0.0, var_f=0.0),
    "totals wrong length": lambda: waf_estimate([1.0, 2.0], [0], [1.0, 2.0], **VAR),
    "totals missing": lambda: waf_estimate([1.0, 2.0], [0], None, **VAR),
    "totals NaN": lambda: waf_estimate([1.0, 2.0], [0], [math.nan], **VAR),
    "starts without 0": lambda: waf_estimate([1.0, 2.0], [1], [1.0], **VAR),
    "start beyond N": lambda: partition_error([1.0, 2.0], [0, 2], "uee", **VAR),
    "negative eps": lambda: laplace_variance(-1.0),
    "unknown config": lambda: sortaki_config("sDAHPX"),
    "gamma_in for Identity": lambda: sortaki_config("Identity").shares(0.5),
    "gamma_in of 1": lambda: sortaki_config("sDWF").shares(1),
    "gamma_in not a number": lambda: sortaki_config("sDWF").shares("half"),
    "gamma_in boolean": lambda: sortaki_config("sDWF").shares(True),
}


@pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_input_raises_validation_error(call):
    with pytest.raises(ValidationError):
        call()


def test_gamma_in_decimal_strings_are_read_exactly():
    g, p, f = sortaki_config("sDWF").shares("0.3")
    assert g == Fraction(3, 10) and g + p + f == 1
    assert sortaki_config("sDWF").shares(0.3) == sortaki_config("sDWF").shares("0.3")
