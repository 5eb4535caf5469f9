"""Error bars, numerics: every fast variance and cumulant against a dense oracle."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from dphist._numeric.group_sums import group_range_sums
from dphist._numeric.posterior import (
    functional_variance,
    level_factors,
    level_range_variances,
    range_fourth_cumulants,
    range_variances,
    subtree_kurtosis,
    tree_factors,
)
from dphist._numeric.tree import tree_layout
from dphist._numeric.wavelet import (
    haar_forward,
    haar_inverse,
    haar_inverse_adjoint,
    haar_size,
    privelet_bin_variance,
    privelet_range_variance,
)
from dphist.errors import ValidationError
from dphist.uncertainty import (
    ErrorModel,
    GroupNoise,
    Groups,
    HaarNoise,
    ScatteredNoise,
    SplitBound,
    Tail,
    layout_tree,
)
from dphist.uncertainty.tails import fourth_cumulant, mixed_factor, mixed_tail

RNG = np.random.default_rng(20240607)


def _layout_csr(layout):
    ptr = np.zeros(layout.n_nodes + 1, dtype=np.int64)
    np.cumsum(layout.n_children, out=ptr[1:])
    return ptr, np.arange(1, layout.n_nodes, dtype=np.int64)


def _node_matrix(layout) -> np.ndarray:
    a = np.zeros((layout.n_nodes, layout.n))
    for v in range(layout.n_nodes):
        a[v, layout.lo[v] : layout.hi[v]] = 1.0
    return a


def _gls_map(a: np.ndarray, var: np.ndarray) -> np.ndarray:
    """The dense GLS estimator ``(A' D^-1 A)^-1 A' D^-1`` over the measured rows."""
    m = np.isfinite(var)
    am, d = a[m], var[m]
    return np.linalg.solve(am.T @ (am / d[:, None]), (am / d[:, None]).T)


def _range_rows(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo, hi = np.triu_indices(n + 1, 1)
    rows = np.zeros((lo.size, n))
    for q, (a, b) in enumerate(zip(lo, hi, strict=True)):
        rows[q, a:b] = 1.0
    return lo, hi, rows


TREES = [(1, 2), (2, 2), (7, 2), (13, 3), (30, 4), (17, 16), (40, 5), (33, 2)]


@pytest.mark.parametrize(("n", "fanout"), TREES)
def test_tree_range_variance_and_cumulant_equal_dense_gls(n, fanout):
    layout = tree_layout(n, fanout)
    level_var = RNG.uniform(0.5, 3.0, layout.n_levels)
    if layout.n_levels > 2:
        level_var[1] = np.inf  # an unmeasured level (OPT-H leaves some out)
    var = np.repeat(level_var, layout.level_counts)
    ptr, kids = _layout_csr(layout)
    f = tree_factors(n, layout.lo, layout.hi, ptr, kids, var)
    gls = _gls_map(_node_matrix(layout), var)
    lo, hi, rows = _range_rows(n)
    coef = rows @ gls  # each range's weight on each measurement
    d = var[np.isfinite(var)]
    assert np.allclose(range_variances(f, lo, hi), (coef**2 * d).sum(1), rtol=1e-10)
    fast = level_factors(n, fanout, layout.spans, level_var)
    assert np.allclose(level_range_variances(fast, lo, hi), (coef**2 * d).sum(1), rtol=1e-10)
    k4 = RNG.uniform(1.0, 3.0, var.size) * np.where(np.isfinite(var), var, 0.0) ** 2
    safe = np.where(np.isfinite(var), var, 1.0)
    kappa = np.where(np.isfinite(var), k4 / safe**4, 0.0)
    got = range_fourth_cumulants(f, kappa, subtree_kurtosis(f, kappa), lo, hi)
    assert np.allclose(got, (coef**4 * k4[np.isfinite(var)]).sum(1), rtol=1e-9)
    weights = RNG.normal(size=n)
    want = float(((weights @ gls) ** 2 * d).sum())
    assert functional_variance(f, weights) == pytest.approx(want, rel=1e-10)


def test_pruned_tree_with_spread_leaves_equals_dense():
    """A cut's nodes as leaves, each spreading its total evenly (S1+H, S2+H)."""
    layout = tree_layout(27, 3)
    cut = np.zeros(layout.n_nodes, dtype=bool)
    cut[[2, 3]] = True  # two level-1 nodes kept whole; the first split down to bins
    cut[layout.level_offsets[2] : layout.level_offsets[2] + 3] = True
    leaf_nodes = np.flatnonzero(cut)
    inside = ~cut.copy()
    var = np.repeat(RNG.uniform(0.5, 2.0, layout.n_levels), layout.level_counts)
    f = layout_tree(layout, var, leaves=cut)
    # dense: GLS over the nodes above or on the cut, leaf totals spread evenly
    keep = np.array([v for v in range(layout.n_nodes) if _above_cut(layout, cut, v)])
    a = _node_matrix(layout)[keep]
    groups = np.zeros((leaf_nodes.size, layout.n))
    for g, v in enumerate(leaf_nodes):
        groups[g, layout.lo[v] : layout.hi[v]] = 1.0
    a_groups = (a @ groups.T > 0).astype(float)  # node covers group
    gls = _gls_map(a_groups, var[keep])  # group totals
    spread = groups.T / groups.sum(1)  # bins from group totals
    lo, hi, rows = _range_rows(layout.n)
    coef = rows @ spread @ gls
    assert np.allclose(range_variances(f, lo, hi), (coef**2 * var[keep]).sum(1), rtol=1e-10)
    assert inside.any()


def _above_cut(layout, cut, v) -> bool:
    u = layout.parent[v]
    while u >= 0:
        if cut[u]:
            return False
        u = layout.parent[u]
    return True


def test_group_range_sums_match_brute_force():
    labels = RNG.integers(0, 13, 90)
    sizes = np.bincount(labels, minlength=13)
    labels = np.searchsorted(np.flatnonzero(sizes), labels)  # every group non-empty
    g = labels.max() + 1
    quad, mixed, quart, bound = (RNG.uniform(0, 1, g) for _ in range(4))
    lo = RNG.integers(0, 90, 300)
    hi = np.minimum(lo + RNG.integers(0, 60, 300), 90)
    got_q, got_b = group_range_sums(labels, quad, mixed, bound, lo, hi, quart)
    s = np.bincount(labels)
    for q in range(lo.size):
        c = np.bincount(labels[lo[q] : hi[q]], minlength=g)
        want = (quad * c**2 + mixed * c * (s - c) + quart * c**4).sum()
        assert got_q[q] == pytest.approx(want, rel=1e-9, abs=1e-9)
        assert got_b[q] == pytest.approx(bound[(c > 0) & (c < s)].sum(), abs=1e-9)


def test_haar_noise_equals_the_dense_inverse():
    n = 21
    inverse = np.stack([haar_inverse(e, n) for e in np.eye(haar_size(n))], axis=1)
    noise = HaarNoise(n, 3.0)
    lo, hi, rows = _range_rows(n)
    coef = rows @ inverse
    assert np.allclose(noise.variance(lo, hi), 3.0 * (coef**2).sum(1), rtol=1e-12)
    k4 = float(fourth_cumulant(3.0, "laplace"))
    assert np.allclose(noise.fourth_cumulant(lo, hi), k4 * (coef**4).sum(1), rtol=1e-12)
    a = RNG.normal(size=n)
    assert np.allclose(haar_inverse_adjoint(a, n), a @ inverse)
    assert noise.functional_variance(a) == pytest.approx(3.0 * ((a @ inverse) ** 2).sum())


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 21, 64, 100, 257])
def test_haar_inverse_undoes_forward_and_every_bin_has_one_variance(n):
    x = RNG.integers(0, 50, n)
    coeffs = haar_forward(x)
    assert coeffs.dtype == np.int64 and coeffs.shape == (haar_size(n),)
    assert np.array_equal(haar_inverse(coeffs, n), x)  # halving integers by 2: exact
    assert np.array_equal(haar_forward(x.astype(float)), coeffs)
    lo = np.arange(n)
    per_bin = privelet_range_variance(n, lo, lo + 1, 1.5)
    assert np.all(per_bin == privelet_bin_variance(n, 1.5))


