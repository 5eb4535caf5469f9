"""Counting where the records live: Spark DataFrames, one aggregation, counts collected.

When the records are a PySpark DataFrame (a data lake), the public binning and the
group sizes are pushed into Spark and only aggregates come back to the driver: one
count per bin, or the number of groups of each size in each leaf region. The record
domain is that of :mod:`dphist.ingest.count`, expressed in Spark:

* **values.** Numeric bins read a numeric column (integers, floats, decimals); a value
  is a finite number, anything else (NULL, NaN, infinite) drops its record. Text is
  not parsed into numbers here (Spark's and DuckDB's parsers differ on odd text, and
  one record domain is kept): a text column with numeric bins is refused, a schema
  fact. Categories match a text column's values exactly, or a numeric column's by value
  when every label is a number.
* **outside the bins**: clipped into the end bins or dropped, as ``outside`` says.
* **bins**: ``bin(v) = #{interior e_i <= v}``, exactly, by the arithmetic of the DuckDB
  and streamed paths: for equal widths ``floor((v - lo) / w)`` checked against the
  neighbouring edges, otherwise the grid of :func:`dphist.ingest.stream.edge_grid`
  (IEEE double arithmetic, the same in the JVM as in numpy). ``-0.0`` is read as
  ``0.0`` (IEEE equal; Spark's ordering functions and Java's ``Double.compare`` are
  not), so no value inside the bins can fall outside them.
* **privacy unit**: records whose unit id is missing (the rule of
  :func:`dphist.ingest.count.missing_id_sql`: NULL, NaN, text that is empty, blank or
  spells NaN) are dropped and at most ``K`` of each unit's
  records are kept, ranked by a keyed hash (``md5`` of a 128-bit salt and the record):
  a rule that depends on the unit's own records only, so one unit moves the counts by
  at most ``K``.

For a stream (``dh.stream_frames``), :func:`window_frame` also bins each record's
time into its public window by the arithmetic of :class:`dphist.streams.Windowing`;
the driver receives the counts of each window, and with a privacy unit the per-unit
rows stay in Spark until the window closes (:func:`window_units`,
:func:`window_unit_counts`).

What the driver receives is the aggregate only: the counts (``n`` numbers) or the
per-(leaf, size) group counts, plus public facts (the schema, the distinct region
paths of the public groups table). Counts are the sensitive statistic the kernel then
seals and charges; nothing per record ever leaves Spark.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ValidationError
from .binning import Binning, label_number, outside_policy
from .count import MISSING_ID_TEXT, salt, unit_bound
from .stream import edge_grid

__all__ = [
    "check_frame",
    "check_grid_frame",
    "count_frame",
    "count_grid_frame",
    "is_spark_frame",
    "read_group_frames",
    "unit_type",
    "window_counts",
    "window_frame",
    "window_unit_counts",
    "window_units",
]

_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
_NUMERIC = (*_INTEGRAL, "FloatType", "DoubleType", "DecimalType")
_WIDE = 16  # edges compared as columns (per grid cell; in all, without a grid)


def is_spark_frame(obj: object) -> bool:
    """True for a PySpark DataFrame (classic or Spark Connect), without importing Spark."""
    kind = type(obj)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark.")


def _type(df: Any, column: str) -> str:
    fields = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    if column not in fields:
        listed = ", ".join(repr(c) for c in list(fields)[:20])
        raise ValidationError(f"no column {column!r} in the DataFrame; its columns are {listed}")
    return fields[column]


def _number(df: Any, column: str, F: Any) -> Any:
    """The column as a finite double, NULL when it is not a value."""
    kind = _type(df, column)
    if kind not in _NUMERIC:
        raise ValidationError(
            f"column {column!r} has type {kind}: numeric bins on Spark read numeric columns "
            "(cast the column in Spark first)"
        )
    x = F.col(column).cast("double") + F.lit(0.0)  # -0.0 + 0.0 is 0.0
    return F.when(~F.isnan(x) & (F.abs(x) < float("inf")), x)


def _binned(
    df: Any, column: str, binning: Binning, outside: str, unit: str | None, carry: tuple = ()
) -> Any:
    """The counted records with column ``bin`` (and ``u``, and the columns ``carry``)."""
    from pyspark.sql import functions as F

    keep = [*([F.col(unit).alias("u")] if unit is not None else []), *carry]
    names = [*(["u"] if unit is not None else []), *carry]
    if binning.numeric:
        edges = binning.edges
        assert edges is not None
        lo, hi = float(edges[0]) + 0.0, float(edges[-1]) + 0.0
        values = df.select(_number(df, column, F).alias("x"), *keep).where(F.col("x").isNotNull())
        x = F.col("x")  # least and greatest skip NULLs in Spark: clip only values
        if outside == "clip":
            values = values.withColumn("x", F.least(F.greatest(x, F.lit(lo)), F.lit(hi)))
        else:
            values = values.where((x >= lo) & (x <= hi))
        if binning.domain is not None:
            return values.select(_domain_bin(binning, F).alias("bin"), *names)
        return _edges_bin(values, edges, F).select("bin", *names)
    labels = list(binning.categories or ())
    numbers = [label_number(c) for c in labels]
    spark = df.sparkSession
    if all(v is not None for v in numbers):
        key = _number(df, column, F)
        pairs = [(float(v), i) for i, v in enumerate(numbers)]  # type: ignore[arg-type]
        table = spark.createDataFrame(pairs, "k double, bin int")
    else:
        if _type(df, column) != "StringType":
            raise ValidationError(f"column {column!r} is not text, but some categories are")
        key = F.col(column)
        pairs = list(zip(labels, range(len(labels)), strict=True))
        table = spark.createDataFrame(pairs, "k string, bin int")
    values = df.select(key.alias("k"), *keep)
    return values.join(F.broadcast(table), "k").select("bin", *names)


def _domain_bin(binning: Binning, F: Any) -> Any:
    """The bin of ``x`` for equal-width edges, by arithmetic: ``floor((x - lo) / w)`` is
    within one of the bin and one comparison with each neighbouring edge, computed with
    the float64 operations of ``Binning.from_domain`` (``lo + i * w``, the last edge
    ``hi``; the JVM's doubles are IEEE like numpy's), makes it exact. No edge list
    travels to Spark (10**6 splits through py4j take a minute)."""
    assert binning.domain is not None
    lo, hi, w = (F.lit(float(v) + 0.0) for v in binning.domain)
    last = binning.n - 1
    x = F.col("x")
    b = F.least(F.greatest(F.floor((x - lo) / w), F.lit(0)), F.lit(last))

    def edge(i: Any) -> Any:
        return F.when(i > last, hi).otherwise(lo + i.cast("double") * w)

    down = (x < edge(b)).cast("int")
    up = ((b < last) & (x >= edge(b + 1))).cast("int")
    return (b - down + up).cast("int")


def _edges_bin(values: Any, edges: np.ndarray, F: Any) -> Any:
    """``values`` with column ``bin`` for any public edges, by the grid of the streamed
    path (one cell per bin, fewer rows to ship than its four):
    ``cell(x) = floor((x - e_0) / h)`` is monotone in ``x``, so ``bin(x)`` is the
    number of interior edges in earlier cells (the cell's ``base``) plus those of
    ``x``'s own cell that are ``<= x``. The cells are public and join as a broadcast
    table: each cell's base and edges, as up to 16 columns (compiled comparisons)
    or, when the public edges crowd more into one cell, one array per cell. Up to
    :data:`_WIDE` interior edges need no table: ``bin(x)`` is their count ``<= x``."""
    x = F.col("x")
    if edges.size - 2 <= _WIDE:
        inner = (F.when(x >= F.lit(float(e) + 0.0), 1).otherwise(0) for e in edges[1:-1])
        return values.withColumn("bin", sum(inner, F.lit(0)).cast("int"))
    inner, start, h = edge_grid(edges + 0.0, per_bin=1)
    listed = inner.tolist()
    per_cell = [listed[start[c] : start[c + 1]] for c in range(start.size - 1)]
    k = max(map(len, per_cell))
    if k <= _WIDE:
        rows = [(c, int(start[c]), *e, *[None] * (k - len(e))) for c, e in enumerate(per_cell)]
        schema = ", ".join(["cell long", "base long", *(f"e{j} double" for j in range(k))])
        inside = sum((F.coalesce((x >= F.col(f"e{j}")).cast("int"), F.lit(0)) for j in range(k)),
                     F.lit(0))  # fmt: skip
    else:
        rows = [(c, int(start[c]), e) for c, e in enumerate(per_cell)]
        schema = "cell long, base long, edges array<double>"
        inside = F.size(F.filter("edges", lambda e: e <= x))
    cells = values.sparkSession.createDataFrame(rows, schema)
    cell = F.floor((x - F.lit(float(edges[0]) + 0.0)) / F.lit(h)).cast("long")
    return (
        values.withColumn("cell", cell).join(F.broadcast(cells), "cell")
        .withColumn("bin", (F.col("base") + inside).cast("int"))
    )  # fmt: skip


def _missing_id(unit_type: str, F: Any) -> Any:
    """True where the unit id ``u`` is missing (:func:`dphist.ingest.count.missing_id_sql`)."""
    u = F.col("u")
    missing = u.isNull()
    if unit_type == "StringType":
        missing = missing | F.lower(F.trim(u)).isin(*MISSING_ID_TEXT)
    elif unit_type in ("FloatType", "DoubleType"):
        missing = missing | F.isnan(u)
    return missing


def _bounded(records: Any, unit_type: str, k: int, key: str) -> Any:
    """At most ``k`` records per unit, ranked by a keyed hash of the record."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kept = records.where(~_missing_id(unit_type, F))
    same = Window.partitionBy("u", "bin").orderBy("bin")
    kept = kept.withColumn("j", F.row_number().over(same))
    rank = F.md5(F.concat_ws(chr(31), F.lit(key), F.col("u").cast("string"),
                             F.col("bin").cast("string"), F.col("j").cast("string")))  # fmt: skip
    kept = kept.withColumn("r", F.row_number().over(Window.partitionBy("u").orderBy(rank)))
    return kept.where(F.col("r") <= k).select("bin")


def check_frame(df: Any, column: str, binning: Binning, *, privacy_unit: str | None = None) -> None:
    """The schema checks of :func:`count_frame`, alone: no job runs, no value is read."""
    from pyspark.sql import functions as F

    if binning.numeric:
        _number(df, column, F)
    else:
        _binned(df, column, binning, "drop", None)  # plans the join, runs nothing
    if privacy_unit is not None:
        _type(df, privacy_unit)


def count_frame(
    df: Any,
    column: str,
    binning: Binning,
    *,
    outside: object = None,
    privacy_unit: str | None = None,
    max_records: int | None = None,
    rng: object = None,
) -> np.ndarray:
    """Counts per bin of ``column`` of a Spark DataFrame: one ``groupBy`` in Spark, the
    ``n`` counts collected. ``privacy_unit`` names a column of unit ids."""
    policy = outside_policy(binning, outside)
    k = unit_bound(privacy_unit, max_records)
    _type(df, column)
    if privacy_unit is not None:
        unit_type = _type(df, privacy_unit)
    records = _binned(df, column, binning, policy, privacy_unit)
    if privacy_unit is not None:
        assert k is not None
        records = _bounded(records, unit_type, k, salt(rng))
    out = np.zeros(binning.n, dtype=np.int64)
    for row in records.groupBy("bin").count().collect():
        out[int(row["bin"])] = int(row["count"])
    return out


def check_grid_frame(
    df: Any, columns: Sequence[str], binnings: Sequence[Binning], *, privacy_unit: str | None = None
) -> None:
    """The schema checks of :func:`count_grid_frame`, alone: no job runs, no value is read."""
    if len(columns) != 2 or len(binnings) != 2:
        raise ValidationError("columns must name the frame's two columns (rows first)")
    for column, binning in zip(columns, binnings, strict=True):
        check_frame(df, column, binning)
    if privacy_unit is not None:
        _type(df, privacy_unit)


def count_grid_frame(
    df: Any,
    columns: Sequence[str],
    binnings: Sequence[Binning],
    *,
    outside: Sequence[object] = (None, None),
    privacy_unit: str | None = None,
    max_records: int | None = None,
    rng: object = None,
) -> np.ndarray:
    """Counts per cell of two columns of a Spark DataFrame (``rows x cols``, rows the
    first column's bins): each column binned by the 1-D rules above, a record counted
    when both of its values count, at most ``max_records`` per unit kept by the keyed
    hash over its cells; one ``groupBy`` on the cell, the counts collected."""
    from pyspark.sql import functions as F

    check_grid_frame(df, columns, binnings, privacy_unit=privacy_unit)
    policies = [outside_policy(b, o) for b, o in zip(binnings, outside, strict=True)]
    k = unit_bound(privacy_unit, max_records)
    unit_type = _type(df, privacy_unit) if privacy_unit is not None else ""
    unit = [F.col(privacy_unit).alias("u")] if privacy_unit is not None else []
    named = df.select(F.col(columns[0]).alias("a"), F.col(columns[1]).alias("b"), *unit)
    u = "u" if privacy_unit is not None else None
    rows = _binned(named, "a", binnings[0], policies[0], u, carry=("b",))
    rows = _binned(rows.withColumnRenamed("bin", "row"), "b", binnings[1], policies[1], u,
                   carry=("row",))  # fmt: skip
    n_b = binnings[1].n
    records = rows.withColumn("bin", (F.col("row") * F.lit(n_b) + F.col("bin")).cast("long"))
    if privacy_unit is not None:
        assert k is not None
        records = _bounded(records, unit_type, k, salt(rng))
    out = np.zeros(binnings[0].n * n_b, dtype=np.int64)
    for row in records.groupBy("bin").count().collect():
        out[int(row["bin"])] = int(row["count"])
    return out.reshape(binnings[0].n, n_b)


def read_group_frames(
    groups: Any,
    levels: Sequence[str],
    *,
    group_column: str,
    entities: Any = None,
    size_column: str | None = None,
    privacy_unit: str | None = None,
    max_records: int | None = None,
    rng: object = None,
) -> Any:
    """:func:`dphist.ingest.read_group_tables` for Spark DataFrames: the public groups
    table's distinct region paths are collected (public), each group's size is one
    aggregation in Spark and the groups of each size per leaf region the only private
    rows collected."""
    from pyspark.sql import functions as F

    from ..groupsize import GroupSizeData, Hierarchy

    if (entities is None) == (size_column is None):
        raise ValidationError("give the sizes either as an entities table or as a size column")
    if privacy_unit is not None and entities is None:
        raise ValidationError("a privacy unit needs the entities table (one record per entity)")
    k = unit_bound(privacy_unit, max_records)
    levels = [str(c) for c in levels]
    if not levels or len(set(levels)) != len(levels):
        raise ValidationError("give one or more distinct region columns, coarsest first")
    for c in (group_column, *levels, *([size_column] if size_column else [])):
        _type(groups, c)
    _check_public(groups, group_column, levels, F)
    hierarchy, leaves = _leaves(groups, levels, Hierarchy)
    text = True
    if size_column is not None:
        n = _number(groups, size_column, F)
        whole = F.when((n >= 0) & (n == F.floor(n)), F.least(n, F.lit(4.0e18)).cast("long"))
        sizes = groups.select(
            F.col(group_column).alias("gid"), F.coalesce(whole, F.lit(0)).alias("n")
        )
    else:
        _type(entities, group_column)
        ints = (_type(entities, group_column), _type(groups, group_column))
        text = not all(t in _INTEGRAL for t in ints)  # ids match as text
        gid = F.col(group_column).cast("string") if text else F.col(group_column)
        present = F.col(group_column).isNotNull() & (
            F.trim(F.col(group_column).cast("string")) != ""
        )
        keep = [F.col(privacy_unit).alias("u")] if privacy_unit is not None else []
        records = entities.where(present).select(gid.alias("bin"), *keep)
        if privacy_unit is not None:
            assert k is not None
            records = _bounded(records, _type(entities, privacy_unit), k, salt(rng))
        sizes = records.groupBy(F.col("bin").alias("gid")).count().withColumnRenamed("count", "n")
    key = F.col(group_column)
    if text and size_column is None:
        key = key.cast("string")
    g = groups.select(key.alias("gid"), *levels).join(F.broadcast(leaves), levels)
    rows = (
        g.join(sizes, "gid", "left").select("leaf", F.coalesce(F.col("n"), F.lit(0)).alias("size"))
        .groupBy("leaf", "size").count().orderBy("leaf", "size").collect()
    )  # fmt: skip
    leaf = np.array([r["leaf"] for r in rows], dtype=np.int64)
    size = np.array([r["size"] for r in rows], dtype=np.int64)
    count = np.array([r["count"] for r in rows], dtype=np.int64)
    offsets = np.searchsorted(leaf, np.arange(hierarchy.n_leaves + 1))
    return GroupSizeData(hierarchy, offsets, size, count)


def _check_public(groups: Any, gid: str, levels: Sequence[str], F: Any) -> None:
    blank = None
    for c in (gid, *levels):
        miss = F.col(c).isNull() | (F.trim(F.col(c).cast("string")) == "")
        blank = miss if blank is None else blank | miss
    row = groups.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(blank, 1).otherwise(0)).alias("missing"),
        F.countDistinct(F.col(gid).cast("string")).alias("ids"),
    ).collect()[0]
    if row["rows"] == 0:
        raise ValidationError("the groups table has no rows")
    if row["missing"]:
        raise ValidationError("every group needs an id and a region at every level")
    if row["ids"] != row["rows"]:
        raise ValidationError(f"group ids in column {gid!r} must be unique")


