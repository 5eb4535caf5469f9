"""Running a grid: pending cells, worker processes, progress, grid order."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from ..._kernel import validate_epsilon
from ...errors import ValidationError
from .grid import DatasetSpec, Method, as_dataset, as_method
from .results import encode, journal_path, open_journal, unique_rows, write_parquet
from .runs import Task, execute, run_key
from .scoring import Metric, as_metric


def _tasks(
    methods: Sequence[Method],
    datasets: Sequence[DatasetSpec],
    epsilons: Sequence[object],
    metrics: tuple[Metric, ...],
    trials: int,
    seed: int,
    data_dir: str | None,
) -> Iterator[Task]:
    for dataset in datasets:
        for method in methods:
            for eps in epsilons:
                exact = validate_epsilon(eps)
                for trial in range(trials):
                    yield Task(
                        key=run_key(method, dataset, exact, trial),
                        method=method,
                        dataset=dataset,
                        epsilon=str(exact),
                        epsilon_value=float(exact),
                        trial=trial,
                        metrics=metrics,
                        seed=seed,
                        data_dir=data_dir,
                    )


def _pending(task: Task, done: set[tuple[str, str, str]]) -> Task | None:
    """The task restricted to the metrics it still lacks, or None when complete."""
    missing = tuple(m for m in task.metrics if (task.key, m.name, m.args_text) not in done)
    if not missing:
        return None
    return task if len(missing) == len(task.metrics) else _replace_metrics(task, missing)


def _replace_metrics(task: Task, metrics: tuple[Metric, ...]) -> Task:
    return dataclasses.replace(task, metrics=metrics)


def _progress(enabled: bool) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not enabled,
    )


def run_grid(
    *,
    methods: Sequence[object],
    datasets: Sequence[object],
    epsilons: Sequence[object],
    metrics: Sequence[object],
    trials: int = 1,
    seed: int = 0,
    out: str | os.PathLike[str] | None = None,
    workers: int = 1,
    progress: bool = True,
    data_dir: str | os.PathLike[str] | None = None,
    retry_failed: bool = False,
) -> list[dict[str, Any]]:
    """Run every cell of the grid and return the rows of this grid.

    Parameters
    ----------
    methods : names, ``(name, params)`` pairs or :class:`Method`
    datasets : names from :data:`dphist.datasets.DATASETS`, ``(label, counts)`` pairs,
        or :class:`Real`, :class:`Synthetic`, :class:`Given` specs.
    epsilons : budgets, read exactly (``0.1`` is 1/10).
    metrics : names from :data:`METRICS` or :class:`Metric` (see :func:`metric`).
    trials : independent repetitions per cell.
    seed : root seed of every run's noise (see :func:`run_seed`).
    out : results file (``.csv``, or ``.parquet`` with a ``.csv`` journal beside it).
        Rows already in it are skipped and returned; new rows are appended.
    workers : processes; results do not depend on it.
    progress : show a progress bar on the terminal.
    data_dir : where the real datasets live (see :func:`dphist.datasets.data_dir`).
    retry_failed : run again the runs whose rows record a method failure.

    Returns
    -------
    list of dict
        One row per run and metric (columns :data:`COLUMNS`), in grid order.

    Notes
    -----
    Releases use seeded noise and are not private; the harness holds the true
    counts as the evaluator and keeps only errors and timings.
    """
    for name, value, low in (("trials", trials, 1), ("workers", workers, 1), ("seed", seed, 0)):
        _check_int(name, value, low)
    method_specs = [as_method(m) for m in methods]
    dataset_specs = [as_dataset(d) for d in datasets]
    metric_specs = tuple(dict.fromkeys(as_metric(m) for m in metrics))
    if not (method_specs and dataset_specs and epsilons and metric_specs):
        raise ValidationError("methods, datasets, epsilons and metrics must all be non-empty")
    folder = None if data_dir is None else str(data_dir)
    tasks = list(_tasks(method_specs, dataset_specs, epsilons, metric_specs, trials, seed, folder))

    journal = None if out is None else journal_path(Path(out))
    existing = [] if journal is None else open_journal(journal)
    if retry_failed:
        failed = {r["run"] for r in existing if r["error"]}
        existing = [r for r in existing if r["run"] not in failed]
    done = {(r["run"], r["metric"], r["metric_args"]) for r in existing}
    todo = [p for t in tasks if (p := _pending(t, done)) is not None]

    fresh = _execute_all(todo, workers, journal, progress)

    if out is not None and Path(out).suffix == ".parquet":
        write_parquet(journal, Path(out))
    return _in_grid_order(tasks, unique_rows([*existing, *fresh]))


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        what = "a non-negative int" if low == 0 else f"an int >= {low}"
        raise ValidationError(f"{name} must be {what}, got {value!r}")


def _execute_all(
    todo: list[Task], workers: int, journal: Path | None, progress: bool
) -> list[dict[str, Any]]:
    """Run the pending tasks; each task's rows are appended to the journal as they come."""
    fresh: list[dict[str, Any]] = []

    def record(rows: list[dict[str, Any]]) -> None:
        fresh.extend(rows)
        if journal is not None:
            with open(journal, "a", encoding="utf-8", newline="") as fh:
                fh.write(encode(rows))
                fh.flush()
                os.fsync(fh.fileno())

    with _progress(progress) as bar:
        job = bar.add_task("runs", total=len(todo))
        if workers == 1 or len(todo) <= 1:
            for task in todo:
                record(execute(task))
                bar.advance(job)
        else:
            _run_parallel(todo, workers, record, lambda: bar.advance(job))
    return fresh


def _run_parallel(
    todo: list[Task],
    workers: int,
    record: Callable[[list[dict[str, Any]]], None],
    advance: Callable[[], None],
) -> None:
    """Run tasks in worker processes, recording each as it finishes.

    Workers start with ``spawn`` (no state copied from a threaded parent); at most
    ``2 * workers`` tasks are in flight so an interrupt loses little work.
    """
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        queue = iter(todo)
        running = set()
        for task in queue:
            running.add(pool.submit(execute, task))
            if len(running) >= 2 * workers:
                break
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                record(fut.result())
                advance()
                nxt = next(queue, None)
                if nxt is not None:
                    running.add(pool.submit(execute, nxt))


def _in_grid_order(tasks: list[Task], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows belonging to ``tasks``, ordered by task, then by metric order."""
    index = {(r["run"], r["metric"], r["metric_args"]): r for r in rows}
    out = []
    for task in tasks:
        for m in task.metrics:
            row = index.get((task.key, m.name, m.args_text))
            if row is not None:
                out.append(row)
    return out
