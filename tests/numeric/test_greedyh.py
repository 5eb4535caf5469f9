"""Tests of dphist._numeric.greedyh against explicit matrices and published values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._numeric.greedyh import (
    GreedyHStrategy,
    ImplicitGram,
    estimate_totals,
    greedy_h,
    implicit_gram,
    reduced_gram,
    sizes_from_starts,
    strategy_answers,
    total_variances,
)
from dphist.errors import InputTypeError, ValidationError

# --------------------------------------------------------------------------- brute force


def explicit_workload(n, workload):
    """Every query of the workload as a 0/1 row over the n bins."""
    if workload == "all":
        bounds = [(lo, hi) for lo in range(n) for hi in range(lo + 1, n + 1)]
    else:
        bounds = [(0, hi) for hi in range(1, n + 1)]
    w = np.zeros((len(bounds), n))
    for row, (lo, hi) in enumerate(bounds):
        w[row, lo:hi] = 1.0
    return w


def explicit_reduced_gram(sizes, workload):
    """W_red^T W_red with W_red[q, g] = |q ∩ g| / |g|, built from the full workload."""
    sizes = np.asarray(sizes)
    n = int(sizes.sum())
    starts = np.concatenate(([0], np.cumsum(sizes)))
    expand = np.zeros((n, sizes.size))
    for g in range(sizes.size):
        expand[starts[g] : starts[g + 1], g] = 1.0 / sizes[g]
    w_red = explicit_workload(n, workload) @ expand
    return w_red.T @ w_red


def strategy_matrix(strategy):
    """The weighted strategy matrix A over groups, one row per query."""
    a = np.zeros((strategy.n_queries, strategy.n_groups))
    for k in range(strategy.n_queries):
        a[k, strategy.lo[k] : strategy.hi[k]] = strategy.weight[k]
    return a


def random_gram(rng, size, duplicate=0.0):
    """A Gram matrix W^T W of a random small-integer workload.

    With probability ``duplicate`` a column of W repeats its left neighbour, so
    some tree nodes can have constant rows in M.
    """
    w = rng.integers(0, 3, size=(size + 3, size)).astype(float)
    for j in range(1, size):
        if rng.random() < duplicate:
            w[:, j] = w[:, j - 1]
    return w.T @ w


def dense_greedy_h(m, branch=2, grid=100, objective="reference"):
    """Oracle: GreedyH on a dense M that also builds the strategy's inverse Gram matrix.

    A plain restatement of the algorithm (the form used before the estimator moved to
    least squares on the tree): bottom-up, each node's block of ``inv`` is updated by
    Sherman-Morrison, ``inv <- p^-2 (inv - (1-p)^2 / (p^2 + k (1-p)^2) u u^T)``.
    Returns the queries ``[(lo, hi, weight)]`` with weight > 0 in pre-order, ``inv`` and
    the root's error. ``O(|G|^2)`` memory: for tests only.
    """
    size = m.shape[0]
    trace = objective == "trace"
    breaks = np.concatenate(([0], np.cumsum(np.any(m[:, 1:] != m[:, :-1], axis=0))))
    nodes, children = [], []
    stack = [(0, size, 0, -1)]
    while stack:
        lo, hi, depth, parent = stack.pop()
        if parent >= 0:
            children[parent].append(len(nodes))
        split = hi - lo > 1 and breaks[hi - 1] != breaks[lo]
        nodes.append((lo, hi, depth, split))
        children.append([])
        if split:
            n = hi - lo
            if n <= branch:
                bounds = list(range(lo, hi + 1))
            else:
                step, rem = divmod(n, branch)
                parts = [step] * (branch - rem) + [step + 1] * rem
                bounds = [lo, *(lo + np.cumsum(parts)).tolist()]
            for a, b in reversed(list(itertools.pairwise(bounds))):
                stack.append((a, b, depth + 1, len(nodes) - 1))

    inv = np.zeros((size, size))
    u = np.empty(size)
    kept = np.ones(len(nodes))
    steps = np.arange(grid, dtype=float)
    a_coef = (grid - steps) ** 2
    done = {}
    for index in reversed(range(len(nodes))):
        lo, hi, depth, split = nodes[index]
        n = hi - lo
        if not split:
            u[lo:hi] = 1.0 / n
            inv[lo:hi, lo:hi] = 1.0 / (n * n)
            col = m[lo].copy()
            err = m[lo:hi, lo:hi].sum() / (n * n) if trace else col @ col
            done[index] = (err, 1.0, col)
            continue
        parts = [done.pop(c) for c in children[index]]
        e = sum(part[0] for part in parts)
        k = sum(part[1] for part in parts)
        v = sum(part[2] for part in parts)
        uc = u[lo:hi].copy()
        if trace:
            mm = m1 = uc @ v[lo:hi]
            delta = 1.0
        else:
            mm, m1 = v @ v, sum(part[2] @ part[2] for part in parts)
            delta = branch ** (-depth / 2)
        b_coef = steps**2 * delta
        scores = (e - ((mm - m1) * delta + m1) * b_coef / (a_coef + b_coef * k)) / a_coef
        best = int(np.argmin(scores))
        p = 1.0 - best / grid
        kept[index] = p
        if best:
            q2 = (1.0 - p) ** 2
            block = inv[lo:hi, lo:hi] - q2 / (p * p + k * q2) * np.outer(uc, uc)
            inv[lo:hi, lo:hi] = block / (p * p)
            scale = 1.0 / (p * p + k * q2)
            u[lo:hi] *= scale
            v = v * scale
            k *= scale
        done[index] = (scores[best] * grid * grid, k, v)

    share = np.ones(len(nodes))
    queries = []
    for index, (lo, hi, _, split) in enumerate(nodes):
        weight = share[index] * (1.0 - kept[index]) if split else share[index]
        if weight > 0:
            queries.append((lo, hi, weight))
        for c in children[index]:
            share[c] = share[index] * kept[index]
    return queries, inv, done[0][0]


def assert_same_strategy(strategy, queries, error, rtol=1e-10):
    """``strategy`` has the oracle's queries and weights, and its error."""
    assert [(int(a), int(b)) for a, b in zip(strategy.lo, strategy.hi, strict=True)] == [
        (a, b) for a, b, _ in queries
    ]
    np.testing.assert_allclose(strategy.weight, [w for _, _, w in queries], rtol=1e-12, atol=0)
    assert strategy.expected_error == pytest.approx(error, rel=rtol)


