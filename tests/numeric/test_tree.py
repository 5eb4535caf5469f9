"""Tree layout, weighted consistency, cuts, frontiers and HB parameters vs brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._numeric.tree import (
    best_cut,
    consistency,
    frontier,
    frontiers,
    is_cut,
    leaf_estimates,
    range_nodes,
    tree_layout,
    tree_levels,
)
from dphist._numeric.tree_params import hb_branching, level_budgets
from dphist.errors import ValidationError

# --------------------------------------------------------------------------- references


def levels_by_grouping(n: int, f: int) -> int:
    """Levels of the tree built bottom-up by grouping f nodes at a time until one is left."""
    count, levels = n, 1
    while count > 1:
        count = -(-count // f)
        levels += 1
    return levels


def intervals(layout, level):
    s = layout.level_slice(level)
    return list(zip(layout.lo[s].tolist(), layout.hi[s].tolist(), strict=True))


def node_leaf_matrix(layout) -> np.ndarray:
    """Dense 0/1 matrix A with (A x)_v = total of node v."""
    a = np.zeros((layout.n_nodes, layout.n))
    for v in range(layout.n_nodes):
        a[v, layout.lo[v] : layout.hi[v]] = 1.0
    return a


def ancestors(layout, v: int) -> list[int]:
    out = []
    while layout.parent[v] >= 0:
        v = int(layout.parent[v])
        out.append(v)
    return out


def children(layout, v: int) -> range:
    fc = int(layout.first_child[v])
    return range(fc, fc + int(layout.n_children[v]))


def assert_consistent(layout, est, rtol=1e-9):
    for v in range(layout.n_nodes):
        if layout.n_children[v]:
            kids = est[list(children(layout, v))].sum()
            assert kids == pytest.approx(est[v], rel=rtol, abs=1e-9)


# --------------------------------------------------------------------------- layout


def test_layout_oracle_n20_f4():
    lay = tree_layout(20, 4)
    assert lay.n_levels == 4
    assert intervals(lay, 0) == [(0, 20)]
    assert intervals(lay, 1) == [(0, 16), (16, 20)]
    assert intervals(lay, 2) == [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20)]
    assert intervals(lay, 3) == [(i, i + 1) for i in range(20)]
    # [16, 20) on level 1 has a single child; the root has two.
    assert lay.n_children[0] == 2 and lay.n_children[2] == 1
    assert lay.spans.tolist() == [64, 16, 4, 1]
    assert lay.level_offsets.tolist() == [0, 1, 3, 8, 28]


def test_single_bin():
    lay = tree_layout(1, 16)
    assert lay.n_levels == 1 and lay.n_nodes == 1
    assert (lay.lo[0], lay.hi[0], lay.parent[0], lay.n_children[0]) == (0, 1, -1, 0)
    assert consistency(lay, [7.5], 2.0).tolist() == [7.5]
    assert best_cut(lay, [3.0]).tolist() == [True]
    assert [c.tolist() for c in frontiers(lay, np.array([True]))] == [[0]]
    assert range_nodes(lay, 0, 1).tolist() == [0]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 2000), f=st.integers(2, 17))
def test_layout_structure(n, f):
    lay = tree_layout(n, f)
    t = lay.n_levels
    assert t == levels_by_grouping(n, f) == tree_levels(n, f)
    assert f ** (t - 1) >= n and (t == 1 or f ** (t - 2) < n)
    for lev in range(t):
        s = lay.level_slice(lev)
        lo, hi = lay.lo[s], lay.hi[s]
        # each level partitions [0, n) in order
        assert lo[0] == 0 and hi[-1] == n
        assert np.all(lo < hi) and np.array_equal(hi[:-1], lo[1:])
        assert np.all(lay.level[s] == lev)
        assert np.all(hi - lo <= lay.spans[lev])
    leaves = lay.leaf_slice
    assert np.array_equal(lay.lo[leaves], np.arange(n))
    # children are contiguous in the next level, cover their parent and point back to it
    internal = np.flatnonzero(lay.n_children > 0)
    fc, nc = lay.first_child[internal], lay.n_children[internal]
    assert np.all(nc >= 1) and np.all(nc <= f)
    assert np.array_equal(lay.lo[fc], lay.lo[internal])
    assert np.array_equal(lay.hi[fc + nc - 1], lay.hi[internal])
    assert np.all(lay.level[fc] == lay.level[internal] + 1)
    kids = np.array(
        [u for a, k in zip(fc.tolist(), nc.tolist(), strict=True) for u in range(a, a + k)],
        dtype=np.int64,
    )
    assert np.array_equal(kids, np.arange(1, lay.n_nodes))
    assert np.array_equal(lay.parent[kids], np.repeat(internal, nc))
    assert lay.parent[0] == -1
    assert np.all(lay.first_child[leaves] == -1) and np.all(lay.n_children[leaves] == 0)
    assert lay.n_nodes <= f * n / (f - 1) + t


def test_layout_large_counts_and_read_only():
    lay = tree_layout(10**6, 16)
    expected = [-(-(10**6) // 16**k) for k in range(5, -1, -1)]
    assert lay.level_counts.tolist() == expected
    with pytest.raises(ValueError):
        lay.lo[0] = 5


@pytest.mark.parametrize(("n", "f"), [(0, 2), (5, 1), (2.5, 2), (True, 2)])
def test_layout_rejects_bad_arguments(n, f):
    with pytest.raises(ValidationError):
        tree_layout(n, f)


# --------------------------------------------------------------------------- consistency


def test_hay_oracles():
    binary = tree_layout(2, 2)
    assert consistency(binary, [0, 0.5, 0.5], 1.0)[1:] == pytest.approx([1 / 6, 1 / 6])
    assert consistency(binary, [0, 0, 1], 1.0)[1:] == pytest.approx([-1 / 3, 2 / 3])
    star = tree_layout(3, 3)
    assert consistency(star, [3, 1, 1, 4], 1.0)[1:] == pytest.approx([0.25, 0.25, 3.25])
    weighted = consistency(binary, [0, 0, 1], [1.0, 4.0, 4.0])
    assert weighted[1:] == pytest.approx([-4 / 9, 5 / 9])
    assert weighted[0] == pytest.approx(1 / 9)


def hay_two_pass(y_levels: list[np.ndarray], k: int) -> list[np.ndarray]:
    """Hay et al.'s unweighted formulas for a complete k-ary tree (levels root first)."""
    depth = len(y_levels)
    z = [None] * depth
    z[-1] = y_levels[-1].copy()
    for lev in range(depth - 2, -1, -1):
        h = depth - lev  # height, leaves have height 1
        a = (k**h - k ** (h - 1)) / (k**h - 1)
        b = (k ** (h - 1) - 1) / (k**h - 1)
        z[lev] = a * y_levels[lev] + b * z[lev + 1].reshape(-1, k).sum(axis=1)
    out = [z[0]]
    for lev in range(1, depth):
        kids = z[lev].reshape(-1, k)
        out.append((kids + ((out[-1] - kids.sum(axis=1)) / k)[:, None]).ravel())
    return out


