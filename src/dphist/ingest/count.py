"""Records to counts over a public binning, in one DuckDB query.

The record domain (what a record is, which values count and where) is public and
fixed before any data is read, so that no refusal, error or output depends on one
record except through the counts themselves:

* **values.** What a column's values are read as, numbers or text, is settled from its
  type and the binning before any value is read (:mod:`dphist.ingest.types`: a typed
  column of the wrong type is refused then, a schema fact). Read as numbers, a value
  is a finite number: a value of a numeric column, or text that DuckDB casts to a
  finite DOUBLE (decimal or scientific notation, spaces around it allowed). Anything
  else (missing, empty, NaN, infinite, other text) is not a value and its record is
  **dropped**. Categories read as numbers match a label of equal value; read as text,
  a label with exactly the same text.
* **outside the bins.** Finite values beyond the first or last edge are clipped into
  the end bins (``outside="clip"``, the default for numbers: each record still counts
  once, like top-coding) or dropped (``"drop"``, the only choice for categories).
* **malformed records** (see :mod:`dphist.ingest.sources`) are dropped.
* **privacy unit.** With ``privacy_unit`` and ``max_records=K``, records without a unit
  (a **missing id**: NULL, None, NaN, or text that is empty, blank or spells NaN;
  :data:`MISSING_ID_TEXT`) are dropped, in every source alike, and at most ``K`` of
  each unit's remaining records are kept: a uniformly
  random subset, ranked by a keyed hash (``md5`` of a 128-bit salt from the noise
  source and the record). Any rule that keeps a subset of a unit's own records
  depends on that unit only, so adding or removing one unit changes the counts by at
  most ``K`` in L1 whatever the salt; randomness only keeps the choice unbiased.

How many records were dropped, clipped or cut by the bound depends on the data and is
never returned or reported. ``strict=True`` instead refuses data with malformed
records or invalid values: that refusal depends on the data and is **not private**.

Neighbouring inputs (one record, or one unit's records, added or removed) give counts
that differ by at most one (``K``) in L1, the sensitivity the kernel assumes once
told the unit's bound. Counts come back as ``int64`` in bin order.

:func:`dphist.ingest.check.check_file` counts, for the data owner only, what these
rules do to a file's records: not private, and never computed here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._kernel import records_per_unit
from ..errors import InputTypeError, ValidationError
from .binning import Binning, label_number, outside_policy
from .sources import Table, connect, first_line, open_file, open_values
from .stream import stream_counts
from .types import ValueType, check_value_type, value_type

__all__ = [
    "MISSING_ID_TEXT", "bounded_sql", "column_type", "count", "count_file", "count_values",
    "file_value_type", "missing_id_sql", "salt", "tally_bins", "unit_bound",
    "values_value_type",
]  # fmt: skip

MISSING_ID_TEXT = ("", "nan", "+nan", "-nan")
"""Unit ids given as text that are missing: after trimming spaces and lower-casing,
empty or a spelling of NaN (how a missing float id reads once written as text)."""

_NUMERIC_TYPES = frozenset(
    (
        *("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE"),
        *("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"),
    )
)
_CELLS_PER_BIN = 4  # grid cells per bin for the exact edge lookup (_bin_sql)
_POLL_SECONDS = 0.2

Progress = Callable[[float], None]


def _is_numeric(sql_type: str) -> bool:
    t = sql_type.upper()
    return t in _NUMERIC_TYPES or t.startswith("DECIMAL")


def _is_text(sql_type: str) -> bool:
    t = sql_type.upper()
    return t == "VARCHAR" or t.startswith("ENUM")


def double_sql(value: float) -> str:
    """A DOUBLE literal that round-trips exactly."""
    return f"CAST('{float(value)!r}' AS DOUBLE)"


def number_sql(column: str, sql_type: str, label: str) -> str:
    """SQL for the column as a finite DOUBLE, NULL when it is not a value."""
    if _is_numeric(sql_type) and "INT" in sql_type.upper():
        return f"CAST({column} AS DOUBLE)"  # every integer is finite
    if _is_numeric(sql_type):
        x = f"CAST({column} AS DOUBLE)"
    elif _is_text(sql_type):
        x = f"TRY_CAST(trim(CAST({column} AS VARCHAR)) AS DOUBLE)"
    else:
        raise ValidationError(f"column {label} has type {sql_type}, not numbers or text")
    return f"CASE WHEN isfinite({x}) THEN {x} END"


def unit_bound(privacy_unit: object, max_records: object) -> int | None:
    """``max_records`` as a public bound K >= 1, required exactly when a unit is given."""
    if privacy_unit is None:
        if max_records is not None:
            raise ValidationError(
                "max_records (--max-records) needs a privacy unit (--privacy-unit COLUMN)"
            )
        return None
    if max_records is None:
        raise ValidationError(
            "a privacy unit needs max_records (--max-records K): the most records one unit "
            "may contribute"
        )
    return records_per_unit(max_records)


# --------------------------------------------------------------------------- bins


def register_arrays(con: Any, name: str, arrays: dict[str, np.ndarray]) -> None:
    con.register(name, {k: np.ascontiguousarray(v) for k, v in arrays.items()})


def edges_join(con: Any, x: str, binning: Binning, tag: str = "") -> tuple[str, str]:
    """(JOIN clause, bin expression) mapping ``x`` to its bin, exactly and streaming
    (``tag`` keeps the tables and aliases of several columns apart).

    ``cell(v) = floor((v - e_0) / h)`` over a uniform grid of [e_0, e_n] is monotone
    in ``v`` in floating point, so ``bin(x) = #{interior e_i <= x}`` is the number of
    interior edges in cells before ``cell(x)`` (``base``) plus those in ``cell(x)``
    that are ``<= x``. The per-cell tables are built from the public edges with the
    same floating-point formula.
    """
    edges = binning.edges
    assert edges is not None
    n = binning.n
    inner = np.ascontiguousarray(edges[1:-1])
    e0 = float(edges[0])
    cells = _CELLS_PER_BIN * n if n <= 1_000_000 else n
    h = (float(edges[-1]) - e0) / cells
    if not (h > 0 and math.isfinite(h)):
        raise ValidationError("the edges span too small or too large a range")
    cell_of = np.floor((inner - e0) / h).astype(np.int64)
    top = math.floor((float(edges[-1]) - e0) / h)
    n_cells = max(top, int(cell_of.max()) if inner.size else 0) + 1
    per_cell = np.bincount(cell_of, minlength=n_cells)
    base = np.zeros(n_cells, dtype=np.int64)
    np.cumsum(per_cell[:-1], out=base[1:])
    first = np.full(n_cells, np.nan)
    if inner.size:
        starts = np.concatenate(([True], cell_of[1:] != cell_of[:-1]))
        first[cell_of[starts]] = inner[starts]
    register_arrays(
        con,
        f"dphist_cells{tag}",
        {"cell": np.arange(n_cells, dtype=np.int64), "base": base, "k": per_cell, "e": first},
    )
    crowded = np.flatnonzero(per_cell > 1)
    many = np.isin(cell_of, crowded)
    register_arrays(con, f"dphist_crowded{tag}", {"cell": cell_of[many], "edge": inner[many]})
    cell = f"CAST(floor(({x} - {double_sql(e0)}) / {double_sql(h)}) AS BIGINT)"
    c, m = f"c{tag}", f"m{tag}"
    join = (
        f"JOIN dphist_cells{tag} AS {c} ON {c}.cell = {cell} LEFT JOIN (SELECT cell, "
        f"list(edge) AS edges FROM dphist_crowded{tag} GROUP BY cell) AS {m} ON "
        f"{m}.cell = {c}.cell"
    )
    offset = (
        f"CASE WHEN {c}.k = 0 THEN 0 WHEN {c}.k = 1 THEN CAST({x} >= {c}.e AS BIGINT) "
        f"ELSE len(list_filter({m}.edges, lambda e: e <= {x})) END"
    )
    return join, f"{c}.base + {offset}"


def numeric_labels(binning: Binning) -> np.ndarray | None:
    """The labels as numbers when every label is one (then values match as numbers)."""
    parsed = [label_number(c) for c in binning.categories or ()]
    if any(v is None for v in parsed):
        return None
    keys = np.asarray(parsed, dtype=np.float64)
    if np.unique(keys).size != keys.size:
        raise ValidationError("categories name the same number twice (e.g. '1' and '1.0')")
    return keys


def _binned_sql(
    con: Any, table: Table, column: str, binning: Binning, outside: str, unit: str | None,
    vtype: ValueType = "number",
) -> tuple[str, str, str]:  # fmt: skip
    """(SQL of the counted records with columns ``bin`` [, ``u``]; SQL of all records
    with ``ok``, ``present`` and ``valid`` flags for strict checks; SQL with one row per
    record for :func:`~dphist.ingest.stream.stream_counts`: ``x``, a value or NULL, for
    numeric bins, else ``bin``, the bin or ``n`` when the record does not count).

    ``present`` casts every value to text: ten times the cost of counting, so only the
    strict checks compute it."""
    sql_type = table.columns[column]
    label = repr(column)
    wanted = [column] if unit is None else [column, unit]
    rec = table.records(wanted)
    u_sql = ", c1 AS u" if unit is not None else ""
    present = "c0 IS NOT NULL AND trim(CAST(c0 AS VARCHAR)) <> ''"
    u_col = ", u" if unit is not None else ""
    v_u = ", v.u" if unit is not None else ""
    if binning.numeric:
        x = number_sql("c0", sql_type, label)
        edges = binning.edges
        assert edges is not None
        lo, hi = double_sql(float(edges[0])), double_sql(float(edges[-1]))
        values = f"SELECT ok, {x} AS x{u_sql} FROM ({rec})"
        if outside == "clip":
            x_in, keep = f"least(greatest(x, {lo}), {hi})", "x IS NOT NULL"
        else:
            x_in, keep = "x", f"x >= {lo} AND x <= {hi}"
        join, bin_expr = edges_join(con, "v.x", binning)
        inside = f"SELECT {x_in} AS x{u_col} FROM ({values}) WHERE ok AND {keep}"
        counted = f"SELECT {bin_expr} AS bin{v_u} FROM ({inside}) AS v {join}"
        checked = f"SELECT ok, {present} AS present, {x} IS NOT NULL AS valid FROM ({rec})"
        return counted, checked, f"SELECT CASE WHEN ok THEN x END AS x FROM ({values})"
    key, keys = labels_table(con, "c0", sql_type, label, binning, vtype)
    values = f"SELECT ok, {key} AS key{u_sql} FROM ({rec})"
    counted = (
        f"SELECT l.bin AS bin{v_u} FROM ({values}) AS v JOIN dphist_labels AS l "
        "ON l.key = v.key WHERE v.ok"
    )
    valid = f"{key} IS NOT NULL" if keys is not None else "true"
    checked = f"SELECT ok, {present} AS present, {valid} AS valid FROM ({rec})"
    every = (
        f"SELECT CAST(coalesce(CASE WHEN v.ok THEN l.bin END, {binning.n}) AS INTEGER) AS bin "
        f"FROM ({values}) AS v LEFT JOIN dphist_labels AS l ON l.key = v.key"
    )
    return counted, checked, every


def labels_table(
    con: Any, column: str, sql_type: str, label: str, binning: Binning, vtype: ValueType,
    tag: str = "",
) -> tuple[str, np.ndarray | None]:  # fmt: skip
    """Register the table ``dphist_labels{tag}`` (``key``, ``bin``) of a categorical
    binning; return the SQL key of ``column`` that matches it, and the labels as numbers
    when the column is read as numbers and they all are (then values match as numbers)."""
    keys = numeric_labels(binning) if vtype == "number" else None
    if keys is not None:
        table = {"key": keys, "bin": np.arange(keys.size, dtype=np.int64)}
        register_arrays(con, f"dphist_labels{tag}", table)
        return number_sql(column, sql_type, label), keys
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE dphist_labels{tag} AS SELECT unnest($1::VARCHAR[]) AS "
        "key, generate_subscripts($1::VARCHAR[], 1) - 1 AS bin",
        [list(binning.categories or ())],
    )
    return f"CAST({column} AS VARCHAR)", None


def missing_id_sql(unit_type: str, u: str = "u") -> str:
    """SQL true when the unit id ``u`` is missing: NULL, or an id whose text (trimmed,
    lower case) is in :data:`MISSING_ID_TEXT`: empty text and NaN, as a float or as
    text. One rule for every source: NaN stays a value in Arrow, polars and Parquet
    columns, while numpy's and pandas' NaN arrive as NULL. A float's NaN is found by
    its text, not by ``isnan``: DuckDB folds ``isnan`` to false from Parquet
    statistics, which leave NaN out of their minimum and maximum."""
    t = unit_type.upper()
    if _is_text(t) or t in ("FLOAT", "DOUBLE", "REAL"):
        listed = ", ".join(f"'{v}'" for v in MISSING_ID_TEXT)
        return f"({u} IS NULL OR lower(trim(CAST({u} AS VARCHAR))) IN ({listed}))"
    return f"({u} IS NULL)"


def bounded_sql(counted: str, unit_type: str, k: int, salt: str) -> str:
    """At most ``k`` records per unit from ``counted`` (columns ``bin``, ``u``): rank each
    unit's records by a keyed hash of the record (its bin and its index among the
    unit's equal records) and keep the first ``k``. Records whose id is missing
    (:func:`missing_id_sql`) are dropped."""
    missing = missing_id_sql(unit_type)
    numbered = (
        "SELECT u, bin, row_number() OVER (PARTITION BY u, bin) AS j "
        f"FROM ({counted}) WHERE NOT {missing}"
    )
    ranked = (
        "SELECT bin, row_number() OVER (PARTITION BY u ORDER BY md5_number(concat_ws("
        f"chr(31), '{salt}', CAST(u AS VARCHAR), CAST(bin AS VARCHAR), CAST(j AS VARCHAR)))) "
        f"AS r FROM ({numbered})"
    )
    return f"SELECT bin FROM ({ranked}) WHERE r <= {int(k)}"


# --------------------------------------------------------------------------- running


def fetch_query(con: Any, sql: str, progress: Progress | None) -> Any:
    """Run ``sql``; with ``progress``, in a worker thread while the caller reports
    DuckDB's progress. Ctrl-C interrupts the query and raises KeyboardInterrupt."""
    import duckdb

    if progress is None:
        try:
            return con.execute(sql).fetchnumpy()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = con.execute(sql).fetchnumpy()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_POLL_SECONDS)
            done = con.query_progress()
            if done is not None and done >= 0:
                progress(min(float(done), 100.0) / 100.0)
    except KeyboardInterrupt:
        con.interrupt()
        worker.join()
        raise
    if "error" in box:
        if isinstance(box["error"], duckdb.InterruptException):
            raise KeyboardInterrupt from None
        raise box["error"]
    progress(1.0)
    return box["result"]


