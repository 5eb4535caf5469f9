"""Top-down consistency of a hierarchy of group-size estimates (Kuo et al. 2018, §5).

Algorithm 1 of the group-size spec (§7.2) on released per-region estimates:

1. per-size variances of every region's estimate (§7.3: ``c / (eps_l**2 * Ĥ[i])`` with
   ``c`` = 2 ranked, 4 cumulative, 8 naive; under zCDP ``m v_l / Ĥ[i]`` from the
   Gaussian variance ``v_l`` of one noisy cell, ``m`` = 2 cumulative, 1 otherwise);
2. level by level from the root: optimal matching of a parent's (merged) groups to
   its children's groups (Algorithm 2, proportional sharing with largest-remainder
   rounding, §7.4), inverse-variance merge of each matched pair and rounding (§7.5);
   the merged sizes and pooled variances of a child are the parent side one level
   down;
3. leaves' merged histograms are released; each internal region's release is the sum
   of its children's (back-substitution, §7.6).

Outputs are integral, non-negative, have each region's public group count and every
parent equals the sum of its children (spec §2.2), by construction. Everything here is
post-processing: no data, no budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._numeric.group_views import size_variances
from .._numeric.matching import match_groups, merge_matching
from ..errors import ValidationError
from .estimators import trim
from .hierarchy import Hierarchy

__all__ = ["sum_children", "top_down"]


def sum_children(hierarchy: Hierarchy, leaf_hists: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Releases of all regions from the leaves' histograms, summed bottom-up (§7.6).

    Histograms keep their own (trimmed) lengths: O(sum of lengths), no dense
    regions-by-sizes table.
    """
    m, first = hierarchy.n_nodes, hierarchy.first_leaf
    if len(leaf_hists) != m - first:
        raise ValidationError(f"need one histogram per leaf ({m - first})")
    out: list[np.ndarray | None] = [None] * m
    for j, h in enumerate(leaf_hists):
        out[first + j] = trim(np.asarray(h, dtype=np.int64))
    for j in range(m - 1, 0, -1):  # regions, not groups
        p = int(hierarchy.parent[j])
        h = out[j]
        acc = out[p]
        if acc is None:
            out[p] = h.copy()
        else:
            if acc.shape[0] < h.shape[0]:
                acc = np.concatenate((acc, np.zeros(h.shape[0] - acc.shape[0], dtype=np.int64)))
            acc[: h.shape[0]] += h
            out[p] = acc
    return [trim(h) for h in out]  # type: ignore[arg-type]


def top_down(
    hierarchy: Hierarchy,
    estimates: Sequence[np.ndarray],
    methods: Sequence[str],
    level_epsilon: Sequence[float],
    *,
    rule: str = "weighted",
    cell_variance: Sequence[float] | None = None,
) -> list[np.ndarray]:
    """Algorithm 1's post-processing: consistent integer histograms for every region.

    ``estimates[r]``: region ``r``'s released histogram (sum = its group count);
    ``methods[l]`` and ``level_epsilon[l]``: the estimator and budget of level ``l``
    (they set the variance heuristic); ``rule``: "weighted" (inverse-variance, the
    method) or "mean" (plain average, the paper's baseline). ``cell_variance[l]``: the
    noise variance of one measured cell of level ``l``, when it is not Laplace noise of
    the level's epsilon (Gaussian noise under zCDP). With one level the root
    estimate is returned. Cost: one matching per internal region, O(D log D) in the
    number D of occupied (region, size) cells.
    """
    h = hierarchy
    if len(estimates) != h.n_nodes:
        raise ValidationError(f"need one estimate per region ({h.n_nodes})")
    est = [trim(np.asarray(e, dtype=np.int64)) for e in estimates]
    if h.n_levels == 1:
        return [est[0]]
    cells = [None] * h.n_levels if cell_variance is None else list(cell_variance)
    var = [
        size_variances(
            est[r],
            float(level_epsilon[h.level[r]]),
            method=methods[h.level[r]],
            cell_variance=cells[h.level[r]],
        )
        for r in range(h.n_nodes)
    ]
    cur_hist: dict[int, np.ndarray] = {0: est[0]}
    cur_var: dict[int, np.ndarray] = {0: var[0]}
    for r in range(h.first_leaf):  # internal regions, top-down (breadth-first order)
        kids = h.children(r).tolist()
        parent_hist = cur_hist.pop(r)
        parent_var = cur_var.pop(r)
        match = match_groups(parent_hist, [est[c] for c in kids])
        merged = merge_matching(match, parent_var, [var[c] for c in kids], rule=rule)
        for c, m in zip(kids, merged, strict=True):
            t = trim(m.hist)
            cur_hist[c] = t
            cur_var[c] = m.variance[: t.shape[0]]
    leaves = [cur_hist[j] for j in range(h.first_leaf, h.n_nodes)]
    return sum_children(h, leaves)