@pytest.mark.parametrize(("n", "k"), [(8, 2), (27, 3), (64, 4)])
def test_matches_hay_formulas_on_complete_trees(n, k):
    lay = tree_layout(n, k)
    y = np.random.default_rng(n).normal(size=lay.n_nodes) * 10
    est = consistency(lay, y, 3.0)
    ref = hay_two_pass([y[lay.level_slice(lev)] for lev in range(lay.n_levels)], k)
    np.testing.assert_allclose(est, np.concatenate(ref), rtol=1e-10, atol=1e-10)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 25),
    f=st.integers(2, 5),
    p_inf=st.sampled_from([0.0, 0.15, 0.4]),
    seed=st.integers(0, 2**32 - 1),
)
def test_consistency_equals_dense_gls(n, f, p_inf, seed):
    rng = np.random.default_rng(seed)
    lay = tree_layout(n, f)
    a = node_leaf_matrix(lay)
    y = rng.normal(scale=5.0, size=lay.n_nodes)
    var = np.exp(rng.uniform(-2, 2, size=lay.n_nodes))
    var[rng.random(lay.n_nodes) < p_inf] = np.inf
    measured = np.isfinite(var)
    y_masked = np.where(measured, y, np.nan)  # unmeasured values must be ignored
    est, post = consistency(lay, y_masked, var, return_var=True)
    assert_consistent(lay, est)

    if not measured.any():
        assert np.all(np.isinf(post))
        return
    scale = 1.0 / np.sqrt(var[measured])
    aw = a[measured] * scale[:, None]
    yw = y[measured] * scale
    x, *_ = np.linalg.lstsq(aw, yw, rcond=None)
    dense = a @ x
    # the objective reaches the least-squares minimum
    objective = np.sum((y[measured] - est[measured]) ** 2 / var[measured])
    best = np.sum((y[measured] - dense[measured]) ** 2 / var[measured])
    assert objective == pytest.approx(best, rel=1e-9, abs=1e-9)
    # identifiable node totals are unique: compare values and variances
    rank = np.linalg.matrix_rank(aw)
    cov = np.linalg.pinv(aw.T @ aw)
    for v in range(lay.n_nodes):
        identifiable = np.linalg.matrix_rank(np.vstack([aw, a[v]])) == rank
        if identifiable:
            assert est[v] == pytest.approx(dense[v], rel=1e-8, abs=1e-8)
            assert post[v] == pytest.approx(a[v] @ cov @ a[v], rel=1e-8, abs=1e-10)
        else:
            assert post[v] == np.inf
    if rank == n:
        np.testing.assert_allclose(leaf_estimates(lay, y_masked, var), x, rtol=1e-8, atol=1e-8)


