"""2-D numerics against hand-worked cases and brute-force oracles: rectangle trees and
their exact error, level-wise least squares, the 2-D Haar transform, the Hilbert order."""

from __future__ import annotations

import numpy as np
import pytest

from dphist._numeric.grid2d import hilbert_order, prefix2d, rect_totals
from dphist._numeric.grid_haar import grid_haar_forward, grid_haar_inverse, grid_haar_sensitivity
from dphist._numeric.grid_levels import hb2d_branching, level_gls
from dphist._numeric.rect_tree import (
    INNER,
    OUTER,
    QuadLayout,
    grid_tree,
    hierarchy_edges,
    leaves_tree,
    level_tree,
    nested_grid_tree,
    paint,
    rect_factors,
    rect_moments,
    split_edges,
    tree_from_levels,
)
from dphist._numeric.tree import gls
from dphist.errors import ValidationError


def brute_moments(tree, var, k4, rects, mode=0):
    """Variance and fourth cumulant of the GLS estimate of each query, from the dense
    normal equations over the leaf totals (the unknowns)."""
    leaves = tree.leaves
    r0, r1, c0, c1 = (a[:, None] for a in (tree.r0, tree.r1, tree.c0, tree.c1))
    inside = (
        (r0 <= tree.r0[leaves]) & (tree.r1[leaves] <= r1)
        & (c0 <= tree.c0[leaves]) & (tree.c1[leaves] <= c1)
    ).astype(float)  # fmt: skip
    meas = np.isfinite(var)
    a, d = inside[meas], var[meas]
    gain = np.linalg.solve(a.T @ (a / d[:, None]), (a / d[:, None]).T)  # leaves x measurements
    out = []
    for r0, r1, c0, c1 in rects:
        dr = np.clip(np.minimum(tree.r1[leaves], r1) - np.maximum(tree.r0[leaves], r0), 0, None)
        dc = np.clip(np.minimum(tree.c1[leaves], c1) - np.maximum(tree.c0[leaves], c0), 0, None)
        share = dr * dc / tree.area[leaves]
        if mode == INNER:
            share = (share == 1.0).astype(float)
        elif mode == OUTER:
            share = (share > 0).astype(float)
        coef = share @ gain
        out.append((coef @ (coef * d), np.sum(coef**4 * k4[meas])))
    return np.array(out)


def random_rects(shape, count, rng):
    a = np.sort(rng.integers(0, shape[0] + 1, (count, 2)), axis=1)
    b = np.sort(rng.integers(0, shape[1] + 1, (count, 2)), axis=1)
    keep = (a[:, 0] < a[:, 1]) & (b[:, 0] < b[:, 1])
    return np.column_stack((a[keep, 0], a[keep, 1], b[keep, 0], b[keep, 1]))


def test_split_edges_hand_worked():
    assert split_edges(np.array([0, 7]), 3).tolist() == [0, 3, 5, 7]
    assert split_edges(np.array([0, 2, 3]), 4).tolist() == [0, 1, 2, 3]
    assert [(r.tolist(), c.tolist()) for r, c in hierarchy_edges((4, 2), 2)] == [
        ([0, 4], [0, 2]), ([0, 2, 4], [0, 1, 2]), ([0, 1, 2, 3, 4], [0, 1, 2])
    ]  # fmt: skip


def test_level_tree_children_partition_their_parent():
    tree = level_tree((5, 3), hierarchy_edges((5, 3), 2))
    for v in range(tree.n_nodes):
        kids = range(tree.first_child[v], tree.first_child[v] + tree.n_children[v])
        if tree.n_children[v]:
            assert sum(int(tree.area[c]) for c in kids) == tree.area[v]
            assert all(tree.r0[v] <= tree.r0[c] and tree.r1[c] <= tree.r1[v] for c in kids)
    assert (tree.area[tree.leaves] == 1).all() and tree.leaves.size == 15


def test_tree_refuses_children_that_do_not_partition():
    with pytest.raises(ValidationError, match="partition"):
        leaves_tree((2, 2), [0, 0], [1, 2], [0, 0], [2, 2])  # overlapping halves


