"""Spark Structured Streaming: a ``foreachBatch`` function that publishes windows.

:class:`FrameStream` (made by ``dh.stream_frames``) is called by Spark with each
micro-batch. It bins the batch's records per public window and bin in Spark, by the
record domain of :mod:`dphist.ingest.spark` (the exact cell grid, ``-0.0`` read as
``0.0``), and only per-window counts come back to the driver. With a privacy unit the
batch's ``(window, unit, bin, records)`` rows stay in Spark (checkpointed on the
executors) until the window closes; then at most ``K`` of each unit's records over the
whole window are counted there, and the window's counts collected.

Windows close by the rules of :class:`~dphist.streams.Windowing`, the same code: in
order, once the public watermark passes their end; the watermark moves by
:meth:`FrameStream.advance` (a public time, or the ``clock`` less ``lateness``), after
each batch by the clock, and at :meth:`FrameStream.close` to ``end``. Records are
dropped by the same public rules (no valid time, before ``start``, at or after
``end``, late, too far ahead); records of a window that closed while their batch was
being counted are late. A closed window is released by the stream machinery of
:func:`dh.stream <dphist.streams.stream>`: the same engines, ledger and budget store.

Spark calls ``foreachBatch`` at least once per batch: a batch id already counted is
skipped (so a :class:`FrameStream` serves one query). A query restarted in a new
process resumes where it stopped when given the same ``state`` file
(:mod:`~dphist.streams.resume`): batches run again are counted once, no window is
released or charged twice. Spark
runs no batch while no records arrive, so a live stream should call
:meth:`FrameStream.follow` (or :meth:`~FrameStream.advance` on a timer) to close
windows on time whether records arrive or not.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from functools import reduce
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..ingest.count import salt
from ..ingest.spark import (
    unit_type,
    window_counts,
    window_frame,
    window_unit_counts,
    window_units,
)
from .resume import StateFile
from .run import Stream, WindowRelease
from .windows import Window, Windowing, parse_time

__all__ = ["FrameStream"]

_PIECES = 8  # unit rows of this many batches are merged into one checkpoint


class FrameStream:
    """A ``foreachBatch`` function publishing one release per window (module docs).

    ``releases`` holds the windows released so far (when no ``on_release`` was given),
    ``ledger`` their ledger lines; ``guarantee`` and ``spent`` as for
    :class:`~dphist.streams.Stream`.
    """

    def __init__(
        self, cut: Windowing, stream: Stream, on_release: Callable[[Any], Any] | None = None,
        state: StateFile | None = None,
    ):  # fmt: skip
        if on_release is not None and not callable(on_release):
            raise ValidationError("on_release must be a function taking a WindowRelease")
        self._cut, self._stream, self._on_release = cut, stream, on_release
        self.releases: list[WindowRelease] = []
        self._lock = threading.RLock()
        self._mark = -math.inf
        self._batch = -1
        self._counts: dict[int, np.ndarray] = {}
        self._pieces: list[Any] = []
        self._closed = False
        self._state = state
        self._kept = self._counts  # the open windows' counts before the current batch
        cut.reset()
        if state is not None:
            self._resume(state)

    @property
    def ledger(self) -> list:
        return self._stream.ledger

    @property
    def guarantee(self) -> str:
        return self._stream.guarantee

    @property
    def spent(self) -> Any:
        return self._stream.spent

    def check(self, df: Any) -> None:
        """The schema checks alone, on a (streaming) DataFrame: nothing runs."""
        self._frame(df, 0, 1)

    def __call__(self, df: Any, batch_id: int) -> None:
        """Count one micro-batch (Spark's ``foreachBatch`` call), then close the windows
        the clock has passed."""
        with self._lock:
            if self._closed:
                raise ValidationError("this stream is closed: start a new one")
            if int(batch_id) <= self._batch:
                return  # a batch Spark runs again after a restart
            first, limit = self._cut.first, self._cut.limit()
        frame = self._frame(df, first, limit)
        if self._cut.unit is None:
            counted = window_counts(frame, self._cut.binning.n)
        else:
            counted = window_units(frame, self._unit_type(df)).localCheckpoint(eager=True)
        with self._lock:
            if self._state is not None:
                self._kept = {i: c.copy() for i, c in self._counts.items()}
            self._merge(counted)
            self._close_to(self._clocked(self._mark))
            self._batch = int(batch_id)
            self._kept = self._counts
            self._save()

    def advance(self, time: object = None) -> None:
        """Move the watermark to the public ``time`` (every record before it has
        arrived) and, with a clock, to the clock less the lateness; release the windows
        it closes."""
        with self._lock:
            mark = self._mark if time is None else max(self._mark, parse_time(time, "time"))
            self._close_to(self._clocked(mark))

    def close(self) -> None:
        """The source has ended: release the windows up to ``end`` (or to the last
        watermark) and end the stream. Closing twice does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                end = self._cut.end
                self._close_to(self._clocked(self._mark) if end is None else end)
                self._save()
            finally:
                self._pieces = []
                self._stream.finish()

    def follow(self, query: Any, poll: float = 1.0) -> None:
        """Wait for a streaming ``query``, advancing the watermark every ``poll``
        seconds, then :meth:`close`. A failed query's error is raised after the stream
        ends (the windows it did not close are not released)."""
        try:
            while not query.awaitTermination(poll):
                self.advance()
        except BaseException:
            with self._lock:
                self._closed = True
                self._stream.finish()
            raise
        self.close()

    # ------------------------------------------------------------------ internals

    def _frame(self, df: Any, first: int, limit: int) -> Any:
        cut = self._cut
        return window_frame(
            df, time=cut.time, column=cut.column, binning=cut.binning, outside=cut.policy,
            start=cut.start, length=cut.length, first=first, limit=limit, end=cut.end,
            privacy_unit=cut.unit,
        )  # fmt: skip

    def _unit_type(self, df: Any) -> str:
        assert self._cut.unit is not None
        return unit_type(df, self._cut.unit)

    def _clocked(self, mark: float) -> float:
        if self._cut.clock is not None:
            mark = max(mark, float(self._cut.clock()) - self._cut.lateness)
        self._mark = mark
        return mark

    def _merge(self, counted: Any) -> None:
        """Add a batch's counts (or unit rows) to the open windows; windows closed
        while it was counted do not take them (late)."""
        first = self._cut.first
        if isinstance(counted, dict):
            for i, counts in counted.items():
                if i >= first:
                    self._counts[i] = counts + self._counts.get(i, 0)
            return
        self._pieces.append(counted)
        if len(self._pieces) >= _PIECES:
            from pyspark.sql import functions as F

            rows = self._rows().where(F.col("win") >= first)
            merged = rows.groupBy("win", "u", "bin").agg(F.sum("n").alias("n"))
            self._pieces = [merged.localCheckpoint(eager=True)]

    def _rows(self) -> Any:
        return reduce(lambda a, b: a.unionByName(b), self._pieces)

    def _close_to(self, mark: float) -> None:
        for i, lo, hi in self._cut.closing(mark):
            counts = self._window_counts(i)
            self._save(inflight=i)
            rel = self._stream.push(Window(i, counts, lo, hi))
            if self._on_release is None:
                self.releases.append(rel)
            else:
                self._on_release(rel)
            self._save()

    def _save(self, inflight: int | None = None) -> None:
        """Keep the state on disk (module docs of :mod:`~dphist.streams.resume`)."""
        if self._state is None:
            return
        engine = self._stream._engine
        fields, arrays = engine.state()
        first = engine.ledger.next_window
        out = {f"engine.{k}": v for k, v in arrays.items()}
        out |= {f"window.{i}": c for i, c in self._kept.items() if i >= first}
        self._state.save(
            {"engine": fields, "batch": self._batch, "mark": self._mark, "inflight": inflight,
             "closed": self._closed}, out,
        )  # fmt: skip

    def _resume(self, state: StateFile) -> None:
        saved = state.load()
        if saved is None:
            return
        fields, arrays = saved
        engine = self._stream._engine
        engine.restore(fields["engine"], {k[7:]: v for k, v in arrays.items()
                                          if k.startswith("engine.")})  # fmt: skip
        self._batch, self._mark, self._closed = fields["batch"], fields["mark"], fields["closed"]
        self._counts = {int(k[7:]): v for k, v in arrays.items() if k.startswith("window.")}
        i = fields["inflight"]
        if i is not None:  # cut off mid-release: closed at the most it can have spent
            self._counts.pop(i, None)
            self._stream.ledger.append(engine.interrupted(i, *self._cut.bounds(i)))
        self._cut.resume(engine.ledger.next_window)
        self._kept = self._counts
        self._save()

    def _window_counts(self, i: int) -> np.ndarray:
        n = self._cut.binning.n
        if self._cut.unit is None:
            return self._counts.pop(i, np.zeros(n, dtype=np.int64))
        if not self._pieces:
            return np.zeros(n, dtype=np.int64)
        from pyspark.sql import functions as F

        rows = self._rows().where(F.col("win") == i)
        kind = rows.schema["u"].dataType.__class__.__name__
        assert self._cut.k is not None
        return window_unit_counts(rows, kind, n, self._cut.k, salt(self._cut.rng))

    def __repr__(self) -> str:
        return f"FrameStream({self._stream!r})"