def _leaves(groups: Any, levels: Sequence[str], Hierarchy: Any) -> tuple[Any, Any]:
    """The hierarchy from the distinct region paths (public) and a small DataFrame of
    the level values with each leaf's position, for a broadcast join."""
    rows = groups.select(*levels).distinct().collect()
    names = [[str(r[c]) for r in rows] for c in levels]
    paths = [np.asarray(names[0], dtype=object)]
    for col in names[1:]:
        paths.append(paths[-1] + "/" + np.asarray(col, dtype=object))
    columns = [np.full(len(rows), "all"), *(p.astype(str) for p in paths)]
    hierarchy, leaf_pos = Hierarchy.from_levels(columns)
    schema = groups.select(*levels).schema.add("leaf", "long")
    table = groups.sparkSession.createDataFrame(
        [(*tuple(r), int(p)) for r, p in zip(rows, leaf_pos, strict=True)], schema
    )
    return hierarchy, table


# --------------------------------------------------------------------------- windows

_T, _W = "__dphist_time", "__dphist_window"
_MOST = 1 << 24  # a unit's records in one bin of a window that the ranking considers


def unit_type(df: Any, column: str) -> str:
    """The Spark type name of a column (a clear error when there is no such column)."""
    return _type(df, column)


def _seconds(df: Any, time: str, F: Any) -> Any:
    """The time column as seconds (a finite double, NULL when not a time): numbers as
    they are, timestamps and dates since 1970 UTC (a timestamp without a zone is UTC),
    exact to the microsecond. Text is refused, as for values (parse it in Spark)."""
    kind = _type(df, time)
    t = F.col(_T)
    if kind == "TimestampType":
        return F.unix_micros(t) / F.lit(1e6)
    if kind == "TimestampNTZType":
        micros = F.expr(f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {_T})")
        return micros / F.lit(1e6)
    if kind == "DateType":
        return F.unix_date(t).cast("double") * F.lit(86400.0)
    if kind not in _NUMERIC:
        raise ValidationError(
            f"time column {time!r} has type {kind}: Spark streams read numbers, timestamps or "
            "dates (cast the column in Spark first)"
        )
    x = t.cast("double") + F.lit(0.0)
    return F.when(~F.isnan(x) & (F.abs(x) < float("inf")), x)