def salt(rng: object) -> str:
    """128 random bits as hex: the operating system's CSPRNG, or a seeded generator."""
    if rng is None:
        import secrets

        return secrets.token_hex(16)
    if isinstance(rng, np.random.Generator):
        return rng.bytes(16).hex()
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        return np.random.default_rng([int(rng), 0x5A17]).bytes(16).hex()
    raise InputTypeError(
        "rng must be None (secure), an int seed or a numpy.random.Generator; "
        f"got {type(rng).__name__}"
    )


def _count_table(
    con: Any,
    table: Table,
    column: str,
    binning: Binning,
    *,
    outside: object,
    privacy_unit: str | None,
    max_records: int | None,
    rng: object,
    strict: bool,
    progress: Progress | None,
    value_type: object = None,
) -> np.ndarray:
    import duckdb

    policy = outside_policy(binning, outside)
    table.require(column, *([privacy_unit] if privacy_unit is not None else []))
    vtype = column_type(table, column, binning, value_type)
    key = salt(rng) if privacy_unit is not None else ""
    try:
        counted, checked, every = _binned_sql(
            con, table, column, binning, policy, privacy_unit, vtype
        )
        if strict:
            _check_strict(con, checked, counted, privacy_unit, table)
        if privacy_unit is None and (progress is None or table.rows is not None):
            return stream_counts(con, every, binning, policy == "clip", progress, table.rows)
        unit = None if privacy_unit is None else table.columns[privacy_unit]
        return tally_bins(con, counted, binning.n, progress, unit, max_records, key)
    except duckdb.Error as exc:
        raise ValidationError(f"cannot count {table.label}: {first_line(exc)}") from None


