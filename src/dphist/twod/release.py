"""The result of a 2-D publication: a private ``rows x cols`` histogram that answers
rectangle queries, with its error bars and its ledger.

Rectangles are half-open like Python slices: ``rect_sum(r0, r1, c0, c1)`` is the total of
rows ``r0 .. r1 - 1`` and columns ``c0 .. c1 - 1``, four lookups in 2-D prefix sums built
once (``O(1)``). Every answer has its error bar: :attr:`Release2D.stderr` per cell,
:meth:`Release2D.rect_stderr` and ``rects(..., stderr=True)`` per rectangle,
:meth:`Release2D.interval` at ``1 - alpha``, :meth:`Release2D.marginal` for one attribute's
histogram; :attr:`Release2D.error_bars` says what they cover. The provenance (method,
epsilon, ledger, guarantee, privacy unit) is that of a 1-D :class:`~dphist.Release`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._kernel import Charge
from .._kernel.zcdp import approx_dp_epsilon
from .._numeric.grid2d import prefix2d
from ..errors import InputTypeError, WorkloadError
from ..release import json_default, provenance
from ..uncertainty import NoErrorBarError
from ..uncertainty.rectangles import RectErrorModel

__all__ = ["Release2D"]


def _index(value: object, name: str, top: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{name} must be integer cell indices; got {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() > top):
        raise WorkloadError(f"{name} must lie in [0, {top}]")
    return arr


@dataclass(frozen=True, eq=False)
class Release2D:
    """A private 2-D histogram and its provenance.

    Attributes
    ----------
    estimate : float ndarray, ``rows x cols``
        Estimated counts (read-only); row ``i``, column ``j`` is the cell of the ``i``-th
        bin of the first attribute and the ``j``-th of the second.
    method, params, epsilon, ledger, private, guarantee, privacy_unit, max_records,
    definition : as for :class:`~dphist.Release` (``epsilon`` is a rho under zCDP).
    uncertainty : the error model behind the error bars (None: none stated).
    timings : seconds per block, for experiments only (never written to a file).
    """

    estimate: np.ndarray
    method: str
    params: Mapping[str, Any]
    epsilon: Fraction
    ledger: tuple[Charge, ...]
    private: bool
    guarantee: str
    uncertainty: RectErrorModel | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    privacy_unit: str = "record"
    max_records: int = 1
    definition: str = "pure"

    def __post_init__(self) -> None:
        est = np.asarray(self.estimate)
        if est.dtype != np.float64 or est.flags.writeable:  # a frozen float array is kept
            est = np.array(est, dtype=np.float64)
        if est.ndim != 2:
            raise InputTypeError(f"a 2-D release holds a rows x cols estimate; got {est.shape}")
        est.flags.writeable = False
        object.__setattr__(self, "estimate", est)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.estimate.shape[0]), int(self.estimate.shape[1]))

    @property
    def n(self) -> int:
        """Number of cells."""
        return int(self.estimate.size)

    @property
    def spent(self) -> Fraction:
        return sum((c.epsilon for c in self.ledger), Fraction(0))

    @functools.cached_property
    def _prefix(self) -> np.ndarray:
        p = prefix2d(self.estimate)
        p.flags.writeable = False
        return p

    # ------------------------------------------------------------------ queries

    def _rects(self, r0, r1, c0, c1) -> tuple[np.ndarray, ...]:
        rows, cols = self.shape
        a0, a1 = _index(r0, "r0", rows), _index(r1, "r1", rows)
        b0, b1 = _index(c0, "c0", cols), _index(c1, "c1", cols)
        try:
            a0, a1, b0, b1 = np.broadcast_arrays(a0, a1, b0, b1)
        except ValueError:
            raise WorkloadError("r0, r1, c0 and c1 must have one shape") from None
        if np.any(a0 > a1) or np.any(b0 > b1):
            raise WorkloadError("rectangles need r0 <= r1 and c0 <= c1")
        return a0, a1, b0, b1

    def _sums(self, rects: tuple[np.ndarray, ...]) -> np.ndarray:
        r0, r1, c0, c1 = rects
        p = self._prefix
        return p[r1, c1] - p[r0, c1] - p[r1, c0] + p[r0, c0]

    def rect_sum(self, r0: int, r1: int, c0: int, c1: int) -> float:
        """Estimated total of rows ``r0 .. r1 - 1`` and columns ``c0 .. c1 - 1``, O(1)."""
        return float(self._sums(self._rects(r0, r1, c0, c1)))

    def rects(
        self, r0: object, r1: object, c0: object, c1: object, *, stderr: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`rect_sum`; with ``stderr=True`` also each standard error."""
        rects = self._rects(r0, r1, c0, c1)
        answers = self._sums(rects)
        if not stderr:
            return answers
        return answers, self._stderrs(rects, answers)

    def answer(self, workload: Any, *, stderr: bool = False):
        """Answers to a rectangle workload (:mod:`dphist.workloads`), in its order."""
        if tuple(getattr(workload, "shape", ())) != self.shape:
            raise WorkloadError(
                f"workload is over {getattr(workload, 'shape', '?')}; this release is {self.shape}"
            )
        if not stderr:
            return workload.answers(self._prefix)
        return self.rects(*workload.rectangles(), stderr=True)

    def marginal(self, axis: int, *, stderr: bool = False):
        """One attribute's histogram: the estimate summed over rows (``axis=0``, one value
        per column) or over columns (``axis=1``, one per row); with its standard errors."""
        rows, cols = self.shape
        if axis not in (0, 1):
            raise WorkloadError(f"axis must be 0 or 1; got {axis!r}")
        k = np.arange(cols if axis == 0 else rows)
        full = np.full(k.size, rows if axis == 0 else cols)
        zero = np.zeros(k.size, dtype=np.int64)
        args = (zero, full, k, k + 1) if axis == 0 else (k, k + 1, zero, full)
        return self.rects(*args, stderr=stderr)

    # ------------------------------------------------------------------ error bars

    @property
    def error_bars(self) -> str:
        if self.uncertainty is None:
            return "nothing: the method states no error model"
        return self.uncertainty.covers

    def _model(self) -> RectErrorModel:
        if self.uncertainty is None:
            raise NoErrorBarError(f"method {self.method!r} states no error model")
        return self.uncertainty

    def _stderrs(self, rects: tuple[np.ndarray, ...], answers: np.ndarray) -> np.ndarray:
        flat = tuple(np.ravel(r) for r in rects)
        var = self._model().variance(flat, np.ravel(answers))
        return np.sqrt(var).reshape(np.shape(answers))

    @functools.cached_property
    def stderr(self) -> np.ndarray | None:
        """Standard error of each cell (``rows x cols``, read-only), None without error bars."""
        if self.uncertainty is None or self.uncertainty.withheld is not None:
            return None
        rows, cols = self.shape
        i, j = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
        se = self._stderrs((i, i + 1, j, j + 1), self.estimate.ravel()).reshape(rows, cols)
        se.flags.writeable = False
        return se

    def rect_stderr(self, r0: int, r1: int, c0: int, c1: int) -> float:
        """Standard error of :meth:`rect_sum`."""
        return float(self.rects(r0, r1, c0, c1, stderr=True)[1])

    def interval(
        self, r0: int, r1: int, c0: int, c1: int, alpha: float = 0.05
    ) -> tuple[float, float]:
        """An interval holding the rectangle's true total with probability at least
        ``1 - alpha`` (see :attr:`error_bars` for what it accounts for)."""
        lower, upper = self.intervals(r0, r1, c0, c1, alpha=alpha)
        return float(lower), float(upper)

    def intervals(
        self, r0: object, r1: object, c0: object, c1: object, *, alpha: float = 0.05
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`interval`."""
        rects = self._rects(r0, r1, c0, c1)
        shape = np.shape(rects[0])
        flat = tuple(np.ravel(r) for r in rects)
        lower, upper = self._model().intervals(flat, np.ravel(self._sums(rects)), alpha)
        return lower.reshape(shape), upper.reshape(shape)

    # ------------------------------------------------------------------ provenance

    def epsilon_at(self, delta: float) -> float:
        """The epsilon of the (epsilon, delta)-DP this release implies (see
        :meth:`dphist.Release.epsilon_at`)."""
        if self.definition == "zcdp":
            return approx_dp_epsilon(float(self.epsilon), delta)
        return float(self.epsilon)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe description (no seeds, no true data, no run times)."""
        se = self.stderr
        return {
            **provenance(self),
            "shape": list(self.shape),
            "estimate": self.estimate.tolist(),
            "stderr": None if se is None else se.tolist(),
            "error_bars": self.error_bars,
            "ledger": [c.to_dict() for c in self.ledger],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=json_default)

    def __repr__(self) -> str:
        mode = "private" if self.private else "NOT PRIVATE (seeded)"
        name = "rho" if self.definition == "zcdp" else "epsilon"
        rows, cols = self.shape
        return (
            f"Release2D(method={self.method!r}, shape={rows}x{cols}, "
            f"{name}={float(self.epsilon):g}, charges={len(self.ledger)}, {mode})"
        )