def aty(strategy, y):
    """A^T y of the weighted strategy matrix."""
    return strategy_matrix(strategy).T @ y


def node_weights(strategy):
    """{(lo, hi): weight} of the strategy's queries."""
    return {
        (int(lo), int(hi)): float(w)
        for lo, hi, w in zip(strategy.lo, strategy.hi, strategy.weight, strict=True)
    }


group_sizes = st.lists(st.integers(1, 6), min_size=1, max_size=40).filter(lambda s: sum(s) <= 50)


# --------------------------------------------------------------------------- reduced Gram


@settings(max_examples=60, deadline=None)
@given(sizes=group_sizes, workload=st.sampled_from(["all", "prefix"]))
def test_closed_form_gram_equals_materialised(sizes, workload):
    got = reduced_gram(sizes, workload)
    want = explicit_reduced_gram(sizes, workload)
    assert got.shape == (len(sizes), len(sizes))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert np.array_equal(got, got.T)


def test_gram_on_single_bins_is_the_bin_level_closed_form():
    n = 5
    i = np.arange(1, n + 1)
    all_ranges = np.minimum.outer(i, i) * (n + 1 - np.maximum.outer(i, i))
    prefix = n + 1 - np.maximum.outer(i, i)
    np.testing.assert_array_equal(reduced_gram([1] * n, "all"), all_ranges)
    np.testing.assert_array_equal(reduced_gram([1] * n, "prefix"), prefix)
    # spec check values: N = 9, one group [2, 6] (0-based), block sums 105 and 425
    sizes = [2, 5, 2]
    assert reduced_gram(sizes, "prefix")[1, 1] * 25 == pytest.approx(105, rel=1e-15)
    assert reduced_gram(sizes, "all")[1, 1] * 25 == pytest.approx(425, rel=1e-15)


def test_gram_stays_accurate_on_a_large_domain():
    """N = 32768: sampled blocks against exact integer sums over their bins."""
    rng = np.random.default_rng(7)
    n = 32_768
    cuts = np.sort(rng.choice(np.arange(1, n), size=999, replace=False))
    sizes = np.diff(np.concatenate(([0], cuts, [n])))
    starts = np.concatenate(([0], np.cumsum(sizes)))
    small = np.flatnonzero(sizes <= 40)
    for workload in ("all", "prefix"):
        m = reduced_gram(sizes, workload)
        for _ in range(25):
            g, h = rng.choice(small, size=2)
            bi = np.arange(starts[g] + 1, starts[g + 1] + 1, dtype=np.int64)
            bj = np.arange(starts[h] + 1, starts[h + 1] + 1, dtype=np.int64)
            hi = np.maximum.outer(bi, bj)
            block = (n + 1 - hi) * (np.minimum.outer(bi, bj) if workload == "all" else 1)
            exact = int(block.sum()) / (bi.size * bj.size)
            assert m[g, h] == pytest.approx(exact, rel=1e-13)


def test_sizes_from_starts():
    np.testing.assert_array_equal(sizes_from_starts([0, 3, 4, 9], 10), [3, 1, 5, 1])
    np.testing.assert_array_equal(sizes_from_starts([0], 7), [7])
    for starts in ([1, 3], [0, 3, 3], [0, 5, 2], [0, 10]):
        with pytest.raises(ValidationError):
            sizes_from_starts(starts, 10)


