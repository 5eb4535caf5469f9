"""Experiment grids: methods x datasets x epsilons x trials, scored by named metrics.

An experiment publishes every histogram of a grid with seeded (non-private) noise,
scores each release against the true counts and writes tidy rows: one row per
``(method, params, dataset, n, epsilon, trial, metric)``. The design follows the
evaluation protocol of Kellaris et al. 2017 (§7.1: repeated runs, mean error per
query, construction time per method) and of DPBench (Hay et al. 2016: scaled errors).

Reproducibility. Every run's noise comes from a child of one root
:class:`numpy.random.SeedSequence`; the child's spawn key is a SHA-256 digest of the
run's identity (method, parameters, dataset fingerprint, exact epsilon, trial). A
row therefore depends only on the root seed and its own identity, never on which
other cells run, in which order or on how many worker processes.

Output. Rows are appended to a CSV journal, one write and ``fsync`` per finished
run, so a crash loses at most the runs in flight and a half-written last line is
dropped when the file is reopened. Re-running the same grid on the same file skips
the rows already present. A path ending in ``.parquet`` keeps the journal beside it
(same stem, ``.csv``) and writes the Parquet file atomically with duckdb at the end.

Example
-------
>>> import numpy as np
>>> from dphist import experiments as ex
>>> rows = ex.run_grid(
...     methods=["identity", "uniform"],
...     datasets=[ex.Given("toy", np.array([3, 0, 5, 1, 0, 0, 7, 2]))],
...     epsilons=[0.5, 1.0],
...     metrics=["point_mse", "interval_mse"],
...     trials=2,
...     progress=False,
... )
>>> len(rows)
16
>>> sorted({r["metric"] for r in rows})
['interval_mse', 'point_mse']
"""

from __future__ import annotations

from .grid import COLUMNS, Given, Method, Real, Synthetic
from .results import load_results, unique_rows
from .runner import run_grid
from .runs import run_key, run_seed
from .scoring import METRICS, Metric, metric, size_metrics
from .summary import summarise, summary_index, summary_value

__all__ = [
    "COLUMNS",
    "METRICS",
    "Given",
    "Method",
    "Metric",
    "Real",
    "Synthetic",
    "load_results",
    "metric",
    "run_grid",
    "run_key",
    "run_seed",
    "size_metrics",
    "summarise",
    "summary_index",
    "summary_value",
    "unique_rows",
]
