"""Group-size histograms: data model, estimators, consistency, worked examples (spec §12)."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dphist import groupsize as gs
from dphist.errors import DomainError, DphistError, InputTypeError, ValidationError
from dphist.groupsize.publish import seal


def two_leaves(a, b):
    return gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy.from_fanouts([[2]]), [a, b])


# ------------------------------------------------------------------ data model


def test_e1_views_through_the_data_model():
    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy(np.array([-1])), [[3, 1, 2, 1, 3]])
    assert data.histogram(0).tolist() == [0, 2, 1, 2]
    assert data.groups.tolist() == [5]


def test_records_equal_leaf_sizes_and_histograms():
    h = gs.Hierarchy.from_fanouts([[2], [2, 1]])
    rng = np.random.default_rng(3)
    group_leaf = rng.integers(0, 3, 40)
    entity_group = rng.integers(0, 40, 150)
    a = gs.GroupSizeData.from_records(h, group_leaf, entity_group)
    size = np.bincount(entity_group, minlength=40)
    b = gs.GroupSizeData.from_leaf_sizes(h, [size[group_leaf == j] for j in range(3)])
    c = gs.GroupSizeData.from_leaf_histograms(
        h, [np.bincount(size[group_leaf == j]) for j in range(3)]
    )
    for other in (b, c):
        assert [x.tolist() for x in a.histograms()] == [x.tolist() for x in other.histograms()]
    assert a.groups.tolist() == [
        40,
        int((group_leaf < 2).sum()),
        int((group_leaf == 2).sum()),
        *np.bincount(group_leaf, minlength=3).tolist(),
    ]
    root = a.histogram(0)
    assert root.tolist() == np.bincount(size).tolist()


def test_from_levels_orders_breadth_first_and_maps_rows():
    nation = ["us"] * 4
    state = ["wa", "ca", "wa", "ca"]
    county = ["king", "la", "pierce", "sf"]
    h, pos = gs.Hierarchy.from_levels([nation, state, county])
    assert h.parent.tolist() == [-1, 0, 0, 1, 1, 2, 2]
    assert h.labels == ("us", "ca", "wa", "la", "sf", "king", "pierce")
    assert [h.labels[h.first_leaf + p] for p in pos] == county
    with pytest.raises(DomainError, match="two"):
        gs.Hierarchy.from_levels([nation, state, ["k", "k", "p", "s"], ["a", "b", "c", "d"]])
    with pytest.raises(DomainError, match="one row"):
        gs.Hierarchy.from_levels([nation, state, ["k", "k", "p", "s"]])
    with pytest.raises(DomainError, match="single root"):
        gs.Hierarchy.from_levels([["a", "b"], ["x", "y"]])


def test_bad_hierarchies_and_data_raise_dphist_errors():
    with pytest.raises(DomainError):
        gs.Hierarchy(np.array([0, 0]))  # no root
    with pytest.raises(DomainError):
        gs.Hierarchy(np.array([-1, 0, 1, 0]))  # not breadth-first
    with pytest.raises(DomainError, match="last level"):
        gs.Hierarchy(np.array([-1, 0, 0, 1]))  # leaf 2 above the last level
    h = gs.Hierarchy.from_fanouts([[2]])
    with pytest.raises(DomainError, match="non-negative"):
        gs.GroupSizeData.from_leaf_sizes(h, [[1, -2], [3]])
    with pytest.raises(DomainError, match="one array per leaf"):
        gs.GroupSizeData.from_leaf_sizes(h, [[1, 2]])
    with pytest.raises(DomainError, match="1-D"):
        gs.GroupSizeData.from_leaf_sizes(h, [[[1, 2]], [3]])
    with pytest.raises(DomainError):
        gs.GroupSizeData.from_records(h, [0, 1, 2], [0, 1])  # leaf 2 does not exist
    # an entity of a group that does not exist is a private record: dropped, not refused
    dropped = gs.GroupSizeData.from_records(h, [0, 1], [0, 5, -1])
    assert dropped.histograms()[0].tolist() == [1, 1]
    with pytest.raises(InputTypeError):
        gs.GroupSizeData.from_leaf_sizes(h, [["a"], [1]])


# ------------------------------------------------------------------ estimators


def test_e4_naive_post_processing():
    assert gs.naive_estimate(np.array([-1.0, 3.6, 0.4, 2.0]), 5).tolist() == [0, 3, 0, 2]
    assert gs.naive_estimate(np.array([1.0, -2.0]), 0).tolist() == [0, 0]


def test_e5_ranked_method():
    noisy = np.array([2, 0, 3, 1, 4])
    assert gs.ranked_estimate(noisy, norm="l2").tolist() == [0, 2, 2, 0, 1]
    assert gs.ranked_estimate(noisy, norm="l1").tolist() == [2, 2, 0, 0, 1]
    assert gs.ranked_estimate(noisy, norm="l1", m0=1).tolist() == [0, 4, 0, 0, 1]
    assert gs.emd(gs.ranked_estimate(noisy), [0, 2, 1, 2]) == 2


def test_e6_cumulative_method():
    assert gs.cumulative_estimate(np.array([0, 4, 2]), 5, k=3, norm="l2").tolist() == [0, 3, 0, 2]
    assert gs.cumulative_estimate(np.array([0, 4, 2]), 5, k=3, norm="l1").tolist() == [0, 2, 0, 3]
    assert gs.cumulative_estimate(np.array([-2, 1, 7]), 5, k=3, norm="l2").tolist() == [0, 1, 4, 0]
    # m0 = 1: cell 0 is fixed at 0 and not passed
    assert gs.cumulative_estimate(np.array([4, 2]), 5, k=3, m0=1, norm="l1").tolist() == [
        0,
        2,
        0,
        3,
    ]
    with pytest.raises(ValidationError):
        gs.cumulative_estimate(np.array([4, 2]), 5, k=3)


def test_e2_emd():
    assert gs.emd([0, 100], [0, 0, 100]) == 100
    assert gs.emd([0, 100], [0, 0, 0, 0, 0, 100]) == 400
    assert gs.emd([0, 20], [0] * 10 + [20]) == 180
    assert gs.emd([0, 2, 1, 2], [0, 2, 2, 0, 1]) == 2
    with pytest.raises(ValidationError):
        gs.emd([1, 2], [4])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_emd_equals_sorted_l1_and_is_a_metric(sizes, rnd):
    other = [rnd.randint(0, 6) for _ in sizes]
    third = [rnd.randint(0, 6) for _ in sizes]
    h = [np.bincount(s) for s in (sizes, other, third)]
    d = gs.emd(h[0], h[1])
    assert d == int(np.abs(np.sort(sizes) - np.sort(other)).sum())
    assert d == gs.emd(h[1], h[0])
    assert (d == 0) == (sorted(sizes) == sorted(other))
    assert gs.emd(h[0], h[2]) <= d + gs.emd(h[1], h[2])


# ------------------------------------------------------------------ consistency


def test_e8_two_levels_all_ranked():
    h = gs.Hierarchy.from_fanouts([[2]])
    est = [np.array([0, 2, 2, 1]), np.array([0, 3]), np.array([0, 0, 1, 1])]
    out = gs.top_down(h, est, ["ranked", "ranked"], [1.0, 1.0])
    assert [x.tolist() for x in out] == [[0, 3, 1, 1], [0, 3], [0, 0, 1, 1]]
    data = two_leaves([1, 1, 2], [1, 3])
    assert gs.node_emds(data, out).tolist() == [0, 1, 1]


def test_e7_parent_ranked_children_cumulative():
    h = gs.Hierarchy.from_fanouts([[2]])
    est = [np.array([0, 4, 2]), np.array([0, 3]), np.array([0, 2, 1])]
    out = gs.top_down(h, est, ["ranked", "cumulative"], [1.0, 1.0])
    assert [x.tolist() for x in out] == [[0, 4, 2], [0, 2, 1], [0, 2, 1]]


def test_single_level_returns_the_root_estimate():
    h = gs.Hierarchy(np.array([-1]))
    assert gs.top_down(h, [np.array([0, 2, 0])], ["ranked"], [1.0])[0].tolist() == [0, 2]


@st.composite
def datasets(draw):
    fan = draw(st.integers(1, 3))
    second = draw(st.lists(st.integers(1, 3), min_size=fan, max_size=fan))
    levels = draw(st.integers(1, 3))
    fanouts = [[fan], second][: levels - 1]
    h = gs.Hierarchy.from_fanouts(fanouts)
    leaves = [draw(st.lists(st.integers(1, 12), min_size=0, max_size=8)) for _ in range(h.n_leaves)]
    methods = draw(
        st.lists(st.sampled_from(gs.ESTIMATORS), min_size=h.n_levels, max_size=h.n_levels)
    )
    norm = draw(st.sampled_from(["l1", "l2", None]))
    m0 = draw(st.integers(0, 1))
    k = draw(st.integers(2, 15))
    return gs.GroupSizeData.from_leaf_sizes(h, leaves), methods, norm, m0, k


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets(), st.integers(0, 2**32 - 1), st.sampled_from(["weighted", "mean"]))
def test_release_invariants(case, seed, merge):
    data, methods, norm, m0, k = case
    rel = gs.publish_group_sizes(
        data, epsilon=0.7, method=methods, norm=norm, K=k, m0=m0, merge=merge, rng=seed
    )
    h = data.hierarchy
    assert len(rel.histograms) == h.n_nodes
    for r, hist in enumerate(rel.histograms):
        assert hist.dtype == np.int64 and (hist >= 0).all()
        assert int(hist.sum()) == int(data.groups[r])
        est = rel.estimates[r]
        assert int(est.sum()) == int(data.groups[r]) and (est >= 0).all()
        method = methods[h.level[r]]
        if method != "ranked":
            assert est.shape[0] <= k + 1
        assert not est[:m0].any()
    for r in range(h.first_leaf):
        kids = h.children(r)
        total = np.zeros(max(rel.histograms[c].shape[0] for c in kids), dtype=np.int64)
        for c in kids:
            total[: rel.histograms[c].shape[0]] += rel.histograms[c]
        n = max(total.shape[0], rel.histograms[r].shape[0])
        assert rel.histogram(r, n).tolist() == np.pad(total, (0, n - total.shape[0])).tolist()
    assert rel.epsilon == Fraction(7, 10)
    assert not rel.private


# ------------------------------------------------------------------ API and errors


def test_publish_validates_public_parameters():
    data = two_leaves([1, 2], [3])
    for bad in (0, -1, "x", None):
        with pytest.raises(DphistError):
            gs.publish_group_sizes(data, epsilon=bad, rng=0)
    with pytest.raises(ValidationError, match="method"):
        gs.publish_group_sizes(data, epsilon=1, method="hc", rng=0)
    with pytest.raises(ValidationError, match="one entry per level"):
        gs.publish_group_sizes(data, epsilon=1, method=["ranked"], rng=0)
    with pytest.raises(ValidationError, match="K must exceed m0"):
        gs.publish_group_sizes(data, epsilon=1, K=1, m0=1, rng=0)
    with pytest.raises(InputTypeError):
        gs.publish_group_sizes(data, epsilon=1, K=2.5, rng=0)
    with pytest.raises(ValidationError, match="at most epsilon"):
        gs.publish_group_sizes(data, epsilon=1, level_epsilon=[0.6, 0.6], rng=0)
    with pytest.raises(ValidationError, match="merge"):
        gs.publish_group_sizes(data, epsilon=1, merge="max", rng=0)
    with pytest.raises(InputTypeError):
        gs.publish_group_sizes([1, 2, 3], epsilon=1, rng=0)


@pytest.mark.parametrize("method", ["cumulative", "ranked", "naive"])
def test_groups_below_m0_are_reported_at_m0_not_refused(method):
    """Removing the only member of a one-person group makes a group of size 0 < m0:
    both neighbours release (a refusal would reveal that one entity)."""
    before = gs.publish_group_sizes(two_leaves([1, 2], [3]), epsilon=1e9, m0=1, K=5,
                                    method=method, rng=0)  # fmt: skip
    after = gs.publish_group_sizes(two_leaves([0, 2], [3]), epsilon=1e9, m0=1, K=5,
                                   method=method, rng=0)  # fmt: skip
    assert before.histograms[0].sum() == after.histograms[0].sum() == 3
    if method != "ranked":  # the measured cells cannot tell size 0 from size m0 = 1
        assert before.histograms[0].tolist() == after.histograms[0].tolist() == [0, 1, 1, 1]


def test_cumulative_cells_from_m0_do_not_see_sizes_below_it():
    from dphist._kernel.groups import _truncated

    data = two_leaves([0, 0, 2, 7], [1, 3])
    raised = two_leaves([1, 1, 2, 7], [1, 3])
    for node in range(3):
        a = np.cumsum(_truncated(seal(data), node, 5))[1:5]
        b = np.cumsum(_truncated(seal(raised), node, 5))[1:5]
        assert a.tolist() == b.tolist()


def test_pair_input_and_release_accessors():
    h = gs.Hierarchy.from_fanouts([[2]])
    rel = gs.publish_group_sizes((h, [[1, 2], [3]]), epsilon=1, method="ranked", rng=4)
    assert rel.histogram(0, 10).shape == (10,)
    assert len(rel.level(1)) == 2
    assert "NOT PRIVATE" in repr(rel)
    with pytest.raises(ValidationError):
        rel.histogram(0, 0)


def test_empty_leaves_are_fine():
    data = two_leaves([], [2, 2])
    for method in gs.ESTIMATORS:
        rel = gs.publish_group_sizes(data, epsilon=1, method=method, K=4, rng=1)
        assert [int(x.sum()) for x in rel.histograms] == [2, 0, 2]


def test_generator_is_reproducible_and_shaped():
    a = gs.housing(30_000, n_counties=60, seed=5)
    b = gs.housing(30_000, n_counties=60, seed=5)
    c = gs.housing(30_000, n_counties=60, seed=6)
    assert a.n_groups == 30_000
    assert a.hierarchy.n_leaves == 60 and a.hierarchy.n_levels == 3
    assert np.array_equal(a.counts, b.counts) and np.array_equal(a.sizes, b.sizes)
    assert not (a.counts.shape == c.counts.shape and np.array_equal(a.counts, c.counts))
    root = a.histogram(0)
    assert root[0] == 0 and root[1:7].sum() > 0.8 * a.n_groups
    assert root.shape[0] <= 10_001 and np.count_nonzero(root[100:]) > 100  # outliers
    assert gs.housing(10_000, levels=1, seed=0).hierarchy.n_nodes == 1
    assert gs.housing(10_000, levels=2, n_states=4, seed=0).hierarchy.n_leaves == 4
    with pytest.raises(ValidationError):
        gs.housing(10, n_states=52)


def test_run_demo_rows():
    rows = gs.run_demo(20_000, methods=("ranked",), K=200)
    kinds = {(r["method"], r["merge"]) for r in rows}
    assert ("omniscient", "-") in kinds and ("ranked", "weighted") in kinds
    assert all(r["emd"] >= 0 for r in rows)


def test_emd_agrees_with_the_metrics_module():
    from dphist.metrics import emd as metrics_emd

    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 5, 9)
        b = np.bincount(rng.choice(12, int(a.sum())), minlength=12)
        padded = np.concatenate((a, np.zeros(3, dtype=a.dtype)))
        assert gs.emd(a, b) == metrics_emd(padded, b)
