"""Named metrics an experiment scores releases with (the METRICS registry)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import metrics as _metrics
from ... import workloads as _workloads
from ...errors import InputTypeError, ValidationError
from .grid import canonical


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
        return canonical(dict(self.args))

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


def as_metric(spec: object) -> Metric:
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str):
        return Metric(spec)
    raise InputTypeError(f"a metric must be a name or a Metric, got {type(spec).__name__}")
