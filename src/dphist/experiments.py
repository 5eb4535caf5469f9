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

import contextlib
import csv
import dataclasses
import hashlib
import io
import itertools
import json
import math
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from . import datasets as _datasets
from . import metrics as _metrics
from . import synthetic as _synthetic
from . import workloads as _workloads
from ._io import atomic_path
from ._kernel import validate_epsilon
from .errors import InputTypeError, ValidationError
from .session import publish

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

#: Columns of a results file, in order.
COLUMNS = (
    "run",
    "method",
    "params",
    "dataset",
    "n",
    "epsilon",
    "trial",
    "metric",
    "metric_args",
    "value",
    "seconds",
    "timings",
    "error",
)

_TYPES: dict[str, Callable[[str], Any]] = {
    "run": str,
    "method": str,
    "params": str,
    "dataset": str,
    "n": int,
    "epsilon": float,
    "trial": int,
    "metric": str,
    "metric_args": str,
    "value": float,
    "seconds": float,
    "timings": str,
    "error": str,
}

_DUCK_TYPES = {
    "run": "VARCHAR",
    "method": "VARCHAR",
    "params": "VARCHAR",
    "dataset": "VARCHAR",
    "n": "BIGINT",
    "epsilon": "DOUBLE",
    "trial": "BIGINT",
    "metric": "VARCHAR",
    "metric_args": "VARCHAR",
    "value": "DOUBLE",
    "seconds": "DOUBLE",
    "timings": "VARCHAR",
    "error": "VARCHAR",
}


def _canonical(obj: Any) -> str:
    """Compact JSON with sorted keys: the stable text form of parameters."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise InputTypeError(
        f"parameter values must be JSON-serialisable numbers or strings, got {type(value).__name__}"
    )


# --------------------------------------------------------------------------- grid axes


@dataclass(frozen=True)
class Method:
    """A registered method name and the keyword parameters passed to ``publish``."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def params_text(self) -> str:
        return _canonical(dict(self.params))


