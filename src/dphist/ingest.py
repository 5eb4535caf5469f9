"""Raw records to a histogram over a public binning.

A histogram's bins must be public: fixed by the publisher before the data is read,
never derived from it (data-derived bin edges, quantiles or category lists leak the
data outside the privacy budget). A :class:`Binning` holds such a public domain in
one of three forms:

* **edges** ``e_0 < e_1 < ... < e_n`` (finite): bin ``i`` is ``[e_i, e_{i+1})`` and the
  last bin is closed, ``[e_{n-1}, e_n]`` (the numpy.histogram convention);
* **domain** ``lo:hi:width``: edges ``lo, lo + width, lo + 2 width, ...`` with
  ``ceil((hi - lo) / width)`` bins, the last one ending at ``hi`` (and closed);
* **categories**: a public list of labels; a value falls in the bin whose label it
  equals (as a number when every label is a number, else as a string).

Counting (:func:`count_file`) runs in DuckDB: one SQL ``GROUP BY`` on the bin index
over a CSV or Parquet file, so files larger than memory stream and no Python code
runs per record. In-memory arrays (:func:`count_values`) are counted with the same
rules, vectorised in numpy.

Policies, applied the same way by both paths:

* **missing values** (SQL NULL, an empty CSV field, NaN) are dropped;
* **values outside the domain** are ``"clip"``-ped into the first or last bin (the
  default for edges and domains: each record still counts once, like top-coding)
  or ``"drop"``-ped. Categories only allow ``"drop"``: values matching no label are
  not counted. How many records were clipped or dropped depends on the data and is
  not private, so it is neither returned nor reported.

Neighbouring datasets (one record added or removed) give counts that differ by one
in at most one bin under every policy, so the result has the sensitivity the
methods assume. Counts are returned as ``int64``; pass them to
:func:`dphist.publish`, which seals them in the kernel.
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .errors import DataDependentParameterError, InputTypeError, ValidationError

__all__ = [
    "OUTSIDE_POLICIES",
    "PUBLIC_BINS_HINT",
    "Binning",
    "count",
    "count_file",
    "count_values",
    "file_format",
    "parse_domain",
]

Outside = Literal["clip", "drop"]
OUTSIDE_POLICIES: tuple[str, ...] = ("clip", "drop")
CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
# Grid cells per bin for the exact edge lookup in SQL (see _edges_sql).
_CELLS_PER_BIN = 4
_MAX_BINS = 50_000_000

PUBLIC_BINS_HINT = (
    "bins must be public: choose edges, a domain lo:hi:width or a list of categories "
    "before looking at the data (bins derived from the data, such as 'auto' or "
    "quantiles, reveal it outside the privacy budget)"
)


# --------------------------------------------------------------------------- binnings


def _finite_float(value: object, name: str) -> float:
    if isinstance(value, bool | np.bool_):
        raise InputTypeError(f"{name} must be a number; got a boolean")
    if isinstance(value, str):
        try:
            out = float(value.strip())
        except ValueError:
            raise ValidationError(f"{name} must be a number; got {value!r}") from None
    elif isinstance(value, numbers.Real):
        out = float(value)
    else:
        raise InputTypeError(f"{name} must be a number; got {type(value).__name__}")
    if not math.isfinite(out):
        raise ValidationError(f"{name} must be finite; got {value!r}")
    return out


def _label_number(label: str) -> float | None:
    """The label as a finite number, or None when it is not one."""
    try:
        d = Decimal(label.strip())
    except InvalidOperation:
        return None
    return float(d) if d.is_finite() else None


@dataclass(frozen=True, eq=False)
class Binning:
    """A public binning: numeric ``edges`` or ``categories`` (exactly one is set).

    Build it with :meth:`from_edges`, :meth:`from_domain` or :meth:`from_categories`.
    ``kind`` records which; ``spec`` is a short description for output files.
    """

    kind: Literal["edges", "domain", "categories"]
    edges: np.ndarray | None = None
    categories: tuple[str, ...] | None = None
    spec: str = ""

    @classmethod
    def from_edges(cls, edges: object) -> Binning:
        """Bins ``[e_i, e_{i+1})``, the last closed; edges finite, strictly increasing."""
        if edges is None or isinstance(edges, str):
            raise _refuse_data_derived(edges)
        try:
            raw = list(edges)  # type: ignore[call-overload]
        except TypeError:
            raise InputTypeError("edges must be a sequence of numbers") from None
        try:
            if any(isinstance(v, bool | np.bool_) for v in raw[:1]):
                raise TypeError
            arr = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError):  # find the offending edge for the message
            arr = np.array([_finite_float(v, "each edge") for v in raw], dtype=np.float64)
        if arr.ndim != 1:
            raise ValidationError(
                f"edges must be a flat sequence of numbers; got shape {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValidationError("each edge must be finite")
        if arr.size < 2:
            raise ValidationError(f"edges needs at least 2 values (one bin); got {arr.size}")
        if arr.size - 1 > _MAX_BINS:
            raise ValidationError(f"at most {_MAX_BINS:,} bins are supported")
        if np.any(np.diff(arr) <= 0):
            raise ValidationError("edges must be strictly increasing")
        arr.flags.writeable = False
        return cls("edges", edges=arr, spec=f"edges ({arr.size - 1} bins)")

    @classmethod
    def from_domain(cls, lo: object, hi: object, width: object) -> Binning:
        """Equal-width bins from ``lo`` to ``hi``: ``ceil((hi - lo) / width)`` of them."""
        a = _finite_float(lo, "domain lo")
        b = _finite_float(hi, "domain hi")
        w = _finite_float(width, "domain width")
        if not a < b:
            raise ValidationError(f"domain needs lo < hi; got lo={a:g}, hi={b:g}")
        if not w > 0:
            raise ValidationError(f"domain width must be > 0; got {w:g}")
        n = math.ceil((b - a) / w)
        if n > _MAX_BINS:
            raise ValidationError(f"domain {a:g}:{b:g}:{w:g} has {n:,} bins; at most {_MAX_BINS:,}")
        edges = a + np.arange(n + 1, dtype=np.float64) * w
        edges[-1] = b
        if n > 1 and edges[-2] >= b:  # (hi - lo) / width rounded up past an exact multiple
            n -= 1
            edges = np.append(edges[:n], b)
        edges.flags.writeable = False
        return cls("domain", edges=edges, spec=f"domain {a:g}:{b:g}:{w:g} ({n} bins)")

    @classmethod
    def from_categories(cls, categories: object) -> Binning:
        """One bin per public label, in the given order; labels must be distinct."""
        if categories is None or isinstance(categories, str):
            raise _refuse_data_derived(categories)
        try:
            labels = tuple(str(c) for c in categories)  # type: ignore[union-attr]
        except TypeError:
            raise InputTypeError("categories must be a sequence of labels") from None
        if not labels:
            raise ValidationError("categories is empty; give at least one label")
        if len(set(labels)) != len(labels):
            raise ValidationError("categories must be distinct")
        return cls("categories", categories=labels, spec=f"categories ({len(labels)} bins)")

    @property
    def n(self) -> int:
        """Number of bins."""
        return len(self.categories) if self.edges is None else int(self.edges.size - 1)

    @property
    def numeric(self) -> bool:
        return self.edges is not None

    def labels(self) -> list[str]:
        """One label per bin: the category, or ``[lo, hi)`` (``[lo, hi]`` for the last)."""
        if self.edges is None:
            return list(self.categories or ())
        e = [f"{v:.15g}" for v in self.edges.tolist()]
        out = [f"[{a}, {b})" for a, b in itertools.pairwise(e)]
        out[-1] = out[-1][:-1] + "]"
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe description (public by construction)."""
        if self.edges is None:
            return {"kind": self.kind, "categories": list(self.categories or ())}
        return {"kind": self.kind, "edges": self.edges.tolist(), "last_bin_closed": True}