def tally_bins(
    con: Any, counted: str, n_bins: int, progress: Progress | None, unit_type: str | None = None,
    max_records: int | None = None, key: str = "",
) -> np.ndarray:  # fmt: skip
    """Records per bin of the ``counted`` rows (a ``bin`` column, and ``u`` with a
    privacy unit of SQL type ``unit_type``, whose records are first cut to
    ``max_records`` by :func:`bounded_sql`), as int64 in bin order."""
    if unit_type is not None:
        assert max_records is not None
        counted = bounded_sql(counted, unit_type, max_records, key)
    result = fetch_query(con, f"SELECT bin, count(*) AS n FROM ({counted}) GROUP BY bin", progress)
    out = np.zeros(n_bins, dtype=np.int64)
    out[np.asarray(result["bin"], dtype=np.int64)] = np.asarray(result["n"], dtype=np.int64)
    return out


def column_type(table: Table, column: str, binning: Binning, declared: object) -> ValueType:
    """What ``column`` of ``table`` is read as (:func:`dphist.ingest.types.value_type`)."""
    label = f"column {column!r}" + ("" if table.label == "the values" else f" of {table.label}")
    return value_type(
        binning, table.columns[column], typed=column not in table.untyped, declared=declared,
        label=label,
    )  # fmt: skip


