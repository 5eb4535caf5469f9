"""The result of a publication: a private histogram that answers range queries.

A :class:`Release` holds the estimate in the original bin order, its ledger (what
was measured, with which epsilon), the per-bin noise variance where the method can
state it, and per-block timings. Range sums are half-open ``[lo, hi)`` like Python
slices and cost O(1) each from a prefix-sum array built once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ._kernel import Charge
from ._kernel.zcdp import approx_dp_epsilon
from .errors import InputTypeError, WorkloadError

__all__ = ["Release", "json_default", "json_value"]


def _frozen(values: object, dtype: type) -> np.ndarray:
    """A read-only array of ``dtype``: a read-only array of that type is kept as it is
    (the kernel's outputs at 10**8 bins are not copied), anything else is copied."""
    if isinstance(values, np.ndarray) and values.dtype == dtype and not values.flags.writeable:
        return values
    arr = np.array(values, dtype=dtype)
    arr.flags.writeable = False
    return arr


def _bound(value: object, name: str, n: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputTypeError(f"{name} must be an integer bin index; got {type(value).__name__}")
    v = int(value)
    if not 0 <= v <= n:
        raise WorkloadError(f"{name}={v} lies outside the domain [0, {n}]")
    return v


@dataclass(frozen=True, eq=False)
class Release:
    """A private histogram and its provenance.

    Attributes
    ----------
    estimate : float ndarray
        Estimated counts in the original bin order (read-only).
    method, params : the registered method name and the settings used.
    epsilon : Fraction
        Budget granted to this release; ``ledger`` sums to at most this exactly. Under
        zero-concentrated DP (``definition == "zcdp"``) it is the release's rho.
    ledger : tuple of Charge
        Every noisy measurement: block, primitive, epsilon, sensitivity, scale.
    private : bool
        False for seeded (reproducible) releases, which carry no guarantee.
    guarantee : str
        The guarantee in words.
    noise_variance : float ndarray or None
        Per-bin variance of the noise in ``estimate`` given the method's grouping
        (excludes smoothing bias and the randomness of the grouping itself).
    groups : int ndarray or None
        Group label of each bin for methods that group bins (a released, private
        output: it is computed from noisy measurements only).
    timings : mapping of block name to seconds
        For experiments only: run times depend on the data, so they are never part of
        :meth:`to_dict`, :meth:`to_json` or any output file.
    privacy_unit, max_records : what the guarantee protects: one ``"record"``, or one
        named unit (a person) contributing at most ``max_records`` records.
    """

    estimate: np.ndarray
    method: str
    params: Mapping[str, Any]
    epsilon: Fraction
    ledger: tuple[Charge, ...]
    private: bool
    guarantee: str
    noise_variance: np.ndarray | None = None
    groups: np.ndarray | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    privacy_unit: str = "record"
    max_records: int = 1
    definition: str = "pure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "estimate", _frozen(self.estimate, np.float64))
        if self.noise_variance is not None:
            object.__setattr__(self, "noise_variance", _frozen(self.noise_variance, np.float64))
        if self.groups is not None:
            object.__setattr__(self, "groups", _frozen(self.groups, np.int64))

    @functools.cached_property
    def _prefix(self) -> np.ndarray:
        """Prefix sums of the estimate, built at the first range query."""
        prefix = np.zeros(self.estimate.size + 1)
        np.cumsum(self.estimate, out=prefix[1:])
        prefix.flags.writeable = False
        return prefix

    @property
    def n(self) -> int:
        """Number of bins."""
        return int(self.estimate.size)

    @property
    def spent(self) -> Fraction:
        """Exact sum of the ledger's epsilons."""
        return sum((c.epsilon for c in self.ledger), Fraction(0))

    def point(self, i: int) -> float:
        """Estimated count of bin ``i``."""
        i = _bound(i, "i", self.n - 1)
        return float(self.estimate[i])

    def range_sum(self, lo: int, hi: int) -> float:
        """Estimated total of bins ``lo, ..., hi - 1`` (half-open), in O(1)."""
        lo, hi = _bound(lo, "lo", self.n), _bound(hi, "hi", self.n)
        if lo > hi:
            raise WorkloadError(f"range [lo={lo}, hi={hi}) has lo > hi")
        return float(self._prefix[hi] - self._prefix[lo])

    def ranges(self, los: object, his: object) -> np.ndarray:
        """Vectorised :meth:`range_sum` over arrays of bounds."""
        lo = np.asarray(los)
        hi = np.asarray(his)
        if lo.shape != hi.shape or not (
            np.issubdtype(lo.dtype, np.integer) and np.issubdtype(hi.dtype, np.integer)
        ):
            raise WorkloadError("los and his must be integer arrays of the same shape")
        if lo.size and (lo.min() < 0 or hi.max() > self.n or np.any(lo > hi)):
            raise WorkloadError(f"ranges must satisfy 0 <= lo <= hi <= n={self.n}")
        return self._prefix[hi] - self._prefix[lo]

    def answer(self, workload: Any) -> np.ndarray:
        """Answers to every query of a :mod:`dphist.workloads` workload, in its order."""
        if getattr(workload, "n", None) != self.n:
            raise WorkloadError(
                f"workload is over {getattr(workload, 'n', '?')} bins; this release has {self.n}"
            )
        return workload.answers(self._prefix)

    def epsilon_at(self, delta: float) -> float:
        """The epsilon of the (epsilon, delta)-DP this release implies: its epsilon under
        pure DP; under zCDP the tight conversion of its rho (Canonne, Kamath, Steinke
        2020, Corollary 13)."""
        if self.definition == "zcdp":
            return approx_dp_epsilon(float(self.epsilon), delta)
        return float(self.epsilon)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe description: estimate, ledger, guarantee (no seeds, no true data,
        no run times)."""
        return {
            "method": self.method,
            "params": {k: json_value(v) for k, v in self.params.items()},
            "epsilon": float(self.epsilon),
            "epsilon_exact": str(self.epsilon),
            "spent_exact": str(self.spent),
            "definition": self.definition,
            **({"rho": float(self.epsilon)} if self.definition == "zcdp" else {}),
            "private": self.private,
            "guarantee": self.guarantee,
            "privacy_unit": self.privacy_unit,
            "max_records": self.max_records,
            "n": self.n,
            "estimate": self.estimate.tolist(),
            "noise_variance": None if self.noise_variance is None else self.noise_variance.tolist(),
            "groups": None if self.groups is None else self.groups.tolist(),
            "ledger": [c.to_dict() for c in self.ledger],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=json_default)

    def __repr__(self) -> str:
        mode = "private" if self.private else "NOT PRIVATE (seeded)"
        return (
            f"Release(method={self.method!r}, n={self.n}, "
            f"{'rho' if self.definition == 'zcdp' else 'epsilon'}={float(self.epsilon):g}, "
            f"charges={len(self.ledger)}, {mode})"
        )


def json_default(value: Any) -> Any:
    """The one JSON encoding of values the standard encoder refuses: exact rationals as
    strings (``"1/3"``), numpy scalars as numbers, anything else as its ``repr``."""
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def json_value(value: Any) -> Any:
    """``value`` as JSON writes it (see :func:`json_default`); mappings and sequences
    element by element."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    return json_default(value)