def test_group_noise_by_brute_force():
    starts = np.array([0, 1, 4, 6, 11])
    total_var = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    noise = GroupNoise(13, starts, total_var, Tail("laplace", Fraction(2)))
    spread = np.zeros((5, 13))
    for g, (a, b) in enumerate(zip(starts, [*starts[1:], 13], strict=True)):
        spread[g, a:b] = 1.0 / (b - a)
    lo, hi, rows = _range_rows(13)
    coef = rows @ spread.T
    assert np.allclose(noise.variance(lo, hi), (coef**2 * total_var).sum(1))
    k4 = fourth_cumulant(total_var, "laplace")
    assert np.allclose(noise.fourth_cumulant(lo, hi), (coef**4 * k4).sum(1))
    single = (coef > 0).sum(1) == 1
    assert np.allclose(noise.single(lo, hi), np.where(single, coef.max(1), 0.0))
    assert np.array_equal(noise.integral(lo, hi), np.all(np.isin(coef, (0.0, 1.0)), axis=1))
    scattered = ScatteredNoise(np.repeat(np.arange(5), np.diff([*starts, 13])), total_var)
    assert np.allclose(scattered.variance(lo, hi), noise.variance(lo, hi))
    assert np.allclose(scattered.fourth_cumulant(lo, hi), noise.fourth_cumulant(lo, hi))