def file_value_type(
    path: str | Path, column: str, binning: Binning, value_type: object = None, **dialect: Any
) -> ValueType:
    """What ``column`` of a file is read as, from its schema alone (no value is read):
    a column of the wrong type is refused here (:mod:`dphist.ingest.types`)."""
    con = connect()
    try:
        table = open_file(con, path, **dialect)
        table.require(column)
        return column_type(table, column, binning, value_type)
    finally:
        con.close()


def values_value_type(values: object, binning: Binning, value_type: object = None) -> ValueType:
    """What an in-memory column is read as, from its dtype alone (no value is read): a
    column of the wrong type is refused here, as :func:`count_values` would."""
    _check_binning(binning)
    check_value_type(value_type)
    con = connect()
    try:
        numbers = ("value",) if binning.numeric or numeric_labels(binning) is not None else ()
        table = open_values(con, {"value": values}, numbers=numbers)
        return column_type(table, "value", binning, value_type)
    finally:
        con.close()


def _check_strict(con: Any, checked: str, counted: str, unit: str | None, table: Table) -> None:
    bad = con.execute(
        f"SELECT count(*) FILTER (WHERE NOT ok), count(*) FILTER (WHERE ok AND present "
        f"AND NOT valid) FROM ({checked})"
    ).fetchall()[0]
    if bad[0] or bad[1]:
        raise ValidationError(
            f"{table.label} has malformed records or values that cannot be counted; refused "
            "because of strict mode (this refusal depends on the data and is not private)"
        )
    if unit is not None:
        missing = missing_id_sql(table.columns[unit])
        blank = con.execute(f"SELECT count(*) FROM ({counted}) WHERE {missing}").fetchall()[0]
        if blank[0]:
            raise ValidationError(
                f"{table.label} has records without a privacy unit; refused because of strict "
                "mode (this refusal depends on the data and is not private)"
            )


