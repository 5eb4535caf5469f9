"""Two-dimensional hierarchies held level by level: their branching and least squares.

A hierarchy over a ``rows x cols`` grid (:func:`~dphist._numeric.rect_tree.hierarchy_edges`)
has, on each level, a grid whose cells are the level's nodes; a node's children are the
block of the next level's cells inside it. Least squares then needs no node list: the
up pass sums each block (``np.add.reduceat`` twice), the down pass repeats each parent
over its block. At 4,096 x 4,096 cells and branching 2 that is 22 million nodes held as
a few arrays per level, with no per-node index arrays.

Post-processing of released values and public arithmetic only: no data, no noise.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ValidationError
from .rect_tree import expand_blocks, sum_blocks

__all__ = ["hb2d_branching", "level_gls"]


def _ceil_log(n: int, base: int) -> int:
    k, power = 0, 1
    while power < n:
        power *= base
        k += 1
    return k


def hb2d_branching(shape: tuple[int, int], noise: str = "laplace") -> int:
    """Qardaji, Yang, Li's branching for a 2-D hierarchy (PVLDB 2013, §5, as DPBench's
    HB2D reads it): with ``n = floor(sqrt(rows * cols))`` cells per side and
    ``h = ceil(log_b n)`` levels below the root, a rectangle query's variance grows as
    ``b (n - 1) h**2`` (about ``b n`` nodes touched per level, each with variance
    ``~h**2`` when epsilon is split evenly over the ``h`` levels); the smallest ``b`` in
    ``2 .. n`` minimising it. Under zCDP a node's variance grows as ``h``, not ``h**2``."""
    n = math.isqrt(int(shape[0]) * int(shape[1]))
    if n < 2:
        return 2
    power = 2 if noise == "laplace" else 1
    best, best_b = None, 2
    for b in range(2, n + 1):  # at most ~46,000 candidates (2**31 cells)
        v = b * (n - 1) * _ceil_log(n, b) ** power
        if best is None or v < best:
            best, best_b = v, b
    return best_b


def level_gls(
    levels: list[tuple[np.ndarray, np.ndarray]],
    values: list[np.ndarray | None],
    variances: list[float],
) -> np.ndarray:
    """Least-squares cell estimates from noisy totals of every node of a hierarchy.

    ``levels[l]`` are level ``l``'s row and column edges (root first, single cells
    last); ``values[l]`` its noisy node totals (a ``(rows_l, cols_l)`` array, None when
    the level is not measured) and ``variances[l]`` their noise variance (``inf``: not
    measured). Exact GLS (Hay et al. 2010's consistency with weights, the two passes of
    :func:`dphist._numeric.tree.gls`): up, ``z_v = (y_v / var_v + S_v / W_v) /
    (1 / var_v + 1 / W_v)`` with ``S_v, W_v`` the sums of the children's ``z, w``; down,
    ``est_c = z_c + (w_c / W_v)(est_v - S_v)``. Returns the cells, ``rows x cols``.
    """
    depth = len(levels)
    if not (len(values) == len(variances) == depth) or np.isinf(variances[-1]):
        raise ValidationError("every level needs a variance, and the cells must be measured")
    maps = [
        (
            np.searchsorted(levels[k + 1][0], levels[k][0]),
            np.searchsorted(levels[k + 1][1], levels[k][1]),
        )
        for k in range(depth - 1)
    ]
    z = [np.empty(0)] * depth
    w = [np.empty(0)] * depth
    z[-1] = np.asarray(values[-1], dtype=np.float64)
    w[-1] = np.full(z[-1].shape, float(variances[-1]))
    sums: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0), np.empty(0))] * depth
    for k in range(depth - 2, -1, -1):
        rows, cols = maps[k]
        s, big_w = (
            sum_blocks(z[k + 1], rows[:-1], cols[:-1]),
            sum_blocks(w[k + 1], rows[:-1], cols[:-1]),
        )
        sums[k] = (s, big_w)
        if np.isinf(variances[k]):
            z[k], w[k] = s, big_w
        else:
            p, q = 1.0 / float(variances[k]), 1.0 / big_w
            z[k] = (p * np.asarray(values[k], dtype=np.float64) + q * s) / (p + q)
            w[k] = 1.0 / (p + q)
    est = z[0]
    for k in range(depth - 1):
        rows, cols = maps[k]
        s, big_w = sums[k]
        gap = expand_blocks((est - s) / big_w, np.diff(rows), np.diff(cols))
        est = z[k + 1] + w[k + 1] * gap
        z[k], w[k] = np.empty(0), np.empty(0)  # free the level above
    return est
