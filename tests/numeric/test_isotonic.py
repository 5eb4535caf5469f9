"""Isotonic regression (L2, L1, bounded), rounding and view conversions for group sizes."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression, linprog, lsq_linear, minimize

from dphist._numeric.group_views import (
    apportion,
    cumulative_round,
    cumulative_to_hist,
    cumulative_to_ranked,
    group_variances,
    hist_to_cumulative,
    hist_to_ranked,
    largest_remainder,
    ranked_to_cumulative,
    ranked_to_hist,
    round_half_up,
    size_variances,
)
from dphist._numeric.isotonic import (
    block_starts,
    bounded_isotonic,
    isotonic_l1,
    isotonic_l2,
    isotonic_l2_inplace,
    project_simplex,
)
from dphist.errors import ValidationError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values from a small grid produce many ties; integers and halves keep sums exact.
grid_values = st.sampled_from([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 2.5, 4.0, 7.0])
real_values = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
vectors = st.one_of(
    st.lists(grid_values, min_size=1, max_size=30),
    st.lists(real_values, min_size=1, max_size=30),
    st.lists(st.integers(0, 6).map(float), min_size=1, max_size=30),
)
small_vectors = st.one_of(
    st.lists(grid_values, min_size=1, max_size=12),
    st.lists(real_values, min_size=1, max_size=12),
)


# ------------------------------------------------------------------ reference twins


def minmax_l2(y, w):
    """Barlow's min-max formula: x_k = min_{j>=k} max_{i<=k} wmean(y[i..j])."""
    n = len(y)
    sw = np.concatenate(([0.0], np.cumsum(w)))
    swy = np.concatenate(([0.0], np.cumsum(np.asarray(w) * np.asarray(y))))
    out = np.empty(n)
    for k in range(n):
        out[k] = min(
            max((swy[j + 1] - swy[i]) / (sw[j + 1] - sw[i]) for i in range(k + 1))
            for j in range(k, n)
        )
    return out


def bvls_l2(y, w):
    """Exact projection by bounded-variable least squares: x = x0 + cumsum(d), d >= 0."""
    n = len(y)
    a = np.tril(np.ones((n, n))) * np.sqrt(w)[:, None]
    lb = np.r_[-np.inf, np.zeros(n - 1)]
    z = lsq_linear(a, np.sqrt(w) * np.asarray(y), bounds=(lb, np.inf), method="bvls").x
    return np.cumsum(z)


