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
from .binning import Binning, outside_policy, refuse_data_derived
from .count import (
    Progress,
    column_type,
    double_sql,
    edges_join,
    file_value_type,
    labels_table,
    number_sql,
    numeric_labels,
    salt,
    tally_bins,
    unit_bound,
)
from .sources import Table, connect, first_line, open_file, open_values
from .types import ValueType, check_value_type

__all__ = [
    "count_grid",
    "count_grid_table",
    "file_value_types",
    "grid_binnings",
    "grid_outside",
    "grid_sql",
    "grid_value_types",
]


def grid_sql(
    con: Any,
    table: Table,
    columns: tuple[str, str],
    binnings: tuple[Binning, Binning],
    policies: tuple[str, str],
    unit: str | None,
    vtypes: tuple[ValueType, ValueType] = ("number", "number"),
) -> str:
    """SQL of the records counted by a 2-D histogram, with column ``bin`` (the cell,
    row-major: ``bin_a * n_b + bin_b``) and ``u``: a record counts when both of its
    values count, each by the 1-D rules of its own binning (module doc)."""
    wanted = [*columns, *([unit] if unit is not None else [])]
    rec = table.records(wanted)
    picks, keeps, joins, bins = [], [], [], []
    for k, (binning, policy) in enumerate(zip(binnings, policies, strict=True)):
        c, sql_type, label, tag = f"c{k}", table.columns[columns[k]], repr(columns[k]), f"_{k}"
        if binning.numeric:
            edges = binning.edges
            assert edges is not None
            lo, hi = double_sql(float(edges[0])), double_sql(float(edges[-1]))
            x = number_sql(c, sql_type, label)
            inside = f"least(greatest({x}, {lo}), {hi})" if policy == "clip" else x
            picks.append(f"{inside} AS x{k}")
            keeps.append(
                f"{x} IS NOT NULL" + ("" if policy == "clip" else f" AND {x} BETWEEN {lo} AND {hi}")
            )
            join, expr = edges_join(con, f"v.x{k}", binning, tag)
        else:
            key, _ = labels_table(con, c, sql_type, label, binning, vtypes[k], tag)
            picks.append(f"{key} AS x{k}")
            keeps.append("true")
            join = f"JOIN dphist_labels{tag} AS l{tag} ON l{tag}.key = v.x{k}"
            expr = f"l{tag}.bin"
        joins.append(join)
        bins.append(expr)
    u = ", c2 AS u" if unit is not None else ""
    values = f"SELECT {', '.join(picks)}{u} FROM ({rec}) WHERE ok AND {' AND '.join(keeps)}"
    n_b = binnings[1].n
    cell = f"({bins[0]}) * {n_b} + ({bins[1]})"
    return f"SELECT {cell} AS bin{', v.u' if unit else ''} FROM ({values}) AS v {' '.join(joins)}"


def count_grid_table(
    con: Any,
    table: Table,
    columns: tuple[str, str],
    binnings: tuple[Binning, Binning],
    *,
    outside: tuple[object, object],
    privacy_unit: str | None,
    max_records: int | None,
    rng: object,
    progress: Progress | None,
    value_types: tuple[object, object] = (None, None),
) -> np.ndarray:
    """The ``rows x cols`` counts of two columns of ``table`` (see :func:`grid_sql`): one
    ``GROUP BY`` on the cell, after keeping at most ``max_records`` per unit. Each
    column's type is checked against its binning first (:func:`column_type`)."""
    import duckdb

    policies = tuple(outside_policy(b, o) for b, o in zip(binnings, outside, strict=True))
    table.require(*columns, *([privacy_unit] if privacy_unit is not None else []))
    vtypes = tuple(
        column_type(table, c, b, v) for c, b, v in zip(columns, binnings, value_types, strict=True)
    )
    key = salt(rng) if privacy_unit is not None else ""
    try:
        counted = grid_sql(con, table, columns, binnings, policies, privacy_unit, vtypes)  # type: ignore[arg-type]
        unit = None if privacy_unit is None else table.columns[privacy_unit]
        cells = binnings[0].n * binnings[1].n
        out = tally_bins(con, counted, cells, progress, unit, max_records, key)
    except duckdb.Error as exc:
        raise ValidationError(f"cannot count {table.label}: {first_line(exc)}") from None
    return out.reshape(binnings[0].n, binnings[1].n)


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


