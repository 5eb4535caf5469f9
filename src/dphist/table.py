"""The table a release publishes: per bin an estimate and its error bar.

:func:`published_table` (or :meth:`dphist.Release.table`) gives what files, printouts
and plots show, in one of two forms:

* ``counts="integer"`` (the default of files and of the command line): whole,
  non-negative counts that keep the estimate's total where it is possible, made from the
  estimate by post-processing (:mod:`dphist._numeric.rounding`: projection onto the
  non-negative counts with that total, then largest-remainder rounding). Biased, as
  every such rounding is, but never a negative or fractional count.
* ``counts="float"``: the estimate as released (unbiased for the linear methods).

The table never contradicts itself: every interval holds its estimate. Intervals are
the release's (:meth:`dphist.Release.intervals`: lower limits below 0 rise to 0, and
an interval grows to hold its estimate); for integer counts they are widened where a
count falls outside (and start at 0 at the lowest), which keeps them holding the truth
at least as often.
:attr:`Table.covers` says so. ``stderr`` is always the released estimate's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ._numeric.rounding import nonnegative_integers
from .errors import ValidationError

Release = Any  # a dphist.Release (this module sits below release.py, which uses it)

__all__ = ["COUNTS", "Table", "published_table", "typical_half_width"]

Counts = Literal["integer", "float"]
COUNTS: tuple[str, ...] = ("integer", "float")
INTEGER_NOTE = (
    "; integer counts: the estimate made non-negative with its total and rounded "
    "(post-processing); their intervals are the estimate's, widened to hold each count (so "
    "they hold the truth at least as often), and stderr is the estimate's"
)


def check_counts(counts: object) -> Counts:
    if counts not in COUNTS:
        raise ValidationError(f"counts must be 'integer' or 'float'; got {counts!r}")
    return counts  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class Table:
    """One row per bin: ``estimate`` (float64; whole numbers for integer counts),
    ``stderr``, ``lower`` and ``upper`` at ``1 - alpha`` (None without error bars),
    ``counts`` (which form) and ``covers`` (what the intervals account for)."""

    estimate: np.ndarray
    stderr: np.ndarray | None
    lower: np.ndarray | None
    upper: np.ndarray | None
    counts: Counts
    covers: str
    alpha: float

    @property
    def n(self) -> int:
        return int(self.estimate.size)

    @property
    def total(self) -> float:
        return float(self.estimate.sum())


def published_table(release: Release, counts: object = "integer", alpha: float = 0.05) -> Table:
    """The table of ``release`` with ``counts`` "integer" or "float" (module doc)."""
    kind = check_counts(counts)
    estimate = np.asarray(release.estimate, dtype=np.float64)
    if kind == "integer":
        estimate = nonnegative_integers(estimate).astype(np.float64)
    if release.stderr is None:
        return Table(estimate, None, None, None, kind, release.error_bars, alpha)
    lower, upper = release.intervals(alpha=alpha)
    covers = release.error_bars
    if kind == "integer":  # counts and truth are >= 0: the lower limit stays at or above 0
        lower = np.maximum(np.minimum(lower, estimate), 0.0)
        upper = np.maximum(upper, estimate)
        covers += INTEGER_NOTE
    return Table(estimate, release.stderr, lower, upper, kind, covers, alpha)


def total_interval(release: Release, table: Table) -> tuple[float, float]:
    """The interval of the table's total: the release's, widened to hold the total."""
    lo, hi = release.interval(0, release.n, alpha=table.alpha)
    return min(lo, table.total), max(hi, table.total)


def typical_half_width(release: Release, alpha: float = 0.05) -> float:
    """The median over bins of half an interval's width, before lower limits rise to 0
    (raising them narrows the interval of small counts and would flatter the figure)."""
    lower, upper = release.intervals(alpha=alpha, nonnegative=False)
    return float(np.median((upper - lower) / 2.0))
