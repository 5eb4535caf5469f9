"""Record sources in DuckDB: CSV and Parquet files, and in-memory columns.

A source is opened as a :class:`Table`: its public schema (column names and types)
and SQL that yields one row per record with a flag ``ok`` (the record is well
formed) and the requested fields. What counts as a record is fixed here, publicly,
so that one record can never change how another is read:

* **CSV** (``.csv``, ``.txt``, ``.tsv``, optionally ``.gz``): the first line is the
  header and names the columns (it is public schema; a file without one is an error).
  Every further line is one record; every LF and every CR ends a line (so CRLF ends
  one) and empty lines are not records. A line is split at the delimiter (``,``; a
  tab for ``.tsv``; or the one given) following RFC 4180 *within the line*: a field may
  be quoted, ``""`` is a quote inside quotes,
  and quotes never span lines. A line that does not split this way, has another
  number of fields than the header, is not text in the file's encoding (UTF-8 unless
  another is given: UTF-16 or Latin-1), holds the control characters
  0x1E or 0x1F, or is longer than :data:`MAX_LINE_BYTES` is **malformed**: it is not a
  record and is dropped. The dialect never comes from sniffing the data (DuckDB's
  sniffer and its multi-line quoting would let one line decide how later lines
  are read); the delimiter and the encoding are the publisher's to state.
* **Parquet**: one row per record; the column types are the file's schema.
* **In memory**: one element per record of a numpy array, list, pandas, polars or
  Arrow column, scanned by DuckDB. The type of an array or a column is schema; the
  element types of a list (or any sequence) and of an object array are data, so they
  are read element by element, as text: an element that is not a scalar (a list, an
  array, a dict: a ragged record) or is missing (None, NaN, NA) holds no value.

A column is **typed** when its type is schema: Parquet's, or the dtype of a numpy
array, pandas, polars or Arrow column. CSV columns, object arrays and Python lists
(whose element types are data) are **untyped** (:attr:`Table.untyped`): how their
values are read is the publisher's choice (:mod:`dphist.ingest.types`).
"""

from __future__ import annotations

import gzip
import numbers
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import InputTypeError, ValidationError

__all__ = [
    "CSV_SUFFIXES",
    "MAX_LINE_BYTES",
    "PARQUET_SUFFIXES",
    "Table",
    "connect",
    "csv_delimiter",
    "csv_encoding",
    "file_format",
    "open_file",
    "open_values",
    "quote_identifier",
    "split_line",
]

CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
MAX_LINE_BYTES = 1 << 20
"""Longest CSV line read as a record (longer lines are malformed)."""

_LINE_SEPARATOR = "\x1e\x1f"  # DuckDB reads each line whole into one column
_HEADER_LIMIT = MAX_LINE_BYTES


_DATABASE: dict[int, Any] = {}  # one in-memory DuckDB per process (cursors are cheap)


def connect() -> Any:
    """A fresh DuckDB connection without DuckDB's own progress output.

    Connections are cursors of one in-memory database per process (opening a database
    takes about 10 ms, a cursor microseconds); tables and registered arrays belong to
    the cursor and vanish when it is closed.
    """
    import duckdb

    pid = os.getpid()  # a forked worker opens its own database
    if pid not in _DATABASE:
        _DATABASE.clear()
        _DATABASE[pid] = duckdb.connect(":memory:")
    con = _DATABASE[pid].cursor()
    con.execute("SET enable_progress_bar = false")
    return con


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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


@dataclass(frozen=True, eq=False)
class Table:
    """A record source opened in DuckDB.

    ``columns`` maps each column to its DuckDB type (public schema). ``records(names)``
    is SQL yielding ``ok`` and the named columns as ``c0, c1, ...`` (NULL where the
    record is malformed).
    """

    label: str
    columns: dict[str, str]
    records: Callable[[Sequence[str]], str]
    rows: int | None = None  # records in the source when its metadata says (Parquet)
    untyped: frozenset[str] = frozenset()  # columns whose type is not schema

    def require(self, *names: str) -> None:
        """Raise a clear error (a schema fact, public) when a column is missing."""
        for name in names:
            if name not in self.columns:
                raise ValidationError(_unknown_column(name, list(self.columns), self.label))


