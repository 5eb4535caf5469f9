"""Record chunks for a stream from standard input or from files arriving in a folder.

Both read records with DuckDB by the record domain of :mod:`dphist.ingest.sources`
(CSV lines split on their own, malformed lines dropped; Parquet rows as typed) and
yield chunks ``{time: seconds, column: values[, unit: ids]}`` for
:class:`~dphist.streams.Windowing`, with ``None`` ticks while nothing arrives so that
a clock can close windows on time.

* Standard input: a CSV header line, then records, one per line. A thread reads the
  lines; every ``interval`` seconds (or ``batch`` lines) they form one chunk.
* A folder: every ``.csv``, ``.tsv`` or ``.parquet`` file (optionally ``.gz`` for CSV)
  that appears is read once, in name order; names starting with ``.`` or ending in
  ``.tmp`` or ``.part`` are skipped, so a writer should write elsewhere (or under such a
  name) and rename the complete file into the folder. ``once`` reads the files present
  and stops.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time as _time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import ValidationError
from ..ingest.sources import CSV_SUFFIXES, PARQUET_SUFFIXES, connect, first_line, open_file
from .windows import time_sql

__all__ = ["folder_chunks", "read_records", "stdin_chunks"]

_SKIP = (".tmp", ".part", ".partial")


def read_records(path: Path, time: str, column: str, unit: str | None = None) -> dict[str, Any]:
    """The records of one file as columns ``{time: seconds, column, [unit]}`` (malformed
    records dropped; a missing column is a clear error, a schema fact)."""
    import duckdb

    con = connect()
    try:
        table = open_file(con, path)
        wanted = [column, time, *([unit] if unit is not None else [])]
        table.require(*wanted)
        seconds = time_sql("c1", table.columns[time])
        extra = ", c2 AS u" if unit is not None else ""
        sql = f"SELECT c0 AS v, {seconds} AS t{extra} FROM ({table.records(wanted)}) WHERE ok"
        try:
            rows = con.execute(sql).fetchnumpy()
        except duckdb.Error as exc:
            raise ValidationError(f"cannot read {str(path)!r}: {first_line(exc)}") from None
    finally:
        con.close()
    out = {column: _plain(rows["v"]), time: _plain(rows["t"], float)}
    if unit is not None:
        out[unit] = _plain(rows["u"])
    return out


def _plain(values: Any, kind: type | None = None) -> Any:
    """A DuckDB result column as a numpy array, missing values as None (text) or NaN."""
    import numpy as np

    if isinstance(values, np.ma.MaskedArray):
        if kind is float or values.dtype.kind == "f":
            return np.ma.filled(values.astype(np.float64), np.nan)
        return np.where(values.mask, None, values.data.astype(object))
    return np.asarray(values, dtype=np.float64) if kind is float else np.asarray(values)


def _lines(stream: IO[str], out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def stdin_chunks(
    stream: IO[str], *, time: str, column: str, unit: str | None = None,
    interval: float = 1.0, batch: int = 1 << 20, workdir: Path | None = None,
) -> Iterator[dict[str, Any] | None]:  # fmt: skip
    """Chunks of the CSV records arriving on ``stream`` (header line first)."""
    header = stream.readline()
    if not header.strip():
        raise ValidationError("standard input must start with a CSV header line naming the columns")
    lines: queue.Queue = queue.Queue(maxsize=4 * batch)
    threading.Thread(target=_lines, args=(stream, lines), daemon=True).start()
    with tempfile.TemporaryDirectory(dir=workdir, prefix="dphist-stream-") as tmp:
        path = Path(tmp) / "chunk.csv"
        done = False
        while not done:
            batch_lines, deadline = [], _time.monotonic() + interval
            while len(batch_lines) < batch:
                try:
                    line = lines.get(timeout=max(deadline - _time.monotonic(), 0.0))
                except queue.Empty:
                    break
                if line is None:
                    done = True
                    break
                batch_lines.append(line)
            if not batch_lines:
                yield None
                continue
            path.write_text(header + "".join(batch_lines), encoding="utf-8")
            yield read_records(path, time, column, unit)


def _readable(path: Path) -> bool:
    name = path.name.lower()
    if name.startswith(".") or name.endswith(_SKIP) or not path.is_file():
        return False
    return name.endswith(CSV_SUFFIXES + PARQUET_SUFFIXES)


def folder_chunks(
    folder: Path, *, time: str, column: str, unit: str | None = None, poll: float = 1.0,
    once: bool = False,
) -> Iterator[dict[str, Any] | None]:  # fmt: skip
    """Chunks of the files appearing in ``folder``, each read once, in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValidationError(f"{str(folder)!r} is not a folder")
    seen: set[str] = set()
    while True:
        fresh = sorted(p for p in folder.iterdir() if p.name not in seen and _readable(p))
        for path in fresh:
            seen.add(path.name)
            yield read_records(path, time, column, unit)
        if once:
            return
        if not fresh:
            yield None
            _time.sleep(poll)
