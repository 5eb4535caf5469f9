"""Records to a 2-D histogram: two columns, each over its own public binning, counted by
DuckDB in one ``GROUP BY`` on the cell.

The record domain is the 1-D one of :mod:`dphist.ingest.count` applied to each column:
a record counts when both of its values count in their own binning (numbers that are
finite, clipped into the end bins or dropped as that column's ``outside`` says;
categories that match a label); malformed records are dropped; with a privacy unit, at
most ``max_records`` of each unit's records are kept (a keyed-hash random subset of the
unit's own records, so one unit moves the counts by at most ``max_records``). Nothing
about dropped or clipped records is returned or reported. Counts come back as a
``rows x cols`` int64 array: row ``i`` is the ``i``-th bin of the first column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ValidationError
from .binning import Binning, refuse_data_derived
from .count import count_grid_table, unit_bound
from .sources import connect, open_file, open_values

__all__ = ["count_grid", "grid_binnings", "grid_outside"]


def grid_binnings(binnings: object) -> tuple[Binning, Binning]:
    """Two public binnings, one per column (first: the rows)."""
    if not isinstance(binnings, tuple | list) or len(binnings) != 2:
        raise ValidationError("a 2-D histogram needs two binnings, one per column (rows first)")
    for b in binnings:
        if not isinstance(b, Binning):
            raise refuse_data_derived(b)
    return binnings[0], binnings[1]


def grid_outside(outside: object) -> tuple[object, object]:
    """``outside`` for both columns (one value), or one per column (a pair)."""
    if isinstance(outside, tuple | list):
        if len(outside) != 2:
            raise ValidationError("outside is one policy, or a pair: one per column")
        return outside[0], outside[1]
    return outside, outside


def count_grid(
    source: object,
    binnings: object,
    *,
    columns: tuple[str, str] | None = None,
    outside: object = None,
    privacy_unit: object = None,
    max_records: int | None = None,
    rng: object = None,
    progress: Any = None,
) -> np.ndarray:
    """Counts per cell of two columns of records.

    ``source`` is a CSV or Parquet file (``columns`` names the two columns) or a pair of
    in-memory columns ``(x, y)`` (numpy, lists, pandas, polars or Arrow; one element per
    record). ``binnings`` is a pair of :class:`~dphist.ingest.Binning`; ``outside`` one
    policy or a pair. For a file, ``privacy_unit`` names a column of unit ids; for
    in-memory columns it is a column of ids itself.
    """
    pair = grid_binnings(binnings)
    policies = grid_outside(outside)
    k = unit_bound(privacy_unit, max_records)
    from .spark import is_spark_frame

    if is_spark_frame(source):
        raise ValidationError(
            "2-D counting of a Spark DataFrame is not available: count the two columns' cells "
            "in Spark (a GROUP BY on both binned columns) and pass the rows x cols counts"
        )
    con = connect()
    try:
        if isinstance(source, str | Path):
            if columns is None or len(columns) != 2:
                raise ValidationError("columns must name the two columns of the file (rows first)")
            table = open_file(con, source)
            names: tuple[str, str] = (str(columns[0]), str(columns[1]))
            unit = privacy_unit if privacy_unit is None else str(privacy_unit)
        else:
            if not isinstance(source, tuple | list) or len(source) != 2:
                raise ValidationError(
                    "in-memory records are a pair of columns (x, y), one value each"
                )
            cols: dict[str, object] = {"x": source[0], "y": source[1]}
            if privacy_unit is not None:
                cols["unit"] = privacy_unit
            table = open_values(con, cols)
            names, unit = ("x", "y"), None if privacy_unit is None else "unit"
        return count_grid_table(
            con, table, names, pair, outside=policies, privacy_unit=unit, max_records=k,
            rng=rng, progress=progress,
        )  # fmt: skip
    finally:
        con.close()