def lower_median_pav(y):
    """Textbook PAV with lower-median block values (ceil(m/2)-th smallest)."""
    blocks = []
    for v in y:
        blocks.append([v])
        while len(blocks) > 1:
            a, b = sorted(blocks[-2]), sorted(blocks[-1])
            if a[(len(a) - 1) // 2] > b[(len(b) - 1) // 2]:
                blocks[-2:] = [a + b]
            else:
                break
    out = []
    for blk in blocks:
        s = sorted(blk)
        out += [s[(len(s) - 1) // 2]] * len(s)
    return np.array(out)


def l1_lp(y, lower=-np.inf, upper=np.inf, fixed_last=None, minimise_sum_at=None):
    """L1 isotonic regression as an LP (HiGHS): min sum t, t >= |x - y|, x monotone.

    With ``minimise_sum_at=opt`` it instead minimises sum(x) among fits of objective
    <= opt (+ slack), which picks the pointwise smallest optimum.
    """
    n = len(y)
    y = np.asarray(y, dtype=float)
    eye = np.eye(n)
    rows = [np.hstack([eye, -eye]), np.hstack([-eye, -eye])]
    rhs = [y, -y]
    if n > 1:
        d = np.zeros((n - 1, n))
        d[np.arange(n - 1), np.arange(n - 1)] = 1.0
        d[np.arange(n - 1), np.arange(1, n)] = -1.0
        rows.append(np.hstack([d, np.zeros((n - 1, n))]))
        rhs.append(np.zeros(n - 1))
    free = n if fixed_last is None else n - 1
    cost_row = np.r_[np.zeros(n), np.ones(free), np.zeros(n - free)]
    if minimise_sum_at is not None:
        rows.append(cost_row[None, :])
        rhs.append([minimise_sum_at + 1e-9 * (1 + np.abs(y).sum())])
        c = np.r_[np.ones(n), np.zeros(n)]
    else:
        c = cost_row
    bounds = [(lower, upper)] * n + [(0, None)] * n
    if fixed_last is not None:
        bounds[n - 1] = (fixed_last, fixed_last)
    res = linprog(c, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs), bounds=bounds)
    assert res.status == 0
    return res.x[:n], float(cost_row @ res.x)


def l2_qp(y, lower, upper, fixed_last=None):
    """Bounded L2 isotonic regression by SLSQP."""
    n = len(y)
    y = np.asarray(y, dtype=float)
    free = n if fixed_last is None else n - 1
    mask = np.r_[np.ones(free), np.zeros(n - free)]
    d = np.diff(np.eye(n), axis=0)
    bounds = [(lower, upper)] * n
    if fixed_last is not None:
        bounds[-1] = (fixed_last, fixed_last)
    x0 = np.full(n, fixed_last if fixed_last is not None else (lower + upper) / 2)
    res = minimize(
        lambda x: float(np.sum(mask * (x - y) ** 2)),
        x0,
        jac=lambda x: 2 * mask * (x - y),
        bounds=bounds,
        constraints=[{"type": "ineq", "fun": lambda x: d @ x, "jac": lambda x: d}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return res.x, float(np.sum(mask * (res.x - y) ** 2))


def l1_cost(x, y):
    return math.fsum(np.abs(np.asarray(x) - np.asarray(y)).tolist())


# ---------------------------------------------------------------------------- L2


@SETTINGS
@given(y=vectors, data=st.data())
def test_l2_matches_minmax_formula_and_scipy(y, data):
    w = data.draw(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=len(y), max_size=len(y)),
        )
    )
    x = isotonic_l2(y, weights=w)
    ww = np.ones(len(y)) if w is None else np.asarray(w)
    scale = 1 + np.abs(y).max()
    assert np.all(np.diff(x) >= 0)
    np.testing.assert_allclose(x, minmax_l2(y, ww), rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(x, bvls_l2(y, ww), rtol=0, atol=1e-8 * scale)
    np.testing.assert_array_equal(x, isotonic_regression(y, weights=w).x)
    # weighted mean preserved, and each block's value is its weighted mean
    assert math.fsum((ww * x).tolist()) == pytest.approx(math.fsum((ww * y).tolist()), abs=1e-9)
    starts = block_starts(x)
    for lo, hi in itertools.pairwise([*starts.tolist(), len(y)]):
        seg = slice(lo, hi)
        mean = np.dot(ww[seg], np.asarray(y)[seg]) / ww[seg].sum()
        assert x[lo] == pytest.approx(mean, abs=1e-12 * scale)


@FEW
@given(y=small_vectors)
def test_l2_objective_not_above_a_generic_qp(y):
    x = isotonic_l2(y)
    ours = float(np.sum((x - y) ** 2))
    _, qp = l2_qp(y, -1e3, 1e3)
    assert ours <= qp + 1e-7 * (1 + qp)
    assert ours == pytest.approx(qp, rel=1e-6, abs=1e-7)


@SETTINGS
@given(y=vectors)
def test_l2_decreasing_is_the_mirror_image(y):
    y = np.asarray(y)
    np.testing.assert_allclose(
        isotonic_l2(y, increasing=False), -isotonic_l2(-y), atol=1e-12 * (1 + np.abs(y).max())
    )
    assert np.all(np.diff(isotonic_l2(y, increasing=False)) <= 0)


def test_l2_worked_examples():
    # spec 12.3, E5
    np.testing.assert_allclose(isotonic_l2([2, 0, 3, 1, 4]), [1, 1, 2, 2, 4])
    np.testing.assert_allclose(isotonic_l2([3, 1, 2, 5, 4]), [2, 2, 2, 4.5, 4.5])
    np.testing.assert_allclose(isotonic_l2([5, 1, 1, 1, 9, 0]), [2, 2, 2, 2, 4.5, 4.5])
    x = isotonic_l2([3, 1, 2, 5, 4])
    assert float(np.sum((x - [3, 1, 2, 5, 4]) ** 2)) == pytest.approx(2.5)
    assert isotonic_l2([]).shape == (0,)


# -------------------------------------------------------------------- in-place L2


@SETTINGS
@given(y=vectors, increasing=st.booleans())
def test_inplace_is_bit_identical_to_scipy(y, increasing):
    arr = np.array(y, dtype=np.float64)
    expected = isotonic_regression(arr, increasing=increasing).x
    out = isotonic_l2_inplace(arr, increasing=increasing)
    assert out is arr
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("kind", ["ranked", "walk", "iid", "integers", "decreasing"])
def test_inplace_identical_on_long_inputs(kind):
    rng = np.random.default_rng(7)
    n = 200_000
    y = {
        "ranked": np.sort(rng.geometric(0.2, n)) + rng.laplace(size=n),
        "walk": np.cumsum(rng.normal(size=n)),
        "iid": rng.normal(size=n),
        "integers": rng.integers(0, 4, n).astype(float),
        "decreasing": -np.arange(n, dtype=float) + rng.laplace(size=n) * 100,
    }[kind]
    for increasing in (True, False):
        expected = isotonic_regression(y, increasing=increasing).x
        np.testing.assert_array_equal(
            isotonic_l2_inplace(y.copy(), increasing=increasing), expected
        )


def test_inplace_validates_before_writing():
    y = np.array([3.0, 1.0, np.nan])
    with pytest.raises(ValidationError, match="NaN"):
        isotonic_l2_inplace(y)
    np.testing.assert_array_equal(y[:2], [3.0, 1.0])
    with pytest.raises(ValidationError, match="float64"):
        isotonic_l2_inplace(np.array([1, 2, 3]))
    with pytest.raises(ValidationError, match="contiguous"):
        isotonic_l2_inplace(np.arange(6, dtype=float)[::2])
    ro = np.arange(3, dtype=float)
    ro.flags.writeable = False
    with pytest.raises(ValidationError, match="writeable"):
        isotonic_l2_inplace(ro)
    with pytest.raises(ValidationError, match="numpy array"):
        isotonic_l2_inplace([1.0, 2.0])
    assert isotonic_l2_inplace(np.zeros(0)).shape == (0,)


# ---------------------------------------------------------------------------- L1


@SETTINGS
@given(y=vectors)
def test_l1_is_lower_median_pav(y):
    x = isotonic_l1(y)
    np.testing.assert_array_equal(x, lower_median_pav(y))
    assert np.all(np.diff(x) >= 0)
    assert set(x.tolist()) <= set(y)  # values are data points (integral on integers)
    # every run of equal values takes the lower median of its inputs
    for lo, hi in itertools.pairwise([*block_starts(x).tolist(), len(y)]):
        s = sorted(y[lo:hi])
        assert x[lo] == s[(len(s) - 1) // 2]


@FEW
@given(y=small_vectors)
def test_l1_objective_is_the_lp_optimum_and_fit_is_the_smallest(y):
    x = isotonic_l1(y)
    _, opt = l1_lp(y)
    assert l1_cost(x, y) == pytest.approx(opt, abs=1e-7 * (1 + np.abs(y).sum()))
    smallest, _ = l1_lp(y, minimise_sum_at=opt)
    np.testing.assert_allclose(x, smallest, atol=1e-6 * (1 + np.abs(y).max()))


@SETTINGS
@given(y=vectors)
def test_l1_decreasing(y):
    x = isotonic_l1(y, increasing=False)
    assert np.all(np.diff(x) <= 0)
    np.testing.assert_array_equal(x, isotonic_l1(y[::-1])[::-1])
    # the mirror problem has the same optimal objective
    assert l1_cost(x, y) == pytest.approx(l1_cost(-isotonic_l1(-np.asarray(y)), y), abs=1e-9)


def test_l1_worked_examples():
    # spec 12.3, E5: lower-median solutions and objectives
    for y, expected, obj in [
        ([2, 0, 3, 1, 4], [0, 0, 1, 1, 4], 4),
        ([3, 1, 2, 5, 4], [1, 1, 2, 4, 4], 3),
        ([5, 1, 1, 1, 9, 0], [1, 1, 1, 1, 1, 1], 13),
    ]:
        x = isotonic_l1(y)
        np.testing.assert_array_equal(x, expected)
        assert l1_cost(x, y) == obj
    # another optimum of E5 has the same objective; with m0 = 1, clipping gives [1,1,1,1,4]
    assert l1_cost([1, 1, 2, 2, 4], [2, 0, 3, 1, 4]) == 4
    np.testing.assert_array_equal(
        bounded_isotonic([2, 0, 3, 1, 4], lower=1, upper=np.inf, norm="l1"), [1, 1, 1, 1, 4]
    )


def test_l1_long_input_matches_reference_and_beats_l2_on_l1_objective():
    rng = np.random.default_rng(3)
    y = np.sort(rng.geometric(0.05, 3000)).astype(float) + rng.laplace(size=3000).round()
    x = isotonic_l1(y)
    np.testing.assert_array_equal(x, lower_median_pav(y.tolist()))
    assert l1_cost(x, y) <= l1_cost(isotonic_l2(y), y)


# ------------------------------------------------------------------ equivariances


@SETTINGS
@given(
    y=st.lists(st.integers(-20, 20).map(float), min_size=1, max_size=30),
    c=st.integers(-100, 100),
    a=st.sampled_from([0.25, 0.5, 2.0, 8.0]),
)
def test_equivariances(y, c, a):
    y = np.asarray(y)
    scale = 1 + np.abs(y).max()
    iso2 = isotonic_l2(y)
    np.testing.assert_allclose(isotonic_l2(y + c), iso2 + c, atol=1e-12 * (scale + abs(c)))
    np.testing.assert_allclose(isotonic_l2(a * y), a * iso2, atol=1e-12 * a * scale)
    iso1 = isotonic_l1(y)
    # L1 fits use comparisons only: exact, and equivariant under any increasing map
    np.testing.assert_array_equal(isotonic_l1(y + c), iso1 + c)
    np.testing.assert_array_equal(isotonic_l1(a * y), a * iso1)
    np.testing.assert_array_equal(isotonic_l1(y**3 + 2 * y), iso1**3 + 2 * iso1)


@SETTINGS
@given(y=vectors)
def test_monotone_input_is_returned(y):
    s = np.sort(y)
    np.testing.assert_array_equal(isotonic_l1(s), s)
    np.testing.assert_allclose(isotonic_l2(s), s, atol=1e-12 * (1 + np.abs(s).max()))
    np.testing.assert_allclose(isotonic_l2_inplace(s.copy()), s, atol=1e-12 * (1 + np.abs(s).max()))
    # idempotent
    once = isotonic_l2(y)
    np.testing.assert_allclose(isotonic_l2(once), once, atol=1e-12 * (1 + np.abs(once).max()))


# ------------------------------------------------------------------------- bounded


bounded_cases = st.tuples(
    small_vectors,
    st.sampled_from([-2.0, 0.0, 1.0]),
    st.sampled_from([2.0, 3.0, 10.0]),
    st.booleans(),
    st.sampled_from([0.0, 1.0, 2.0]),
)


@FEW
@given(case=bounded_cases)
def test_bounded_l1_is_feasible_and_lp_optimal(case):
    y, lo, hi, fix, last_offset = case
    last = min(lo + last_offset, hi) if fix else None
    x = bounded_isotonic(y, lower=lo, upper=hi, last=last, norm="l1")
    assert np.all(np.diff(x) >= 0) and x[0] >= lo and x[-1] <= hi
    free = len(y) - (1 if fix else 0)
    if fix:
        assert x[-1] == last
    _, opt = l1_lp(y, lo, hi, fixed_last=last)
    assert l1_cost(x[:free], y[:free]) == pytest.approx(opt, abs=1e-7 * (1 + np.abs(y).sum()))


@FEW
@given(case=bounded_cases)
def test_bounded_l2_is_feasible_and_qp_optimal(case):
    y, lo, hi, fix, last_offset = case
    last = min(lo + last_offset, hi) if fix else None
    x = bounded_isotonic(y, lower=lo, upper=hi, last=last)
    assert np.all(np.diff(x) >= 0) and x[0] >= lo and x[-1] <= hi
    free = len(y) - (1 if fix else 0)
    if fix:
        assert x[-1] == last
    qp_x, qp = l2_qp(y, lo, hi, fixed_last=last)
    ours = float(np.sum((x[:free] - np.asarray(y[:free])) ** 2))
    assert ours <= qp + 1e-7 * (1 + qp)
    np.testing.assert_allclose(x, qp_x, atol=1e-4 * (1 + np.abs(y).max()))


def test_bounded_cumulative_worked_example():
    # spec 12.3, E6: K = 3, G = 5; noisy cells 0..2, cell 3 fixed at 5
    np.testing.assert_allclose(
        bounded_isotonic([0, 4, 2, 99], lower=0, upper=5, last=5), [0, 3, 3, 5]
    )
    np.testing.assert_array_equal(
        bounded_isotonic([0, 4, 2, 99], lower=0, upper=5, last=5, norm="l1"), [0, 2, 2, 5]
    )
    np.testing.assert_array_equal(
        bounded_isotonic([-2, 1, 7, 5], lower=0, upper=5, last=5), [0, 1, 5, 5]
    )
    assert cumulative_to_hist(round_half_up([0, 3, 3, 5])).tolist() == [0, 3, 0, 2]
    assert cumulative_to_hist([0, 2, 2, 5]).tolist() == [0, 2, 0, 3]
    assert cumulative_to_hist([0, 1, 5, 5]).tolist() == [0, 1, 4, 0]


def test_bounded_validation():
    with pytest.raises(ValidationError, match="lower must be <= upper"):
        bounded_isotonic([1.0], lower=2, upper=1)
    with pytest.raises(ValidationError, match="last"):
        bounded_isotonic([1.0, 2.0], lower=0, upper=1, last=3)
    with pytest.raises(ValidationError, match="norm"):
        bounded_isotonic([1.0], lower=0, upper=1, norm="l3")
    with pytest.raises(ValidationError, match="empty"):
        bounded_isotonic([], lower=0, upper=1, last=1)
    np.testing.assert_array_equal(bounded_isotonic([7.0], lower=0, upper=9, last=4), [4.0])
    np.testing.assert_array_equal(
        bounded_isotonic([5.0, -1.0], lower=-np.inf, upper=np.inf), [2.0, 2.0]
    )


def test_input_validation():
    for bad, msg in [
        ([1.0, np.nan], "NaN"),
        ([[1.0, 2.0]], "1-D"),
        ("abc", "string"),
        ([True, False], "real numbers"),
    ]:
        with pytest.raises(ValidationError, match=msg):
            isotonic_l2(bad)
        with pytest.raises(ValidationError, match=msg):
            isotonic_l1(bad)
    with pytest.raises(ValidationError, match="weights must be > 0"):
        isotonic_l2([1.0, 2.0], weights=[1.0, 0.0])
    with pytest.raises(ValidationError, match="same length"):
        isotonic_l2([1.0, 2.0], weights=[1.0])
    with pytest.raises(ValidationError, match="increasing"):
        isotonic_l1([1.0], increasing="yes")


# ----------------------------------------------------------------------- variances


def test_variances_worked_examples():
    # E5: ranked method, eps = 1, sizes 1,1,2,2,4 -> [1, 1, 1, 1, 2]
    np.testing.assert_allclose(
        group_variances([1, 1, 2, 2, 4], 1.0, method="ranked"), [1, 1, 1, 1, 2]
    )
    np.testing.assert_allclose(
        size_variances(ranked_to_hist([1, 1, 2, 2, 4]), 1.0, method="ranked"),
        [np.nan, 1, 1, np.nan, 2],
    )
    # E6: cumulative method, H = [0, 3, 0, 2]: size-1 groups 4/3, size-3 groups 2
    np.testing.assert_allclose(
        size_variances([0, 3, 0, 2], 1.0, method="cumulative"), [np.nan, 4 / 3, np.nan, 2]
    )
    np.testing.assert_allclose(
        group_variances([1, 1, 1, 3, 3], 1.0, method="cumulative"), [4 / 3] * 3 + [2] * 2
    )
    # budget scaling: 1/eps**2
    np.testing.assert_allclose(
        group_variances([2, 2], 0.5, method="ranked"),
        4 * group_variances([2, 2], 1.0, method="ranked"),
    )


def test_variances_exact_blocks():
    # E5 fit [1,1,2,2,4] has PAV blocks {0,1}, {2,3}, {4}; rounding merges nothing here
    fit = isotonic_l2([2, 0, 3, 1, 4])
    starts = block_starts(fit)
    assert starts.tolist() == [0, 2, 4]
    np.testing.assert_allclose(
        group_variances(round_half_up(fit), 1.0, method="ranked", blocks=starts), [1, 1, 1, 1, 2]
    )
    # blocks 0..2 and 3 of a fit that rounds to one size: n(k) follows the blocks
    np.testing.assert_allclose(
        group_variances([1, 1, 1, 1], 2.0, method="ranked", blocks=[0, 3]),
        [0.5 / 3] * 3 + [0.5],
    )
    with pytest.raises(ValidationError, match="only meaningful"):
        group_variances([1, 1], 1.0, method="cumulative", blocks=[0])
    with pytest.raises(ValidationError, match="blocks must be"):
        group_variances([1, 1], 1.0, method="ranked", blocks=[1])
    with pytest.raises(ValidationError, match="sorted"):
        group_variances([2, 1], 1.0, method="ranked")
    with pytest.raises(ValidationError, match="method"):
        size_variances([1], 1.0, method="hc")
    with pytest.raises(ValidationError, match="eps"):
        size_variances([1], 0.0, method="ranked")


@SETTINGS
@given(y=vectors)
def test_block_starts_match_scipy_blocks(y):
    res = isotonic_regression(y)
    assert block_starts(res.x).tolist() == res.blocks[:-1].tolist()


# ------------------------------------------------------------------------ rounding


def test_round_half_up():
    out = round_half_up([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, 2.4999, -2.6])
    assert out.tolist() == [1, 2, 3, 0, -1, 0, 2, -3]
    assert out.dtype == np.int64
    assert int(round_half_up(3.5)) == 4
    s = np.sort(np.random.default_rng(0).normal(size=1000) * 10)
    assert np.all(np.diff(round_half_up(s)) >= 0)  # order is kept


@SETTINGS
@given(
    x=st.lists(st.floats(0, 1000, allow_nan=False), min_size=1, max_size=30),
    extra=st.floats(0, 1),
)
def test_largest_remainder_keeps_total_and_moves_less_than_one(x, extra):
    x = np.asarray(x)
    total = math.ceil(math.fsum(x.tolist()))
    gap = total - math.fsum(x.tolist())
    x = x.copy()
    x[0] += gap  # now sums to the integer total (up to rounding)
    assume(np.all(x >= 0))
    out = largest_remainder(x, total)
    assert int(out.sum()) == total
    assert np.all(np.abs(out - x) < 1)
    f = np.floor(x)
    assert np.all((out == f) | (out == f + 1))
    assert np.all(out[x == f] == f[x == f])  # integral entries never move


def test_largest_remainder_examples():
    assert largest_remainder([150, 75, 75], 300).tolist() == [150, 75, 75]
    assert largest_remainder([2.4, 1.6], 4).tolist() == [2, 2]
    assert largest_remainder([1 / 3, 1 / 3, 1 / 3], 1).tolist() == [1, 0, 0]
    assert largest_remainder([0.25, 0.75, 0.75, 0.25], 2).tolist() == [0, 1, 1, 0]
    with pytest.raises(ValidationError, match="sum to total"):
        largest_remainder([0.5, 0.6], 2)
    with pytest.raises(ValidationError, match="integer"):
        largest_remainder([0.5, 0.5], 1.5)


@SETTINGS
@given(
    w=st.lists(st.integers(0, 50), min_size=1, max_size=12).filter(lambda v: sum(v) > 0),
    frac=st.floats(0, 1),
)
def test_apportion_is_exact_lrr(w, frac):
    total = int(frac * sum(w))
    out = apportion(w, total)
    assert int(out.sum()) == total
    quota = [total * wi / sum(w) for wi in w]
    assert all(math.floor(q) <= o <= math.ceil(q) for o, q in zip(out.tolist(), quota, strict=True))
    assert np.all(out <= np.asarray(w))
    # exact remainders: the winners have remainders >= every loser's, ties to lower index
    rem = [total * wi % sum(w) for wi in w]
    up = [o > total * wi // sum(w) for o, wi in zip(out.tolist(), w, strict=True)]
    for i, j in itertools.permutations(range(len(w)), 2):
        if up[i] and not up[j]:
            assert rem[i] > rem[j] or (rem[i] == rem[j] and i < j)


def test_apportion_breaks_exact_ties_by_index():
    # quotas 4/3, 1/3, 4/3: all remainders equal 1/3; floats see 0.33333333333333326 for 4/3
    assert apportion([4, 1, 4], 3).tolist() == [2, 0, 1]
    assert largest_remainder([4 / 3, 1 / 3, 4 / 3], 3).tolist() == [1, 1, 1]  # float artefact
    assert apportion([200, 100, 100], 300).tolist() == [150, 75, 75]
    assert apportion([3, 2], 4).tolist() == [2, 2]
    assert apportion([1, 1, 1], 1).tolist() == [1, 0, 0]
    with pytest.raises(ValidationError, match="positive sum"):
        apportion([0, 0], 0)


@SETTINGS
@given(x=st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=30))
def test_cumulative_round(x):
    out = cumulative_round(x)
    assert np.all(out >= 0) and out.dtype == np.int64
    real = np.cumsum(x)
    assert np.all(np.abs(np.cumsum(out) - real) <= 0.5 + 1e-9)
    assert int(out.sum()) == int(round_half_up(real[-1]))


# --------------------------------------------------------------------- conversions


def test_views_worked_example():
    # spec 12.3, E1: sizes {3, 1, 2, 1, 3}
    h = ranked_to_hist(np.sort([3, 1, 2, 1, 3]))
    assert h.tolist() == [0, 2, 1, 2]
    assert hist_to_cumulative(h).tolist() == [0, 2, 3, 5]
    assert hist_to_ranked(h).tolist() == [1, 1, 2, 3, 3]
    assert cumulative_to_ranked([0, 2, 3, 5]).tolist() == [1, 1, 2, 3, 3]
    assert ranked_to_cumulative([1, 1, 2, 3, 3]).tolist() == [0, 2, 3, 5]
    assert cumulative_to_hist([0, 2, 3, 5]).tolist() == [0, 2, 1, 2]
    assert int(np.dot(np.arange(4), h)) == int(hist_to_ranked(h).sum()) == 10
    # E3: one more person in the size-2 group changes Hc by 1 and Hg by 1
    h2 = ranked_to_hist([1, 1, 3, 3, 3])
    assert np.abs(hist_to_cumulative(h2) - hist_to_cumulative(h)).sum() == 1
    assert ranked_to_hist([1, 1, 2, 3, 3], length=6).tolist() == [0, 2, 1, 2, 0, 0]
    assert ranked_to_cumulative([1, 1], length=4).tolist() == [0, 2, 2, 2]


@SETTINGS
@given(h=st.lists(st.integers(0, 6), min_size=0, max_size=20))
def test_views_round_trip(h):
    h = np.asarray(h, dtype=np.int64)
    c = hist_to_cumulative(h)
    r = hist_to_ranked(h)
    assert len(r) == h.sum() and np.all(np.diff(r) >= 0)
    np.testing.assert_array_equal(cumulative_to_hist(c), h)
    np.testing.assert_array_equal(cumulative_to_ranked(c), r)
    np.testing.assert_array_equal(ranked_to_hist(r, length=len(h)), h)
    np.testing.assert_array_equal(ranked_to_cumulative(r, length=len(h)), c)


def test_view_validation():
    with pytest.raises(ValidationError, match="non-negative"):
        hist_to_ranked([1, -1])
    with pytest.raises(ValidationError, match="non-decreasing"):
        cumulative_to_hist([0, 3, 2])
    with pytest.raises(ValidationError, match="whole numbers"):
        hist_to_cumulative([0.5, 1])
    with pytest.raises(ValidationError, match="sorted"):
        ranked_to_cumulative([2, 1])
    with pytest.raises(ValidationError, match="length"):
        ranked_to_hist([5], length=3)
    assert hist_to_cumulative([1.0, 2.0]).tolist() == [1, 3]
    assert ranked_to_hist([]).tolist() == []


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=8),
    st.integers(0, 12),
)
def test_simplex_projection_matches_a_qp(y, total):
    """Spec §6.1 / §12.2: closed-form projection equals an SLSQP solution."""
    y = np.array(y)
    x = project_simplex(y, total)
    assert np.all(x >= 0) and math.isclose(x.sum(), total, abs_tol=1e-9)
    if total == 0:
        assert np.all(x == 0)
        return
    res = minimize(
        lambda v: np.sum((v - y) ** 2),
        np.full(y.size, total / y.size),
        jac=lambda v: 2 * (v - y),
        bounds=[(0, None)] * y.size,
        constraints=[{"type": "eq", "fun": lambda v: v.sum() - total}],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    assert np.sum((x - y) ** 2) <= res.fun + 1e-6
    np.testing.assert_allclose(x, res.x, atol=1e-4)


def test_simplex_projection_worked_example_and_validation():
    x = project_simplex([-1.0, 3.6, 0.4, 2.0], 5)
    np.testing.assert_allclose(x, [0, 49 / 15, 1 / 15, 5 / 3])
    assert largest_remainder(x, 5).tolist() == [0, 3, 0, 2]
    with pytest.raises(ValidationError):
        project_simplex([1.0], -1)
    with pytest.raises(ValidationError):
        project_simplex([], 1)


def test_naive_variance_factor():
    np.testing.assert_allclose(size_variances([0, 2, 0, 4], 2.0, method="naive")[[1, 3]], [1, 0.5])
