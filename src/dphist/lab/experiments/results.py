"""Results on disk: an append-only CSV journal, resume, Parquet at the end."""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..._io import atomic_path
from ...errors import ValidationError
from .grid import COLUMNS, DUCK_TYPES, TYPES


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def encode(rows: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([_format(row[c]) for c in COLUMNS])
    return buf.getvalue()


def journal_path(path: Path) -> Path:
    return path.with_suffix(".csv") if path.suffix == ".parquet" else path


def open_journal(path: Path) -> list[dict[str, Any]]:
    """Create the CSV with its header, or check its header and return its rows.

    A last line without its newline (a write cut short) is removed first.
    """
    header = ",".join(COLUMNS) + "\n"
    if not path.exists() or path.stat().st_size == 0:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(header)
            fh.flush()
            os.fsync(fh.fileno())
        return []
    raw = path.read_bytes()
    if not raw.startswith(header.encode()):
        raise ValidationError(
            f"{path} is not a results file of this version (its header differs); "
            "use a new output path"
        )
    cut = raw.rfind(b"\n") + 1
    if cut < len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(cut)
    return _read_csv(path)


def _parse_row(record: Mapping[str, str]) -> dict[str, Any]:
    return {c: _typed(c, record[c]) for c in COLUMNS}


def _read_csv(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValidationError(f"{path} does not have the results columns {COLUMNS}")
        return [_parse_row(r) for r in reader]


def write_parquet(journal: Path, target: Path) -> None:
    import duckdb

    columns = "{" + ", ".join(f"'{c}': '{t}'" for c, t in DUCK_TYPES.items()) + "}"
    with atomic_path(target) as tmp, contextlib.closing(duckdb.connect()) as con:
        tmp.unlink()  # duckdb writes the file itself
        con.execute(
            f"COPY (SELECT * FROM read_csv(?, header=true, columns={columns})) "
            "TO ? (FORMAT PARQUET)",
            [str(journal), str(tmp)],
        )


def _typed(column: str, value: Any) -> Any:
    if value is None:  # duckdb reads an empty CSV field as NULL
        return "" if TYPES[column] is str else math.nan
    return TYPES[column](value)


def unique_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without repeats: the last row per (run, metric, metric_args), at its first place.

    Use it to merge the rows of several grids that share cells.
    """
    index: dict[tuple[str, str, str], int] = {}
    out: list[dict[str, Any]] = []
    for row in rows:
        key = (row["run"], row["metric"], row["metric_args"])
        if key in index:
            out[index[key]] = row
        else:
            index[key] = len(out)
            out.append(row)
    return out


def load_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a results file (CSV or Parquet) as dicts with typed values.

    Rows keep file order; when a run was repeated (``retry_failed``) the last row
    for each run and metric replaces the earlier one.
    """
    target = Path(path)
    if target.suffix != ".parquet":
        return unique_rows(_read_csv(target))
    import duckdb

    with contextlib.closing(duckdb.connect()) as con:
        cur = con.execute("SELECT * FROM read_parquet(?)", [str(target)])
        names = [d[0] for d in cur.description]
        if tuple(names) != COLUMNS:
            raise ValidationError(f"{target} does not have the results columns {COLUMNS}")
        records = cur.fetchall()
    return unique_rows(
        [{c: _typed(c, v) for c, v in zip(names, rec, strict=True)} for rec in records]
    )