def _unknown_column(column: str, known: Sequence[str], label: str) -> str:
    import difflib

    close = difflib.get_close_matches(column, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(repr(c) for c in known[:20]) + (", ..." if len(known) > 20 else "")
    return f"no column {column!r} in {label}; its columns are {listed}.{hint}"


# --------------------------------------------------------------------------- CSV lines


def _field_pattern(delim: str) -> str:
    d = re.escape(delim)
    return f'"(?:[^"]|"")*"|[^{d}"]*'


def split_line(line: str, delim: str = ",") -> list[str] | None:
    """The fields of one CSV line by the rules above, or None when it is malformed.

    The same grammar as the SQL that reads records; used for the header and as the
    reference in tests.
    """
    field = _field_pattern(delim)
    d = re.escape(delim)
    if re.fullmatch(f"(?:{field})(?:{d}(?:{field}))*", line) is None:
        return None
    raw = re.findall(f"({field}){d}", line + delim)
    return [f[1:-1].replace('""', '"') if f.startswith('"') else f for f in raw]


def _quoted_split_sql(delim: str) -> str:
    """SQL for the list of fields of a ``line`` that holds quotes (NULL when malformed)."""
    field = _field_pattern(delim)
    d = re.escape(delim)
    whole = _literal(f"(?:{field})(?:{d}(?:{field}))*")
    each = _literal(f"({field}){d}")
    return (
        f"CASE WHEN regexp_full_match(line, {whole}) THEN list_transform("
        f"regexp_extract_all(line || {_literal(delim)}, {each}, 1), lambda f: CASE WHEN "
        "starts_with(f, '\"') THEN replace(f[2:-2], '\"\"', '\"') ELSE f END) END"
    )


def _lines_sql(source: str, delim: str, width: int, names: Sequence[str]) -> Callable:
    """``records`` for the lines of ``source``: lines without quotes are split with
    ``split_part`` (no list per line), lines with quotes by the full grammar."""
    sep = _literal(delim)
    quoted = _quoted_split_sql(delim)
    plain_ok = f"length(line) - length(replace(line, {sep}, '')) = {width - 1}"

    def records(wanted: Sequence[str]) -> str:
        picks = ", ".join(
            f"CASE WHEN NOT ok THEN NULL WHEN plain THEN split_part(line, {sep}, "
            f"{names.index(w) + 1}) ELSE q[{names.index(w) + 1}] END AS c{i}"
            for i, w in enumerate(wanted)
        )
        return (
            f"SELECT ok, {picks} FROM (SELECT line, plain, q, CASE WHEN bad THEN false "
            f"WHEN plain THEN {plain_ok} ELSE coalesce(len(q) = {width}, false) END AS ok "
            "FROM (SELECT line, bad, plain, CASE WHEN NOT bad AND NOT plain THEN "
            f"{quoted} END AS q FROM (SELECT line, strpos(line, chr(30)) > 0 OR "
            "strpos(line, chr(31)) > 0 AS bad, strpos(line, '\"') = 0 AS plain "
            f"FROM {source} WHERE line IS NOT NULL)))"
        )

    return records


ENCODINGS = {"utf-8": "utf-8", "utf-16": "utf-16", "iso8859-1": "latin-1"}
"""CSV encodings read natively (Python's name of each: DuckDB's)."""


def csv_encoding(name: object = None) -> str:
    """DuckDB's name of a CSV encoding (default UTF-8), or a clear error."""
    import codecs

    if name is None:
        return "utf-8"
    try:
        known = codecs.lookup(str(name)).name
    except LookupError:
        known = ""
    if known not in ENCODINGS:
        raise ValidationError(
            f"encoding {name!r} is not supported; use utf-8, utf-16 or latin-1 (convert "
            "other files first, e.g. with iconv)"
        )
    return ENCODINGS[known]


def csv_delimiter(path: str | Path, delimiter: object = None) -> str:
    """The delimiter of a CSV file: the one given (one character; ``tab`` or ``\\t`` for
    a tab), else a tab for ``.tsv`` and a comma otherwise."""
    if delimiter is None:
        return "\t" if ".tsv" in Path(path).name.lower() else ","
    d = {"tab": "\t", "\\t": "\t"}.get(str(delimiter), str(delimiter))
    if len(d) != 1 or d in '"\n\r\x1e\x1f':
        raise ValidationError(
            f"delimiter must be one character other than a quote or a line end; got {delimiter!r}"
        )
    return d


def _read_header(path: Path, encoding: str = "utf-8") -> str:
    """The first line of a CSV file (public schema), decoded; clear errors otherwise."""
    import codecs

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            head = f.read(2 * _HEADER_LIMIT + 4)
    except (OSError, EOFError) as exc:
        raise ValidationError(f"cannot read {str(path)!r}: {exc}") from None
    if not head:
        raise ValidationError(
            f"{str(path)!r} is empty: a CSV file starts with a header row naming its columns"
        )
    codec = "utf-8-sig" if encoding == "utf-8" else encoding
    text = codecs.getincrementaldecoder(codec)(errors="replace").decode(head)
    end = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=len(text))
    if len(text[:end].encode("utf-8")) > _HEADER_LIMIT:
        raise ValidationError(f"the header row of {str(path)!r} is longer than 1 MiB")
    if "\ufffd" in text[:end]:
        raise ValidationError(
            f"the header row of {str(path)!r} is not {encoding.upper()} text (give its encoding)"
        )
    return text[:end]


