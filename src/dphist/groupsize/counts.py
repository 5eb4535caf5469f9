"""Private group counts made consistent and whole (spec §7.9 steps 2-3).

The noisy number of groups of every region becomes counts ``G_r`` that a release can
state: whole numbers, never negative, every parent the sum of its children. Two steps,
both post-processing of released values and the public hierarchy:

1. **Non-negative least squares** over the tree: ``min sum_r w_r (g_r - noisy_r)**2``
   over leaf counts ``x >= 0`` with ``g_r`` the sum of ``r``'s leaves (spec §7.9
   step 2; one number per region, so a small bounded least-squares problem, solved by
   :func:`scipy.optimize.lsq_linear`). ``w_r`` is the inverse noise variance of ``r``'s
   level (all 1 when the levels share the budget equally).
2. **Rounding top-down** (step 3, which the paper leaves open): the root's fit rounded
   to a whole number; each parent's whole count shared among its children in
   proportion to their fits by largest remainders (evenly when their fits are all 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._numeric.group_views import largest_remainder
from ..errors import ValidationError
from .hierarchy import Hierarchy

__all__ = ["consistent_counts"]


def _leaf_matrix(h: Hierarchy) -> object:
    """Sparse (regions x leaves) 0/1 matrix: which leaves each region holds."""
    from scipy.sparse import csr_matrix

    n_leaves = h.n_nodes - h.first_leaf
    rows, cols = [], []
    for j in range(n_leaves):  # each leaf up its path: regions, not groups
        node = h.first_leaf + j
        while node >= 0:
            rows.append(node)
            cols.append(j)
            node = int(h.parent[node])
    data = np.ones(len(rows))
    return csr_matrix((data, (rows, cols)), shape=(h.n_nodes, n_leaves))


def consistent_counts(
    hierarchy: Hierarchy, noisy: Sequence[float], level_variance: Sequence[float] | None = None
) -> np.ndarray:
    """Whole, non-negative, consistent group counts of every region (module doc).

    ``noisy[r]`` is region ``r``'s noisy count; ``level_variance[l]`` the noise
    variance of level ``l`` (default: equal). Returns ``int64``, one per region.
    """
    from scipy.optimize import lsq_linear

    h = hierarchy
    y = np.asarray(noisy, dtype=np.float64)
    if y.shape != (h.n_nodes,):
        raise ValidationError(f"need one noisy count per region ({h.n_nodes})")
    var = np.ones(h.n_levels) if level_variance is None else np.asarray(level_variance, float)
    w = 1.0 / np.sqrt(var[h.level])
    a = _leaf_matrix(h)
    fit = lsq_linear(a.multiply(w[:, None]).tocsr(), y * w, bounds=(0.0, np.inf)).x
    fitted = np.asarray(a @ fit, dtype=np.float64)
    out = np.zeros(h.n_nodes, dtype=np.int64)
    out[0] = max(int(np.floor(fitted[0] + 0.5)), 0)
    for r in range(h.first_leaf):  # internal regions, top-down (breadth-first order)
        kids = h.children(r)
        share = np.maximum(fitted[kids], 0.0)
        total = float(share.sum())
        quota = share * (out[r] / total) if total > 0 else np.full(kids.size, out[r] / kids.size)
        out[kids] = largest_remainder(quota, int(out[r]))
    return out