def _refuse_data_derived(value: object) -> DataDependentParameterError:
    what = "no binning" if value is None else f"bins {value!r}"
    return DataDependentParameterError(f"{what}: {PUBLIC_BINS_HINT}")


def parse_domain(text: str) -> Binning:
    """A domain binning from ``"lo:hi:width"`` (e.g. ``"0:100:5"``: 20 bins)."""
    parts = str(text).split(":")
    if len(parts) != 3:
        raise ValidationError(f"domain must be lo:hi:width (e.g. 0:100:5); got {text!r}")
    return Binning.from_domain(*parts)


def _outside(policy: object, binning: Binning) -> Outside:
    if policy not in OUTSIDE_POLICIES:
        raise ValidationError(f"outside must be 'clip' or 'drop'; got {policy!r}")
    if policy == "clip" and not binning.numeric:
        raise ValidationError(
            "outside='clip' needs numeric bins; with categories, values matching no "
            "label are dropped (outside='drop')"
        )
    return policy  # type: ignore[return-value]


def _default_outside(binning: Binning, policy: object) -> object:
    if policy is None:
        return "clip" if binning.numeric else "drop"
    return policy


# --------------------------------------------------------------------------- arrays


def count_values(values: object, binning: Binning, *, outside: object = None) -> np.ndarray:
    """Counts per bin of a 1-D numpy array, list or pandas Series of values.

    Same rules as :func:`count_file`; vectorised (``searchsorted`` and ``bincount``).
    ``outside`` defaults to ``"clip"`` for numeric bins and ``"drop"`` for categories.
    """
    if not isinstance(binning, Binning):
        raise _refuse_data_derived(binning)
    policy = _outside(_default_outside(binning, outside), binning)
    if hasattr(values, "to_numpy") and callable(values.to_numpy):  # pandas Series
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValidationError(f"values must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise ValidationError("values is empty: there are no records to count")
    if binning.numeric:
        return _count_numeric(arr, binning, policy)
    return _count_categories(arr, binning)


def _missing(arr: np.ndarray) -> np.ndarray:
    """Mask of missing entries: None or NaN in object arrays, NaN in float arrays."""
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "O":
        test = np.frompyfunc(lambda v: v is None or (isinstance(v, float) and v != v), 1, 1)
        return test(arr).astype(bool)
    if arr.dtype.kind in "US":
        return np.char.str_len(np.char.strip(arr.astype(str))) == 0
    return np.zeros(arr.shape, dtype=bool)


def _as_float_array(arr: np.ndarray, *, strict: bool = True) -> np.ndarray:
    """Present values as float64 (missing ones removed). ``strict``: refuse text that
    is not a number; otherwise such values become NaN (they match no category)."""
    if arr.dtype.kind in "biuf":
        x = arr.astype(np.float64)
        return x[~np.isnan(x)]
    if arr.dtype.kind not in "OUS":
        raise ValidationError(f"values of dtype {arr.dtype} are not numbers (bins are numeric)")
    present = arr[~_missing(arr)]
    if present.dtype.kind in "US":
        present = np.char.strip(present.astype(str))
    try:
        return present.astype(np.float64)
    except (TypeError, ValueError):
        if strict:
            raise ValidationError("values are not all numbers (bins are numeric)") from None
    parse = np.frompyfunc(lambda v: _label_number(str(v)), 1, 1)
    out = parse(present)
    return np.where(np.equal(out, None), np.nan, out).astype(np.float64)


def _count_numeric(arr: np.ndarray, binning: Binning, policy: Outside) -> np.ndarray:
    edges = binning.edges
    assert edges is not None
    x = _as_float_array(arr)
    x = x[~np.isnan(x)]
    if policy == "clip":
        x = np.clip(x, edges[0], edges[-1])
    else:
        x = x[(x >= edges[0]) & (x <= edges[-1])]
    # bin(x) = #{interior edges e_i <= x}; the last bin is closed at e_n
    idx = np.searchsorted(edges[1:-1], x, side="right")
    return np.bincount(idx, minlength=binning.n).astype(np.int64)


def _numeric_keys(binning: Binning) -> np.ndarray | None:
    """The labels as numbers when every label is one (then values match as numbers)."""
    parsed = [_label_number(c) for c in binning.categories or ()]
    if any(v is None for v in parsed):
        return None
    keys = np.asarray(parsed, dtype=np.float64)
    if np.unique(keys).size != keys.size:
        raise ValidationError("categories name the same number twice (e.g. '1' and '1.0')")
    return keys


def _count_categories(arr: np.ndarray, binning: Binning) -> np.ndarray:
    keys = _numeric_keys(binning)
    if keys is not None:
        x = _as_float_array(arr, strict=False)
        x = x[~np.isnan(x)]
    else:
        if arr.dtype.kind in "biuf":
            raise ValidationError("values are numbers but some categories are not")
        keys = np.asarray(binning.categories, dtype=str)
        x = arr[~_missing(arr)].astype(str)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    pos = np.minimum(np.searchsorted(sorted_keys, x), sorted_keys.size - 1)
    hit = sorted_keys[pos] == x
    return np.bincount(order[pos[hit]], minlength=binning.n).astype(np.int64)


# --------------------------------------------------------------------------- files


def file_format(path: str | Path) -> Literal["csv", "parquet"]:
    """``"csv"`` or ``"parquet"`` from the file name's suffix."""
    name = Path(path).name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    raise ValidationError(
        f"cannot tell the format of {str(path)!r}: use a .csv, .tsv or .parquet file"
    )


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(value: float) -> str:
    """A DOUBLE literal that round-trips exactly."""
    return f"CAST('{float(value)!r}' AS DOUBLE)"


def _source_sql(path: Path, fmt: str) -> str:
    where = "'" + str(path).replace("'", "''") + "'"
    if fmt == "csv":
        # all columns as text: types are decided here, not by sniffing a sample
        return f"read_csv({where}, header = true, all_varchar = true)"
    return f"read_parquet({where})"


def _connect() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportError("reading files needs duckdb: pip install duckdb") from exc
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")  # the command line prints its own output
    return duckdb, con


def _columns(con: Any, source: str) -> list[tuple[str, str]]:
    rows = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


_NUMERIC_TYPES = frozenset(
    (
        *("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE"),
        *("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"),
    )
)


def _is_numeric_type(sql_type: str) -> bool:
    t = sql_type.upper()
    return t in _NUMERIC_TYPES or t.startswith("DECIMAL")


def _numeric_sql(column: str, sql_type: str) -> str:
    """``column`` as DOUBLE (empty text is missing); a strict cast, so text that is
    not a number raises a conversion error."""
    col = _quote(column)
    if sql_type.upper() == "VARCHAR":
        col = f"NULLIF(trim({col}), '')"
    return f"CAST({col} AS DOUBLE)"


def _edges_sql(con: Any, x: str, binning: Binning) -> str:
    """SQL for the grid cell of ``x``; fills the table ``dphist_cells`` it joins on.

    Exact and streaming: ``cell(v) = floor((v - e_0) / h)`` over a uniform grid of
    [e_0, e_n] is monotone in ``v`` in floating point, so ``bin(x) = #{interior
    e_i <= x}`` equals the number of interior edges in cells before ``cell(x)``
    (``base``) plus those in ``cell(x)`` that are ``<= x``. The per-cell table is
    built from the public edges with the same floating-point formula.
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
    base = np.concatenate(([0], np.cumsum(per_cell)[:-1])).astype(np.int64)
    con.execute("DROP TABLE IF EXISTS dphist_inner")
    con.execute("DROP TABLE IF EXISTS dphist_cells")
    con.execute(
        "CREATE TEMP TABLE dphist_inner AS SELECT unnest($1::DOUBLE[]) AS edge, "
        "unnest($2::BIGINT[]) AS cell",
        [inner.tolist(), cell_of.tolist()],
    )
    con.execute(
        "CREATE TEMP TABLE dphist_cells AS SELECT b.cell, b.base, "
        "coalesce(i.k, 0) AS k, i.first_edge, i.inner_edges FROM "
        "(SELECT unnest($1::BIGINT[]) AS base, generate_subscripts($1::BIGINT[], 1) - 1 "
        "AS cell) AS b LEFT JOIN (SELECT cell, count(*) AS k, min(edge) AS first_edge, "
        "list(edge) AS inner_edges FROM dphist_inner GROUP BY cell) AS i ON i.cell = b.cell",
        [base.tolist()],
    )
    return f"CAST(floor(({x} - {_literal(e0)}) / {_literal(h)}) AS BIGINT)"


def _numeric_query(
    con: Any, source: str, column: str, sql_type: str, binning: Binning, policy: Outside
) -> str:
    edges = binning.edges
    assert edges is not None
    x = _numeric_sql(column, sql_type)
    lo, hi = _literal(float(edges[0])), _literal(float(edges[-1]))
    present = f"SELECT {x} AS x FROM {source}"
    if policy == "clip":
        values = (
            f"SELECT least(greatest(x, {lo}), {hi}) AS x FROM ({present}) "
            "WHERE x IS NOT NULL AND NOT isnan(x)"
        )
    else:
        values = f"SELECT x FROM ({present}) WHERE x >= {lo} AND x <= {hi}"  # NULL, NaN fail
    cell = _edges_sql(con, "v.x", binning)
    # most cells hold at most one edge: one comparison; the others count their list
    offset = (
        "CASE WHEN c.k = 0 THEN 0 WHEN c.k = 1 THEN CAST(v.x >= c.first_edge AS BIGINT) "
        "ELSE len(list_filter(c.inner_edges, lambda e: e <= v.x)) END"
    )
    return (
        f"SELECT c.base + {offset} AS bin, count(*) AS n FROM ({values}) AS v "
        f"JOIN dphist_cells AS c ON c.cell = {cell} GROUP BY bin"
    )


def _category_query(con: Any, source: str, column: str, sql_type: str, binning: Binning) -> str:
    keys = _numeric_keys(binning)
    col = _quote(column)
    con.execute("DROP TABLE IF EXISTS dphist_labels")
    if keys is not None:
        values, key_type = keys.tolist(), "DOUBLE"
        if _is_numeric_type(sql_type):
            key = f"CAST({col} AS DOUBLE)"
        else:
            key = f"TRY_CAST(trim(CAST({col} AS VARCHAR)) AS DOUBLE)"
    else:
        if _is_numeric_type(sql_type):
            raise ValidationError(
                f"column {column!r} holds numbers but some categories are not numbers"
            )
        values, key_type = list(binning.categories or ()), "VARCHAR"
        key = f"CAST({col} AS VARCHAR)"
    con.execute(
        f"CREATE TEMP TABLE dphist_labels AS SELECT unnest($1::{key_type}[]) AS key, "
        f"generate_subscripts($1::{key_type}[], 1) - 1 AS bin",
        [values],
    )
    return (
        f"SELECT l.bin AS bin, count(*) AS n FROM (SELECT {key} AS key FROM {source}) AS v "
        "JOIN dphist_labels AS l ON l.key = v.key GROUP BY l.bin"
    )


def count_file(
    path: str | Path, column: str, binning: Binning, *, outside: object = None
) -> np.ndarray:
    """Counts per bin of one column of a CSV (with a header row) or Parquet file.

    The count is one DuckDB query (``GROUP BY`` on the bin index), streamed over the
    file. CSV fields are read as text and converted here: for numeric bins every
    non-empty field must be a number. ``outside`` defaults to ``"clip"`` for numeric
    bins and ``"drop"`` for categories. Raises :class:`~dphist.errors.ValidationError`
    for a missing or unreadable file, an unknown column, non-numeric values, or a
    column with no non-missing values; messages never quote a value from the file.
    """
    if not isinstance(binning, Binning):
        raise _refuse_data_derived(binning)
    policy = _outside(_default_outside(binning, outside), binning)
    p = Path(path)
    fmt = file_format(p)
    if not p.is_file():
        raise ValidationError(f"input file {str(p)!r} does not exist or is not a file")
    duckdb, con = _connect()
    try:
        source = _source_sql(p, fmt)
        try:
            columns = dict(_columns(con, source))
        except duckdb.Error as exc:
            raise ValidationError(
                f"cannot read {str(p)!r} as {fmt.upper()}: {_first(exc)}"
            ) from None
        if column not in columns:
            raise ValidationError(_unknown_column(column, list(columns), p))
        sql_type = columns[column]
        if binning.numeric and not (_is_numeric_type(sql_type) or sql_type == "VARCHAR"):
            raise ValidationError(f"column {column!r} has type {sql_type}, not numbers")
        present = f"SELECT 1 FROM {source} WHERE {_quote(column)} IS NOT NULL LIMIT 1"
        try:
            if con.execute(present).fetchone() is None:
                raise ValidationError(f"column {column!r} of {str(p)!r} has no values to count")
            if binning.numeric:
                query = _numeric_query(con, source, column, sql_type, binning, policy)
            else:
                query = _category_query(con, source, column, sql_type, binning)
            result = con.execute(query).fetchnumpy()
        except duckdb.ConversionException:
            raise ValidationError(
                f"column {column!r} of {str(p)!r} holds values that are not numbers "
                "(numeric bins need numbers; use categories for labels)"
            ) from None
        except duckdb.Error as exc:
            raise ValidationError(f"cannot count {str(p)!r}: {_first(exc)}") from None
    finally:
        con.close()
    out = np.zeros(binning.n, dtype=np.int64)
    bins = np.asarray(result["bin"], dtype=np.int64)
    out[bins] = np.asarray(result["n"], dtype=np.int64)
    return out


def _first(exc: BaseException) -> str:
    """The first line of a DuckDB message with quoted text removed (later lines and
    quotes may hold file content)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"\"[^\"]*\"|'[^']*'", "'…'", line)