# --------------------------------------------------------------------------- tails


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(40)])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_discrete_laplace_quantile_is_the_smallest_exact_one(scale, alpha):
    p = math.exp(-1 / float(scale))
    z = np.arange(-2000, 2001)
    pmf = p ** np.abs(z) * (1 - p) / (1 + p)
    k = Tail("laplace", scale).quantile(alpha)
    assert pmf[np.abs(z) > k].sum() <= alpha < pmf[np.abs(z) > k - 1].sum() or k == 0
    assert Tail("laplace", scale).exceed(k) == pytest.approx(pmf[np.abs(z) > k].sum(), abs=1e-12)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(3), Fraction(50)])
def test_discrete_gaussian_quantile_is_the_smallest_exact_one(sigma2):
    z = np.arange(-500, 501)
    w = np.exp(-(z**2) / (2 * float(sigma2)))
    pmf = w / w.sum()
    k = Tail("gaussian", sigma2).quantile(0.05)
    assert pmf[np.abs(z) > k].sum() <= 0.05 < pmf[np.abs(z) > k - 1].sum() or k == 0


def test_discrete_laplace_fourth_cumulant():
    for scale in (0.7, 2.0, 15.0):
        p = math.exp(-1 / scale)
        z = np.arange(-4000, 4001).astype(float)
        pmf = p ** np.abs(z) * (1 - p) / (1 + p)
        m2, m4 = (pmf * z**2).sum(), (pmf * z**4).sum()
        assert fourth_cumulant(m2, "laplace") == pytest.approx(m4 - 3 * m2**2, rel=1e-9)
    assert fourth_cumulant(5.0, "gaussian") == 0.0


def test_mixed_law_quantile_limits_and_tail():
    assert mixed_factor(0.05, 0.0) == pytest.approx(1.959964, abs=1e-6)
    # one Laplace of unit variance: P(|L| > x) = exp(-x sqrt 2)
    assert mixed_factor(0.05, 3.0) == pytest.approx(math.log(20) / math.sqrt(2), rel=1e-9)
    x = 2.0
    for r in (0.3, 0.7):  # normal + Laplace by numerical convolution
        s, b = math.sqrt(1 - r), math.sqrt(r / 2)

        def integrand(y, s=s, b=b):
            return math.exp(-abs(y) / b) / (2 * b) * norm.sf((x - y) / s)

        tail = integrate.quad(integrand, -40, 40)[0]
        assert mixed_tail(np.array([x]), np.array([3 * r * r]))[0] == pytest.approx(2 * tail)


# --------------------------------------------------------------------------- bias models


def test_groups_hull_and_cut_sums():
    labels = np.repeat(np.arange(4), [3, 1, 4, 2])
    g = Groups(labels)
    assert g.contiguous
    inner_lo, inner_hi, outer_lo, outer_hi = g.hull(np.array([1, 3, 0, 4]), np.array([8, 4, 10, 6]))
    assert inner_lo.tolist() == [3, 3, 0, 4] and inner_hi.tolist() == [8, 4, 10, 4]
    assert outer_lo.tolist() == [0, 3, 0, 4] and outer_hi.tolist() == [8, 4, 10, 8]
    mixed, bound = np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 20.0, 30.0, 40.0])
    m, b = g.cut_sums(np.array([1, 4]), np.array([5, 6]), mixed, bound)
    # [1, 5) cuts group 0 (2 of 3) and group 2 (1 of 4); [4, 6) cuts group 2 (2 of 4)
    assert m.tolist() == [1.0 * 2 * 1 + 3.0 * 1 * 3, 3.0 * 2 * 2]
    assert b.tolist() == [40.0, 30.0]
    assert not Groups(np.array([0, 1, 0])).contiguous


def test_split_bound_is_theta_plus_depth_bias_plus_noise_quantile():
    tail = Tail("laplace", Fraction(8))  # lattice units
    bound = SplitBound(Groups(np.repeat([0, 1], 4)), [1, 3], theta=4, delta=6, tail=tail, unit=2)
    p = math.exp(-1 / 8)
    q = math.ceil(math.log(0.05 * (1 + p)) / math.log(p))  # P(Z <= -q) <= 0.05
    assert p**q / (1 + p) <= 0.05 < p ** (q - 1) / (1 + p)
    assert bound.group_bound(0.05).tolist() == [(4 + 6 + q + 1) / 2, (4 + 18 + q + 1) / 2]


def test_error_model_checks_alpha_and_withholds():
    model = ErrorModel(GroupNoise(4, np.arange(4), 2.0, Tail("laplace", Fraction(1))))
    prefix = np.arange(5.0)
    for bad in (0, 1, 1.5, "0.05", True):
        with pytest.raises(ValidationError):
            model.intervals(np.array([0]), np.array([1]), prefix, bad)
    lower, upper = model.intervals(np.array([0, 2]), np.array([1, 4]), prefix, 0.05)
    k = Tail("laplace", Fraction(1)).quantile(0.05)
    assert lower[0] == max(0.0, 1 - k) and upper[0] == 1 + k
    assert model.exact and ErrorModel.without("why").withheld == "why"
