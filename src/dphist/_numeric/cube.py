"""DPCube in 1-D: the top-down split of noisy counts, and the least-squares mix of the
noisy counts with the parts' noisy totals.

Xiao, Xiong, Fan, Goryczka, Li, "DPCube: Differentially private histogram release
through multidimensional partitioning", Transactions on Data Privacy 7 (2014)
(the second phase of the two-phase kd-tree partitioning), in the 1-D form of DPBench
(Hay et al., SIGMOD 2016), and the paper's final estimate, which DPBench leaves out.
Post-processing of released values only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .bucketing import check_nonnegative, checked_prefix_sums, dpcube_kernel, reciprocals
from .segment import check_starts
from .tree import gls

__all__ = ["cube_least_squares", "cube_split", "cube_tree"]


def cube_split(y: npt.ArrayLike, *, gain: float) -> np.ndarray:
    """Start index of each part of DPCube's top-down partition of the values ``y``.

    A part ``B`` of two or more bins is split at the cut ``k`` with the smallest
    ``SSE(left) + SSE(right)`` (the first on ties) when that beats ``SSE(B)`` by more
    than ``gain``; both halves are then split the same way. DPCube weighs a cut
    against the noise of the extra part's total: ``gain`` is that noise's expected
    absolute value (``1/epsilon`` for Laplace noise). O(N * depth) time (O(N**2)
    worst case), O(N) memory.
    """
    _, p1, p2 = checked_prefix_sums(y)
    g = check_nonnegative("gain", gain, allow_inf=True)
    return dpcube_kernel(p1, p2, reciprocals(p1.shape[0] - 1), -np.inf, g)


def cube_tree(starts: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """The two-level tree of a partition of ``n`` bins with part starts ``starts``: an
    unmeasured root, the parts, then the bins, numbered in level order. Returns
    ``first_child, n_children`` (for :func:`~dphist._numeric.tree.gls`) and the
    nodes' intervals ``lo, hi``."""
    parts = starts.size
    sizes = np.diff(np.append(starts, n))
    bins = np.arange(n, dtype=np.int64)
    first_child = np.concatenate(([1], parts + 1 + starts, np.zeros(n, dtype=np.int64)))
    n_children = np.concatenate(([parts], sizes, np.zeros(n, dtype=np.int64)))
    lo = np.concatenate(([0], starts, bins))
    hi = np.concatenate(([n], starts + sizes, bins + 1))
    return first_child, n_children, lo, hi


def cube_least_squares(
    noisy: npt.ArrayLike,
    starts: npt.ArrayLike,
    totals: npt.ArrayLike,
    *,
    var_cells: float,
    var_parts: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares bin estimates from noisy bins and noisy part totals, with variances.

    Each bin ``i`` is observed as ``noisy[i]`` with variance ``var_cells``; each part
    (the bins from ``starts[g]`` to the next start) as ``totals[g]`` with variance
    ``var_parts``. The generalised least-squares estimate moves every bin of a part
    by the same share of the part's disagreement: with ``H`` the part's summed noisy
    bins and ``r = var_cells/var_parts``, ``noisy[i] + r (totals[g] - H)/(1 + |g| r)``;
    its variance is ``var_cells (1 - r/(1 + |g| r))``. Solved as exact GLS on the
    two-level tree (:func:`cube_tree`, :func:`~dphist._numeric.tree.gls`). O(N).
    """
    y = np.asarray(noisy, dtype=np.float64)
    if y.ndim != 1 or y.size < 1 or not np.all(np.isfinite(y)):
        raise ValidationError("noisy must be a non-empty 1-D array of finite numbers")
    n = y.size
    s = check_starts(starts, n)
    t = np.asarray(totals, dtype=np.float64)
    if t.shape != s.shape or not np.all(np.isfinite(t)):
        raise ValidationError(f"totals must hold one finite number per part ({s.size})")
    v_cells = check_nonnegative("var_cells", var_cells)
    v_parts = check_nonnegative("var_parts", var_parts)
    if v_cells <= 0 or v_parts <= 0:
        raise ValidationError("var_cells and var_parts must be positive")
    first_child, n_children, _, _ = cube_tree(s, n)
    values = np.concatenate(([0.0], t, y))
    var = np.concatenate(([np.inf], np.full(s.size, v_parts), np.full(n, v_cells)))
    est, post = gls(first_child, n_children, values, var, return_var=True)
    return est[s.size + 1 :], post[s.size + 1 :]