def window_frame(
    df: Any, *, time: str, column: str, binning: Binning, outside: str, start: float,
    length: float, first: int, limit: int, end: float | None = None,
    privacy_unit: str | None = None,
) -> Any:  # fmt: skip
    """The records of windows ``first`` to ``limit - 1`` with columns ``win``, ``bin``
    (and ``u``), planned in Spark (nothing runs). The window of a time is that of
    :meth:`dphist.streams.Windowing.index`, by the same double arithmetic; the
    quotient is clamped first, so no integer overflows (an error under ANSI SQL)
    whatever the time. Records at or after ``end`` are dropped."""
    from pyspark.sql import functions as F

    _type(df, column)
    if privacy_unit is not None:
        _type(df, privacy_unit)
    frame = df.withColumn(_T, F.col(time))
    frame = frame.withColumn(_T, _seconds(df, time, F))
    t, s, length_ = F.col(_T), F.lit(float(start)), F.lit(float(length))
    q = F.least(F.greatest((t - s) / length_, F.lit(-1.0)), F.lit(float(limit) + 1.0))
    frame = frame.withColumn(_W, F.floor(q))
    i = F.col(_W)
    frame = frame.withColumn(_W, F.when(F.col(_T) < s + i * length_, i - 1).otherwise(i))
    frame = frame.withColumn(_W, F.when(F.col(_T) >= s + (i + 1) * length_, i + 1).otherwise(i))
    keep = F.col(_T).isNotNull() & (F.col(_T) >= s) & (i >= first) & (i < limit)
    if end is not None:
        keep = keep & (F.col(_T) < F.lit(float(end)))
    binned = _binned(frame.where(keep), column, binning, outside, privacy_unit, (_W,))
    return binned.withColumnRenamed(_W, "win")


