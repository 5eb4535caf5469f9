"""The axes of an experiment grid: methods, datasets (real, synthetic, given), and
the result columns."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import datasets, synthetic
from ...errors import InputTypeError, ValidationError

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

TYPES: dict[str, Callable[[str], Any]] = {
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

DUCK_TYPES = {
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


def canonical(obj: Any) -> str:
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


@dataclass(frozen=True)
class Method:
    """A registered method name and the keyword parameters passed to ``publish``."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def params_text(self) -> str:
        return canonical(dict(self.params))


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
        counts = datasets.load(self.name, data_dir=data_dir)
        return counts if self.bins is None else synthetic.reduce_domain(counts, self.bins)


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
        return "synthetic:" + canonical([self.generator, self.n, self.seed, dict(self.kwargs)])

    def load(self, data_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
        gen = getattr(synthetic, self.generator, None)
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


def as_method(spec: object) -> Method:
    if isinstance(spec, Method):
        return spec
    if isinstance(spec, str):
        return Method(spec)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return Method(spec[0], dict(spec[1]))
    raise InputTypeError(
        f"a method must be a name, a (name, params) pair or a Method, got {type(spec).__name__}"
    )


def as_dataset(spec: object) -> DatasetSpec:
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
