"""Top-down consistency: optimal matching, merging, back-substitution (spec §7.4-§7.6)."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from dphist._numeric.group_views import hist_to_ranked, ranked_to_hist, size_variances
from dphist._numeric.matching import (
    Matching,
    back_substitute,
    consistency_step,
    match_groups,
    merge_estimates,
    merge_matching,
    min_matching_cost,
)
from dphist.errors import ValidationError

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows(m: Matching) -> list[tuple[int, int, int, int]]:
    return list(
        zip(
            m.parent_size.tolist(),
            m.child_size.tolist(),
            m.child.tolist(),
            m.count.tolist(),
            strict=True,
        )
    )


@st.composite
def families(draw, max_groups=15, max_size=6, max_children=4):
    """A parent and children with equal group totals; sizes drawn independently."""
    g = draw(st.integers(0, max_groups))
    k = draw(st.integers(1, max_children))
    parent = draw(st.lists(st.integers(0, max_size), min_size=g, max_size=g))
    child_sizes = draw(st.lists(st.integers(0, max_size), min_size=g, max_size=g))
    owner = draw(st.lists(st.integers(0, k - 1), min_size=g, max_size=g))
    kids = [
        ranked_to_hist([s for s, o in zip(child_sizes, owner, strict=True) if o == c], max_size + 1)
        for c in range(k)
    ]
    return ranked_to_hist(parent, max_size + 1), kids


# ------------------------------------------------------------------ worked examples


def test_e7_matching_merge_and_back_substitution():
    parent, a, b = [0, 4, 2], [0, 3], [0, 2, 1]  # sizes [1,1,1,1,2,2]; [1,1,1]; [1,1,2]
    m = match_groups(parent, [a, b])
    assert rows(m) == [(1, 1, 0, 2), (1, 1, 1, 2), (2, 1, 0, 1), (2, 2, 1, 1)]
    assert m.cost == 1 == min_matching_cost(parent, [a, b])
    pv = size_variances(parent, 1.0, method="ranked")
    np.testing.assert_allclose(pv[1:], [0.5, 1.0])
    cv = [size_variances(h, 1.0, method="cumulative") for h in (a, b)]
    np.testing.assert_allclose(cv[0][1:], [4 / 3])
    np.testing.assert_allclose(cv[1][1:], [2.0, 4.0])
    # the individual merges of the spec
    s, v = merge_estimates([1, 2, 1, 2], [0.5, 1, 0.5, 1], [1, 1, 1, 2], [4 / 3, 4 / 3, 2, 4])
    np.testing.assert_allclose(s, [1, 11 / 7, 1, 2])
    np.testing.assert_allclose(v, [4 / 11, 4 / 7, 0.4, 0.8])
    new_a, new_b = merge_matching(m, pv, cv)
    assert new_a.hist.tolist() == [0, 2, 1]  # [1, 1, 2]: 1.5714 rounds to 2
    assert new_b.hist.tolist() == [0, 2, 1]
    np.testing.assert_allclose(new_a.variance[1:], [4 / 11, 4 / 7])
    np.testing.assert_allclose(new_b.variance[1:], [0.4, 0.8])
    out = back_substitute([-1, 0, 0], [None, new_a.hist, new_b.hist])
    assert out[0].tolist() == [0, 4, 2]


def test_e8_two_levels_all_ranked():
    root, a, b = [0, 2, 2, 1], [0, 3], [0, 0, 1, 1]  # [1,1,2,2,3]; [1,1,1]; [2,3]
    pv = size_variances(root, 1.0, method="ranked")
    cvs = [size_variances(h, 1.0, method="ranked") for h in (a, b)]
    np.testing.assert_allclose(pv[1:], [1, 1, 2])
    np.testing.assert_allclose(cvs[0][1:], [2 / 3])
    np.testing.assert_allclose(cvs[1][2:], [2, 2])
    m = match_groups(root, [a, b])
    assert rows(m) == [(1, 1, 0, 2), (2, 1, 0, 1), (2, 2, 1, 1), (3, 3, 1, 1)]
    s, v = merge_estimates([1, 2, 2, 3], [1, 1, 1, 2], [1, 1, 2, 3], [2 / 3, 2 / 3, 2, 2])
    np.testing.assert_allclose(s, [1, 1.4, 2, 3])
    np.testing.assert_allclose(v, [0.4, 0.4, 2 / 3, 1])
    new_a, new_b = consistency_step(root, pv, [a, b], cvs)
    assert new_a.hist.tolist() == [0, 3, 0, 0]
    assert new_b.hist.tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(new_a.variance[1], 0.4)  # mean of 0.4, 0.4, 0.4
    out = back_substitute([-1, 0, 0], [None, new_a.hist, new_b.hist])
    assert out[0].tolist() == [0, 3, 1, 1]  # the true root {1,1,1,2,3}


def test_paper_proportional_example():
    # 300 parent groups of size 1; children hold 200/100/100 groups of size 1
    m = match_groups([0, 300, 100], [[0, 200], [0, 100], [0, 100]])
    assert rows(m)[:3] == [(1, 1, 0, 150), (1, 1, 1, 75), (1, 1, 2, 75)]
    assert rows(m)[3:] == [(2, 1, 0, 50), (2, 1, 1, 25), (2, 1, 2, 25)]


def test_proportional_ties_go_to_the_lower_child():
    # quotas 4/3, 1/3, 4/3 of 3 groups: exact remainders tie, child 0 wins
    m = match_groups([0, 3, 6], [[0, 4], [0, 1], [0, 4]])
    first = [r for r in rows(m) if r[0] == 1]
    assert first == [(1, 1, 0, 2), (1, 1, 2, 1)]


# ----------------------------------------------------------------- optimality


@SETTINGS
@given(fam=families())
def test_matching_is_perfect_and_hungarian_optimal(fam):
    parent, kids = fam
    m = match_groups(parent, kids)
    # perfect: every parent group and every child group is used exactly once
    assert np.all(m.count > 0)
    np.testing.assert_array_equal(
        np.bincount(m.parent_size, weights=m.count, minlength=len(parent)), parent
    )
    for c, h in enumerate(kids):
        mine = m.child == c
        np.testing.assert_array_equal(
            np.bincount(m.child_size[mine], weights=m.count[mine], minlength=len(h)), h
        )
    # optimal: Hungarian algorithm on the expanded group-by-group cost matrix
    p_groups = hist_to_ranked(parent)
    c_groups = np.concatenate([hist_to_ranked(h) for h in kids])
    if len(p_groups):
        cost = np.abs(p_groups[:, None] - c_groups[None, :])
        r, c = linear_sum_assignment(cost)
        best = int(cost[r, c].sum())
    else:
        best = 0
    assert m.cost == best == min_matching_cost(parent, kids)
    # and it is the sorted pairing, as a multiset of (parent size, child size)
    pairs = sorted(zip(p_groups.tolist(), np.sort(c_groups).tolist(), strict=True))
    ours = sorted(itertools.chain.from_iterable([(a, b)] * k for a, b, _, k in rows(m)))
    assert ours == pairs


def test_matching_many_children_and_sizes():
    rng = np.random.default_rng(11)
    kids = [np.bincount(rng.geometric(0.01, rng.integers(1, 3000)), minlength=1) for _ in range(28)]
    total = sum(int(h.sum()) for h in kids)
    parent = np.bincount(rng.geometric(0.012, total))
    m = match_groups(parent, kids)
    assert m.cost == min_matching_cost(parent, kids)
    assert int(m.count.sum()) == total
    for c, h in enumerate(kids):
        assert int(m.count[m.child == c].sum()) == int(h.sum())


def test_matching_validation():
    with pytest.raises(ValidationError, match="totals must agree"):
        match_groups([0, 3], [[0, 1], [0, 1]])
    with pytest.raises(ValidationError, match="non-negative"):
        match_groups([0, 1], [[1, -1, 1]])
    with pytest.raises(ValidationError, match="at least one"):
        match_groups([0, 1], [])
    with pytest.raises(ValidationError, match="sequence"):
        match_groups([0, 1], 5)
    empty = match_groups([0, 0], [[0], [0, 0, 0]])
    assert len(empty.count) == 0 and empty.cost == 0


# ------------------------------------------------------------------------ merging


finite = st.floats(0, 1000, allow_nan=False)
var = st.floats(1e-3, 1e3, allow_nan=False)


@SETTINGS
@given(sp=finite, vp=var, sc=finite, vc=var)
def test_merge_properties(sp, vp, sc, vc):
    s, v = merge_estimates(sp, vp, sc, vc)
    tol = 1e-9 * (1 + max(sp, sc))
    assert min(sp, sc) - tol <= s <= max(sp, sc) + tol
    assert v <= min(vp, vc) * (1 + 1e-12)
    s_eq, v_eq = merge_estimates(sp, vp, sc, vp)
    assert s_eq == pytest.approx((sp + sc) / 2, abs=tol)
    assert v_eq == pytest.approx(vp / 2)
    s_mean, v_mean = merge_estimates(sp, vp, sc, vc, rule="mean")
    assert s_mean == pytest.approx((sp + sc) / 2)
    assert v_mean == pytest.approx((vp + vc) / 4)


@SETTINGS
@given(
    np_=st.integers(1, 50),
    nc=st.integers(1, 50),
    sp=st.integers(0, 20),
    sc=st.integers(0, 20),
    eps=st.sampled_from([0.1, 0.5, 1.0, 2.0]),
    method=st.sampled_from(["ranked", "cumulative"]),
)
def test_same_method_merge_is_count_weighted_mean(np_, nc, sp, sc, eps, method):
    # variances c/(eps^2 n) on both sides: inverse-variance weights are the counts
    hp = np.zeros(21, dtype=int)
    hp[sp] = np_
    hc = np.zeros(21, dtype=int)
    hc[sc] = nc
    vp = size_variances(hp, eps, method=method)[sp]
    vc = size_variances(hc, eps, method=method)[sc]
    s, _ = merge_estimates(sp, vp, sc, vc)
    assert s == pytest.approx((np_ * sp + nc * sc) / (np_ + nc))


@SETTINGS
@given(fam=families(), eps=st.sampled_from([0.5, 1.0]), rule=st.sampled_from(["weighted", "mean"]))
def test_merge_matching_keeps_totals_and_pools_variances(fam, eps, rule):
    parent, kids = fam
    pv = size_variances(parent, eps, method="ranked")
    cvs = [size_variances(h, eps, method="cumulative") for h in kids]
    m = match_groups(parent, kids)
    out = consistency_step(parent, pv, kids, cvs, rule=rule)
    assert len({len(o.hist) for o in out}) == 1
    for c, (h, o) in enumerate(zip(kids, out, strict=True)):
        assert int(o.hist.sum()) == int(h.sum())
        assert np.all(np.isnan(o.variance) == (o.hist == 0))
        # recompute the per-size mean of merged variances directly
        mine = m.child == c
        s, v = merge_estimates(
            m.parent_size[mine],
            pv[m.parent_size[mine]],
            m.child_size[mine],
            cvs[c][m.child_size[mine]],
            rule=rule,
        )
        new = np.floor(s + 0.5).astype(int)
        for size in np.flatnonzero(o.hist):
            at = new == size
            expected = np.dot(m.count[mine][at], v[at]) / m.count[mine][at].sum()
            assert o.variance[size] == pytest.approx(expected)
        # merged sizes stay between the smallest and largest size involved
        if h.sum():
            lo = min(np.flatnonzero(h).min(), np.flatnonzero(parent).min())
            hi = max(np.flatnonzero(h).max(), np.flatnonzero(parent).max())
            assert lo <= np.flatnonzero(o.hist).min() and np.flatnonzero(o.hist).max() <= hi


def test_merge_validation():
    with pytest.raises(ValidationError, match="variances"):
        merge_estimates(1, 0.0, 1, 1.0)
    with pytest.raises(ValidationError, match="rule"):
        merge_estimates(1, 1.0, 1, 1.0, rule="parent")
    m = match_groups([0, 2], [[0, 1], [0, 1]])
    with pytest.raises(ValidationError, match="child_vars"):
        merge_matching(m, [np.nan, 1.0], [[np.nan, 1.0]])
    with pytest.raises(ValidationError, match="finite and > 0"):
        merge_matching(m, [np.nan, np.nan], [[np.nan, 1.0], [np.nan, 1.0]])
    with pytest.raises(ValidationError, match="shorter"):
        merge_matching(m, [1.0], [[np.nan, 1.0], [np.nan, 1.0]])
    with pytest.raises(ValidationError, match="match_groups"):
        merge_matching((1, 2), [1.0], [[1.0]])


# ---------------------------------------------------------------- back-substitution


@SETTINGS
@given(data=st.data(), m=st.integers(1, 12))
def test_back_substitution_is_consistent(data, m):
    parent = [-1] + [data.draw(st.integers(0, j - 1)) for j in range(1, m)]
    is_leaf = np.ones(m, dtype=bool)
    is_leaf[parent[1:]] = False
    leaves = [
        data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=6)) if is_leaf[j] else None
        for j in range(m)
    ]
    out = back_substitute(parent, leaves)
    assert len({len(h) for h in out}) == 1
    for j in range(m):
        kids = [c for c in range(1, m) if parent[c] == j]
        if kids:
            np.testing.assert_array_equal(out[j], np.sum([out[c] for c in kids], axis=0))
        else:
            np.testing.assert_array_equal(out[j][: len(leaves[j])], leaves[j])
            assert not out[j][len(leaves[j]) :].any()
        assert np.all(out[j] >= 0) and out[j].dtype == np.int64
    assert int(out[0].sum()) == sum(sum(leaves[j]) for j in range(m) if is_leaf[j])


def test_back_substitution_validation():
    with pytest.raises(ValidationError, match="parent"):
        back_substitute([0, 0], [[1], [1]])
    with pytest.raises(ValidationError, match="parent"):
        back_substitute([-1, 1], [[1], [1]])
    with pytest.raises(ValidationError, match="one entry per node"):
        back_substitute([-1, 0], [[1]])
    with pytest.raises(ValidationError, match="no histogram"):
        back_substitute([-1, 0, 0], [None, [1], None])
    assert [h.tolist() for h in back_substitute([-1], [[0, 2]])] == [[0, 2]]