def _unknown_column(column: str, known: Sequence[str], path: Path) -> str:
    import difflib

    close = difflib.get_close_matches(column, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(repr(c) for c in known[:20]) + (", ..." if len(known) > 20 else "")
    return f"no column {column!r} in {str(path)!r}; its columns are {listed}.{hint}"


def count(
    source: object,
    binning: Binning | None,
    *,
    column: str | None = None,
    outside: object = None,
) -> np.ndarray:
    """Counts per bin of a file (``column`` required) or of an array / Series."""
    if binning is None or not isinstance(binning, Binning):
        raise _refuse_data_derived(binning)
    if isinstance(source, str | Path):
        if column is None:
            raise ValidationError("column is required when counting a file")
        return count_file(source, column, binning, outside=outside)
    return count_values(source, binning, outside=outside)


# --------------------------------------------------------------------------- group sizes


def _open_table(con: Any, duckdb: Any, path: str | Path, needed: Sequence[str]) -> str:
    """The DuckDB source of a CSV/Parquet file, checked to exist and hold ``needed``."""
    p = Path(path)
    fmt = file_format(p)
    if not p.is_file():
        raise ValidationError(f"input file {str(p)!r} does not exist or is not a file")
    source = _source_sql(p, fmt)
    try:
        columns = [c for c, _ in _columns(con, source)]
    except duckdb.Error as exc:
        raise ValidationError(f"cannot read {str(p)!r} as {fmt.upper()}: {_first(exc)}") from None
    for column in needed:
        if column not in columns:
            raise ValidationError(_unknown_column(column, columns, p))
    return source


def read_group_tables(
    groups: str | Path,
    levels: Sequence[str],
    *,
    group_column: str,
    entities: str | Path | None = None,
    size_column: str | None = None,
) -> Any:
    """Group sizes over a region hierarchy from record files (Kuo et al. §2; spec §2.1).

    ``groups`` is the public ``Groups`` table: one row per group with its id
    (``group_column``) and one column per level below the root (``levels``, coarsest
    first, e.g. ``state, county``); the root is implicit. The private sizes come
    either from an ``entities`` file (one row per entity, its group id in
    ``group_column``; sizes are counted with a DuckDB ``GROUP BY``) or from a
    ``size_column`` of ``groups``. Groups without entities have size 0. Returns a
    :class:`dphist.groupsize.GroupSizeData`. The hierarchy and the number of groups
    per region are read from the public table only.
    """
    from .groupsize import GroupSizeData, Hierarchy

    if (entities is None) == (size_column is None):
        raise ValidationError("give the sizes either as an entities file or as a size column")
    levels = [str(c) for c in levels]
    if not levels or len(set(levels)) != len(levels):
        raise ValidationError("give one or more distinct region columns, coarsest first")
    duckdb, con = _connect()
    try:
        needed = [group_column, *levels] + ([size_column] if size_column else [])
        gsrc = _open_table(con, duckdb, groups, needed)
        cols = ", ".join(f"CAST({_quote(c)} AS VARCHAR) AS c{i}" for i, c in enumerate(levels))
        size_sql = (
            f", CAST(NULLIF(trim(CAST({_quote(size_column)} AS VARCHAR)), '') AS BIGINT) AS size"
            if size_column
            else ""
        )
        try:
            table = con.execute(
                f"SELECT CAST({_quote(group_column)} AS VARCHAR) AS gid, {cols}{size_sql} "
                f"FROM {gsrc}"
            ).fetchnumpy()
            sizes = None
            if entities is not None:
                esrc = _open_table(con, duckdb, entities, [group_column])
                per = con.execute(
                    f"SELECT CAST({_quote(group_column)} AS VARCHAR) AS gid, count(*) AS n "
                    f"FROM {esrc} WHERE {_quote(group_column)} IS NOT NULL GROUP BY 1"
                ).fetchnumpy()
        except duckdb.ConversionException:
            raise ValidationError(
                f"column {size_column!r} holds values that are not integers"
            ) from None
        except duckdb.Error as exc:
            raise ValidationError(f"cannot read the group tables: {_first(exc)}") from None
    finally:
        con.close()
    gid = np.asarray(table["gid"], dtype=object)
    if gid.size == 0:
        raise ValidationError(f"the groups table {str(groups)!r} has no rows")
    if any(v is None for v in gid) or any(
        v is None for i in range(len(levels)) for v in np.asarray(table[f"c{i}"], dtype=object)
    ):
        raise ValidationError("every group needs an id and a region at every level")
    gid = gid.astype(str)
    order = np.argsort(gid, kind="stable")
    if np.any(gid[order][1:] == gid[order][:-1]):
        raise ValidationError(f"group ids in column {group_column!r} must be unique")
    region_cols = [np.asarray(table[f"c{i}"], dtype=object).astype(str) for i in range(len(levels))]
    # each region is named by its full path, so equal names under different parents differ
    paths = [region_cols[0].astype(object)]
    for c in region_cols[1:]:
        paths.append(paths[-1] + "/" + c.astype(object))
    leaves, first_row, group_leaf_code = np.unique(
        paths[-1].astype(str), return_index=True, return_inverse=True
    )
    columns = [np.full(leaves.size, "all")] + [p[first_row].astype(str) for p in paths]
    hierarchy, leaf_pos = Hierarchy.from_levels(columns)
    if size_column:
        sizes = np.asarray(table["size"])
        if np.ma.is_masked(sizes) or np.any(np.isnan(sizes.astype(np.float64))):
            raise ValidationError(f"every group needs a size in column {size_column!r}")
        sizes = sizes.astype(np.int64)
        if np.any(sizes < 0):
            raise ValidationError(f"column {size_column!r} holds negative sizes")
    else:
        sizes = np.zeros(gid.size, dtype=np.int64)
        ids = np.asarray(per["gid"], dtype=object).astype(str)
        at = np.searchsorted(gid[order], ids)
        known = (at < gid.size) & (gid[order][np.minimum(at, gid.size - 1)] == ids)
        if not np.all(known):
            raise ValidationError("the entities file names groups missing from the groups table")
        sizes[order[at]] = np.asarray(per["n"], dtype=np.int64)
    return GroupSizeData.from_group_sizes(hierarchy, leaf_pos[group_leaf_code], sizes)