# --------------------------------------------------------------------------- the strategy


@pytest.mark.parametrize("workload", ["all", "prefix"])
@pytest.mark.parametrize("objective", ["reference", "trace"])
def test_path_weights_sum_to_one(workload, objective):
    rng = np.random.default_rng(3)
    for size in (2, 3, 5, 17, 64, 129):
        sizes = rng.integers(1, 9, size=size)
        strategy = greedy_h(reduced_gram(sizes, workload), objective=objective)
        assert np.all(strategy.weight > 0)
        # column g of A sums the weights of the queries on g's root-to-leaf path
        np.testing.assert_allclose(strategy_matrix(strategy).sum(axis=0), 1.0, rtol=0, atol=1e-12)
        # every group has its own leaf query (leaf weights are products of p >= 1/grid)
        leaves = {int(lo) for lo, hi in zip(strategy.lo, strategy.hi, strict=True) if hi - lo == 1}
        assert leaves == set(range(size))


@pytest.mark.parametrize("branch", [2, 3, 4])
def test_path_weights_with_other_branchings_and_whole_nodes(branch):
    rng = np.random.default_rng(branch)
    for size in (4, 9, 30):
        strategy = greedy_h(random_gram(rng, size, duplicate=0.6), branch=branch)
        np.testing.assert_allclose(strategy_matrix(strategy).sum(axis=0), 1.0, atol=1e-12)


@pytest.mark.parametrize("objective", ["reference", "trace"])
def test_single_group(objective):
    strategy = greedy_h([[7.5]], objective=objective)
    np.testing.assert_array_equal(strategy.lo, [0])
    np.testing.assert_array_equal(strategy.hi, [1])
    np.testing.assert_array_equal(strategy.weight, [1.0])
    np.testing.assert_array_equal(total_variances(strategy), [1.0])
    assert strategy.expected_error == (7.5 if objective == "trace" else 7.5**2)
    # T_hat = T + noise
    assert estimate_totals(strategy, [42.25]) == pytest.approx([42.25])
    np.testing.assert_array_equal(strategy_answers(strategy, [3.0]), [3.0])


def inverse_cases():
    rng = np.random.default_rng(11)
    for size in (2, 3, 7, 16, 25, 40):
        for workload in ("all", "prefix"):
            yield reduced_gram(rng.integers(1, 6, size=size), workload), 2
        yield random_gram(rng, size), 3