def _open_csv(con: Any, path: Path, delimiter: object = None, encoding: object = None) -> Table:
    delim = csv_delimiter(path, delimiter)
    charset = csv_encoding(encoding)
    header = _read_header(path, charset)
    names = split_line(header, delim)
    if names is None:
        raise ValidationError(f"the header row of {str(path)!r} is not valid CSV")
    if not header.strip():
        raise ValidationError(
            f"the first line of {str(path)!r} is empty: a CSV file starts with a header row"
        )
    source = (
        f"read_csv({_literal(str(path))}, header = true, auto_detect = false, "
        f"delim = {_literal(_LINE_SEPARATOR)}, quote = '', escape = '', "
        "columns = {'line': 'VARCHAR'}, ignore_errors = true, strict_mode = false, "
        f"new_line = '\\n', encoding = {_literal(charset)}, "
        f"max_line_size = {MAX_LINE_BYTES})"
    )
    columns: dict[str, str] = {}
    for name in names:  # a repeated name keeps its first position
        columns.setdefault(name, "VARCHAR")
    records = _lines_sql(source, delim, len(names), names)
    return Table(repr(str(path)), columns, records, untyped=frozenset(columns))


# --------------------------------------------------------------------------- Parquet


def _describe(con: Any, source: str) -> dict[str, str]:
    rows = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    out: dict[str, str] = {}
    for r in rows:
        out.setdefault(str(r[0]), str(r[1]))
    return out


def _plain_records(source: str, columns: Sequence[str]) -> Callable[[Sequence[str]], str]:
    def records(wanted: Sequence[str]) -> str:
        picks = ", ".join(f"{quote_identifier(w)} AS c{i}" for i, w in enumerate(wanted))
        return f"SELECT true AS ok, {picks} FROM {source}"

    return records


