"""Records with a time column to windows of counts, closed by a public watermark.

Windows are public time intervals: window ``i`` holds the records with time in
``[start + i L, start + (i + 1) L)`` for a public ``start`` and length ``L`` (numbers in
the time column's unit; timestamps count in seconds since 1970 UTC, and ``L`` may be
written ``"90s"``, ``"15m"``, ``"1h"``, ``"1d"``). A record's value is counted over the
public bins by the record domain of :mod:`dphist.ingest` (the same rules, the same code).

When a window is complete is public too: windows close in order once a **watermark**
passes their end, and the watermark moves only by public facts, never by a record's
time (a record far in the future must not publish windows early):

* a :class:`Watermark` item in the source ("all records before ``t`` have arrived");
* a ``clock`` (``time.time`` for live data): after each item the watermark is
  ``clock() - lateness``; a ``None`` item is a tick with no records;
* the end of the source: with ``end`` every window up to it closes; without it the
  windows after the last watermark are never released.

Records without a valid time (missing, not a number or timestamp, not finite), before
``start``, at or after ``end``, in a window already closed (late), or more than
``max_pending`` windows ahead of the first open window are dropped, by these public
rules, and never reported. Every window is released, records or not, so the schedule
of releases depends on the watermark only. With a privacy unit, a window's records are
kept until it closes and at most ``K`` per unit are counted over the whole window.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import ingest
from ..errors import InputTypeError, ValidationError
from ..ingest.stream import bin_args, bin_tally

__all__ = ["Watermark", "Window", "Windowing", "parse_duration", "parse_time"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_PENDING = 256


@dataclass(frozen=True)
class Watermark:
    """A public promise in a source: every record with time before ``time`` has arrived."""

    time: float


@dataclass(frozen=True, eq=False)
class Window:
    """One window's true counts over the public bins (raw data: a stream seals it at once)
    and its public interval (None for windows given as counts)."""

    index: int
    counts: np.ndarray
    start: float | None = None
    end: float | None = None


def parse_duration(value: object, name: str = "window", zero: bool = False) -> float:
    """A positive length (``zero``: or 0): a number, or text such as ``"90s"``, ``"15m"``,
    ``"1h"``, ``"1d"``."""
    if isinstance(value, dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([smhdw]?)\s*", value)
        if m is None:
            raise ValidationError(f"{name} must be a number or a duration like 90s, 15m, 1h, 1d; "
                                  f"got {value!r}")  # fmt: skip
        seconds = float(m.group(1)) * _UNITS.get(m.group(2) or "s", 1)
    elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InputTypeError(f"{name} must be a number or a duration; got {type(value).__name__}")
    if not (math.isfinite(seconds) and (seconds > 0 or (zero and seconds == 0))):
        least = "zero or more" if zero else "positive"
        raise ValidationError(f"{name} must be {least} and finite; got {value!r}")
    return seconds


def parse_time(value: object, name: str = "start") -> float:
    """A point in time: a number (the time column's unit), a ``datetime`` or an ISO 8601
    text (seconds since 1970 UTC; a time without a zone is UTC)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValidationError(
                f"{name} must be a number or an ISO 8601 time; got {value!r}"
            ) from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.timestamp()
    number = isinstance(value, int | float | np.integer | np.floating)
    if number and not isinstance(value, bool) and math.isfinite(float(value)):
        return float(value)
    raise ValidationError(f"{name} must be a finite number or a time; got {value!r}")


def _column(chunk: Any, name: str) -> Any:
    """One column of a record chunk (a mapping of arrays, a pandas, polars or Arrow table)."""
    if isinstance(chunk, dict):
        if name not in chunk:
            raise ValidationError(f"no column {name!r} in a chunk; its columns are {list(chunk)}")
        return chunk[name]
    names = getattr(chunk, "column_names", None)
    names = list(getattr(chunk, "columns", []) if names is None else names)
    if name not in names:
        raise ValidationError(f"no column {name!r} in a chunk; its columns are {names[:20]}")
    col = chunk.column(name) if hasattr(chunk, "column_names") else chunk[name]
    return col.to_numpy() if hasattr(col, "to_numpy") else np.asarray(col)


def _seconds(values: Any) -> np.ndarray:
    """Times as float64 (NaN where a record has no valid time): numbers as they are,
    timestamps in seconds since 1970 UTC, text as DuckDB reads a number or a timestamp."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iuf":
        out = arr.astype(np.float64)
    elif arr.dtype.kind == "M":
        ns = arr.astype("datetime64[ns]")
        out = np.where(np.isnat(ns), np.nan, ns.astype(np.int64) / 1e9)
    else:
        out = _text_seconds(arr)
    return np.where(np.isfinite(out), out, np.nan)


def _text_seconds(arr: np.ndarray) -> np.ndarray:
    from ..ingest.sources import connect

    text = np.array([None if v is None or v != v else str(v) for v in arr.tolist()], dtype=object)
    con = connect()
    try:
        con.register("dphist_times", {"t": text})
        rows = con.execute(f"SELECT {time_sql('t', 'VARCHAR')} FROM dphist_times").fetchnumpy()
    finally:
        con.close()
    col = next(iter(rows.values()))
    return np.asarray(np.ma.filled(np.ma.asarray(col, dtype=np.float64), np.nan))


def time_sql(column: str, sql_type: str) -> str:
    """SQL for a time column as seconds (DOUBLE, NULL when not a valid time)."""
    t = sql_type.upper()
    if t.startswith(("TIMESTAMP", "DATE")):
        return f"epoch({column})"
    if t in ("VARCHAR",) or t.startswith("ENUM"):
        return (
            f"coalesce(TRY_CAST(trim({column}) AS DOUBLE), "
            f"epoch(TRY_CAST(trim({column}) AS TIMESTAMPTZ)))"
        )
    return f"TRY_CAST({column} AS DOUBLE)"


@dataclass
class _Pending:
    counts: np.ndarray | None = None
    values: list = field(default_factory=list)
    units: list = field(default_factory=list)


class Windowing:
    """Turns a source of record chunks into :class:`Window` items (see the module docs)."""

    def __init__(
        self, *, time: str, column: str, window: object, start: object, binning: ingest.Binning,
        outside: object = None, end: object = None, lateness: object = 0, clock: Any = None,
        privacy_unit: str | None = None, max_records: int | None = None, rng: object = None,
        max_pending: int = MAX_PENDING,
    ):  # fmt: skip
        self.time, self.column = str(time), str(column)
        self.length = parse_duration(window)
        self.start = parse_time(start)
        self.end = None if end is None else parse_time(end, "end")
        if self.end is not None and self.end <= self.start:
            raise ValidationError("end must come after start")
        self.lateness = 0.0 if lateness is None else parse_duration(lateness, "lateness", True)
        if clock is not None and not callable(clock):
            raise InputTypeError("clock must be a function returning the time (e.g. time.time)")
        self.clock = clock
        self.binning = binning
        self.policy = ingest.outside_policy(binning, outside)
        self.unit = privacy_unit
        self.k = ingest.unit_bound(privacy_unit, max_records)
        self.rng = rng
        self.max_pending = int(max_pending)
        self._tally = bin_args(binning) if binning.numeric else None
        self.windows_total = (
            None if self.end is None else math.ceil((self.end - self.start) / self.length)
        )

    def bounds(self, i: int) -> tuple[float, float]:
        """The public interval of window ``i``."""
        lo = self.start + i * self.length
        hi = self.start + (i + 1) * self.length
        return lo, hi if self.end is None else min(hi, self.end)

    def index(self, t: np.ndarray) -> np.ndarray:
        """Window of each time (-1 for no valid time or before ``start``), exact at the
        boundaries: a time on ``start + i L`` is in window ``i``."""
        with np.errstate(invalid="ignore"):
            i = np.floor((t - self.start) / self.length)
            i = np.where(np.isfinite(i), i, -1).astype(np.int64)
            lo = self.start + i * self.length
            i = np.where(t < lo, i - 1, i)
            i = np.where(t >= self.start + (i + 1) * self.length, i + 1, i)
        return np.where(np.isfinite(t) & (t >= self.start), i, -1)

    def windows(self, source: Iterable[Any]) -> Iterator[Window]:
        """The windows of ``source`` in order, each once its watermark has passed."""
        pending: dict[int, _Pending] = {}
        self.reset()
        mark = -math.inf
        for item in source:
            if isinstance(item, Watermark):
                mark = max(mark, float(item.time))
            elif item is not None:
                self._add(item, pending)
            if self.clock is not None:
                mark = max(mark, float(self.clock()) - self.lateness)
            yield from self._close(mark, pending)
        final = self.end if self.end is not None else mark
        yield from self._close(final, pending)

    def reset(self) -> None:
        """Start before window 0 (nothing closed)."""
        self._next = 0

    def resume(self, first: int) -> None:
        """Start before window ``first`` (the windows before it are closed)."""
        self._next = int(first)

    @property
    def first(self) -> int:
        """The first window still open."""
        return self._next

    def limit(self) -> int:
        """One past the last window that takes records now (public: ``first``, the
        ``max_pending`` windows ahead, ``end``)."""
        limit = self._next + self.max_pending
        return limit if self.windows_total is None else min(limit, self.windows_total)

    def closing(self, mark: float) -> Iterator[tuple[int, float, float]]:
        """Index and interval of each window the watermark ``mark`` closes, in order;
        a window counts as closed once yielded."""
        while self.windows_total is None or self._next < self.windows_total:
            lo, hi = self.bounds(self._next)
            if hi > mark:
                return
            self._next += 1
            yield self._next - 1, lo, hi

    def _add(self, chunk: Any, pending: dict[int, _Pending]) -> None:
        t = _seconds(_column(chunk, self.time))
        values = _column(chunk, self.column)
        units = None if self.unit is None else _column(chunk, self.unit)
        idx = self.index(t)
        if self.end is not None:
            idx = np.where(t < self.end, idx, -1)
        keep = (idx >= self._next) & (idx < self.limit())
        if not keep.any():
            return
        sel = np.flatnonzero(keep)
        order = sel[np.argsort(idx[sel], kind="stable")]
        wins, starts = np.unique(idx[order], return_index=True)
        bounds = np.append(starts, order.size)
        for w, a, b in zip(wins.tolist(), bounds[:-1], bounds[1:], strict=True):
            rows = order[a:b]
            slot = pending.setdefault(w, _Pending())
            if units is not None:
                slot.values.append(np.asarray(values)[rows])
                slot.units.append(np.asarray(units)[rows])
            else:
                slot.counts = self._count(np.asarray(values)[rows], slot.counts)

    def _count(self, values: np.ndarray, into: np.ndarray | None) -> np.ndarray:
        n = self.binning.n
        if self._tally is not None and values.dtype.kind in "iuf":
            out = np.zeros(n + 1, dtype=np.int64)
            lo, hi, width, *table = self._tally
            bin_tally(out, values.astype(np.float64), lo, hi, self.policy == "clip", width, *table)
            counts = out[:n]
        else:
            counts = ingest.count_values(values, self.binning, outside=self.policy)
        return counts if into is None else into + counts

    def _close(self, mark: float, pending: dict[int, _Pending]) -> Iterator[Window]:
        for i, lo, hi in self.closing(mark):
            yield Window(i, self._finish(pending.pop(i, None)), lo, hi)

    def _finish(self, slot: _Pending | None) -> np.ndarray:
        n = self.binning.n
        if slot is None:
            return np.zeros(n, dtype=np.int64)
        if self.unit is None:
            return slot.counts if slot.counts is not None else np.zeros(n, dtype=np.int64)
        values, units = np.concatenate(slot.values), np.concatenate(slot.units)
        return ingest.count_values(
            values, self.binning, outside=self.policy, privacy_unit=units,
            max_records=self.k, rng=self.rng,
        )  # fmt: skip