@pytest.mark.parametrize("objective", ["reference", "trace"])
def test_estimate_is_least_squares_and_variances_the_inverse_diagonal(objective):
    rng = np.random.default_rng(5)
    for m, branch in inverse_cases():
        strategy = greedy_h(m, branch=branch, objective=objective)
        a = strategy_matrix(strategy)
        assert np.linalg.matrix_rank(a) == m.shape[0]
        want = np.linalg.inv(a.T @ a)
        queries, inv, error = dense_greedy_h(m, branch=branch, objective=objective)
        assert_same_strategy(strategy, queries, error)
        np.testing.assert_allclose(inv, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
        np.testing.assert_allclose(total_variances(strategy), np.diag(want), rtol=1e-9, atol=0)
        y = rng.normal(scale=10.0, size=strategy.n_queries)
        lstsq = np.linalg.lstsq(a, y, rcond=None)[0]
        np.testing.assert_allclose(estimate_totals(strategy, y), lstsq, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(estimate_totals(strategy, y), inv @ aty(strategy, y), atol=1e-9)


def test_nodes_with_constant_rows_are_kept_whole():
    # columns 1, 2 and 4, 5 of W coincide: the tree [0,7) -> [0,3) [3,7) -> ... reaches
    # the node [1,3), whose rows of M are constant, and keeps it as one query
    w = np.array(
        [
            [1, 0, 0, 2, 1, 1, 0],
            [0, 1, 1, 1, 0, 0, 2],
            [1, 1, 1, 0, 2, 2, 1],
            [2, 0, 0, 1, 1, 1, 0],
            [0, 3, 3, 0, 1, 1, 1],
        ],
        dtype=float,
    )
    m = w.T @ w
    strategy = greedy_h(m)
    weights = node_weights(strategy)
    assert weights[(1, 3)] == 1.0
    assert (1, 2) not in weights and (2, 3) not in weights
    a = strategy_matrix(strategy)
    pinv = np.linalg.pinv(a.T @ a)
    np.testing.assert_allclose(pinv[1:3, 1:3], 0.25)
    np.testing.assert_allclose(dense_greedy_h(m)[1], pinv, atol=1e-12)
    np.testing.assert_allclose(total_variances(strategy), np.diag(pinv), atol=1e-12)
    # the estimate is the minimum-norm least-squares one: the node's total split evenly
    totals = np.array([3.0, 8.0, 1.0, 0.0, 14.0, 6.0, 2.0])
    got = estimate_totals(strategy, strategy_answers(strategy, totals))
    np.testing.assert_allclose(got, [3.0, 4.5, 4.5, 0.0, 14.0, 6.0, 2.0], atol=1e-12)
    y = np.random.default_rng(0).normal(size=strategy.n_queries)
    np.testing.assert_allclose(
        estimate_totals(strategy, y), np.linalg.lstsq(a, y, rcond=None)[0], atol=1e-12
    )
    # a matrix whose rows are constant everywhere gives the single total query
    whole = greedy_h(np.ones((6, 6)))
    assert node_weights(whole) == {(0, 6): 1.0}
    np.testing.assert_allclose(total_variances(whole), 1.0 / 36)


@settings(max_examples=40, deadline=None)
@given(
    sizes=group_sizes,
    workload=st.sampled_from(["all", "prefix"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_noiseless_answers_give_back_the_totals(sizes, workload, seed):
    totals = np.random.default_rng(seed).integers(0, 500, size=len(sizes)).astype(float)
    strategy = greedy_h(reduced_gram(sizes, workload))
    answers = strategy_answers(strategy, totals)
    np.testing.assert_allclose(answers, strategy_matrix(strategy) @ totals, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(estimate_totals(strategy, answers), totals, rtol=1e-9, atol=1e-8)


def test_trace_objective_error_is_the_workload_variance():
    """objective="trace": expected_error = trace(M Inv) = sum of query variances / noise var."""
    rng = np.random.default_rng(21)
    for size in (2, 5, 13, 33):
        for m in (
            reduced_gram(rng.integers(1, 5, size=size), "all"),
            reduced_gram(rng.integers(1, 5, size=size), "prefix"),
            random_gram(rng, size, duplicate=0.4),
        ):
            strategy = greedy_h(m, objective="trace")
            a = strategy_matrix(strategy)
            variance = np.trace(m @ np.linalg.pinv(a.T @ a))
            assert strategy.expected_error == pytest.approx(variance, rel=1e-9)


def test_reference_error_is_the_trace_of_m_squared_times_inv_without_decay():
    """objective="reference" scores M as if it were the workload: tr(M^T M Inv).

    The identity is exact while no node below the root is split (depth factor 1):
    |G| = 2, or a root whose children are all single cells (|G| <= branch).
    """
    rng = np.random.default_rng(8)
    cases = [(reduced_gram(rng.integers(1, 7, size=2), wl), 2) for wl in ("all", "prefix")]
    cases += [(random_gram(rng, 4), 4), (random_gram(rng, 3), 5), (random_gram(rng, 2), 2)]
    for m, branch in cases:
        strategy = greedy_h(m, branch=branch)
        inv = np.linalg.inv(strategy_matrix(strategy).T @ strategy_matrix(strategy))
        want = np.trace(m.T @ m @ inv)
        assert strategy.expected_error == pytest.approx(want, rel=1e-12)
    # deeper nodes are damped, so the reference score is then no longer that trace
    m = reduced_gram([1] * 64, "prefix")
    strategy = greedy_h(m)
    inv = np.linalg.inv(strategy_matrix(strategy).T @ strategy_matrix(strategy))
    assert strategy.expected_error != pytest.approx(np.trace(m @ m @ inv), rel=1e-3)


def test_trace_objective_picks_the_best_grid_share_for_a_single_node():
    """With one internal node (the root over single cells) the trace objective's choice
    minimises the true variance tr(M S(p)) over the grid p = 1, 0.99, ..., 0.01."""
    rng = np.random.default_rng(13)
    shares = 1.0 - np.arange(100) / 100
    for size in (2, 3, 4):
        for m in (random_gram(rng, size), reduced_gram(rng.integers(1, 9, size=size), "all")):
            strategy = greedy_h(m, branch=4, objective="trace")
            # A = [(1-p) 1^T ; p I]  =>  A^T A = p^2 I + (1-p)^2 1 1^T
            variances = [
                np.trace(m @ np.linalg.inv(p * p * np.eye(size) + (1 - p) ** 2)) for p in shares
            ]
            best = int(np.argmin(variances))
            assert strategy.expected_error == pytest.approx(variances[best], rel=1e-10)
            assert strategy.weight[0] == pytest.approx(1 - shares[best]) or best == 0


# --------------------------------------------------------------------------- oracles


def test_method_spec_oracles_on_single_bins():
    """Weights the method specification lists for GreedyH on single-bin groups."""
    eye = node_weights(greedy_h(np.eye(8)))
    assert eye == {(g, g + 1): 1.0 for g in range(8)}
    assert node_weights(greedy_h(np.ones((8, 8)))) == {(0, 8): 1.0}

    def internal(weights):
        return {k: round(w, 10) for k, w in weights.items() if k[1] - k[0] > 1}

    def leaves(weights, n):
        return [round(weights[(g, g + 1)], 10) for g in range(n)]

    for workload, n, root in (("prefix", 8, 0.42), ("prefix", 16, 0.36), ("all", 16, 0.34)):
        w = node_weights(greedy_h(reduced_gram([1] * n, workload)))
        assert internal(w) == {(0, n): root}
        assert leaves(w, n) == [round(1 - root, 10)] * n
    w = node_weights(greedy_h(reduced_gram([1] * 8, "all")))
    assert internal(w) == {} and leaves(w, 8) == [1.0] * 8
    # prefix 64: root p = 1, children p = 0.65 and 0.73
    w = node_weights(greedy_h(reduced_gram([1] * 64, "prefix")))
    assert internal(w) == {(0, 32): 0.35, (32, 64): 0.27}
    assert leaves(w, 64) == [0.65] * 32 + [0.73] * 32


# Values printed by dpcomp_core's greedyH (dpcomp_core/algorithm/dawa/greedyH.py, branch 2,
# grid 100) on the same inputs: its Gram matrix was formed from the explicit workload
# (a query's weight on a group = mean over the group's bins), its queries answered as
# weight * (sum of the totals) + noise with the noise vector below, and
# T_hat = inv @ A^T y. Listed: the root error, the queries with weight > 0 as
# half-open group ranges, their weights and T_hat.
# fmt: off
REFERENCE_CASES = [
    pytest.param(
        "prefix",
        [5, 5, 1, 1, 1, 2, 4, 3, 1, 2, 1, 3, 2, 2, 3, 4, 1, 3, 2, 5],
        [40, 3, 0, 0, 1, 7, 22, 9, 0, 4, 0, 13, 6, 2, 8, 31, 0, 5, 5, 17],
        186369.27010473073,
        [(0, 10)] + [(g, g + 1) for g in range(20)],
        [0.42] + [0.58] * 10 + [1.0] * 10,
        [
            45.21801229190276, 2.4495053939401537, -5.796608582316068, -8.053000261040502,
            -5.25845337863651, 5.743028625532766, 26.599170614594456, 17.555737506350148,
            8.751894068544061, 9.095384804945574, -0.7275001690430632, 9.256766772013007,
            1.0015347898239675, -1.9028409008459186, 7.028350467723326, 33.41652379376503,
            4.668168220373187, 9.724300190799303, 7.558519962265745, 16.189427817501407,
        ],
        id="prefix-20-groups",
    ),
    pytest.param(
        "all",
        [1, 2, 1, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 1],
        [4, 0, 11, 2, 9, 0, 0, 6, 3, 25, 1, 7, 0, 14, 2, 8],
        589140.779835399,
        [(0, 16)] + [(g, g + 1) for g in range(16)],
        [0.32] + [0.68] * 16,
        [
            9.35986449952377, 0.43966743949682296, 6.965040812690056, -3.9595285603396047,
            4.571114368769674, -0.16291568649770483, 4.83202895123139, 14.206747770670066,
            11.374057779600168, 30.25527046653087, 1.317200237194708, 2.882298679924224,
            -5.963630705647898, 9.647581513955213, 1.9581570559688082, 12.940764888383082,
        ],
        id="all-16-groups",
    ),
    pytest.param(
        "prefix",
        [3, 1, 4, 1, 5, 9, 2, 6, 5, 3],
        [12, 0, 7, 30, 2, 2, 9, 41, 3, 0],
        33787.3155642572,
        [(0, 10)] + [(g, g + 1) for g in range(10)],
        [0.37] + [0.63] * 10,
        [
            16.953334853032032, -0.35735403715578684, 1.8128902386718355, 22.735577264608054,
            -3.6123002087342915, 0.992238779231073, 13.383607594557715, 49.02616124093598,
            11.206749822003381, 4.840439706309532,
        ],
        id="prefix-10-groups",
    ),
]
# fmt: on


@pytest.mark.parametrize(
    ("workload", "sizes", "totals", "error", "queries", "weights", "t_hat"), REFERENCE_CASES
)
def test_matches_dpcomp_core_greedyh(workload, sizes, totals, error, queries, weights, t_hat):
    strategy = greedy_h(reduced_gram(sizes, workload))
    assert list(zip(strategy.lo.tolist(), strategy.hi.tolist(), strict=True)) == queries
    np.testing.assert_allclose(strategy.weight, weights, rtol=1e-12)
    assert strategy.expected_error == pytest.approx(error, rel=1e-9)
    noise = 5.0 * np.cos(0.7 * np.arange(strategy.n_queries) + 0.3)
    y = strategy_answers(strategy, np.asarray(totals, dtype=float)) + noise
    np.testing.assert_allclose(estimate_totals(strategy, y), t_hat, rtol=0, atol=1e-9)


def test_matches_dpcomp_core_greedyh_with_a_whole_node():
    """Same comparison for a general M where the node [1, 3) has constant rows."""
    w = np.array(
        [
            [1, 0, 0, 2, 1, 1, 0],
            [0, 1, 1, 1, 0, 0, 2],
            [1, 1, 1, 0, 2, 2, 1],
            [2, 0, 0, 1, 1, 1, 0],
            [0, 3, 3, 0, 1, 1, 1],
        ],
        dtype=float,
    )
    strategy = greedy_h(w.T @ w)
    assert strategy.expected_error == pytest.approx(1024.0, rel=1e-12)
    assert node_weights(strategy) == {(g, g + 1): 1.0 for g in (0, 3, 4, 5, 6)} | {(1, 3): 1.0}
    noise = 5.0 * np.cos(0.7 * np.arange(strategy.n_queries) + 0.3)
    y = strategy_answers(strategy, [3.0, 8.0, 1.0, 0.0, 14.0, 6.0, 2.0]) + noise
    want = [
        7.77668244562803, 5.85075576467035, 5.85075576467035, -0.6442224714776232,
        10.313031422293776, 1.004324248633603, -1.9548385595720843,
    ]  # fmt: skip
    np.testing.assert_allclose(estimate_totals(strategy, y), want, rtol=0, atol=1e-9)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "sizes", [[3, 0, 2], [2, -1], [], [[1, 2], [3, 4]], [1.0, 2.0], ["a"], [True, False]]
)
def test_bad_sizes_raise(sizes):
    with pytest.raises(ValidationError, match="sizes"):
        reduced_gram(sizes, "all")


@pytest.mark.parametrize("workload", ["ranges", "ALL", "", None, 3])
def test_unknown_workload_raises(workload):
    with pytest.raises(ValidationError, match="workload"):
        reduced_gram([1, 2, 3], workload)


def test_bad_greedy_h_arguments_raise():
    m = reduced_gram([1, 2, 3], "prefix")
    for bad in (np.ones((2, 3)), np.ones(4), np.zeros((0, 0)), [[1.0, np.nan], [0.0, 1.0]]):
        with pytest.raises(ValidationError, match="M"):
            greedy_h(bad)
    with pytest.raises(ValidationError, match="branch"):
        greedy_h(m, branch=1)
    with pytest.raises(ValidationError, match="grid"):
        greedy_h(m, grid=0)
    with pytest.raises(ValidationError, match="grid"):
        greedy_h(m, grid=2.5)
    with pytest.raises(ValidationError, match="objective"):
        greedy_h(m, objective="variance")


def test_bad_estimator_arguments_raise():
    strategy = greedy_h(reduced_gram([1, 2, 3], "prefix"))
    with pytest.raises(ValidationError, match="answers"):
        estimate_totals(strategy, np.zeros(strategy.n_queries + 1))
    with pytest.raises(ValidationError, match="answers"):
        estimate_totals(strategy, np.full(strategy.n_queries, np.inf))
    with pytest.raises(ValidationError, match="totals"):
        strategy_answers(strategy, [1.0, 2.0])
    with pytest.raises(InputTypeError):
        estimate_totals("strategy", [1.0])


def test_strategy_is_frozen():
    strategy = greedy_h(reduced_gram([2, 2, 1], "all"))
    assert isinstance(strategy, GreedyHStrategy)
    with pytest.raises(AttributeError):
        strategy.expected_error = 0.0
    for arr in (strategy.lo, strategy.hi, strategy.weight):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = arr[0]


# --------------------------------------------------------------------------- implicit Gram


@settings(max_examples=60, deadline=None)
@given(sizes=group_sizes, workload=st.sampled_from(["all", "prefix"]))
def test_implicit_rows_equal_the_dense_rows(sizes, workload):
    gram = implicit_gram(sizes, workload)
    dense = reduced_gram(sizes, workload)
    assert gram.n_groups == len(sizes) and gram.shape == dense.shape
    np.testing.assert_array_equal(gram.to_dense(), dense)
    for i in range(len(sizes)):
        np.testing.assert_array_equal(gram.row(i), dense[i])
    np.testing.assert_array_equal(gram.diag, np.diag(dense))


def test_implicit_gram_generators():
    """left = Lbar (all ranges) or 1 (prefix), right = N + 1 - Lbar."""
    sizes = [2, 5, 2]  # N = 9, 1-based groups [1,2] [3,7] [8,9]
    lbar = np.array([1.5, 5.0, 8.5])
    for workload, left in (("all", lbar), ("prefix", np.ones(3))):
        gram = implicit_gram(sizes, workload)
        np.testing.assert_array_equal(gram.left, left)
        np.testing.assert_array_equal(gram.right, 10.0 - lbar)
        assert gram.to_dense()[0, 2] == left[0] * (10.0 - lbar[2])
    with pytest.raises(ValueError, match="read-only"):
        gram.left[0] = 0.0


def test_bad_implicit_gram_raises():
    with pytest.raises(ValidationError, match="same length"):
        ImplicitGram(left=[1.0, 2.0], right=[1.0], diag=[1.0, 2.0])
    with pytest.raises(ValidationError, match="diag"):
        ImplicitGram(left=[1.0], right=[1.0], diag=[np.inf])
    with pytest.raises(ValidationError, match="left"):
        ImplicitGram(left=[], right=[], diag=[])
    gram = implicit_gram([1, 2], "all")
    for bad in (2, -1, 1.0):
        with pytest.raises(ValidationError, match="i"):
            gram.row(bad)


def random_generators(rng, size, duplicate):
    """Generators of a random ImplicitGram; with probability ``duplicate`` columns
    ``j`` and ``j + 1`` of the matrix coincide (equal generators, diagonal l*r)."""
    left = rng.integers(1, 5, size).astype(float)
    right = rng.integers(1, 5, size).astype(float)
    diag = rng.integers(1, 30, size).astype(float)
    for j in range(size - 1):
        if rng.random() < duplicate:
            left[j + 1], right[j + 1] = left[j], right[j]
            diag[j] = diag[j + 1] = left[j] * right[j]
    return ImplicitGram(left=left, right=right, diag=diag)


# --------------------------------------------------------------------------- implicit = dense


@settings(max_examples=60, deadline=None)
@given(
    sizes=group_sizes,
    workload=st.sampled_from(["all", "prefix"]),
    objective=st.sampled_from(["reference", "trace"]),
    branch=st.sampled_from([2, 3, 5]),
)
def test_implicit_and_dense_gram_give_the_same_strategy(sizes, workload, objective, branch):
    dense = reduced_gram(sizes, workload)
    got = greedy_h(implicit_gram(sizes, workload), branch=branch, objective=objective)
    queries, inv, error = dense_greedy_h(dense, branch=branch, objective=objective)
    assert_same_strategy(got, queries, error)
    assert_same_strategy(greedy_h(dense, branch=branch, objective=objective), queries, error)
    y = np.cos(np.arange(got.n_queries)) * 7.0
    want = inv @ aty(got, y)
    np.testing.assert_allclose(estimate_totals(got, y), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(total_variances(got), np.diag(inv), rtol=1e-9, atol=0)


@pytest.mark.parametrize("objective", ["reference", "trace"])
def test_implicit_gram_with_constant_rows_keeps_the_same_nodes_whole(objective):
    rng = np.random.default_rng(17)
    whole_nodes = 0
    for trial in range(60):
        gram = random_generators(rng, int(rng.integers(1, 50)), duplicate=0.5)
        branch = (2, 3, 4)[trial % 3]
        got = greedy_h(gram, branch=branch, objective=objective)
        queries, inv, error = dense_greedy_h(gram.to_dense(), branch=branch, objective=objective)
        assert_same_strategy(got, queries, error)
        whole_nodes += sum(hi - lo > 1 and w == 1.0 for lo, hi, w in queries)
        if got.weight.min() > 1e-3:  # leave out strategies too ill-conditioned for inv
            y = np.sin(np.arange(got.n_queries)) * 3.0
            want = inv @ aty(got, y)
            np.testing.assert_allclose(estimate_totals(got, y), want, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(total_variances(got), np.diag(inv), rtol=1e-9, atol=0)
    assert whole_nodes > 10


@pytest.mark.parametrize("where", ["above", "diagonal", "below", "nowhere"])
def test_constant_rows_are_detected_on_every_row(where):
    """Columns 2 and 3 of M agree except in the rows above them, on the diagonal
    block or in the rows below them: only 'nowhere' keeps the node [2, 4) whole."""
    left = np.array([1.0, 2.0, 3.0, 3.0, 2.0, 1.0])
    right = np.array([4.0, 1.0, 2.0, 2.0, 3.0, 1.0])
    diag = np.array([9.0, 7.0, 6.0, 6.0, 8.0, 5.0])
    if where == "above":
        right[3] = 2.5
    elif where == "diagonal":
        diag[3] = 6.5
    elif where == "below":
        left[3] = 3.5
    gram = ImplicitGram(left=left, right=right, diag=diag)
    got = greedy_h(gram, branch=4)  # root [0, 6) -> [0, 1) [1, 2) [2, 4) [4, 6)
    queries, _, error = dense_greedy_h(gram.to_dense(), branch=4)
    assert_same_strategy(got, queries, error)
    leaves = {(a, b) for a, b, _ in queries if b - a == 1}
    assert ((2, 3) in leaves and (3, 4) in leaves) == (where != "nowhere")


@pytest.mark.parametrize("workload", ["all", "prefix"])
def test_large_grouping_matches_the_dense_path(workload):
    """|G| = 3000 groups of N = 32768 bins: the implicit path against the dense oracle."""
    rng = np.random.default_rng(23)
    n, groups = 32_768, 3_000
    cuts = np.sort(rng.choice(np.arange(1, n), size=groups - 1, replace=False))
    sizes = np.diff(np.concatenate(([0], cuts, [n])))
    strategy = greedy_h(implicit_gram(sizes, workload))
    queries, inv, error = dense_greedy_h(reduced_gram(sizes, workload))
    assert_same_strategy(strategy, queries, error, rtol=1e-12)
    totals = rng.integers(0, 1000, groups).astype(float)
    y = strategy_answers(strategy, totals) + rng.laplace(scale=10.0, size=strategy.n_queries)
    want = inv @ aty(strategy, y)
    got = estimate_totals(strategy, y)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * np.abs(want).max())
    np.testing.assert_allclose(total_variances(strategy), np.diag(inv), rtol=1e-9, atol=0)


# --------------------------------------------------------------------------- tree least squares


def random_tree_strategy(rng, n_groups):
    """Nested ranges in pre-order: each node is childless (a single group, or several
    kept whole) or splits into 2 to 4 parts; split nodes go unmeasured with
    probability 0.3, so queries can have many children or share no common root."""
    queries = []

    def visit(lo, hi):
        n = hi - lo
        if n == 1 or rng.random() < 0.15:
            queries.append((lo, hi, rng.uniform(0.1, 1.0)))
            return
        if rng.random() > 0.3:
            queries.append((lo, hi, rng.uniform(0.1, 1.0)))
        parts = int(rng.integers(2, min(4, n) + 1))
        cuts = np.sort(rng.choice(np.arange(lo + 1, hi), size=parts - 1, replace=False))
        for a, b in itertools.pairwise([lo, *cuts.tolist(), hi]):
            visit(a, b)

    visit(0, n_groups)
    lo, hi, w = (np.array(col) for col in zip(*queries, strict=True))
    return GreedyHStrategy(lo=lo, hi=hi, weight=w, n_groups=n_groups)


def test_tree_least_squares_equals_the_dense_pseudo_inverse():
    rng = np.random.default_rng(29)
    for trial in range(150):
        strategy = random_tree_strategy(rng, int(rng.integers(1, 61)))
        a = strategy_matrix(strategy)
        a_pinv = np.linalg.pinv(a, rcond=1e-10)  # (A^T A)^+ = A^+ (A^+)^T
        y = rng.normal(scale=5.0, size=strategy.n_queries) + trial
        want = a_pinv @ y
        np.testing.assert_allclose(
            estimate_totals(strategy, y), want, rtol=1e-9, atol=1e-9 * np.abs(want).max()
        )
        np.testing.assert_allclose(
            total_variances(strategy), (a_pinv**2).sum(axis=1), rtol=1e-9, atol=0
        )


def test_tree_least_squares_by_hand():
    # root [0,2) measured with weight 1 (variance 1), leaves with weight 1/2 (variance 4):
    # answers 0 and 1/2 * (0, 1) -> estimates -4/9, 5/9 (methods framework B.1)
    strategy = GreedyHStrategy(lo=[0, 0, 1], hi=[2, 1, 2], weight=[1.0, 0.5, 0.5], n_groups=2)
    np.testing.assert_allclose(estimate_totals(strategy, [0.0, 0.0, 0.5]), [-4 / 9, 5 / 9])
    # Var = diag((A^T A)^-1), A^T A = [[1.25, 1], [1, 1.25]]
    np.testing.assert_allclose(total_variances(strategy), [1.25 / 0.5625] * 2)
    # a query kept whole over three groups, next to a single group, no root query
    strategy = GreedyHStrategy(lo=[0, 3], hi=[3, 4], weight=[0.5, 2.0], n_groups=4)
    np.testing.assert_allclose(estimate_totals(strategy, [3.0, 4.0]), [2.0, 2.0, 2.0, 2.0])
    np.testing.assert_allclose(total_variances(strategy), [4 / 9] * 3 + [0.25])


@pytest.mark.parametrize(
    ("lo", "hi", "weight", "match"),
    [
        ([0, 0], [3, 2], [1.0, 1.0], "tile"),  # [2, 3) uncovered
        ([0, 0, 1], [2, 1, 3], [1.0] * 3, "nested"),  # [1, 3) crosses [0, 2)
        ([0, 1, 0], [1, 2, 2], [1.0] * 3, "nested"),  # parent after its children
        ([0, 2], [2, 2], [1.0, 1.0], "lo < hi"),
        ([0, 1], [1, 4], [1.0, 1.0], "lo < hi"),  # beyond n_groups
        ([0, 1], [1, 3], [1.0, 0.0], "positive"),
        ([0, 1], [1, 3], [1.0], "same length"),
        ([], [], [], "non-empty"),
    ],
)
def test_bad_tree_strategies_raise(lo, hi, weight, match):
    lo, hi = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    with pytest.raises(ValidationError, match=match):
        GreedyHStrategy(lo=lo, hi=hi, weight=weight, n_groups=3)