@dataclass(frozen=True)
class Real:
    """A named real histogram from :mod:`dphist.datasets`, optionally block-summed to ``bins``.

    ``bins`` must divide the public domain size; the reduction is
    :func:`dphist.synthetic.reduce_domain` (public, data-independent).
    """

    name: str
    bins: int | None = None

    @property
    def label(self) -> str:
        return self.name if self.bins is None else f"{self.name}@{self.bins}"

    @property
    def fingerprint(self) -> str:
        return f"real:{self.label}"

    def load(self, data_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
        counts = _datasets.load(self.name, data_dir=data_dir)
        return counts if self.bins is None else _synthetic.reduce_domain(counts, self.bins)


@dataclass(frozen=True)
class Synthetic:
    """A histogram from a :mod:`dphist.synthetic` generator called as ``gen(n, rng=seed, **kw)``.

    Generators that also return ground truth (``piecewise_constant``) contribute
    their counts only. ``kwargs`` is a tuple of ``(name, value)`` pairs so the spec
    stays hashable; :meth:`make` builds one from keywords.
    """

    generator: str
    n: int
    seed: int = 0
    kwargs: tuple[tuple[str, Any], ...] = ()
    name: str | None = None

    @classmethod
    def make(
        cls, generator: str, n: int, *, seed: int = 0, name: str | None = None, **kwargs: Any
    ) -> Synthetic:
        return cls(generator, n, seed, tuple(sorted(kwargs.items())), name)

    @property
    def label(self) -> str:
        return self.name or f"{self.generator}-{self.n}-s{self.seed}"

    @property
    def fingerprint(self) -> str:
        return "synthetic:" + _canonical([self.generator, self.n, self.seed, dict(self.kwargs)])

    def load(self, data_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
        gen = getattr(_synthetic, self.generator, None)
        if self.generator.startswith("_") or not callable(gen):
            raise ValidationError(
                f"unknown synthetic generator {self.generator!r}; see dphist.synthetic"
            )
        out = gen(self.n, rng=self.seed, **dict(self.kwargs))
        return out[0] if isinstance(out, tuple) else out


@dataclass(frozen=True, eq=False)
class Given:
    """An explicit histogram under a label; its content digest enters the run key."""

    name: str
    counts: np.ndarray

    def __post_init__(self) -> None:
        arr = np.array(self.counts)  # a private copy; publish validates it
        arr.flags.writeable = False
        object.__setattr__(self, "counts", arr)

    @property
    def label(self) -> str:
        return self.name

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(self.counts.tobytes()).hexdigest()[:16]
        return f"given:{self.name}:{self.counts.size}:{digest}"

    def load(self, data_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
        return self.counts


DatasetSpec = Real | Synthetic | Given


def _as_method(spec: object) -> Method:
    if isinstance(spec, Method):
        return spec
    if isinstance(spec, str):
        return Method(spec)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return Method(spec[0], dict(spec[1]))
    raise InputTypeError(
        f"a method must be a name, a (name, params) pair or a Method, got {type(spec).__name__}"
    )


def _as_dataset(spec: object) -> DatasetSpec:
    if isinstance(spec, Real | Synthetic | Given):
        return spec
    if isinstance(spec, str):
        return Real(spec)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return Given(spec[0], spec[1])
    raise InputTypeError(
        "a dataset must be a dataset name, a (label, counts) pair, or a Real, Synthetic or "
        f"Given spec, got {type(spec).__name__}"
    )


# --------------------------------------------------------------------------- metrics


def _mae(true: np.ndarray, est: np.ndarray) -> float:
    return float(np.mean(np.abs(est - true)))


def _workload(name: str, n: int, r: float | None, length: int | None) -> _workloads.Workload:
    if name == "length_percent":
        if r is None:
            raise ValidationError("workload 'length_percent' needs r= (a percentage)")
        return _workloads.length_percent(n, r)
    if name == "fixed_length":
        if length is None:
            raise ValidationError("workload 'fixed_length' needs length=")
        return _workloads.fixed_length(n, length)
    if name not in {"identity", "all_ranges", "prefix", "small_ranges", "big_ranges"}:
        raise ValidationError(
            f"unknown workload {name!r}; use identity, all_ranges, prefix, small_ranges, "
            "big_ranges, length_percent (r=) or fixed_length (length=)"
        )
    return getattr(_workloads, name)(n)


def _workload_mse(
    true: np.ndarray,
    est: np.ndarray,
    *,
    workload: str = "all_ranges",
    r: float | None = None,
    length: int | None = None,
) -> float:
    return _metrics.workload_mse(true, est, _workload(workload, true.size, r, length))


def _scaled_mse(true: np.ndarray, est: np.ndarray, *, workload: str = "all_ranges", **kw) -> float:
    return _metrics.scaled_mse(true, est, _workload(workload, true.size, **_wl(kw)))


def _scaled_l2(true: np.ndarray, est: np.ndarray, *, workload: str = "all_ranges", **kw) -> float:
    return _metrics.scaled_l2(true, est, _workload(workload, true.size, **_wl(kw)))


def _wl(kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"r": kw.get("r"), "length": kw.get("length")}


def _range_pct_mse(true: np.ndarray, est: np.ndarray, *, r: float) -> float:
    return _metrics.workload_mse(true, est, _workloads.length_percent(true.size, r))


def _mre_single(true: np.ndarray, est: np.ndarray, *, delta: float = 1.0) -> float:
    """Mean over bins of ``|est - true| / max(true, delta)`` (SReB_GCA §6)."""
    _metrics.mre_single(true, est, delta)  # validates the inputs and delta
    return float(np.mean(np.abs(est - true) / np.maximum(true, delta)))


def _mre_range(
    true: np.ndarray,
    est: np.ndarray,
    *,
    length: int | None = None,
    r: float | None = None,
    delta: float = 1.0,
) -> float:
    if (length is None) == (r is None):
        raise ValidationError("metric 'mre_range' needs exactly one of length= or r=")
    if r is not None:
        length = _workloads.length_percent(true.size, r).lengths[0]
    return _metrics.mre_range(true, est, length, delta)


def _mre_size(
    true: np.ndarray, est: np.ndarray, *, lo: float, hi: float, delta: float = 1.0
) -> float:
    """MRE over the bins whose true count lies in ``[lo, hi)``; NaN if there is none.

    The per-size-group view of SReB_GCA (Fig. 4): small bins carry most relative error.
    """
    inside = (true >= lo) & (true < hi)
    if not np.any(inside):
        return math.nan
    t, x = true[inside], est[inside]
    return float(np.mean(np.abs(x - t) / np.maximum(t, delta)))


def _emd(true: np.ndarray, est: np.ndarray, *, normalize: bool = True) -> float:
    return _metrics.emd(true, est, normalize=normalize)


def _kld(true: np.ndarray, est: np.ndarray, *, tau: float = 1e-3) -> float:
    return _metrics.kld(true, est, tau)


#: Metric functions by name: ``f(true, estimate, **args) -> float`` (float64 inputs).
METRICS: dict[str, Callable[..., float]] = {
    "point_mse": lambda t, x: _metrics.point_mse(t, x),
    "interval_mse": lambda t, x: _metrics.interval_mse(t, x),
    "prefix_mse": lambda t, x: _workload_mse(t, x, workload="prefix"),
    "small_mse": lambda t, x: _workload_mse(t, x, workload="small_ranges"),
    "big_mse": lambda t, x: _workload_mse(t, x, workload="big_ranges"),
    "workload_mse": _workload_mse,
    "range_pct_mse": _range_pct_mse,
    "range_mse": lambda t, x, *, length: _metrics.range_mse(t, x, length),
    "scaled_mse": _scaled_mse,
    "scaled_l2": _scaled_l2,
    "mae": _mae,
    "kld": _kld,
    "mre_single": _mre_single,
    "mre_range": _mre_range,
    "mre_size": _mre_size,
    "emd": _emd,
}


@dataclass(frozen=True)
class Metric:
    """A metric name from :data:`METRICS` with keyword arguments (stored sorted)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.name not in METRICS:
            known = ", ".join(sorted(METRICS))
            raise ValidationError(f"unknown metric {self.name!r}; known metrics: {known}")
        object.__setattr__(self, "args", tuple(sorted(self.args)))

    @property
    def args_text(self) -> str:
        return _canonical(dict(self.args))

    @property
    def label(self) -> str:
        if not self.args:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in self.args)
        return f"{self.name}({inner})"

    def __call__(self, true: np.ndarray, estimate: np.ndarray) -> float:
        return float(METRICS[self.name](true, estimate, **dict(self.args)))


def metric(name: str, **args: Any) -> Metric:
    """Build a :class:`Metric`: ``metric("range_pct_mse", r=4)``."""
    return Metric(name, tuple(args.items()))


def size_metrics(edges: Sequence[float], *, delta: float = 1.0) -> list[Metric]:
    """``mre_size`` metrics for the groups ``[edges[i], edges[i+1])`` of true bin counts.

    The edges are public constants chosen by the analyst (for example
    ``[0, 1, 10, 100, inf]``), never taken from the data; see :func:`plot.plot_mre_by_size`.
    """
    values = [float(e) for e in edges]
    if len(values) < 2 or any(b <= a for a, b in itertools.pairwise(values)):
        raise ValidationError("edges must be at least two strictly increasing numbers")
    return [metric("mre_size", lo=a, hi=b, delta=delta) for a, b in itertools.pairwise(values)]


def _as_metric(spec: object) -> Metric:
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str):
        return Metric(spec)
    raise InputTypeError(f"a metric must be a name or a Metric, got {type(spec).__name__}")


# --------------------------------------------------------------------------- seeding


def run_key(method: Method, dataset: DatasetSpec, epsilon: object, trial: int) -> str:
    """Stable identity of one run: a hex SHA-256 digest of its defining fields.

    Epsilon enters as its exact rational (0.1 and "0.1" give the same key).
    """
    eps = validate_epsilon(epsilon)
    text = _canonical([method.name, method.params_text, dataset.fingerprint, str(eps), int(trial)])
    return hashlib.sha256(text.encode()).hexdigest()


def run_seed(seed: int, key: str) -> np.random.SeedSequence:
    """The run's stream: a child of ``SeedSequence(seed)`` whose spawn key is the run key.

    Distinct keys give statistically independent streams; the same key always gives
    the same stream whatever else is run.
    """
    root = np.random.SeedSequence(seed)
    words = tuple(int(key[i : i + 8], 16) for i in range(0, 32, 8))
    return np.random.SeedSequence(root.entropy, spawn_key=words)


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class _Task:
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
_WARMUP_COUNTS = np.array([3, 0, 5, 1, 0, 0, 7, 2, 4, 4, 4, 9, 0, 1, 2, 3] * 4, dtype=np.int64)


def _warm_up(method: Method) -> None:
    """Run a method once on a tiny public histogram so one-off compilation is not timed."""
    key = (method.name, method.params_text)
    if key in _WARM:
        return
    _WARM.add(key)
    with contextlib.suppress(Exception):
        publish(_WARMUP_COUNTS, epsilon=1, method=method.name, rng=0, **dict(method.params))


def _execute(task: _Task) -> list[dict[str, Any]]:
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
    timings = _canonical({k: float(v) for k, v in release.timings.items()})
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


# --------------------------------------------------------------------------- files


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _encode(rows: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([_format(row[c]) for c in COLUMNS])
    return buf.getvalue()


def _journal_path(path: Path) -> Path:
    return path.with_suffix(".csv") if path.suffix == ".parquet" else path


def _open_journal(path: Path) -> list[dict[str, Any]]:
    """Create the CSV with its header, or check its header and return its rows.

    A last line without its newline (a write cut short) is removed first.
    """
    header = ",".join(COLUMNS) + "\n"
    if not path.exists() or path.stat().st_size == 0:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(header)
            fh.flush()
            os.fsync(fh.fileno())
        return []
    raw = path.read_bytes()
    if not raw.startswith(header.encode()):
        raise ValidationError(
            f"{path} is not a results file of this version (its header differs); "
            "use a new output path"
        )
    cut = raw.rfind(b"\n") + 1
    if cut < len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(cut)
    return _read_csv(path)


def _parse_row(record: Mapping[str, str]) -> dict[str, Any]:
    return {c: _typed(c, record[c]) for c in COLUMNS}


def _read_csv(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValidationError(f"{path} does not have the results columns {COLUMNS}")
        return [_parse_row(r) for r in reader]


def _write_parquet(journal: Path, target: Path) -> None:
    import duckdb

    columns = "{" + ", ".join(f"'{c}': '{t}'" for c, t in _DUCK_TYPES.items()) + "}"
    with atomic_path(target) as tmp, contextlib.closing(duckdb.connect()) as con:
        tmp.unlink()  # duckdb writes the file itself
        con.execute(
            f"COPY (SELECT * FROM read_csv(?, header=true, columns={columns})) "
            "TO ? (FORMAT PARQUET)",
            [str(journal), str(tmp)],
        )


def _typed(column: str, value: Any) -> Any:
    if value is None:  # duckdb reads an empty CSV field as NULL
        return "" if _TYPES[column] is str else math.nan
    return _TYPES[column](value)


def unique_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without repeats: the last row per (run, metric, metric_args), at its first place.

    Use it to merge the rows of several grids that share cells.
    """
    index: dict[tuple[str, str, str], int] = {}
    out: list[dict[str, Any]] = []
    for row in rows:
        key = (row["run"], row["metric"], row["metric_args"])
        if key in index:
            out[index[key]] = row
        else:
            index[key] = len(out)
            out.append(row)
    return out


def load_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a results file (CSV or Parquet) as dicts with typed values.

    Rows keep file order; when a run was repeated (``retry_failed``) the last row
    for each run and metric replaces the earlier one.
    """
    target = Path(path)
    if target.suffix != ".parquet":
        return unique_rows(_read_csv(target))
    import duckdb

    with contextlib.closing(duckdb.connect()) as con:
        cur = con.execute("SELECT * FROM read_parquet(?)", [str(target)])
        names = [d[0] for d in cur.description]
        if tuple(names) != COLUMNS:
            raise ValidationError(f"{target} does not have the results columns {COLUMNS}")
        records = cur.fetchall()
    return unique_rows(
        [{c: _typed(c, v) for c, v in zip(names, rec, strict=True)} for rec in records]
    )


# --------------------------------------------------------------------------- the grid


def _tasks(
    methods: Sequence[Method],
    datasets: Sequence[DatasetSpec],
    epsilons: Sequence[object],
    metrics: tuple[Metric, ...],
    trials: int,
    seed: int,
    data_dir: str | None,
) -> Iterator[_Task]:
    for dataset in datasets:
        for method in methods:
            for eps in epsilons:
                exact = validate_epsilon(eps)
                for trial in range(trials):
                    yield _Task(
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


def _pending(task: _Task, done: set[tuple[str, str, str]]) -> _Task | None:
    """The task restricted to the metrics it still lacks, or None when complete."""
    missing = tuple(m for m in task.metrics if (task.key, m.name, m.args_text) not in done)
    if not missing:
        return None
    return task if len(missing) == len(task.metrics) else _replace_metrics(task, missing)


def _replace_metrics(task: _Task, metrics: tuple[Metric, ...]) -> _Task:
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
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValidationError(f"trials must be an int >= 1, got {trials!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValidationError(f"workers must be an int >= 1, got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError(f"seed must be a non-negative int, got {seed!r}")
    method_specs = [_as_method(m) for m in methods]
    dataset_specs = [_as_dataset(d) for d in datasets]
    metric_specs = tuple(dict.fromkeys(_as_metric(m) for m in metrics))
    if not (method_specs and dataset_specs and epsilons and metric_specs):
        raise ValidationError("methods, datasets, epsilons and metrics must all be non-empty")
    folder = None if data_dir is None else str(data_dir)
    tasks = list(_tasks(method_specs, dataset_specs, epsilons, metric_specs, trials, seed, folder))

    journal = None if out is None else _journal_path(Path(out))
    existing = [] if journal is None else _open_journal(journal)
    if retry_failed:
        failed = {r["run"] for r in existing if r["error"]}
        existing = [r for r in existing if r["run"] not in failed]
    done = {(r["run"], r["metric"], r["metric_args"]) for r in existing}
    todo = [p for t in tasks if (p := _pending(t, done)) is not None]

    fresh: list[dict[str, Any]] = []

    def record(rows: list[dict[str, Any]]) -> None:
        fresh.extend(rows)
        if journal is not None:
            with open(journal, "a", encoding="utf-8", newline="") as fh:
                fh.write(_encode(rows))
                fh.flush()
                os.fsync(fh.fileno())

    with _progress(progress) as bar:
        job = bar.add_task("runs", total=len(todo))
        if workers == 1 or len(todo) <= 1:
            for task in todo:
                record(_execute(task))
                bar.advance(job)
        else:
            _run_parallel(todo, workers, record, lambda: bar.advance(job))

    if out is not None and Path(out).suffix == ".parquet":
        _write_parquet(journal, Path(out))
    return _in_grid_order(tasks, unique_rows([*existing, *fresh]))


def _run_parallel(
    todo: list[_Task],
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
            running.add(pool.submit(_execute, task))
            if len(running) >= 2 * workers:
                break
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                record(fut.result())
                advance()
                nxt = next(queue, None)
                if nxt is not None:
                    running.add(pool.submit(_execute, nxt))


def _in_grid_order(tasks: list[_Task], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows belonging to ``tasks``, ordered by task, then by metric order."""
    index = {(r["run"], r["metric"], r["metric_args"]): r for r in rows}
    out = []
    for task in tasks:
        for m in task.metrics:
            row = index.get((task.key, m.name, m.args_text))
            if row is not None:
                out.append(row)
    return out


# --------------------------------------------------------------------------- summaries


def _metric_label(row: Mapping[str, Any]) -> str:
    args = json.loads(row["metric_args"]) if row["metric_args"] else {}
    return Metric(row["metric"], tuple(args.items())).label if args else row["metric"]


def summarise(
    rows: Iterable[Mapping[str, Any]],
    by: Sequence[str] = ("method", "dataset", "epsilon", "metric"),
    stat: str = "mean",
) -> list[dict[str, Any]]:
    """Aggregate rows over trials: one dict per distinct value of the ``by`` columns.

    ``by`` may name any column or ``"label"`` (the metric with its arguments,
    e.g. ``range_pct_mse(r=4)``). Each summary holds the ``by`` values, ``value`` and
    ``seconds`` (the ``stat`` over successful rows: ``"mean"`` or ``"median"``; NaN
    when none succeeded), ``runs`` (successful rows) and ``failures`` (rows with an
    error). Groups keep the order of first appearance.
    """
    if stat not in ("mean", "median"):
        raise ValidationError(f"stat must be 'mean' or 'median', got {stat!r}")
    reduce = statistics.fmean if stat == "mean" else statistics.median
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        values = tuple(_metric_label(row) if c == "label" else row[c] for c in by)
        groups.setdefault(values, []).append(row)
    out = []
    for values, members in groups.items():
        ok = [r for r in members if not r["error"]]
        out.append(
            {
                **dict(zip(by, values, strict=True)),
                "value": reduce([r["value"] for r in ok]) if ok else math.nan,
                "seconds": reduce([r["seconds"] for r in ok]) if ok else math.nan,
                "runs": len(ok),
                "failures": len(members) - len(ok),
            }
        )
    return out


def summary_index(
    rows: Iterable[Mapping[str, Any]],
    by: Sequence[str] = ("dataset", "epsilon", "label", "method"),
    stat: str = "mean",
) -> dict[tuple, dict[str, Any]]:
    """:func:`summarise` keyed by the tuple of the ``by`` values, for lookups."""
    return {tuple(s[k] for k in by): s for s in summarise(rows, by=by, stat=stat)}


def summary_value(index: Mapping[tuple, Mapping[str, Any]], *key: Any) -> float:
    """The summarised value at ``key``; NaN when the cell is missing or every run failed."""
    s = index.get(key)
    return s["value"] if s and s["runs"] else math.nan
