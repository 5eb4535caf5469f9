"""Counting by streaming: DuckDB reads the records, compiled code bins and tallies them.

A hash ``GROUP BY`` over 10**6 bins costs DuckDB several times the scan itself, and
SQL arithmetic per record is slow too; so when no privacy unit is bounded, DuckDB
streams one row per record in Arrow batches of bounded size -- the value as a DOUBLE
(NULL when the record does not count) for numeric bins, the bin index for categories
-- and :func:`bin_tally` adds them into a dense vector. Memory is the batch and the
counts, whatever the number of records.

Binning is exact, by the same construction as the SQL join of ``count.py``: a uniform
grid of cells over ``[e_0, e_n]``; ``cell(v) = floor((v - e_0) / h)`` is monotone in
``v`` in floating point, so an edge in an earlier cell is below ``v`` and one in a
later cell above it, and ``bin(v) = #{interior e_i <= v}`` is the number of interior
edges in earlier cells plus those of ``v``'s cell that are ``<= v``.

Every record yields one row, counted or not, so the rows read so far over the rows the
source declares (the Parquet footer's ``num_rows``) is how far the scan is: that is
all ``progress`` ever receives, never how many records were dropped or where.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._jit import njit

__all__ = ["bin_args", "bin_tally", "edge_grid", "stream_counts", "tally"]

BATCH_ROWS = 1 << 20  # records per streamed batch (8 MB of values)
_CELLS_PER_BIN = 4


def edge_grid(
    edges: np.ndarray, per_bin: int = _CELLS_PER_BIN
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(inner edges, start, h)``: ``start[c]`` counts the interior edges in cells before
    ``c`` (``start`` has one entry more than there are cells). ``per_bin`` cells per bin
    (one beyond 10**6 bins)."""
    n = edges.size - 1
    e0 = float(edges[0])
    h = (float(edges[-1]) - e0) / (per_bin * n if n <= 1_000_000 else n)
    inner = np.ascontiguousarray(edges[1:-1], dtype=np.float64)
    cell_of = np.floor((inner - e0) / h).astype(np.int64)
    top = int(np.floor((float(edges[-1]) - e0) / h))
    cells = max(top, int(cell_of.max()) if inner.size else 0) + 1
    start = np.zeros(cells + 1, dtype=np.int64)
    np.cumsum(np.bincount(cell_of, minlength=cells), out=start[1:])
    return inner, start, h


@njit(cache=True)
def bin_tally(out, x, lo, hi, clip, width, inner, start, h):  # pragma: no cover - compiled
    """Add each value's bin to ``out`` (the last cell: records that do not count).

    NaN and infinities are not values; values outside ``[lo, hi]`` are clipped to the end bins or
    dropped. Equal-width bins (``width > 0``) take ``floor((v - lo) / width)``, within
    one of the bin, checked against the neighbouring edges computed with the float64
    operations of ``Binning.from_domain`` (``lo + i * width``, the last edge ``hi``):
    exact, with no table to read. Other edges use the grid (module doc).
    """
    drop = out.shape[0] - 1
    last = drop - 1
    for v in x:
        if not np.isfinite(v):
            out[drop] += 1
            continue
        if v < lo or v > hi:
            if not clip:
                out[drop] += 1
                continue
            v = lo if v < lo else hi
        if width > 0.0:
            b = min(max(np.int64(np.floor((v - lo) / width)), 0), last)
            if v < lo + b * width:
                b -= 1
            elif b < last and v >= (lo + (b + 1) * width if b + 1 < last + 1 else hi):
                b += 1
        else:
            c = np.int64(np.floor((v - lo) / h))
            b = start[c]
            while b < start[c + 1] and inner[b] <= v:
                b += 1
        out[b] += 1


@njit(cache=True)
def tally(out, bins):  # pragma: no cover - compiled
    """Add one to ``out[b]`` for each ``b`` in ``bins``."""
    for b in bins:
        out[b] += 1


def bin_args(binning: Any) -> tuple:
    """``(lo, hi, width, inner, start, h)``: the arguments of :func:`bin_tally` after
    ``out``, ``x`` and ``clip`` for numeric bins (equal widths by arithmetic, other edges
    by the grid)."""
    lo, hi = float(binning.edges[0]), float(binning.edges[-1])
    if binning.domain is not None:  # equal widths: arithmetic, no grid
        return lo, hi, float(binning.domain[2]), np.zeros(0), np.zeros(1, dtype=np.int64), 1.0
    return lo, hi, 0.0, *edge_grid(binning.edges)


def stream_counts(
    con: Any,
    sql: str,
    binning: Any,
    clip: bool,
    progress: Callable[[float], None] | None,
    rows: int | None,
) -> np.ndarray:
    """Counts per bin from ``sql`` (one row per record: ``x`` or ``bin``, see module doc)."""
    import duckdb

    n = binning.n
    out = np.zeros(n + 1, dtype=np.int64)
    grid = bin_args(binning) if binning.numeric else None
    seen = 0
    try:
        for batch in con.sql(sql).to_arrow_reader(BATCH_ROWS):
            column = batch.column(0)
            if grid is None:
                tally(out, column.to_numpy())
            else:
                lo, hi, width, *table = grid
                bin_tally(out, column.to_numpy(zero_copy_only=False), lo, hi, clip, width, *table)
            seen += batch.num_rows
            if progress is not None and rows:
                progress(min(seen / rows, 1.0))
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    if progress is not None:
        progress(1.0)
    return out[:n]
