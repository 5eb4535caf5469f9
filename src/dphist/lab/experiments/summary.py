"""Summaries of result rows: mean, spread and a lookup by cell."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...errors import ValidationError
from .scoring import Metric


def _metric_label(row: Mapping[str, Any]) -> str:
    args = json.loads(row["metric_args"]) if row["metric_args"] else {}
    return Metric(row["metric"], tuple(args.items())).label if args else row["metric"]


def summarise(
    rows: Iterable[Mapping[str, Any]],
    by: Sequence[str] = ("method", "dataset", "epsilon", "metric"),
    stat: str = "mean",
) -> list[dict[str, Any]]:
    """Aggregate rows over trials: one dict per distinct value of the ``by`` columns.

    ``by`` may name any column or ``"label"`` (the metric with its arguments,
    e.g. ``range_pct_mse(r=4)``). Each summary holds the ``by`` values, ``value`` and
    ``seconds`` (the ``stat`` over successful rows: ``"mean"`` or ``"median"``; NaN
    when none succeeded), ``runs`` (successful rows) and ``failures`` (rows with an
    error). Groups keep the order of first appearance.
    """
    if stat not in ("mean", "median"):
        raise ValidationError(f"stat must be 'mean' or 'median', got {stat!r}")
    reduce = statistics.fmean if stat == "mean" else statistics.median
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        values = tuple(_metric_label(row) if c == "label" else row[c] for c in by)
        groups.setdefault(values, []).append(row)
    out = []
    for values, members in groups.items():
        ok = [r for r in members if not r["error"]]
        out.append(
            {
                **dict(zip(by, values, strict=True)),
                "value": reduce([r["value"] for r in ok]) if ok else math.nan,
                "seconds": reduce([r["seconds"] for r in ok]) if ok else math.nan,
                "runs": len(ok),
                "failures": len(members) - len(ok),
            }
        )
    return out


def summary_index(
    rows: Iterable[Mapping[str, Any]],
    by: Sequence[str] = ("dataset", "epsilon", "label", "method"),
    stat: str = "mean",
) -> dict[tuple, dict[str, Any]]:
    """:func:`summarise` keyed by the tuple of the ``by`` values, for lookups."""
    return {tuple(s[k] for k in by): s for s in summarise(rows, by=by, stat=stat)}


def summary_value(index: Mapping[tuple, Mapping[str, Any]], *key: Any) -> float:
    """The summarised value at ``key``; NaN when the cell is missing or every run failed."""
    s = index.get(key)
    return s["value"] if s and s["runs"] else math.nan