def count_file(
    path: str | Path,
    column: str,
    binning: Binning,
    *,
    outside: object = None,
    privacy_unit: str | None = None,
    max_records: int | None = None,
    rng: object = None,
    strict: bool = False,
    progress: Progress | None = None,
    value_type: object = None,
    delimiter: object = None,
    encoding: object = None,
) -> np.ndarray:
    """Counts per bin of one column of a CSV (header row first) or Parquet file.

    One DuckDB query streams the file (``GROUP BY`` on the bin index). The record
    domain is in the module docs: malformed records and invalid values are dropped,
    never reported. ``privacy_unit`` names a column of unit ids and ``max_records`` the
    most records kept per unit. ``value_type`` ("number" or "text") says how to read
    the column (default: a Parquet column's type, what the binning implies for CSV);
    ``delimiter`` and ``encoding`` are the CSV dialect (default: comma, or tab for
    ``.tsv``; UTF-8). Only public facts raise: a missing or unreadable file, a file
    without a header, an unknown column, a column type that cannot serve the bins.
    ``progress(fraction)`` is called while counting.
    """
    _check_binning(binning)
    k = unit_bound(privacy_unit, max_records)
    check_value_type(value_type)
    con = connect()
    try:
        table = open_file(con, path, delimiter=delimiter, encoding=encoding)
        return _count_table(
            con, table, column, binning, outside=outside, privacy_unit=privacy_unit,
            max_records=k, rng=rng, strict=strict, progress=progress, value_type=value_type,
        )  # fmt: skip
    finally:
        con.close()


