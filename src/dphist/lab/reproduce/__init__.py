"""Reproductions of published experiments, each writing a Markdown report.

Every reproduction is a module that follows the :class:`Paper` protocol:

* ``datasets(quick)`` - what it runs on (the paper's data, or seeded stand-ins
  from :mod:`dphist.synthetic` where the data is not available; tiny ones when quick);
* ``CLAIMS`` - the paper's statements as data (:class:`~.claims.Claim`: statement,
  reference, how it is checked, and a rule reading the results);
* ``run(out_dir, *, trials, workers, quick, data_dir=None, seed) -> Path`` - runs the
  grid with :func:`dphist.lab.experiments.run_grid` (results in ``out_dir/results.csv``,
  resumable; the grid's axes are the report's settings), draws the figures, checks
  every claim with :func:`~.claims.check` and writes ``out_dir/report.md``.
  ``quick=True`` finishes in seconds on tiny data (used by the tests).

:data:`PAPERS` maps a short name to its ``run``. Error readings used to explain a
difference live in :mod:`.metrics`; one :class:`Report` renders every report.

Adding a paper
--------------
1. Write ``<paper>.py`` with ``datasets`` and ``run``, and ``<paper>_claims.py`` with
   the ``Results`` the rules read, one rule per claim and the ``CLAIMS`` tuple.
2. Register ``run`` in :data:`PAPERS` below.

Example
-------
>>> from dphist.lab.reproduce import PAPERS
>>> sorted(PAPERS)
['ahp', 'auto', 'kellaris', 'kuo', 'sortaki', 'sreb', 'streams']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from . import ahp, auto, kellaris, kuo, sortaki, sreb, streams
from .claims import Claim, Finding, check
from .report import DIFFERS, REPRODUCED, Report, Verdict, markdown_table

__all__ = [
    "DIFFERS",
    "PAPERS",
    "REPRODUCED",
    "Claim",
    "Finding",
    "Paper",
    "Report",
    "Verdict",
    "check",
    "markdown_table",
]


@runtime_checkable
class Paper(Protocol):
    """What a reproduction module provides (see the module docstring)."""

    CLAIMS: Sequence[Claim]

    def datasets(self, quick: bool) -> Sequence[Any]: ...

    def run(self, out_dir: Any, *, trials: int, workers: int, quick: bool, **options) -> Path: ...


#: Reproductions by short name; each entry writes a report and returns its path.
PAPERS: dict[str, Callable[..., Path]] = {
    "kellaris": kellaris.run,
    "auto": auto.run,
    "ahp": ahp.run,
    "sreb": sreb.run,
    "sortaki": sortaki.run,
    "kuo": kuo.run,
    "streams": streams.run,
}
