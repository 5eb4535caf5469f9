"""Kellaris et al. schemes built so far: S2, O+S2, H, HB, S2+H (ledgers, structure, recovery)."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dphist as dh
from dphist._kernel import NoisyPartition
from dphist._numeric.tree import tree_layout


def step(levels, width):
    return np.repeat(np.asarray(levels, dtype=np.int64), width)


@settings(max_examples=25, deadline=None)
@given(eps=st.floats(1e-2, 10), n=st.integers(1, 300), seed=st.integers(0, 2**32))
def test_ledgers_are_exact_and_structured(eps, n, seed):
    x = np.random.default_rng(seed).poisson(5, n)
    e = Fraction(repr(eps))
    t = tree_layout(n, 16).n_levels
    expected = {
        "S2": [("noisy_bins", e / 4), ("group_totals", e * 3 / 4)],
        "O+S2": [("noisy_bins", e * 13 / 20), ("group_totals", e * 7 / 20)],
        "H": [("tree", e / t)] * t,
        "S2+H": [("noisy_bins", e / 4)] + [("frontier_release", e * 3 / 4 / t)] * t,
        "S~": [("l1_grouping", e / 4), ("group_totals", e * 3 / 4)],
        "O+S~": [
            ("noisy_bins", e * 13 / 40),
            ("l1_grouping", e * 13 / 40),
            ("group_totals", e * 7 / 20),
        ],
        "S2+PMM": [("noisy_bins", e / 4), ("fixed_queries", e * 3 / 4)],
        "S1+H": [("tree_cut", e / 4)] + [("frontier_release", e * 3 / 4 / t)] * t,
    }
    for method, charges in expected.items():
        rel = dh.publish(x, epsilon=eps, method=method, rng=seed)
        assert [(c.block, c.epsilon) for c in rel.ledger] == charges
        assert rel.spent == e
        for c in rel.ledger:
            if c.primitive == "noisy_partition":
                continue
            # weighted strategies: exact weighted coverage of float weights, ~1
            assert c.sensitivity == 1 or abs(c.sensitivity - 1) < Fraction(1, 10**12)


def test_group_totals_publish_one_integer_noise_per_group():
    x = step([0, 30, 5, 80], 25)
    rel = dh.publish(x, epsilon=1.0, method="S2", rng=4)
    est = rel.estimate
    runs = np.flatnonzero(np.diff(est) != 0) + 1
    for grp in np.split(np.arange(x.size), runs):
        noise = est[grp].sum() - x[grp].sum()
        assert np.isclose(noise, round(noise), atol=1e-6)  # T_g + integer noise
        assert np.allclose(est[grp], est[grp][0])


@pytest.mark.parametrize("method", ["S2", "S2+H"])
def test_smoothing_recovers_a_step_function_at_high_epsilon(method):
    x = step([0, 40, 40, 7, 100, 0, 12, 12], 16)  # 128 bins, groups aligned to 16
    rel = dh.publish(x, epsilon=1e4, method=method, rng=0)
    assert np.allclose(rel.estimate, x, atol=1e-2)
    groups = np.unique(rel.estimate.round(3)).size
    assert groups <= 6  # adjacent equal levels merged


def test_ordering_is_undone_in_the_release():
    rng = np.random.default_rng(3)
    x = rng.permutation(step([0, 50, 200], 30))
    rel = dh.publish(x, epsilon=1e4, method="O+S2", rng=1)
    assert np.allclose(rel.estimate, x, atol=1e-2)
    assert np.unique(rel.estimate.round(3)).size == 3


def test_s2h_groups_are_tree_nodes():
    x = np.concatenate([np.random.default_rng(0).poisson(20, 500), np.zeros(500, dtype=int)])
    rel = dh.publish(x, epsilon=0.05, method="S2+H", rng=2)
    layout = tree_layout(1000, 16)
    nodes = set(zip(layout.lo.tolist(), layout.hi.tolist(), strict=True))
    labels = rel.groups
    assert labels is not None and np.all(np.diff(labels) >= 0)  # contiguous, in order
    sizes = np.bincount(labels)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    assert 1 < sizes.size < 1000  # a real smoothing, not all leaves or one group
    assert all((int(a), int(a + s)) in nodes for a, s in zip(starts, sizes, strict=True))
    for g in range(sizes.size):
        assert np.allclose(rel.estimate[labels == g], rel.estimate[labels == g][0])


@pytest.mark.statistical
def test_reported_tree_variance_matches_monte_carlo():
    x = np.arange(20) % 4
    runs = np.array([dh.publish(x, epsilon=1.0, method="H", rng=s).estimate for s in range(1500)])
    reported = dh.publish(x, epsilon=1.0, method="H", rng=0).noise_variance
    empirical = ((runs - x) ** 2).mean(axis=0)
    assert np.isclose(empirical.mean(), reported.mean(), rtol=0.1)
    assert reported.max() < 2 * 3**2  # t = 3 levels: consistency beats the raw 2 t^2/eps^2


def test_h_on_awkward_sizes_is_consistent_with_the_tree():
    for n in (1, 2, 17, 20, 257, 4097):
        x = np.arange(n) % 7
        rel = dh.publish(x, epsilon=1e5, method="H", rng=0)
        assert np.allclose(rel.estimate, x, atol=1e-3)


def test_hb_uses_the_branching_from_n():
    rel = dh.publish(np.ones(1442, dtype=int), epsilon=1.0, method="HB", rng=0)
    assert len(rel.ledger) == 3  # b = 38, h = 2: root, one middle level, leaves


@pytest.mark.parametrize(
    "method, params",
    [
        ("S2", {"ratio": 1.5}),
        ("S2", {"ratio": 0}),
        ("S2", {"noise_term": "bogus"}),
        ("H", {"fanout": 1}),
        ("H", {"allocation": "bogus"}),
        ("S2+H", {"ratio": -0.1}),
    ],
)
def test_bad_scheme_parameters_are_refused(method, params):
    with pytest.raises(ValueError):
        dh.publish([1, 2, 3], epsilon=1, method=method, rng=0, **params)


# ---------------------------------------------------------------- every method, random inputs


@settings(max_examples=15, deadline=None)
@given(data=st.data(), n=st.integers(1, 120), eps=st.floats(0.01, 5))
def test_every_method_on_random_inputs(data, n, eps):
    x = np.array(data.draw(st.lists(st.integers(0, 500), min_size=n, max_size=n)))
    for info in dh.list_methods():
        rel = dh.publish(x, epsilon=eps, method=info.name, rng=1, **info.example)
        assert rel.estimate.shape == (n,) and np.isfinite(rel.estimate).all()
        assert rel.spent == Fraction(repr(eps)), info.name


# ---------------------------------------------------------------- the noisy L1 partition


def view_of(x, eps, seed=0):
    from dphist._kernel import Accountant, noise_source, protect, validate_epsilon
    from dphist._kernel.view import PrivateView

    acc = Accountant(validate_epsilon(eps))
    return PrivateView(protect(x), acc.child(acc.cap, label="b"), noise_source(seed), "b"), acc


def test_l1_partition_oracle_at_negligible_noise():
    # methods framework A.2: x = (5,5,5,100), penalty 1: {1,2,3},{4}
    view, _ = view_of([5, 5, 5, 100], 1e9)
    assert view.select(NoisyPartition("all", penalty=1.0)).tolist() == [0, 3]
    view, _ = view_of([5, 5, 5, 100], 1e9)
    # ties between [0,2)[2,3) and [0,1)[1,3) go to the longer last group
    assert view.select(NoisyPartition("pow2", penalty=1.0)).tolist() == [0, 1, 3]


@settings(max_examples=30, deadline=None)
@given(x=st.lists(st.integers(0, 30), min_size=1, max_size=9), penalty=st.floats(0.1, 20))
def test_l1_partition_equals_brute_force_without_noise(x, penalty):
    from itertools import combinations

    arr = np.array(x, dtype=np.float64)
    n = arr.size

    def dev(a, b):
        seg = arr[a:b]
        return np.abs(seg - seg.mean()).sum()

    best = min(
        sum(dev(a, b) + penalty for a, b in zip((0, *cuts), (*cuts, n), strict=True))
        for k in range(n)
        for cuts in combinations(range(1, n), k)
    )
    view, _ = view_of(x, 1e9)
    starts = view.select(NoisyPartition("all", penalty=penalty))
    ends = np.append(starts[1:], n)
    got = sum(dev(a, b) + penalty for a, b in zip(starts, ends, strict=True))
    assert np.isclose(got, best, rtol=1e-6, atol=1e-4)


def test_certified_scales_follow_the_coupling_bound(monkeypatch):
    view, acc = view_of(np.arange(64) % 5, 0.5)
    scales = []
    original = view._noise.discrete_laplace

    def spy(t, s, size):
        scales.append(Fraction(t, s))
        return original(t, s, size)

    monkeypatch.setattr(view._noise, "discrete_laplace", spy)
    view.select(NoisyPartition("pow2", penalty=1.0))
    (charge,) = acc.ledger
    d_star = 2 - Fraction(2, 64)
    g = (charge.sensitivity - 2 * d_star) / 2  # the lattice step the kernel used
    assert 0 < g < Fraction(1, 2**20)
    expected = [(2 - Fraction(2, 2**k) + d_star + 2 * g) / Fraction(1, 2) / g for k in range(7)]
    assert all(s >= e for s, e in zip(scales, expected, strict=True))
    assert all(s <= e * (1 + Fraction(1, 10**9)) for s, e in zip(scales, expected, strict=True))
    assert charge.certified and charge.primitive == "noisy_partition"


def test_reference_noise_is_marked_not_private():
    x = np.arange(40) % 7
    rel = dh.publish(x, epsilon=1.0, method="S~", noise="reference")
    assert rel.private is False
    assert [c.certified for c in rel.ledger] == [False, True]
    assert "not epsilon-DP" in rel.guarantee
    secure = dh.publish(x, epsilon=1.0, method="S~")
    assert secure.private is True


@pytest.mark.parametrize("method", ["O+S1", "O+S~", "O+S2"])
def test_ordered_schemes_recover_a_shuffled_step(method):
    x = np.random.default_rng(5).permutation(step([0, 60, 300], 20))
    rel = dh.publish(x, epsilon=1e6, method=method, rng=0)
    assert np.allclose(rel.estimate, x, atol=1e-2)
    assert rel.groups is not None and rel.groups.max() < x.size


@pytest.mark.parametrize("method", ["S1+H", "S2+H"])
def test_hierarchical_smoothing_oracle(method):
    # methods framework A.8 (iii): f = 16, N = 32, x = (0 x 16, 100 x 16)
    x = step([0, 100], 16)
    rel = dh.publish(x, epsilon=1e6, method=method, rng=0)
    assert rel.groups.tolist() == [0] * 16 + [1] * 16
    assert np.allclose(rel.estimate, x, atol=1e-3)


# ---------------------------------------------------------------- fixed queries (MM, PMM)


class ScriptedView:
    """A stand-in view that answers with given noise and records the query."""

    def __init__(self, x, noise):
        self.x, self.noise, self.n = np.asarray(x), noise, len(x)

    def measure(self, query, epsilon=None):
        from dphist._kernel.view import Measurement

        self.query = query
        values = query.apply(self.x) + self.noise[: query.size]
        # the kernel's law: a weighted answer has variance 1 / weight**2 (scale 1/w)
        weights = np.array([float(w) for w in getattr(query, "weights", None) or []])
        variance = 1.0 / weights**2 if weights.size else np.ones(query.size)
        return Measurement(values, query, Fraction(1), Fraction(1), variance)


@pytest.mark.parametrize("workload", ["all", "prefix"])
def test_fixed_queries_equal_an_explicit_least_squares_solve(workload):
    from dphist.blocks import FixedQueries, State

    rng = np.random.default_rng(7)
    x = rng.integers(0, 50, 12)
    labels = np.repeat(np.arange(5), [1, 3, 2, 4, 2])
    noise = rng.integers(-5, 6, 100)
    view = ScriptedView(x, noise)
    block = FixedQueries(share=1, workload=workload)
    out = block.run(State(n=12, labels=labels), view)
    q = view.query
    weights = np.array([float(w) for w in q.weights])
    # explicit weighted strategy over groups and its least-squares solution
    starts = np.array([0, 1, 4, 6, 10])
    ends = np.array([1, 4, 6, 10, 12])
    a = np.array(
        [
            [w * (lo <= s and e <= hi) for s, e in zip(starts, ends, strict=True)]
            for lo, hi, w in zip(q.lo, q.hi, weights, strict=True)
        ]
    )
    y = weights * (q.apply(x) + noise[: q.size])
    totals = np.linalg.lstsq(a, y, rcond=None)[0]
    sizes = ends - starts
    assert np.allclose(out.estimate, (totals / sizes)[labels], atol=1e-8)
    # the weights of the queries covering each group sum to 1: sensitivity 1
    assert np.allclose(a.sum(axis=0), 1.0)


def test_privelet_and_boost_structure():
    x = np.arange(37) % 5
    rel = dh.publish(x, epsilon=1e6, method="Privelet", rng=0)
    assert np.allclose(rel.estimate, x, atol=1e-3)
    (charge,) = rel.ledger
    assert charge.sensitivity == 1 + 6  # m = ceil(log2 37) = 6
    rel = dh.publish(x, epsilon=1.0, method="Boost", rng=0)
    assert len(rel.ledger) == 7  # binary tree over 37 bins: 1 + 6 levels