def grid_value_types(value_type: object) -> tuple[object, object]:
    """``value_type`` for both columns (one value), or one per column (a pair)."""
    pair = value_type if isinstance(value_type, tuple | list) else (value_type, value_type)
    if len(pair) != 2:
        raise ValidationError("value_type is one type, or a pair: one per column")
    for v in pair:
        check_value_type(v)
    return pair[0], pair[1]


def file_value_types(
    path: str | Path, columns: tuple[str, str], binnings: object, value_type: object = None,
    **dialect: Any,
) -> tuple[str, str]:  # fmt: skip
    """What each of two columns of a file is read as, from its schema alone (no value is
    read): a column of the wrong type is refused here."""
    pair = grid_binnings(binnings)
    vtypes = grid_value_types(value_type)
    return (
        file_value_type(path, columns[0], pair[0], vtypes[0], **dialect),
        file_value_type(path, columns[1], pair[1], vtypes[1], **dialect),
    )


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
    value_type: object = None,
    delimiter: object = None,
    encoding: object = None,
) -> np.ndarray:
    """Counts per cell of two columns of records.

    ``source`` is a CSV or Parquet file or a Spark DataFrame (``columns`` names the two
    columns; Spark counts, only the cells' counts are collected) or a pair of
    in-memory columns ``(x, y)`` (numpy, lists, pandas, polars or Arrow; one element per
    record). ``binnings`` is a pair of :class:`~dphist.ingest.Binning`; ``outside`` one
    policy or a pair. For a file, ``privacy_unit`` names a column of unit ids; for
    in-memory columns it is a column of ids itself. ``value_type`` ("number" or "text",
    one or a pair) says how to read each column, ``delimiter`` and ``encoding`` the CSV
    dialect, as in :func:`~dphist.ingest.count_file`; each column's type is checked
    against its binning before any value is read.
    """
    pair = grid_binnings(binnings)
    policies = grid_outside(outside)
    vtypes = grid_value_types(value_type)
    k = unit_bound(privacy_unit, max_records)
    from .spark import count_grid_frame, is_spark_frame

    if is_spark_frame(source):
        if columns is None or len(columns) != 2:
            raise ValidationError("columns must name the frame's two columns (rows first)")
        if any(v is not None for v in vtypes):
            raise ValidationError("Spark reads a column as its own type; drop value_type")
        if privacy_unit is not None and not isinstance(privacy_unit, str):
            raise ValidationError("privacy_unit names a column of the Spark DataFrame")
        return count_grid_frame(
            source, (str(columns[0]), str(columns[1])), pair, outside=policies,
            privacy_unit=privacy_unit, max_records=k, rng=rng,
        )  # fmt: skip
    con = connect()
    try:
        if isinstance(source, str | Path):
            if columns is None or len(columns) != 2:
                raise ValidationError("columns must name the two columns of the file (rows first)")
            table = open_file(con, source, delimiter=delimiter, encoding=encoding)
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
            numbers = [
                name
                for name, b in zip(("x", "y"), pair, strict=True)
                if b.numeric or numeric_labels(b) is not None
            ]
            table = open_values(con, cols, numbers=numbers)
            names, unit = ("x", "y"), None if privacy_unit is None else "unit"
        return count_grid_table(
            con, table, names, pair, outside=policies, privacy_unit=unit, max_records=k,
            rng=rng, progress=progress, value_types=vtypes,
        )  # fmt: skip
    finally:
        con.close()