def test_consistency_reduces_leaf_variance():
    # uniform budgets eps/t: raw node variance 2 t^2 / eps^2; consistency lowers it
    lay = tree_layout(20, 4)
    raw = 2 * lay.n_levels**2
    _, post = consistency(lay, np.zeros(lay.n_nodes), float(raw), return_var=True)
    assert np.all(post[lay.leaf_slice] < raw)
    assert np.all(post < raw + 1e-9)


def test_consistency_rejects_bad_variances():
    lay = tree_layout(4, 2)
    y = np.zeros(lay.n_nodes)
    with pytest.raises(ValidationError):
        consistency(lay, y, 0.0)
    with pytest.raises(ValidationError):
        consistency(lay, y, np.full(lay.n_nodes, np.nan))
    with pytest.raises(ValidationError):
        consistency(lay, np.full(lay.n_nodes, np.nan), 1.0)
    with pytest.raises(ValidationError):
        consistency(lay, y[:-1], 1.0)


# --------------------------------------------------------------------------- cuts


def all_cuts(layout, v: int = 0) -> list[tuple[int, ...]]:
    """Every cut of the subtree of v, enumerated explicitly."""
    kids = list(children(layout, v))
    out = [(v,)]
    if kids:
        for combo in itertools.product(*(all_cuts(layout, u) for u in kids)):
            out.append(tuple(itertools.chain.from_iterable(combo)))
    return out


def leaf_depth_sum(layout, cut: tuple[int, ...]) -> int:
    """Sum over bins of the level of the cut node covering the bin (smaller = coarser)."""
    return int(sum(layout.level[v] * (layout.hi[v] - layout.lo[v]) for v in cut))


@pytest.mark.parametrize("f", [2, 3, 4])
@pytest.mark.parametrize("n", [*range(1, 13), 16, 17, 20])
def test_best_cut_equals_brute_force(n, f):
    lay = tree_layout(n, f)
    cuts = all_cuts(lay)
    for c in cuts[:50]:
        mask = np.zeros(lay.n_nodes, dtype=bool)
        mask[list(c)] = True
        assert is_cut(lay, mask)
    rng = np.random.default_rng(100 * n + f)
    for _ in range(4):
        # small integers: sums are exact, so ties really occur
        cost = rng.integers(-2, 4, size=lay.n_nodes).astype(float)
        mask = best_cut(lay, cost)
        assert is_cut(lay, mask)
        # coarsest among the minimum-cost cuts
        expected = min(cuts, key=lambda c: (cost[list(c)].sum(), leaf_depth_sum(lay, c)))
        assert sorted(np.flatnonzero(mask).tolist()) == sorted(expected)


def test_best_cut_tie_keeps_coarser_node():
    lay = tree_layout(2, 2)
    assert best_cut(lay, [2.0, 1.0, 1.0]).tolist() == [True, False, False]
    assert best_cut(lay, [2.5, 1.0, 1.0]).tolist() == [False, True, True]


def test_is_cut_rejects_overlaps_and_gaps():
    lay = tree_layout(4, 2)  # nodes: root, [0,2), [2,4), leaves 3..6
    good = np.array([False, True, False, False, False, True, True])
    assert is_cut(lay, good)
    overlap = good.copy()
    overlap[3] = True
    gap = good.copy()
    gap[5] = False
    assert not is_cut(lay, overlap) and not is_cut(lay, gap)
    with pytest.raises(ValidationError):
        frontiers(lay, gap)