def open_file(
    con: Any, path: str | Path, *, delimiter: object = None, encoding: object = None
) -> Table:
    """Open a CSV or Parquet file; a missing or unreadable file is a clear error.
    ``delimiter`` and ``encoding`` apply to CSV (:func:`csv_delimiter`,
    :func:`csv_encoding`)."""
    import duckdb

    p = Path(path)
    fmt = file_format(p)
    if not p.is_file():
        raise ValidationError(f"input file {str(p)!r} does not exist or is not a file")
    if fmt == "csv":
        return _open_csv(con, p, delimiter, encoding)
    source = f"read_parquet({_literal(str(p))})"
    try:
        columns = _describe(con, source)
        rows = con.execute(
            f"SELECT sum(num_rows) FROM parquet_file_metadata({_literal(str(p))})"
        ).fetchall()[0][0]
    except duckdb.Error as exc:
        raise ValidationError(f"cannot read {str(p)!r} as Parquet: {first_line(exc)}") from None
    return Table(repr(str(p)), columns, _plain_records(source, list(columns)), int(rows))


def first_line(exc: BaseException) -> str:
    """The first line of a DuckDB message with quoted text removed (later lines and
    quotes may hold file content)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"\"[^\"]*\"|'[^']*'", "'…'", line)


# --------------------------------------------------------------------------- in memory


def _module(obj: object) -> str:
    return type(obj).__module__.split(".")[0]


_CONTAINERS = (list, tuple, dict, set, frozenset, bytes, bytearray, memoryview)
_REAL_TYPES = frozenset((int, float))


def _element_text(v: object) -> str | None:
    """One element as text, or None when it holds no value: missing (None, NaN, pandas
    NA and NaT) or not a scalar (a list, array, dict, bytes, ...: a ragged record).
    Numbers read back exactly: integers in full, other reals as the shortest text of
    their float64 value; booleans and other scalars as ``str`` gives them."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, np.ndarray):
        return _element_text(v[()]) if v.ndim == 0 else None
    if isinstance(v, _CONTAINERS) or type(v).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(v, bool | np.bool_):
        return str(v)
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        return None if f != f else repr(f)
    try:
        return str(v)
    except Exception:  # an object whose str fails holds no value
        return None


def _as_text(arr: np.ndarray) -> np.ndarray:
    """An object array as text: None where an element holds no value (_element_text)."""
    with np.errstate(invalid="ignore"):
        return np.frompyfunc(_element_text, 1, 1)(arr).astype(object)


def _elements(values: object, name: str, numbers: bool) -> tuple[np.ndarray, bool]:
    """A sequence of records as a 1-D array, one element per record whatever it holds,
    and whether it is text. Element types are data, not schema, so the array's type
    never depends on them: text always, except that a column read as ``numbers`` whose
    elements are all ints or floats (numpy's too) is taken as numbers directly, which
    reads every record exactly as its text would. ``np.asarray`` alone would infer a
    shape from a ragged element and a type from a text one."""
    try:
        items = values if isinstance(values, list) else list(values)  # type: ignore[call-overload]
    except TypeError:
        raise InputTypeError(f"{name} must be a column of records (a sequence)") from None
    if numbers and items:
        kinds = set(map(type, items))
        if all(k in _REAL_TYPES or issubclass(k, np.integer | np.floating) for k in kinds):
            arr = np.asarray(items)
            if arr.ndim == 1 and arr.dtype.kind in "iuf":  # floats as float64, like their text
                return (arr.astype(np.float64) if arr.dtype.kind == "f" else arr), False
    return _as_text(np.fromiter(items, dtype=object, count=len(items))), True


