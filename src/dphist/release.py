"""The result of a publication: a private histogram that answers range queries.

A :class:`Release` holds the estimate in the original bin order, its ledger (what
was measured, with which epsilon), its error model, the per-bin noise variance where
the method can state it, and per-block timings. Range sums are half-open ``[lo, hi)``
like Python slices and cost O(1) each from a prefix-sum array built once.

Every answer has its error bar: :attr:`Release.stderr` per bin,
:meth:`Release.range_stderr` and ``ranges(..., stderr=True)`` per range (``O(log N)``
each), :meth:`Release.interval` / :meth:`Release.intervals` at ``1 - alpha``.
:attr:`Release.error_bars` says what they cover; methods whose error nothing released
can bound say so there and raise :class:`~dphist.uncertainty.NoErrorBarError`.
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
from .table import Table, published_table
from .uncertainty import ErrorModel, NoErrorBarError, PerGroup

__all__ = ["Release", "json_default", "json_value", "provenance"]

_CHUNK = 1 << 20  # bins per chunk of the per-bin error bars
_PER_BIN = ("estimate", "noise_variance", "stderr", "groups")


def _frozen(values: object, dtype: type) -> np.ndarray:
    """A read-only array of ``dtype``: a read-only array of that type is kept as it is
    (the kernel's outputs at 10**8 bins are not copied), anything else is copied."""
    if isinstance(values, np.ndarray) and values.dtype == dtype and not values.flags.writeable:
        return values
    arr = np.array(values, dtype=dtype)
    arr.flags.writeable = False
    return arr


def _labels(values: object) -> np.ndarray:
    """Group labels, read-only: a read-only int32 or int64 array is kept as it is (the
    methods' int32 labels at 10**8 bins are not widened), anything else becomes int64."""
    if (
        isinstance(values, np.ndarray)
        and values.dtype in (np.int32, np.int64)
        and not values.flags.writeable
    ):
        return values
    return _frozen(values, np.int64)


class _NoiseVariance:
    """:attr:`Release.noise_variance`: kept as given (read-only float64), or as a
    :class:`~dphist.uncertainty.PerGroup` (one variance per group) spread over the bins
    at the first read and cached, like :attr:`Release._prefix`: a grouping's release
    holds no per-bin variance until it is asked for."""

    def __get__(self, obj: Release | None, owner: type | None = None) -> np.ndarray | None:
        if obj is None:
            return None  # the field's default
        value = obj.__dict__["_noise_variance"]
        if isinstance(value, PerGroup):
            value = obj.__dict__["_noise_variance"] = value.per_bin()
        return value

    @staticmethod
    def kept(value: object) -> np.ndarray | PerGroup | None:
        """What a release keeps of a given ``noise_variance``."""
        if value is not None and not isinstance(value, PerGroup):
            return _frozen(value, np.float64)
        return value


def _bound(value: object, name: str, n: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputTypeError(f"{name} must be an integer bin index; got {type(value).__name__}")
    v = int(value)
    if not 0 <= v <= n:
        raise WorkloadError(f"{name}={v} lies outside the domain [0, {n}]")
    return v


@dataclass(frozen=True, eq=False, init=False)
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
        (excludes smoothing bias and the randomness of the grouping itself; read-only).
        A grouping method's is built from one variance per group at the first read.
    groups : int ndarray or None
        Group label of each bin for methods that group bins (a released, private
        output: it is computed from noisy measurements only).
    uncertainty : ErrorModel or None
        The error model behind :attr:`stderr` and :meth:`interval` (public structure
        and released values only).
    timings : mapping of block name to seconds
        For experiments only: run times depend on the data, so they are never part of
        :meth:`to_dict`, :meth:`to_json` or any output file.
    privacy_unit, max_records : what the guarantee protects: one ``"record"``, or one
        named unit (a person) contributing at most ``max_records`` records.
    binning : Binning or None
        The public bins of a release made from records (:func:`dphist.histogram`): their
        labels and bounds, open end bins included; None for a release of counts.
    """

    estimate: np.ndarray
    method: str
    params: Mapping[str, Any]
    epsilon: Fraction
    ledger: tuple[Charge, ...]
    private: bool
    guarantee: str
    noise_variance: np.ndarray | None = _NoiseVariance()
    groups: np.ndarray | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    privacy_unit: str = "record"
    max_records: int = 1
    definition: str = "pure"
    uncertainty: ErrorModel | None = None
    binning: Any = None

    def __init__(
        self,
        estimate: object,
        method: str,
        params: Mapping[str, Any],
        epsilon: Fraction,
        ledger: tuple[Charge, ...],
        private: bool,
        guarantee: str,
        noise_variance: object = None,
        groups: object = None,
        timings: Mapping[str, float] | None = None,
        privacy_unit: str = "record",
        max_records: int = 1,
        definition: str = "pure",
        uncertainty: ErrorModel | None = None,
        binning: Any = None,
    ) -> None:
        # the fields filled at once (a frozen dataclass's own __init__ sets them one by one)
        self.__dict__.update(
            estimate=_frozen(estimate, np.float64),
            method=method,
            params=params,
            epsilon=epsilon,
            ledger=ledger,
            private=private,
            guarantee=guarantee,
            _noise_variance=_NoiseVariance.kept(noise_variance),
            groups=None if groups is None else _labels(groups),
            timings={} if timings is None else timings,
            privacy_unit=privacy_unit,
            max_records=max_records,
            definition=definition,
            uncertainty=uncertainty,
            binning=binning,
            _stderr=None,
        )

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
        lo, hi = self._pair(lo, hi)
        return float(self._prefix[hi] - self._prefix[lo])

    def ranges(
        self, los: object, his: object, *, stderr: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`range_sum` over arrays of bounds; with ``stderr=True`` also
        each answer's standard error (:meth:`range_stderr`)."""
        lo, hi = self._bounds(los, his)
        answers = self._prefix[hi] - self._prefix[lo]
        if not stderr:
            return answers
        return answers, self._stderrs(lo, hi)

    def answer(
        self, workload: Any, *, stderr: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Answers to every query of a :mod:`dphist.workloads` workload, in its order;
        with ``stderr=True`` also their standard errors (the queries are listed)."""
        if getattr(workload, "n", None) != self.n:
            raise WorkloadError(
                f"workload is over {getattr(workload, 'n', '?')} bins; this release has {self.n}"
            )
        answers = workload.answers(self._prefix)
        if not stderr:
            return answers
        lo, hi = workload.intervals()
        return answers, self._stderrs(lo, hi)

    # ------------------------------------------------------------------ error bars

    @property
    def error_bars(self) -> str:
        """What :attr:`stderr` and :meth:`interval` account for, or why there are none."""
        if self.uncertainty is None:
            return "nothing: the method states no error model"
        return self.uncertainty.covers

    @property
    def stderr(self) -> np.ndarray | None:
        """Standard error of each bin's estimate (read-only), None without error bars.

        Exact for unbiased methods; for grouping methods it includes the grouping bias
        as estimated, or at its bound (see :attr:`error_bars`)."""
        if self.uncertainty is None or self.uncertainty.withheld is not None:
            return None
        if self._stderr is None:
            (se,) = self._per_bin(lambda lo, hi: (self._stderrs(lo, hi),), 1)
            se.flags.writeable = False
            object.__setattr__(self, "_stderr", se)
        return self._stderr

    def _per_bin(self, fn: Any, k: int) -> tuple[np.ndarray, ...]:
        """The ``k`` arrays ``fn(lo, hi)`` returns for every bin ``[i, i + 1)``, computed a
        chunk of bins at a time (temporaries stay small at 10**8 bins)."""
        outs = tuple(np.empty(self.n, dtype=np.float64) for _ in range(k))
        for start in range(0, self.n, _CHUNK):
            lo = np.arange(start, min(start + _CHUNK, self.n))
            for out, part in zip(outs, fn(lo, lo + 1), strict=True):
                out[start : start + lo.size] = part
        return outs

    def range_stderr(self, lo: int, hi: int) -> float:
        """Standard error of :meth:`range_sum` ``(lo, hi)``, in ``O(log N)``."""
        lo, hi = self._pair(lo, hi)
        return float(self._stderrs(np.array([lo]), np.array([hi]))[0])

    def interval(self, lo: int, hi: int, alpha: float = 0.05) -> tuple[float, float]:
        """An interval holding the true total of bins ``lo .. hi - 1`` with probability
        at least ``1 - alpha`` (see :attr:`error_bars` for what it accounts for)."""
        lo, hi = self._pair(lo, hi)
        lower, upper = self.intervals(np.array([lo]), np.array([hi]), alpha=alpha)
        return float(lower[0]), float(upper[0])

    def intervals(
        self, los: object = None, his: object = None, *, alpha: float = 0.05,
        nonnegative: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Vectorised :meth:`interval`: lower and upper limits for each range; every bin
        when ``los`` and ``his`` are omitted. Every interval holds its estimate; lower
        limits below 0 rise to 0 unless ``nonnegative=False``."""
        if los is not None or his is not None:
            lo, hi = self._bounds(los, his)
            return self._model().intervals(lo, hi, self._prefix, alpha, nonnegative)
        model = self._model()
        lower, upper = self._per_bin(
            lambda lo, hi: model.intervals(lo, hi, self._prefix, alpha, nonnegative), 2
        )
        # each holds the bin's own estimate, not only its prefix-sum difference
        np.minimum(lower, self.estimate, out=lower)
        np.maximum(upper, self.estimate, out=upper)
        return lower, upper

    def table(self, counts: str = "integer", alpha: float = 0.05) -> Table:
        """The per-bin table as files publish it: non-negative integer counts with the
        estimate's total (post-processing), or with ``counts="float"`` the estimate
        itself; intervals that hold each entry (:func:`dphist.table.published_table`)."""
        return published_table(self, counts, alpha)

    def _model(self) -> ErrorModel:
        if self.uncertainty is None:
            raise NoErrorBarError(f"method {self.method!r} states no error model")
        return self.uncertainty

    def _stderrs(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.sqrt(self._model().variance(lo, hi, self._prefix))

    def _pair(self, lo: int, hi: int) -> tuple[int, int]:
        lo, hi = _bound(lo, "lo", self.n), _bound(hi, "hi", self.n)
        if lo > hi:
            raise WorkloadError(f"range [lo={lo}, hi={hi}) has lo > hi")
        return lo, hi

    def _bounds(self, los: object, his: object) -> tuple[np.ndarray, np.ndarray]:
        lo = np.asarray(los)
        hi = np.asarray(his)
        if lo.shape != hi.shape or not (
            np.issubdtype(lo.dtype, np.integer) and np.issubdtype(hi.dtype, np.integer)
        ):
            raise WorkloadError("los and his must be integer arrays of the same shape")
        if lo.size and (lo.min() < 0 or hi.max() > self.n or np.any(lo > hi)):
            raise WorkloadError(f"ranges must satisfy 0 <= lo <= hi <= n={self.n}")
        return lo, hi

    def epsilon_at(self, delta: float) -> float:
        """The epsilon of the (epsilon, delta)-DP this release implies: its epsilon under
        pure DP; under zCDP the tight conversion of its rho (Canonne, Kamath, Steinke
        2020, Corollary 13)."""
        if self.definition == "zcdp":
            return approx_dp_epsilon(float(self.epsilon), delta)
        return float(self.epsilon)

    def to_dict(self, per_bin: bool = True) -> dict[str, Any]:
        """A JSON-safe description: estimate, ledger, guarantee (no seeds, no true data,
        no run times); ``per_bin=False`` leaves out the per-bin lists (files write them
        as columns)."""
        record = {
            **provenance(self),
            "n": self.n,
            "estimate": None,
            "noise_variance": None,
            "stderr": None,
            "error_bars": self.error_bars,
            "groups": None,
            "ledger": [c.to_dict() for c in self.ledger],
        }
        if not per_bin:
            return {k: v for k, v in record.items() if v is not None or k not in _PER_BIN}
        for name in _PER_BIN:
            value = getattr(self, name)
            record[name] = None if value is None else value.tolist()
        return record

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=json_default)

    def __repr__(self) -> str:
        mode = "private" if self.private else "NOT PRIVATE (seeded)"
        return (
            f"Release(method={self.method!r}, n={self.n}, "
            f"{'rho' if self.definition == 'zcdp' else 'epsilon'}={float(self.epsilon):g}, "
            f"charges={len(self.ledger)}, {mode})"
        )


def provenance(release: Any) -> dict[str, Any]:
    """What a release says about how it was made (JSON-safe): method and settings, the
    budget (exact and spent), the definition, whether it is private, its guarantee and
    privacy unit. Shared by 1-D and 2-D releases."""
    return {
        "method": release.method,
        "params": {k: json_value(v) for k, v in release.params.items()},
        "epsilon": float(release.epsilon),
        "epsilon_exact": str(release.epsilon),
        "spent_exact": str(release.spent),
        "definition": release.definition,
        **({"rho": float(release.epsilon)} if release.definition == "zcdp" else {}),
        "private": release.private,
        "guarantee": release.guarantee,
        "privacy_unit": release.privacy_unit,
        "max_records": release.max_records,
    }


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