def window_counts(frame: Any, n: int) -> dict[int, np.ndarray]:
    """Counts per bin of each window of a :func:`window_frame` (no unit): one
    ``groupBy`` in Spark, the nonzero ``(window, bin, count)`` collected as Arrow
    columns where Spark offers it (PySpark 4; rows before)."""
    grouped = frame.groupBy("win", "bin").count()
    if hasattr(grouped, "toArrow") and importlib.util.find_spec("pyarrow") is not None:
        table = grouped.toArrow()
        win, bins, count = (
            table.column(c).to_numpy().astype(np.int64) for c in ("win", "bin", "count")
        )
    else:  # pragma: no cover - PySpark 3.5
        rows = grouped.collect()
        win = np.array([r["win"] for r in rows], dtype=np.int64)
        bins = np.array([r["bin"] for r in rows], dtype=np.int64)
        count = np.array([r["count"] for r in rows], dtype=np.int64)
    out: dict[int, np.ndarray] = {}
    for w in np.unique(win).tolist():
        mine = win == w
        out[w] = np.zeros(n, dtype=np.int64)
        out[w][bins[mine]] = count[mine]  # (window, bin) pairs are distinct
    return out


def window_units(frame: Any, unit_type: str) -> Any:
    """A :func:`window_frame`'s records with a unit id as rows ``(win, u, bin, n)``:
    ``n`` records of unit ``u`` in bin ``bin`` of window ``win`` (missing ids dropped).
    Rows of several batches add up (union them); they stay in Spark."""
    from pyspark.sql import functions as F

    kept = frame.where(~_missing_id(unit_type, F))
    return kept.groupBy("win", "u", "bin").agg(F.count(F.lit(1)).alias("n"))


def window_unit_counts(rows: Any, unit_type: str, n: int, k: int, key: str) -> np.ndarray:
    """Counts per bin of one window's :func:`window_units` rows, at most ``k`` records
    per unit over the whole window, chosen by the keyed hash of :func:`count_frame`.
    A unit's records in one bin are ranked up to the first :data:`_MOST` (a public
    bound, far above any ``k``; Spark's arrays end near 2**31), so no count of a unit
    can make the job fail."""
    from pyspark.sql import functions as F

    totals = rows.groupBy("u", "bin").agg(F.least(F.sum("n"), F.lit(_MOST)).alias("n"))
    records = totals.select(
        "bin", "u", F.explode(F.sequence(F.lit(1).cast("long"), F.col("n").cast("long")))
    )
    out = np.zeros(n, dtype=np.int64)
    kept = _bounded(records.select("bin", "u"), unit_type, k, key)
    for row in kept.groupBy("bin").count().collect():
        out[int(row["bin"])] = int(row["count"])
    return out