def test_gls_hand_worked_2x2_root_and_cells():
    """Root 10 and cells 1, 2, 3, 5, all with variance 1: the root's estimate is
    z = (10 + 11/4) / (1 + 1/4) = 0.8 y0 + 0.2 S = 10.2, each cell moves by (z - S)/4 =
    -0.2. A cell is y1 + 0.2 y0 - 0.2 S: variance 0.8**2 + 3 * 0.2**2 + 0.2**2 = 0.8; a
    column of two cells is y1 + y3 + 0.4 y0 - 0.4 S: 2 * 0.6**2 + 3 * 0.4**2 = 1.2."""
    levels = hierarchy_edges((2, 2), 2)
    est = level_gls(levels, [np.array([[10.0]]), np.array([[1.0, 2.0], [3.0, 5.0]])], [1.0, 1.0])
    np.testing.assert_allclose(est, [[0.8, 1.8], [2.8, 4.8]])
    f = rect_factors(level_tree((2, 2), levels), np.ones(5))
    var, _, _ = rect_moments(f, [0, 1, 0], [1, 2, 2], [0, 1, 0], [1, 2, 1])
    np.testing.assert_allclose(var, [0.8, 0.8, 1.2])


def test_gls_hand_worked_4x4_three_levels():
    """A 4 x 4 grid under b = 2: the root (63), its quadrants (15, 5 / 20, 3) and the 16
    cells, all with variance 1 (Hay et al. 2010's two passes, fan-out k = 4). Up: a
    quadrant (height 2) is ``z = 12/15 y + 3/15 S``: top-left 12 + 10/5 = 14, top-right
    4 + 0 = 4, bottom-left 16 + 4 = 20, bottom-right 12/5 + 8/5 = 4 (sum 42); the root
    (height 3) is ``48/63 y + 15/63 * 42 = 48 + 10 = 58``. Down: each quadrant gains
    ``(58 - 42) / 4 = 4`` (18, 8, 24, 8) and each cell a quarter of its quadrant's gap
    to the cells' sum: +2, +2, +1, +0. Variances: the total 1 / (1 + 5/16) = 16/21; the
    top-left quadrant ``17/21 z_A - 4/21 (z_B + z_C + z_D) + 4/21 y_0`` with ``var z =
    4/5``: (4/5)(289 + 48)/441 + 16/441 = 68/105; a cell its own weight 83/105."""
    levels = hierarchy_edges((4, 4), 2)
    cells = np.array([[1, 2, 0, 0], [3, 4, 0, 0], [5, 5, 2, 2], [5, 5, 2, 2]], dtype=float)
    values = [np.array([[63.0]]), np.array([[15.0, 5.0], [20.0, 3.0]]), cells]
    est = level_gls(levels, values, [1.0, 1.0, 1.0])
    expect = np.array([[3, 4, 2, 2], [5, 6, 2, 2], [6, 6, 2, 2], [6, 6, 2, 2]], dtype=float)
    np.testing.assert_allclose(est, expect, atol=1e-12)
    tree = level_tree((4, 4), levels)  # the same least squares on the generic tree
    y = np.array([values[int(np.log2(4 // (r1 - r0)))][r0 // (r1 - r0), c0 // (r1 - r0)]
                  for r0, r1, c0 in zip(tree.r0, tree.r1, tree.c0, strict=True)])  # fmt: skip
    node = gls(tree.first_child, tree.n_children, y, np.ones(21))
    assert node[0] == pytest.approx(58)
    quads = (tree.r1 - tree.r0) == 2
    assert sorted(zip(tree.r0[quads], tree.c0[quads], node[quads].round(9), strict=True)) == [
        (0, 0, 18), (0, 2, 8), (2, 0, 24), (2, 2, 8)
    ]  # fmt: skip
    leaves = tree.leaves
    np.testing.assert_allclose(node[leaves], expect[tree.r0[leaves], tree.c0[leaves]])
    var, _, _ = rect_moments(rect_factors(tree, np.ones(21)), [0, 0, 0], [4, 2, 1],
                             [0, 0, 0], [4, 2, 1])  # fmt: skip
    np.testing.assert_allclose(var, [16 / 21, 68 / 105, 83 / 105], rtol=1e-12)


def test_rectangle_prefix_sums_hand_worked_4x4():
    """The estimate above: ``P[i, j]`` sums rows ``< i`` and columns ``< j`` (rows 3 7 9
    11 / 8 18 22 26 / 14 30 36 42 / 20 42 50 58); a rectangle is four lookups, e.g. rows
    1-2 x columns 1-2 = P[3,3] - P[1,3] - P[3,1] + P[1,1] = 36 - 9 - 14 + 3 = 16."""
    est = np.array([[3, 4, 2, 2], [5, 6, 2, 2], [6, 6, 2, 2], [6, 6, 2, 2]])
    p = prefix2d(est)
    assert p.dtype == np.int64 and p[0].tolist() == [0] * 5 and p[:, 0].tolist() == [0] * 5
    assert p[1:, 1:].tolist() == [[3, 7, 9, 11], [8, 18, 22, 26], [14, 30, 36, 42],
                                  [20, 42, 50, 58]]  # fmt: skip
    r0, r1, c0, c1 = [1, 2, 0, 0, 3, 2], [3, 4, 4, 1, 3, 4], [1, 0, 3, 0, 0, 1], [3, 2, 4, 1, 4, 1]
    assert rect_totals(p, r0, r1, c0, c1).tolist() == [16, 24, 8, 3, 0, 0]


@pytest.mark.parametrize("shape,b", [((5, 3), 2), ((7, 6), 3), ((4, 4), 2), ((9, 2), 4)])
def test_rect_moments_equal_dense_gls(shape, b):
    rng = np.random.default_rng(sum(shape) * b)
    tree = level_tree(shape, hierarchy_edges(shape, b))
    var = rng.uniform(0.5, 3.0, tree.n_nodes)
    var[0] = np.inf
    k4 = rng.uniform(0.0, 2.0, tree.n_nodes)
    rects = random_rects(shape, 60, rng)
    v, k, _ = rect_moments(rect_factors(tree, var, k4), *rects.T)
    expect = brute_moments(tree, var, k4, rects)
    np.testing.assert_allclose(v, expect[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k, expect[:, 1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", [0, INNER, OUTER])
def test_rect_moments_with_multi_cell_leaves(mode):
    rng = np.random.default_rng(mode + 7)
    tree = nested_grid_tree((9, 8), np.array([0, 4, 9]), np.array([0, 3, 8]),
                            np.array([2, 1, 3, 2]), np.array([1, 2, 2, 4]))  # fmt: skip
    var = rng.uniform(0.5, 3.0, tree.n_nodes)
    k4 = rng.uniform(0.0, 2.0, tree.n_nodes)
    est = rng.normal(size=tree.n_nodes)
    rects = random_rects((9, 8), 80, rng)
    v, k, e = rect_moments(rect_factors(tree, var, k4), *rects.T, mode=mode, est=est)
    expect = brute_moments(tree, var, k4, rects, mode)
    np.testing.assert_allclose(v, expect[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k, expect[:, 1], rtol=1e-10, atol=1e-12)
    if mode == 0:  # the estimate of a rectangle from consistent node estimates
        y = rng.normal(size=tree.n_nodes)
        node = gls(tree.first_child, tree.n_children, y, var)
        leaves = tree.leaves
        cells = paint((9, 8), tree.r0[leaves], tree.r1[leaves], tree.c0[leaves], tree.c1[leaves],
                      node[leaves])  # fmt: skip
        _, _, e = rect_moments(rect_factors(tree, var, k4), *rects.T, est=node)
        np.testing.assert_allclose(e, rect_totals(prefix2d(cells), *rects.T), atol=1e-9)


@pytest.mark.parametrize("shape,b", [((13, 7), 3), ((8, 8), 2), ((5, 16), 4)])
def test_level_gls_equals_generic_gls(shape, b):
    rng = np.random.default_rng(b)
    levels = hierarchy_edges(shape, b)
    variances = [np.inf, *list(rng.uniform(0.5, 2.0, len(levels) - 1))]
    values = [None] + [rng.normal(size=(r.size - 1, c.size - 1)) for r, c in levels[1:]]
    fast = level_gls(levels, values, variances)
    tree = level_tree(shape, levels)
    offsets = np.cumsum([0] + [(r.size - 1) * (c.size - 1) for r, c in levels])
    y = np.zeros(tree.n_nodes)
    var = np.zeros(tree.n_nodes)
    for k, ((re, ce), vals) in enumerate(zip(levels, values, strict=True)):
        nodes = np.arange(offsets[k], offsets[k + 1])
        var[nodes] = variances[k]
        if vals is not None:
            y[nodes] = vals[
                np.searchsorted(re, tree.r0[nodes]), np.searchsorted(ce, tree.c0[nodes])
            ]
    node = gls(tree.first_child, tree.n_children, y, var)
    cells = np.zeros(shape)
    cells[tree.r0[tree.leaves], tree.c0[tree.leaves]] = node[tree.leaves]
    np.testing.assert_allclose(fast, cells, atol=1e-10)


def test_grid_and_leaves_trees():
    tree = grid_tree((4, 6), np.array([0, 3, 4]), np.array([0, 2, 6]))
    assert tree.n_nodes == 5 and tree.n_children[0] == 4
    assert tree_from_levels((3, 3), []).n_nodes == 1


def test_hb2d_branching_follows_the_rule():
    """``b (n - 1) ceil(log_b n)**2`` is smallest at b = 7 for n = 256 (7 * 255 * 9 =
    16065 < 4 * 255 * 16 = 16320) and b = 8 for n = 4096 (8 * 16 < 4 * 36)."""
    assert hb2d_branching((256, 256)) == 7
    assert hb2d_branching((4096, 4096)) == 8
    assert hb2d_branching((1, 1)) == 2


def test_grid_haar_hand_worked_2x2():
    x = np.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(grid_haar_forward(x), [[10, -2], [-4, 0]])
    np.testing.assert_allclose(grid_haar_inverse(grid_haar_forward(x), (2, 2)), x)
    assert grid_haar_sensitivity((2, 2)) == 4


@pytest.mark.parametrize("shape", [(5, 3), (8, 8), (1, 6), (7, 1)])
def test_grid_haar_sensitivity_is_the_column_norm(shape):
    """Brute force: the transform of every unit cell changes exactly (m_r+1)(m_c+1)
    coefficients by +-1, and the inverse undoes the forward transform."""
    n = shape[0] * shape[1]
    norms = set()
    for k in range(n):
        e = np.zeros(n, dtype=np.int64)
        e[k] = 1
        c = grid_haar_forward(e.reshape(shape))
        assert set(np.unique(np.abs(c))) <= {0, 1}
        norms.add(int(np.abs(c).sum()))
        np.testing.assert_allclose(grid_haar_inverse(c, shape), e.reshape(shape), atol=1e-12)
    assert norms == {grid_haar_sensitivity(shape)}


def test_hilbert_order_walks_between_neighbours():
    for side in (2, 4, 16):
        order = hilbert_order((side, side))
        i, j = np.divmod(order, side)
        assert (np.abs(np.diff(i)) + np.abs(np.diff(j)) == 1).all()
    order = hilbert_order((5, 7))
    assert np.array_equal(np.sort(order), np.arange(35))


def test_quad_layout_children():
    layout = QuadLayout((3, 5))
    r0, r1, c0, c1, _parent = layout.children(*layout.root())
    assert list(zip(r0, r1, c0, c1, strict=True)) == [
        (0, 2, 0, 3),
        (0, 2, 3, 5),
        (2, 3, 0, 3),
        (2, 3, 3, 5),
    ]
    kids = layout.children(np.array([2]), np.array([3]), np.array([3]), np.array([5]))
    assert kids[0].size == 2 and layout.n_children(*layout.root()).tolist() == [4]
