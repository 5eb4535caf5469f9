"""Kellaris et al.'s printed facts (schemes, Table 1 classes, Table 2, Figs 11-14 skylines)
and the analysis of our result tables that the report and the claims share (skylines,
best and worst schemes, run times)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...plot import pareto_front
from .. import experiments as ex

__all__ = [
    "LARGE",
    "MM",
    "PAPER_COMPLEXITY",
    "PAPER_FRONTS",
    "PAPER_TABLE2",
    "QUERIES",
    "REFERENCE",
    "REF_SCHEMES",
    "REF_TAG",
    "R_PERCENT",
    "SCHEMES",
    "SMALL",
    "SWEEP",
    "TOP",
    "balance_winners",
    "best_scheme",
    "certified_table",
    "complexity_time_table",
    "fmt_set",
    "jaccard",
    "mean_jaccard",
    "mean_seconds",
    "paper_noise_table",
    "seconds_by_data",
    "skyline_counts",
    "skyline_front",
    "summary_table",
    "worst_scheme",
]  # fmt: skip

SCHEMES = (
    "S1",
    "S~",
    "S2",
    "O+S1",
    "O+S~",
    "O+S2",
    "S1+MM",
    "S~+MM",
    "S2+MM",
    "S1+PMM",
    "S~+PMM",
    "S2+PMM",
    "H",
    "S1+H",
    "S2+H",
)
MM = ("S1+MM", "S~+MM", "S2+MM")
#: The group representatives chosen in §7.3.
TOP = ("S~", "O+S~", "S1+PMM", "H", "S2+H")

#: Schemes also run with DAWA's published partition noise (``noise="reference"``, not
#: epsilon-DP; releases are marked ``private=False``). Those with the full candidate
#: family (S1, O+S1, S1+MM, S1+PMM) are left out: the reference noise there draws one
#: noise per candidate group, O(N^2), about 28 s per run at 4,096 bins.
REF_SCHEMES = ("S~", "O+S~", "S~+MM", "S~+PMM", "S1+H")
REFERENCE = {"noise": "reference"}
#: Suffix naming a reference-noise run in tables (not private).
REF_TAG = " [ref]"

#: Table 1's time complexities as (power of N, power of log N), for a time axis in the
#: paper's complexity classes.
PAPER_COMPLEXITY: dict[str, tuple[int, int]] = {
    "S1": (2, 1),
    "S~": (1, 2),
    "S2": (2, 0),
    "O+S1": (2, 1),
    "O+S~": (1, 2),
    "O+S2": (2, 0),
    "S1+MM": (3, 1),
    "S~+MM": (3, 1),
    "S2+MM": (3, 1),
    "S1+PMM": (2, 1),
    "S~+PMM": (2, 1),
    "S2+PMM": (2, 1),
    "H": (1, 0),
    "S1+H": (1, 1),
    "S2+H": (1, 0),
}

SMALL, LARGE = 0.01, 1.0
SWEEP = (0.01, 0.05, 0.1, 0.5, 1.0)
R_PERCENT = (1, 2, 4, 8, 16, 32, 64)
QUERIES = {"point": "point_mse", "interval": "interval_mse"}

#: Skylines of §7.2 (Figs 3-10) as stated in the text: (dataset, ε, queries) -> schemes.
PAPER_FRONTS: dict[tuple[str, float, str], frozenset[str]] = {
    ("Rome", SMALL, "point"): frozenset({"S~", "S1+H", "S2+H"}),
    ("Rome", SMALL, "interval"): frozenset({"S1", "S2", "S2+H"}),
    ("Rome", LARGE, "point"): frozenset({"S~", "O+S~", "H"}),
    ("Rome", LARGE, "interval"): frozenset({"S1+PMM", "S2+H"}),
    ("Log", SMALL, "point"): frozenset({"S1+H", "S2+H"}),
    ("Log", SMALL, "interval"): frozenset({"S1+H", "S2+H"}),
    ("Log", LARGE, "point"): frozenset({"S~", "O+S~", "S2+H"}),
    ("Log", LARGE, "interval"): frozenset({"S2+H"}),
    ("Citations", SMALL, "point"): frozenset({"S~", "S1+H", "S2+H"}),
    ("Citations", SMALL, "interval"): frozenset({"S~", "S2+H"}),
    ("Citations", LARGE, "point"): frozenset({"S~", "S1+H", "S2+H"}),
    ("Citations", LARGE, "interval"): frozenset({"S1", "S~+PMM", "S1+H", "S2+H"}),
    ("PUMS", SMALL, "point"): frozenset({"S~", "O+S~", "S2+H"}),
    ("PUMS", SMALL, "interval"): frozenset({"S1+PMM", "S~+PMM", "S2+H"}),
    ("PUMS", LARGE, "point"): frozenset({"S~", "O+S~", "S2+H"}),
    ("PUMS", LARGE, "interval"): frozenset({"S2+H"}),
}

#: Table 2: skyline appearances per scheme over the 16 settings.
PAPER_TABLE2: dict[str, int] = {
    name: sum(name in front for front in PAPER_FRONTS.values()) for name in SCHEMES
}


# --------------------------------------------------------------------------- analysis


def summary_table(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, float, str, str], dict]:
    """(dataset label, ε, metric label, method) -> summary with value and seconds.

    Reference-noise runs are keyed by the scheme name with :data:`REF_TAG` appended.
    """
    out = {}
    by = ("dataset", "epsilon", "label", "method", "params", "n")
    for s in ex.summarise(rows, by=by):
        params = json.loads(s["params"]) if s["params"] else {}
        name = s["method"] + (REF_TAG if params.get("noise") == "reference" else "")
        out[(s["dataset"], s["epsilon"], s["label"], name)] = {**s, "method": name}
    return out


def certified_table(table: Mapping) -> dict:
    """The table without the reference-noise runs (what dphist publishes)."""
    return {k: v for k, v in table.items() if not k[3].endswith(REF_TAG)}


def paper_noise_table(table: Mapping) -> dict:
    """The table with each reference-noise run standing in for its certified scheme."""
    out = certified_table(table)
    for (d, e, m, name), s in table.items():
        if name.endswith(REF_TAG):
            base = name[: -len(REF_TAG)]
            out[(d, e, m, base)] = {**s, "method": base}
    return out


def complexity_time_table(table: Mapping, sizes: Mapping[str, int]) -> dict:
    """The table with each run's time replaced by its Table 1 class evaluated at N.

    ``N^a log2(N)^b`` steps at a nominal 10^9 steps per second: a skyline on it is the
    paper's time axis up to constants.
    """
    out = {}
    for (d, e, m, name), s in table.items():
        a, b = PAPER_COMPLEXITY[name]
        n = sizes[d]
        out[(d, e, m, name)] = {**s, "seconds": float(n) ** a * math.log2(n) ** b * 1e-9}
    return out


def skyline_front(
    table: Mapping, label: str, eps: float, metric: str
) -> tuple[frozenset[str], list]:
    cells = [
        s
        for (d, e, m, _), s in table.items()
        if d == label and math.isclose(e, eps) and m == metric and s["runs"] > 0
    ]
    if not cells:
        return frozenset(), []
    x = np.array([max(s["seconds"], 1e-9) for s in cells])
    y = np.array([s["value"] for s in cells])
    mask = pareto_front(x, y)
    return frozenset(c["method"] for c, on in zip(cells, mask, strict=True) if on), cells


def best_scheme(
    table: Mapping, label: str, eps: float, metric: str, among: Sequence[str]
) -> str | None:
    vals = {
        m: table[(label, eps, metric, m)]["value"]
        for m in among
        if (label, eps, metric, m) in table and table[(label, eps, metric, m)]["runs"] > 0
    }
    return min(vals, key=vals.get) if vals else None


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def fmt_set(s: frozenset[str]) -> str:
    return ", ".join(x for x in SCHEMES if x in s) or "–"


def skyline_counts(data, table) -> dict[str, int]:
    """Skyline appearances per scheme over the (data, ε, point/interval) settings."""
    counts = dict.fromkeys(SCHEMES, 0)
    for d in data:
        for eps in (SMALL, LARGE):
            for metric in QUERIES.values():
                for m in skyline_front(table, d.spec.label, eps, metric)[0]:
                    counts[m] += 1
    return counts


def mean_jaccard(data, table) -> float:
    """Mean Jaccard similarity of our skylines with the paper's over the settings."""
    return float(
        np.mean(
            [
                jaccard(
                    skyline_front(table, d.spec.label, eps, metric)[0],
                    PAPER_FRONTS[(d.paper, eps, kind)],
                )
                for d in data
                for eps in (SMALL, LARGE)
                for kind, metric in QUERIES.items()
            ]
        )
    )


