"""Histograms over time: one release per window, with w-event privacy or continual counts.

* :func:`stream` (``dh.stream``): windows of counts, or timed records cut into public
  windows (:mod:`.windows`), published by a window mechanism (:mod:`.wevent`: periodic,
  uniform, sample, BD, BA) under a sliding ledger (:mod:`.ledger`), or counted by a
  continual counter (binary tree or square-root factorization, :mod:`.counters`), each
  window's release with its exact ledger line (:mod:`.run`);
* :mod:`.sink`: one file per window and an append-only ledger, for the command line;
* :mod:`.sources`: records from standard input or from files arriving in a folder;
* :mod:`.spark`: ``dh.stream_frames``, a Spark Structured Streaming ``foreachBatch``
  function that bins each micro-batch per window in Spark.

The kernel primitives (the dissimilarity test's statistic, the counters) are in
:mod:`dphist._kernel.streams`. Privacy model and its limits: docs/streams.md.
"""

from .api import stream, stream_frames
from .counters import largest_error, running_variances
from .ledger import SlidingLedger, WindowEntry
from .run import COUNTERS, KINDS, Stream, WindowRelease
from .spark import FrameStream
from .wevent import MECHANISMS, WEVENT, expected_abs_error
from .windows import Watermark, Window, Windowing, parse_duration, parse_time

__all__ = [
    "COUNTERS",
    "KINDS",
    "MECHANISMS",
    "WEVENT",
    "FrameStream",
    "SlidingLedger",
    "Stream",
    "Watermark",
    "Window",
    "WindowEntry",
    "WindowRelease",
    "Windowing",
    "expected_abs_error",
    "largest_error",
    "parse_duration",
    "parse_time",
    "running_variances",
    "stream",
    "stream_frames",
]
