"""Group sizes over a region hierarchy from record files (Kuo et al. §2; spec §2.1).

Two tables, read through DuckDB by the record rules of :mod:`dphist.ingest.sources`:

* the **groups** table is public: one row per group with its id and one column per
  level below the root (coarsest first); the root is implicit. Being public, any
  fault in it (a malformed row, a missing id or region, a repeated id, no rows) is a
  clear error.
* the **sizes** are private. From an **entities** table (one record per entity with
  the id of its group), a group's size is the number of its entities. Records are
  dropped when malformed, without a group id, or naming a group that is not in the
  groups table (ids match as text); with ``privacy_unit`` and ``max_records=K`` at
  most ``K`` records of each unit (a person id column) are kept, chosen as in
  :mod:`dphist.ingest.count`. From a **size column** of the groups table, a size that
  is missing, not a whole number or negative counts as 0. Neither path ever refuses
  because of a private value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ValidationError
from .count import bounded_sql, salt, unit_bound
from .sources import Table, connect, first_line, open_file

__all__ = ["read_group_tables"]


def _check_public(con: Any, table: Table, gid: str, levels: Sequence[str], label: str) -> None:
    """The public table's faults as clear errors, by aggregates (no row leaves DuckDB):
    no rows, malformed rows, a group without an id or a region, a repeated id."""
    sql = table.records([gid, *levels])
    blank = " OR ".join(_blank(table, c, f"c{i}") for i, c in enumerate([gid, *levels]))
    rows, bad, missing, distinct = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE NOT ok), count(*) FILTER (WHERE ok AND "
        f"({blank})), count(DISTINCT {_id_sql(table, gid, 'c0')}) FROM ({sql})"
    ).fetchall()[0]
    if rows == 0:
        raise ValidationError(f"the groups table {label} has no rows")
    if bad:
        raise ValidationError(f"the groups table {table.label} has malformed rows")
    if missing:
        raise ValidationError("every group needs an id and a region at every level")
    if distinct != rows:
        raise ValidationError(f"group ids in column {gid!r} must be unique")


def _blank(table: Table, column: str, expr: str) -> str:
    """SQL true when a cell is missing: NULL, or empty text (a cast to text costs ten
    times the scan, so only text columns pay it)."""
    if "INT" in table.columns[column].upper():
        return f"{expr} IS NULL"
    return f"{expr} IS NULL OR trim(CAST({expr} AS VARCHAR)) = ''"


def _id_sql(table: Table, column: str, expr: str) -> str:
    """Group ids match as text; integer ids keep their type (the same matches, cheaper)."""
    return expr if "INT" in table.columns[column].upper() else f"CAST({expr} AS VARCHAR)"


def _leaves(con: Any, table: Table, levels: Sequence[str], Hierarchy: Any) -> tuple[Any, int]:
    """The public hierarchy from the distinct region paths, and the leaf table
    ``dphist_leaves`` (the level columns as read, and ``leaf``, the leaf's position)."""
    sql = table.records(list(levels))
    raw = ", ".join(f"c{i}" for i in range(len(levels)))
    text = ", ".join(f"CAST(c{i} AS VARCHAR) AS t{i}" for i in range(len(levels)))
    con.execute(  # names as text after DISTINCT: one cast per region, not per group
        f"CREATE OR REPLACE TEMP TABLE dphist_paths AS SELECT {raw}, {text} FROM "
        f"(SELECT DISTINCT {raw} FROM ({sql}))"
    )
    names = con.execute(
        f"SELECT {', '.join(f't{i}' for i in range(len(levels)))} FROM dphist_paths"
    ).fetchnumpy()
    # each region is named by its full path, so equal names under different parents differ
    paths = [np.asarray(names["t0"], dtype=object)]
    for i in range(1, len(levels)):
        paths.append(paths[-1] + "/" + np.asarray(names[f"t{i}"], dtype=object))
    columns = [np.full(paths[0].size, "all"), *(p.astype(str) for p in paths)]
    hierarchy, leaf_pos = Hierarchy.from_levels(columns)
    con.register("dphist_leaf_pos", {"leaf": np.ascontiguousarray(leaf_pos, dtype=np.int64)})
    con.execute(
        "CREATE OR REPLACE TEMP TABLE dphist_leaves AS SELECT p.*, l.leaf FROM "
        "(SELECT *, row_number() OVER () - 1 AS rid FROM dphist_paths) AS p JOIN "
        "(SELECT leaf, row_number() OVER () - 1 AS rid FROM dphist_leaf_pos) AS l USING (rid)"
    )
    return hierarchy, len(levels)


def _sizes_from_column(table: Table, group_column: str, size_column: str) -> str:
    """SQL of ``gid, n``: a size that is missing, not whole or negative counts as 0."""
    sql = table.records([group_column, size_column])
    s = "TRY_CAST(trim(CAST(c1 AS VARCHAR)) AS DOUBLE)"
    whole = "s >= 0 AND s = floor(s) AND isfinite(s)"
    return (
        f"SELECT c0 AS gid, CASE WHEN {whole} THEN CAST(least(s, 4.0e18) AS BIGINT) ELSE 0 "
        f"END AS n FROM (SELECT c0, {s} AS s FROM ({sql}) WHERE ok)"
    )


def _sizes_from_entities(
    table: Table, group_column: str, unit: str | None, k: int | None, rng: object, text: bool
) -> str:
    """SQL of ``gid, n``: each named group's number of (kept) entity records."""
    wanted = [group_column] if unit is None else [group_column, unit]
    sql = table.records(wanted)
    u = ", c1 AS u" if unit is not None else ""
    key = "CAST(c0 AS VARCHAR)" if text else "c0"
    records = (
        f"SELECT {key} AS bin{u} FROM ({sql}) WHERE ok AND NOT "
        f"({_blank(table, group_column, 'c0')})"
    )
    if unit is not None:
        assert k is not None
        records = bounded_sql(records, table.columns[unit], k, salt(rng))
    return f"SELECT bin AS gid, count(*) AS n FROM ({records}) GROUP BY bin"


def read_group_tables(
    groups: str | Path,
    levels: Sequence[str],
    *,
    group_column: str,
    entities: str | Path | None = None,
    size_column: str | None = None,
    privacy_unit: str | None = None,
    max_records: int | None = None,
    rng: object = None,
) -> Any:
    """Group sizes over a region hierarchy: a :class:`dphist.groupsize.GroupSizeData`.

    ``groups`` is the public table (``group_column`` and the ``levels`` columns), a CSV
    or Parquet file or a Spark DataFrame (then ``entities`` is one too: see
    :mod:`dphist.ingest.spark`); the
    private sizes come either from ``entities`` (one record per entity, its group id in
    ``group_column``) or from ``size_column`` of ``groups``. ``privacy_unit`` (a column of
    ``entities``) and ``max_records`` bound each unit's records. The hierarchy and the
    number of groups per region come from the public table only.

    Everything is aggregated in DuckDB: the distinct region paths (public), each
    group's size (one ``GROUP BY`` of the entities) and the number of groups of each
    size in each leaf region, the only rows collected (a census's 1.3 * 10**8
    households give about a million).
    """
    import duckdb

    from ..groupsize import GroupSizeData, Hierarchy
    from .spark import is_spark_frame, read_group_frames

    if is_spark_frame(groups):
        return read_group_frames(
            groups, levels, group_column=group_column, entities=entities,
            size_column=size_column, privacy_unit=privacy_unit, max_records=max_records, rng=rng,
        )  # fmt: skip
    if (entities is None) == (size_column is None):
        raise ValidationError("give the sizes either as an entities file or as a size column")
    if privacy_unit is not None and entities is None:
        raise ValidationError("a privacy unit needs the entities file (one record per entity)")
    k = unit_bound(privacy_unit, max_records)
    levels = [str(c) for c in levels]
    if not levels or len(set(levels)) != len(levels):
        raise ValidationError("give one or more distinct region columns, coarsest first")
    con = connect()
    try:
        gtable = open_file(con, groups)
        gtable.require(group_column, *levels, *([size_column] if size_column else []))
        etable = None
        if entities is not None:
            etable = open_file(con, entities)
            etable.require(group_column, *([privacy_unit] if privacy_unit else []))
        try:
            _check_public(con, gtable, group_column, levels, repr(str(groups)))
            hierarchy, _ = _leaves(con, gtable, levels, Hierarchy)
            if size_column is not None:
                per = _sizes_from_column(gtable, group_column, size_column)
                text = False
            else:
                assert etable is not None
                text = not ("INT" in etable.columns[group_column].upper()
                            and "INT" in gtable.columns[group_column].upper())  # fmt: skip
                per = _sizes_from_entities(etable, group_column, privacy_unit, k, rng, text)
            leaf, size, count = _histograms(con, gtable, group_column, levels, per, text)
        except duckdb.Error as exc:
            raise ValidationError(f"cannot read the group tables: {first_line(exc)}") from None
    finally:
        con.close()
    offsets = np.searchsorted(leaf, np.arange(hierarchy.n_leaves + 1))
    return GroupSizeData(hierarchy, offsets, size, count)


def _histograms(
    con: Any, table: Table, gid: str, levels: Sequence[str], per: str, text: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(leaf, size, groups) sorted by leaf then size: the groups of each size in each
    leaf region. A group no entity names has size 0; ids not in the table are dropped."""
    sql = table.records([gid, *levels])
    key = "CAST(c0 AS VARCHAR)" if text else "c0"
    on = " AND ".join(f"g.c{i + 1} IS NOT DISTINCT FROM p.c{i}" for i in range(len(levels)))
    rows = con.execute(
        f"SELECT p.leaf, coalesce(s.n, 0) AS size, count(*) AS groups FROM (SELECT {key} AS "
        f"gid, * EXCLUDE (ok) FROM ({sql})) AS g JOIN dphist_leaves AS p ON {on} LEFT JOIN "
        f"({per}) AS s ON s.gid = g.gid GROUP BY ALL ORDER BY ALL"
    ).fetchnumpy()
    return (
        np.asarray(rows["leaf"], dtype=np.int64),
        np.asarray(rows["size"], dtype=np.int64),
        np.asarray(rows["groups"], dtype=np.int64),
    )
