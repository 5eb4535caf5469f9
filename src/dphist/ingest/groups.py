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


def _public_rows(con: Any, table: Table, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Every row of a public table as text; malformed rows or missing cells are errors."""
    sql = table.records(list(columns))
    rows = con.execute(f"SELECT * FROM ({sql})").fetchnumpy()
    if rows["ok"].size and not np.all(rows["ok"]):
        raise ValidationError(f"the groups table {table.label} has malformed rows")
    out = {}
    for i, name in enumerate(columns):
        col = np.asarray(rows[f"c{i}"], dtype=object)
        out[name] = col
    return out


def _sizes_from_column(con: Any, table: Table, group_column: str, size_column: str) -> Any:
    sql = table.records([group_column, size_column])
    s = "TRY_CAST(trim(CAST(c1 AS VARCHAR)) AS DOUBLE)"
    whole = "s >= 0 AND s = floor(s) AND isfinite(s)"
    return con.execute(
        f"SELECT CAST(c0 AS VARCHAR) AS gid, CASE WHEN {whole} THEN CAST(least(s, 4.0e18) "
        f"AS BIGINT) ELSE 0 END AS n FROM (SELECT c0, {s} AS s FROM ({sql}) WHERE ok)"
    ).fetchnumpy()


def _sizes_from_entities(
    con: Any, table: Table, group_column: str, unit: str | None, k: int | None, rng: object
) -> Any:
    wanted = [group_column] if unit is None else [group_column, unit]
    sql = table.records(wanted)
    u = ", c1 AS u" if unit is not None else ""
    records = (
        f"SELECT CAST(c0 AS VARCHAR) AS bin{u} FROM ({sql}) WHERE ok AND c0 IS NOT NULL "
        "AND trim(CAST(c0 AS VARCHAR)) <> ''"
    )
    if unit is not None:
        assert k is not None
        records = bounded_sql(records, table.columns[unit], k, salt(rng))
    return con.execute(
        f"SELECT bin AS gid, count(*) AS n FROM ({records}) GROUP BY bin"
    ).fetchnumpy()


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

    ``groups`` is the public table (``group_column`` and the ``levels`` columns); the
    private sizes come either from ``entities`` (one record per entity, its group id in
    ``group_column``) or from ``size_column`` of ``groups``. ``privacy_unit`` (a column of
    ``entities``) and ``max_records`` bound each unit's records. The hierarchy and the
    number of groups per region come from the public table only.
    """
    import duckdb

    from ..groupsize import GroupSizeData, Hierarchy

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
            table = _public_rows(con, gtable, [group_column, *levels])
            if size_column is not None:
                per = _sizes_from_column(con, gtable, group_column, size_column)
            else:
                assert etable is not None
                per = _sizes_from_entities(con, etable, group_column, privacy_unit, k, rng)
        except duckdb.Error as exc:
            raise ValidationError(f"cannot read the group tables: {first_line(exc)}") from None
    finally:
        con.close()
    return _assemble(table, per, group_column, levels, groups, GroupSizeData, Hierarchy)


def _assemble(table, per, group_column, levels, groups, GroupSizeData, Hierarchy) -> Any:
    gid = table[group_column]
    if gid.size == 0:
        raise ValidationError(f"the groups table {str(groups)!r} has no rows")
    cells = [gid, *(table[c] for c in levels)]
    if any(v is None or str(v).strip() == "" for col in cells for v in col):
        raise ValidationError("every group needs an id and a region at every level")
    gid = gid.astype(str)
    order = np.argsort(gid, kind="stable")
    if np.any(gid[order][1:] == gid[order][:-1]):
        raise ValidationError(f"group ids in column {group_column!r} must be unique")
    region_cols = [table[c].astype(str) for c in levels]
    # each region is named by its full path, so equal names under different parents differ
    paths = [region_cols[0].astype(object)]
    for c in region_cols[1:]:
        paths.append(paths[-1] + "/" + c.astype(object))
    leaves, first_row, group_leaf_code = np.unique(
        paths[-1].astype(str), return_index=True, return_inverse=True
    )
    columns = [np.full(leaves.size, "all")] + [p[first_row].astype(str) for p in paths]
    hierarchy, leaf_pos = Hierarchy.from_levels(columns)
    sizes = np.zeros(gid.size, dtype=np.int64)
    ids = np.asarray(per["gid"], dtype=object)
    counts = np.asarray(per["n"], dtype=np.int64)
    present = np.array([v is not None for v in ids], dtype=bool)
    ids, counts = ids[present].astype(str), counts[present]
    at = np.searchsorted(gid[order], ids)
    known = (at < gid.size) & (gid[order][np.minimum(at, gid.size - 1)] == ids)
    sizes[order[at[known]]] = counts[known]  # ids not in the public table are dropped
    return GroupSizeData.from_group_sizes(hierarchy, leaf_pos[group_leaf_code], sizes)
