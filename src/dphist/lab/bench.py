"""Run-time measurement of registered methods, shared by ``dphist bench`` and
``benchmarks/schemes.py``.

Times are wall-clock medians over repeated seeded releases (seeded noise: these are
measurements, not publications). A warm-up release on a small histogram runs first
so numba's compilation is not timed.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import synthetic
from ..errors import DphistError, ValidationError
from ..methods import get_method, list_methods
from ..session import publish

__all__ = ["QUADRATIC", "Timing", "resolve_methods", "time_method", "time_methods", "warm_up"]

#: Methods whose worst-case cost with default settings is quadratic in N or more (their
#: registered complexity); benchmarks time them sparingly.
QUADRATIC = frozenset({"SF"})

WARM_UP_BINS = 512


@dataclass(frozen=True)
class Timing:
    """Median seconds of one method over ``repeats`` runs, or the error that stopped it."""

    method: str
    n: int
    seconds: float
    repeats: int
    error: str = ""


def resolve_methods(spec: str | Sequence[str] | None) -> list[str]:
    """Canonical names for ``"all"`` / None (every method), ``"M1,M2"`` or a list."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        return [m.name for m in list_methods()]
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out = [get_method(name.strip()).name for name in names if name.strip()]
    if not out:
        raise ValidationError("no methods given; use 'all' or a comma-separated list")
    return list(dict.fromkeys(out))


def warm_up(names: Iterable[str]) -> None:
    """Run each method once on a small histogram so JIT compilation is not timed."""
    warm = synthetic.spiky(WARM_UP_BINS, rng=0)
    for name in names:
        with contextlib.suppress(DphistError):
            publish(warm, epsilon=1, method=name, rng=0, **get_method(name).example)


def time_method(method: str, x: np.ndarray, *, epsilon: object = 0.1, repeats: int = 3) -> Timing:
    """Median wall-clock seconds of ``repeats`` seeded releases of ``x`` with ``method``."""
    if repeats < 1:
        raise ValidationError(f"repeats must be >= 1; got {repeats}")
    info = get_method(method)
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        try:
            publish(x, epsilon=epsilon, method=info.name, rng=r, **info.example)
        except DphistError as exc:
            return Timing(info.name, int(x.size), float("nan"), r, type(exc).__name__)
        times.append(time.perf_counter() - start)
    return Timing(info.name, int(x.size), statistics.median(times), repeats)


def time_methods(
    names: Sequence[str],
    n: int,
    *,
    epsilon: object = 0.1,
    repeats: int = 3,
    seed: int = 1,
) -> list[Timing]:
    """Warm up, then time every method on one synthetic spiky histogram of ``n`` bins."""
    if n < 1:
        raise ValidationError(f"n must be >= 1; got {n}")
    x = synthetic.spiky(n, rng=seed)
    warm_up(names)
    return [time_method(name, x, epsilon=epsilon, repeats=repeats) for name in names]
