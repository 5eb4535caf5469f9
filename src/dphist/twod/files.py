"""Files of a 2-D release: one row per cell (CSV or Parquet) or one JSON document.

A table holds ``row, col, row_label, col_label, estimate, stderr, lower, upper`` (the
95% interval; empty where the method states no error bar), one row per cell, rows
first; its release record (method, epsilon, ledger, guarantee, what the error bars
cover; no estimate) goes beside it as JSON. A JSON file holds both. Writers take the
temporary path the caller commits atomically; nothing here depends on the data except
the released values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..release import json_default
from .release import Release2D

__all__ = ["INTERVAL_ALPHA", "cell_columns", "grid_record", "json_writer", "table_writer"]

INTERVAL_ALPHA = 0.05


def cell_columns(release: Release2D, labels: tuple[list[str], list[str]] | None) -> dict[str, Any]:
    """One entry per cell, row-major."""
    rows, cols = release.shape
    i, j = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    out: dict[str, Any] = {"row": i, "col": j}
    if labels is not None:
        out["row_label"] = np.asarray(labels[0], dtype=object)[i]
        out["col_label"] = np.asarray(labels[1], dtype=object)[j]
    out["estimate"] = release.estimate.ravel()
    if release.stderr is not None:
        low, high = release.intervals(i, i + 1, j, j + 1, alpha=INTERVAL_ALPHA)
        out.update(stderr=release.stderr.ravel(), lower=low, upper=high)
    return out


def grid_record(release: Release2D, meta: dict[str, Any]) -> dict[str, Any]:
    """The release without its per-cell arrays, with ``meta`` (binnings, columns...)."""
    record = {k: v for k, v in release.to_dict().items() if k not in ("estimate", "stderr")}
    return {**meta, "release": {**record, "interval_level": 1 - INTERVAL_ALPHA}}


def table_writer(
    release: Release2D, labels: tuple[list[str], list[str]] | None, fmt: str
) -> Callable[[Path], None]:
    """A writer of the per-cell table (``fmt``: ``"csv"`` or ``"parquet"``), via DuckDB."""

    def write(tmp: Path) -> None:
        from ..ingest.sources import connect

        con = connect()
        try:
            columns = cell_columns(release, labels)
            con.register("dphist_cells_out", {k: np.asarray(v) for k, v in columns.items()})
            options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
            target = "'" + str(tmp).replace("'", "''") + "'"
            con.execute(
                f"COPY (SELECT * FROM dphist_cells_out ORDER BY row, col) TO {target} ({options})"
            )
        finally:
            con.close()

    return write


def json_writer(release: Release2D, meta: dict[str, Any]) -> Callable[[Path], None]:
    """A writer of the whole release as one JSON document."""

    def write(tmp: Path) -> None:
        document = {**meta, "release": {**release.to_dict(), "interval_level": 1 - INTERVAL_ALPHA}}
        tmp.write_text(
            json.dumps(document, indent=1, default=json_default) + "\n", encoding="utf-8"
        )

    return write