def count_values(
    values: object,
    binning: Binning,
    *,
    outside: object = None,
    privacy_unit: object = None,
    max_records: int | None = None,
    rng: object = None,
    strict: bool = False,
    value_type: object = None,
) -> np.ndarray:
    """Counts per bin of an in-memory column of records (numpy array, list, pandas,
    polars or Arrow), by the same rules and the same query as :func:`count_file`.

    ``privacy_unit`` is a column of unit ids, one per record. ``value_type`` says how to
    read the values (default: the column's dtype; for lists and object arrays, what
    the binning implies).
    """
    _check_binning(binning)
    k = unit_bound(privacy_unit, max_records)
    check_value_type(value_type)
    con = connect()
    try:
        columns: dict[str, object] = {"value": values}
        if privacy_unit is not None:
            columns["unit"] = privacy_unit
        numbers = binning.numeric or numeric_labels(binning) is not None
        table = open_values(con, columns, numbers=("value",) if numbers else ())
        return _count_table(
            con, table, "value", binning, outside=outside,
            privacy_unit=None if privacy_unit is None else "unit", max_records=k, rng=rng,
            strict=strict, progress=None, value_type=value_type,
        )  # fmt: skip
    finally:
        con.close()


def _check_binning(binning: object) -> None:
    if not isinstance(binning, Binning):
        from .binning import refuse_data_derived

        raise refuse_data_derived(binning)


def count(
    source: object,
    binning: Binning | None,
    *,
    column: str | None = None,
    outside: object = None,
    **options: Any,
) -> np.ndarray:
    """Counts per bin of a file or a Spark DataFrame (``column`` required), or of an
    in-memory column (numpy, pandas, polars or Arrow, scanned by DuckDB in place)."""
    _check_binning(binning)
    assert isinstance(binning, Binning)
    from .spark import count_frame, is_spark_frame

    if is_spark_frame(source):
        if column is None:
            raise ValidationError("column is required when counting a Spark DataFrame")
        if options.pop("strict", False):
            raise ValidationError("strict mode reads files and in-memory columns, not Spark")
        if options.pop("value_type", None) is not None:
            raise ValidationError("Spark reads a column as its own type; drop value_type")
        options.pop("progress", None)  # Spark shows its own progress
        return count_frame(source, column, binning, outside=outside, **options)
    if isinstance(source, str | Path):
        if column is None:
            raise ValidationError("column is required when counting a file")
        return count_file(source, column, binning, outside=outside, **options)
    return count_values(source, binning, outside=outside, **options)
