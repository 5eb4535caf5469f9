"""Reproductions of published experiments, each writing a Markdown report.

:data:`PAPERS` maps a short name to a function with the signature::

    run(out_dir: Path, *, trials: int, workers: int, quick: bool, data_dir=None) -> Path

that runs the paper's experiments with :func:`dphist.lab.experiments.run_grid` (results
in ``out_dir/results.csv``, resumable), draws its figures with :mod:`dphist.plot`
and writes ``out_dir/report.md`` with a :class:`Report`, returning that path.
``quick=True`` must finish in seconds on tiny data (used by the tests).

Adding a paper
--------------
1. Write ``dphist/reproduce/<paper>.py`` with a ``run`` function as above.
2. Build the grid: methods, datasets (:class:`dphist.lab.experiments.Real`,
   :class:`~dphist.lab.experiments.Synthetic` stand-ins for data that is not available,
   :class:`~dphist.lab.experiments.Given`), epsilons and metrics
   (:data:`dphist.lab.experiments.METRICS`, e.g. ``metric("range_pct_mse", r=4)``).
3. Summarise with :func:`dphist.lab.experiments.summarise`, plot, and record each of the
   paper's statements with :meth:`Report.claim` (verdict computed from the numbers,
   with the rule stated in "why").
4. Register it in :data:`PAPERS` below.

Example
-------
>>> from dphist.lab.reproduce import PAPERS
>>> sorted(PAPERS)
['ahp', 'auto', 'kellaris', 'kuo', 'sortaki', 'sreb']
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import ahp, auto, kellaris, kuo, sortaki, sreb
from .report import DIFFERS, REPRODUCED, Claim, Report, markdown_table

__all__ = ["DIFFERS", "PAPERS", "REPRODUCED", "Claim", "Report", "markdown_table"]

#: Reproductions by short name; each entry writes a report and returns its path.
PAPERS: dict[str, Callable[..., Path]] = {
    "kellaris": kellaris.run,
    "auto": auto.run,
    "ahp": ahp.run,
    "sreb": sreb.run,
    "sortaki": sortaki.run,
    "kuo": kuo.run,
}
