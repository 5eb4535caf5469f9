"""Hierarchical group-size (count-of-counts) histograms under epsilon-DP.

Kuo, Chiu, Kifer, Hay, Machanavajjhala, *Differentially Private Hierarchical
Count-of-Counts Histograms*, PVLDB 11(11) 2018 (arXiv:1804.00370). For every region
of a public hierarchy, release how many groups have each size, as non-negative
integers that match the public group counts and add up from children to parents.

>>> from dphist import groupsize as gs
>>> h = gs.Hierarchy.from_fanouts([[2]])              # a root with two leaves
>>> data = gs.GroupSizeData.from_leaf_sizes(h, [[1, 1, 2], [1, 3]])
>>> rel = gs.publish_group_sizes(data, epsilon=1.0, method="ranked", rng=0)
>>> [int(h.sum()) for h in rel.histograms], rel.private
([5, 3, 2], False)
"""

from __future__ import annotations

from .consistency import sum_children, top_down
from .estimators import ESTIMATORS, cumulative_estimate, naive_estimate, ranked_estimate
from .evaluate import emd, level_emds, node_emds, omniscient, select_private, total_cost
from .generate import housing
from .hierarchy import GroupSizeData, Hierarchy
from .publish import DEFAULT_K, GroupSizeRelease, publish_group_sizes

__all__ = [
    "DEFAULT_K",
    "ESTIMATORS",
    "GroupSizeData",
    "GroupSizeRelease",
    "Hierarchy",
    "cumulative_estimate",
    "emd",
    "housing",
    "level_emds",
    "naive_estimate",
    "node_emds",
    "omniscient",
    "publish_group_sizes",
    "ranked_estimate",
    "run_demo",
    "select_private",
    "sum_children",
    "top_down",
    "total_cost",
]


def run_demo(
    n_groups: int = 200_000,
    *,
    epsilon: float = 1.0,
    methods: tuple[str, ...] = ("cumulative", "ranked"),
    K: int = 2_000,
    seed: int = 0,
) -> list[dict[str, object]]:
    """Rows of a summary table for the command line: mean EMD per level, per method.

    Synthetic housing data (``housing``, 3 levels, ``m0 = 1``); each method is run
    with seeded (not private) noise, with and without the weighted merge, and next to
    the omniscient reference (spec §8.1; its EMD on the true support, the unit of
    the other rows). Each row: ``method``, ``merge``, ``level``, ``emd``, ``epsilon``
    (total) and ``seconds``.
    """
    data = housing(n_groups, n_counties=max(52, min(3_200, n_groups // 300)), seed=seed)
    rows: list[dict[str, object]] = []
    ref = omniscient(data, epsilon=epsilon, trials=3, rng=seed)["simulated_emd"]
    for lev, e in enumerate(ref):
        rows.append(
            {"method": "omniscient", "merge": "-", "level": lev, "emd": float(e), "seconds": 0.0}
        )
    for method in methods:
        for merge in ("weighted", "mean"):
            rel = publish_group_sizes(
                data, epsilon=epsilon, method=method, K=K, m0=1, merge=merge, rng=seed
            )
            secs = sum(rel.timings.values())
            for lev, e in enumerate(level_emds(data, rel)):
                rows.append(
                    {
                        "method": method,
                        "merge": merge,
                        "level": lev,
                        "emd": float(e),
                        "epsilon": float(rel.epsilon),
                        "seconds": secs,
                    }
                )
    return rows
