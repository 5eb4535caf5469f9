"""One run of a grid cell: its seed, its data and its scored rows."""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..._kernel import validate_epsilon
from ...session import publish
from .grid import DatasetSpec, Given, Method, canonical
from .scoring import Metric


def run_key(method: Method, dataset: DatasetSpec, epsilon: object, trial: int) -> str:
    """Stable identity of one run: a hex SHA-256 digest of its defining fields.

    Epsilon enters as its exact rational (0.1 and "0.1" give the same key).
    """
    eps = validate_epsilon(epsilon)
    text = canonical([method.name, method.params_text, dataset.fingerprint, str(eps), int(trial)])
    return hashlib.sha256(text.encode()).hexdigest()


def run_seed(seed: int, key: str) -> np.random.SeedSequence:
    """The run's stream: a child of ``SeedSequence(seed)`` whose spawn key is the run key.

    Distinct keys give statistically independent streams; the same key always gives
    the same stream whatever else is run.
    """
    root = np.random.SeedSequence(seed)
    words = tuple(int(key[i : i + 8], 16) for i in range(0, 32, 8))
    return np.random.SeedSequence(root.entropy, spawn_key=words)


@dataclass(frozen=True)
class Task:
    key: str
    method: Method
    dataset: DatasetSpec
    epsilon: str
    epsilon_value: float
    trial: int
    metrics: tuple[Metric, ...]
    seed: int
    data_dir: str | None


@lru_cache(maxsize=8)
def _cached_counts(dataset: DatasetSpec, data_dir: str | None) -> np.ndarray:
    counts = np.asarray(dataset.load(data_dir))
    counts.flags.writeable = False
    return counts


def _load_counts(dataset: DatasetSpec, data_dir: str | None) -> np.ndarray:
    if isinstance(dataset, Given):
        return dataset.counts
    return _cached_counts(dataset, data_dir)


_WARM: set[tuple[str, str]] = set()
WARMUP_COUNTS = np.array([3, 0, 5, 1, 0, 0, 7, 2, 4, 4, 4, 9, 0, 1, 2, 3] * 4, dtype=np.int64)


def _warm_up(method: Method) -> None:
    """Run a method once on a tiny public histogram so one-off compilation is not timed."""
    key = (method.name, method.params_text)
    if key in _WARM:
        return
    _WARM.add(key)
    with contextlib.suppress(Exception):
        publish(WARMUP_COUNTS, epsilon=1, method=method.name, rng=0, **dict(method.params))


def execute(task: Task) -> list[dict[str, Any]]:
    """Publish once and score every metric; a failure becomes rows with an error type.

    The method is warmed up once per process first, so ``seconds`` excludes
    just-in-time compilation.
    """
    counts = _load_counts(task.dataset, task.data_dir)
    _warm_up(task.method)
    rng = np.random.default_rng(run_seed(task.seed, task.key))
    base = {
        "run": task.key,
        "method": task.method.name,
        "params": task.method.params_text,
        "dataset": task.dataset.label,
        "n": int(counts.size),
        "epsilon": task.epsilon_value,
        "trial": task.trial,
    }
    start = time.perf_counter()
    try:
        release = publish(
            counts,
            epsilon=task.epsilon,
            method=task.method.name,
            rng=rng,
            **dict(task.method.params),
        )
    except Exception as exc:  # a failing method must not stop the grid
        seconds = time.perf_counter() - start
        return [
            {
                **base,
                "metric": m.name,
                "metric_args": m.args_text,
                "value": math.nan,
                "seconds": seconds,
                "timings": "{}",
                "error": type(exc).__name__,
            }
            for m in task.metrics
        ]
    seconds = time.perf_counter() - start
    timings = canonical({k: float(v) for k, v in release.timings.items()})
    truth = counts.astype(np.float64)
    estimate = release.estimate
    rows = []
    for m in task.metrics:
        error = ""
        try:
            value = m(truth, estimate)
        except Exception as exc:  # a metric undefined on this input (e.g. zero total)
            value, error = math.nan, type(exc).__name__
        rows.append(
            {
                **base,
                "metric": m.name,
                "metric_args": m.args_text,
                "value": value,
                "seconds": seconds,
                "timings": timings,
                "error": error,
            }
        )
    return rows