def worst_scheme(table, label, eps, metric, among) -> str | None:
    vals = {m: ex.summary_value(table, label, eps, metric, m) for m in among}
    vals = {m: v for m, v in vals.items() if math.isfinite(v)}
    return max(vals, key=vals.get) if vals else None


def balance_winners(table, data, r_values) -> list[str | None]:
    out = []
    for d in data:
        for eps in (SMALL, LARGE):
            worst_ratio = {}
            for m in TOP:
                ratios = []
                for r in r_values:
                    label = ex.metric("range_pct_mse", r=r).label
                    best = best_scheme(table, d.spec.label, eps, label, TOP)
                    if best is None:
                        continue
                    ratios.append(
                        ex.summary_value(table, d.spec.label, eps, label, m)
                        / ex.summary_value(table, d.spec.label, eps, label, best)
                    )
                if ratios and all(math.isfinite(x) for x in ratios):
                    worst_ratio[m] = max(ratios)
            out.append(min(worst_ratio, key=worst_ratio.get) if worst_ratio else None)
    return out


def mean_seconds(table) -> dict[str, float]:
    acc: dict[str, list[float]] = {}
    for (_, _, metric, method), s in table.items():
        if metric == "point_mse" and s["runs"]:
            acc.setdefault(method, []).append(s["seconds"])
    return {m: float(np.mean(v)) for m, v in acc.items()}


def seconds_by_data(table) -> dict[tuple[str, str], float]:
    acc: dict[tuple[str, str], list[float]] = {}
    for (label, _, metric, method), s in table.items():
        if metric == "point_mse" and s["runs"]:
            acc.setdefault((label, method), []).append(s["seconds"])
    return {k: float(np.mean(v)) for k, v in acc.items()}