def _column(values: object, name: str, numbers: bool = False) -> tuple[Any, bool]:
    """One in-memory column as something DuckDB scans, and whether it is text by
    construction. The type of a numpy, pandas, polars or Arrow column is schema and is
    kept (an object column is text: its element types are data). Other sequences are
    read element by element (:func:`_elements`; ``numbers``: the column is read as
    numbers)."""
    mod = _module(values)
    kind = type(values).__name__
    if mod == "pandas":
        if kind != "Series":
            raise InputTypeError(f"{name} must be one column (a Series), not a {kind}")
        if values.dtype == object:
            return _as_text(values.to_numpy()), True
        return values.reset_index(drop=True), False
    if mod == "polars":
        if kind != "Series":
            raise InputTypeError(f"{name} must be one column (a Series), not a {kind}")
        return values, False
    if mod == "pyarrow":
        if kind in ("Table", "RecordBatch"):
            raise InputTypeError(f"{name} must be one column (an Array), not a {kind}")
        return values, False
    if isinstance(values, str | bytes) or np.isscalar(values):
        raise InputTypeError(f"{name} must be a column of records, not a single value")
    if not isinstance(values, np.ndarray) and callable(getattr(values, "to_numpy", None)):
        values = values.to_numpy()  # another column type that converts itself
    if not isinstance(values, np.ndarray):
        return _elements(values, name, numbers)
    if values.ndim != 1:  # the array's type, not its records
        raise ValidationError(f"{name} must be one column: a 1-D array, not {values.ndim}-D")
    if values.dtype.kind in "OU":
        return _as_text(values), True
    if values.dtype.kind not in "biuf":
        raise InputTypeError(f"{name} has dtype {values.dtype}; give numbers or text")
    return values, False


def open_values(con: Any, columns: dict[str, object], numbers: Sequence[str] = ()) -> Table:
    """Register in-memory columns (same length) as one DuckDB table of records;
    ``numbers`` names the columns read as numbers (see :func:`_elements`)."""
    import duckdb

    cols: dict[str, Any] = {}
    text: set[str] = set()
    untyped: set[str] = set()
    for name, values in columns.items():
        cols[name], is_text = _column(values, name, name in numbers)
        if is_text:
            text.add(name)
        if not _typed(values):
            untyped.add(name)
    if len({len(c) for c in cols.values()}) > 1:
        listed = " and ".join(cols)
        raise ValidationError(f"{listed} must have one entry per record (the same length)")
    con.register("dphist_values", _frame(cols))
    try:
        schema = _describe(con, "dphist_values")
    except duckdb.Error as exc:
        raise InputTypeError(f"cannot read the values: {first_line(exc)}") from None
    schema.update({name: "VARCHAR" for name in text})

    def records(wanted: Sequence[str]) -> str:
        picks = ", ".join(
            (f"CAST({quote_identifier(w)} AS VARCHAR)" if w in text else quote_identifier(w))
            + f" AS c{i}"
            for i, w in enumerate(wanted)
        )
        return f"SELECT true AS ok, {picks} FROM dphist_values"

    return Table("the values", schema, records, untyped=frozenset(untyped))


def _typed(values: object) -> bool:
    """True when the column's type is schema (a dtype other than object), not inferred
    from its values or left to them."""
    typed = isinstance(values, np.ndarray) or _module(values) in ("pandas", "polars", "pyarrow")
    return typed and getattr(values, "dtype", None) != np.dtype(object)


def _frame(cols: dict[str, Any]) -> Any:
    """Columns as one object DuckDB scans: a dict of numpy arrays, or a pandas, polars
    or Arrow table when a column is one of those (numpy columns join it uncopied)."""
    kinds = {_module(c) for c in cols.values()} - {"numpy"}
    if not kinds:
        return cols
    if len(kinds) > 1:
        raise InputTypeError("give the columns as one kind: numpy, pandas, polars or Arrow")
    kind = kinds.pop()
    if kind == "pandas":
        import pandas as pd

        return pd.DataFrame(
            {k: v if _module(v) == "pandas" else pd.Series(v) for k, v in cols.items()}
        )
    if kind == "polars":
        import polars as pl

        return pl.DataFrame(
            {k: v if _module(v) == "polars" else pl.Series(k, v) for k, v in cols.items()}
        )
    import pyarrow as pa

    return pa.table({k: v if _module(v) == "pyarrow" else pa.array(v) for k, v in cols.items()})