def random_cut(layout, rng, p_stop: float) -> np.ndarray:
    mask = np.zeros(layout.n_nodes, dtype=bool)
    stack = [0]
    while stack:
        v = stack.pop()
        if layout.n_children[v] == 0 or rng.random() < p_stop:
            mask[v] = True
        else:
            stack.extend(children(layout, v))
    return mask


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 200),
    f=st.integers(2, 6),
    p_stop=st.floats(0.0, 0.6),
    seed=st.integers(0, 2**32 - 1),
)
def test_frontier_lemma(n, f, p_stop, seed):
    lay = tree_layout(n, f)
    cut = random_cut(lay, np.random.default_rng(seed), p_stop)
    cells_by_level = frontiers(lay, cut)
    assert len(cells_by_level) == lay.n_levels
    cut_nodes = set(np.flatnonzero(cut).tolist())
    for lev, cells in enumerate(cells_by_level):
        lo, hi = lay.lo[cells], lay.hi[cells]
        # F_l partitions [0, n), listed left to right
        assert lo[0] == 0 and hi[-1] == n and np.array_equal(hi[:-1], lo[1:])
        # membership straight from the definition
        expected = {
            v
            for v in range(lay.n_nodes)
            if (lay.level[v] == lev and not cut_nodes.intersection(ancestors(lay, v)))
            or (v in cut_nodes and lay.level[v] < lev)
        }
        assert set(cells.tolist()) == expected
    leaves_level = cells_by_level[-1]
    assert set(leaves_level.tolist()) == cut_nodes  # the last frontier is the cut itself
    mid = lay.n_levels // 2
    assert np.array_equal(frontier(lay, cut, mid), cells_by_level[mid])


# --------------------------------------------------------------------------- ranges


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 300), f=st.integers(2, 6))
def test_range_nodes_are_the_maximal_inside_nodes(data, n, f):
    lay = tree_layout(n, f)
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo + 1, n))
    nodes = range_nodes(lay, lo, hi)
    inside = (lay.lo >= lo) & (lay.hi <= hi)
    maximal = inside & np.concatenate(([True], ~inside[lay.parent[1:]]))
    assert nodes.tolist() == sorted(np.flatnonzero(maximal).tolist(), key=lambda v: lay.lo[v])
    assert lay.lo[nodes[0]] == lo and lay.hi[nodes[-1]] == hi
    assert np.array_equal(lay.hi[nodes[:-1]], lay.lo[nodes[1:]])
    assert np.bincount(lay.level[nodes], minlength=lay.n_levels).max() <= 2 * (f - 1)


# --------------------------------------------------------------------------- HB and budgets


HB_TABLE = [
    (1_024, 32, 2),
    (1_442, 38, 2),
    (2_414, 50, 2),
    (4_096, 16, 3),
    (7_578, 20, 3),
    (11_342, 23, 3),
    (32_768, 32, 3),
    (65_536, 16, 4),
    (1_000_000, 16, 5),
]


@pytest.mark.parametrize(("n", "b", "h"), HB_TABLE)
def test_hb_oracle_table(n, b, h):
    assert hb_branching(n) == (b, h)
    assert tree_levels(n, b) == h + 1


def hb_scan(n: int) -> tuple[int, int]:
    """Scan every b in [2, n]; keep the first minimum of 3 V(b)."""
    best = None
    for b in range(2, n + 1):
        h, power = 0, 1
        while power < n:
            power *= b
            h += 1
        v3 = 3 * (b - 1) * h**3 - 2 * (b + 1) * h**2
        if best is None or v3 < best[0]:
            best = (v3, b, h)
    return best[1], best[2]


def test_hb_matches_full_scan():
    rng = np.random.default_rng(7)
    sizes = [*range(2, 130), 243, 256, 625, 729, 1000, *rng.integers(130, 4000, 25).tolist()]
    for n in sizes:
        assert hb_branching(n) == hb_scan(n), n
    assert hb_branching(1) == (2, 0)


def test_level_budgets():
    assert level_budgets(5).tolist() == [0.2] * 5
    geo3 = level_budgets(4, "geometric")[::-1]  # leaves -> root
    assert geo3 == pytest.approx([0.3420, 0.2715, 0.2155, 0.1710], abs=5e-5)
    geo4 = level_budgets(5, "geometric")[::-1]
    assert geo4 == pytest.approx([0.3012, 0.2390, 0.1897, 0.1506, 0.1195], abs=5e-5)
    assert level_budgets(6, "geometric").sum() == pytest.approx(1.0)
    assert level_budgets(3, "geometric", ratio=1.0) == pytest.approx(level_budgets(3))
    assert level_budgets(1, "geometric").tolist() == [1.0]
    with pytest.raises(ValidationError):
        level_budgets(3, "cormode")
    with pytest.raises(ValidationError):
        level_budgets(3, "geometric", ratio=-1.0)
