"""The level-by-level cut and pruned tree against the full-layout references."""

from __future__ import annotations

import numpy as np
import pytest

from dphist._numeric.posterior import tree_factors
from dphist._numeric.pruned import frontier_cells, level_children, prune, s2_cut
from dphist._numeric.tree import best_cut, consistency, frontiers, gls, is_cut, tree_layout
from dphist.errors import ValidationError
from dphist.uncertainty import layout_tree

SHAPES = [(1, 2), (2, 2), (5, 2), (16, 4), (17, 4), (100, 3), (257, 16), (1000, 8)]


def s2_costs(layout, y, sigma1, level_var):
    """S2+H's node costs on the full layout, straight from the definition."""
    lo, hi = layout.lo, layout.hi
    cost = np.empty(layout.n_nodes)
    for v in range(layout.n_nodes):
        seg = y[lo[v] : hi[v]]
        sse = float(((seg - seg.mean()) ** 2).sum())
        length = hi[v] - lo[v]
        cost[v] = sse - (length - 1) * sigma1 + level_var[layout.level[v]] / length
    return cost


def random_cut(layout, rng, p_stop):
    """A random cut: walk down, stopping at each node with probability ``p_stop``."""
    cut = np.zeros(layout.n_nodes, dtype=bool)
    stack = [0]
    while stack:
        v = stack.pop()
        k = layout.n_children[v]
        if k == 0 or rng.random() < p_stop:
            cut[v] = True
        else:
            stack.extend(range(layout.first_child[v], layout.first_child[v] + k))
    return cut


@pytest.mark.parametrize(("n", "f"), SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_s2_cut_equals_best_cut_of_the_definition(n, f, seed):
    rng = np.random.default_rng(seed)
    layout = tree_layout(n, f)
    # piecewise-constant counts plus noise: both coarse and fine cuts occur
    y = np.repeat(rng.integers(0, 50, 8), -(-n // 8))[:n] + rng.laplace(0, 3, n)
    sigma1 = 18.0
    level_var = rng.uniform(5, 40, layout.n_levels)
    expected = best_cut(layout, s2_costs(layout, y, sigma1, level_var))
    got = s2_cut(layout, y, sigma1, level_var)
    assert is_cut(layout, got)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("n", "f"), SHAPES)
def test_level_children_match_the_layout(n, f):
    layout = tree_layout(n, f)
    for lev in range(layout.n_levels):
        np.testing.assert_array_equal(
            level_children(layout, lev), layout.n_children[layout.level_slice(lev)]
        )


@pytest.mark.parametrize(("n", "f"), SHAPES)
@pytest.mark.parametrize("p_stop", [0.0, 0.3, 1.0])
def test_pruned_tree_frontiers_and_factors_match_the_full_layout(n, f, p_stop):
    rng = np.random.default_rng(n + f)
    layout = tree_layout(n, f)
    cut = random_cut(layout, rng, p_stop)
    tree = prune(layout, cut)
    index = {(layout.lo[v], layout.hi[v], layout.level[v]): v for v in range(layout.n_nodes)}
    ids = np.array([index[k] for k in zip(tree.lo, tree.hi, tree.level, strict=True)])
    full = frontiers(layout, cut)
    mine = frontier_cells(tree, layout.n_levels)
    assert len(mine) == len(full)
    for a, b in zip(mine, full, strict=True):
        np.testing.assert_array_equal(tree.lo[a], layout.lo[b])
        np.testing.assert_array_equal(tree.hi[a], layout.hi[b])
    # the pruned nodes are the layout's nodes not strictly inside a cut node: the cells
    assert sorted(ids) == sorted(set(np.concatenate(full).tolist()))
    np.testing.assert_array_equal(tree.cut, cut[ids])
    # consistency on the pruned tree = consistency on the full layout with the nodes
    # inside the cut unmeasured (they carry no information)
    var = rng.uniform(1, 5, tree.size)
    y = rng.normal(0, 10, tree.size)
    est, post = gls(tree.first_child, tree.n_children, y, var, return_var=True)
    y_full = np.full(layout.n_nodes, np.nan)
    var_full = np.full(layout.n_nodes, np.inf)
    y_full[ids], var_full[ids] = y, var
    ref, ref_post = consistency(layout, y_full, var_full, return_var=True)
    np.testing.assert_allclose(est[tree.cut], ref[ids][tree.cut], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(post[tree.cut], ref_post[ids][tree.cut], rtol=1e-9)
    # the error model's factors equal the full layout's
    ptr, kids = tree.csr()
    mine_f = tree_factors(n, tree.lo, tree.hi, ptr, kids, var)
    node_var = np.full(layout.n_nodes, np.inf)
    node_var[ids] = var
    ref_f = layout_tree(layout, node_var, leaves=cut)
    np.testing.assert_allclose(mine_f.phi, ref_f.phi)
    np.testing.assert_allclose(mine_f.w[0], ref_f.w[0])


def test_prune_refuses_a_mask_that_is_not_a_cut():
    layout = tree_layout(16, 4)
    cut = np.zeros(layout.n_nodes, dtype=bool)
    cut[1] = True  # one child of the root only
    with pytest.raises(ValidationError):
        prune(layout, cut)
