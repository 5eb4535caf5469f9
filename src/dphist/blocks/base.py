"""The block contract: what a method's steps receive and hand on.

A method is a pipeline of blocks run in order. A block declares its ``share`` of the
method's epsilon; the kernel resolves every share before any data is read and gives
a :class:`~dphist._kernel.PrivateView` only to blocks with a positive share. Blocks
pass a :class:`State` along, which holds public facts and released (noisy)
quantities only, so everything a block computes from it is post-processing.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._kernel import REST, PrivateView, as_share, gaussian_noise_variance, noise_variance
from .._numeric.compact import PerGroup, compact_integers
from ..errors import BudgetPlanError, CompositionError
from .constraints import Constraint, check

__all__ = [
    "REST",
    "Block",
    "Pipeline",
    "State",
    "compact_first_stage",
    "constant",
    "mean_absolute_noise",
    "planned_variance",
    "to_original_order",
    "weighting_variance",
]

# Noise variances below this are treated as this when used as weights: at huge
# epsilon the exact discrete Laplace variance underflows to 0.0, and inverse-variance
# weighting needs positive numbers. Weights are post-processing; privacy is unaffected.
_MIN_WEIGHTING_VARIANCE = 1e-12


def weighting_variance(variance: float | np.ndarray) -> float | np.ndarray:
    """``variance`` floored at a tiny positive value, for use as an inverse weight."""
    return np.maximum(variance, _MIN_WEIGHTING_VARIANCE)


@dataclass(frozen=True, eq=False)
class State:
    """Public facts and released values passed from block to block.

    Arrays are in *working order*: position ``k`` holds original bin ``order[k]``
    (identity order when ``order`` is None). ``variance`` is the per-bin noise
    variance of ``estimate`` where a block can state it (a
    :class:`~dphist._numeric.compact.PerGroup` from a grouping's last block: one
    variance per group of ``labels``, in the original order). ``budgets`` holds every
    block's resolved epsilon (public: it follows from the method's shares), a rho
    when ``definition`` is ``"zcdp"``. ``uncertainty`` is the
    :class:`~dphist.uncertainty.ErrorModel` of ``estimate`` in the *original* bin order;
    a block that changes ``estimate`` without stating a new one leaves None (no error
    bar rather than a stale one). ``shape`` is the public shape of a 2-D domain
    (``(rows, cols)``, cells in row-major order), None for a 1-D histogram.
    """

    n: int
    noisy: np.ndarray | None = None
    order: np.ndarray | None = None
    labels: np.ndarray | None = None
    estimate: np.ndarray | None = None
    variance: np.ndarray | PerGroup | None = None
    budgets: Mapping[str, Fraction] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    definition: str = "pure"
    uncertainty: Any = None
    shape: tuple[int, int] | None = None

    @classmethod
    def start(
        cls, n: int, budgets: Mapping[str, Fraction], definition: str, shape: tuple | None
    ) -> State:
        """The first state of a run: ``State(n=n, budgets=budgets, definition=definition,
        shape=shape)``, filled at once (a frozen dataclass assigns field by field)."""
        new = object.__new__(cls)
        new.__dict__.update(
            _START, n=n, budgets=budgets, notes={}, definition=definition, shape=shape
        )
        return new

    def with_(self, **changes: Any) -> State:
        """A copy with ``changes`` applied (states are immutable); a new ``estimate``
        without a new ``uncertainty`` drops the old one."""
        if "estimate" in changes and "uncertainty" not in changes:
            changes["uncertainty"] = None
        if not changes.keys() <= _STATE_FIELDS:
            return replace(self, **changes)  # raises, naming the unknown field
        new = object.__new__(type(self))  # a frozen copy without re-running __init__
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new


_STATE_FIELDS = frozenset(State.__dataclass_fields__)
_START = {name: f.default for name, f in State.__dataclass_fields__.items() if f.default is None}


def planned_variance(state: State, budget: Fraction) -> float:
    """Variance of the noise a later sensitivity-1 measurement with ``budget`` will get:
    discrete Laplace under pure DP, discrete Gaussian under zCDP (public arithmetic)."""
    if state.definition == "zcdp":
        return gaussian_noise_variance(Fraction(1), budget)
    return noise_variance(1, budget)


def mean_absolute_noise(state: State, budget: Fraction) -> float:
    """Expected absolute noise of such a measurement, as the methods' costs use it:
    ``1/epsilon`` for Laplace noise, ``sigma sqrt(2/pi)`` for Gaussian noise."""
    if state.definition == "zcdp":
        return math.sqrt(2.0 * planned_variance(state, budget) / math.pi)
    return 1.0 / float(budget)


def constant(n: int, value: float) -> np.ndarray:
    """``n`` copies of ``value`` as a read-only view of one number (no ``n``-sized array:
    a per-bin variance that is the same everywhere costs nothing)."""
    # an immutable bytes buffer: read-only from the start
    return np.ndarray((n,), dtype=np.float64, buffer=struct.pack("d", value), strides=(0,))


def compact_first_stage(notes: Mapping[str, Any]) -> Mapping[str, Any]:
    """``notes`` with the first-stage noisy counts (kept for the error bars) compacted
    by :func:`compact_integers`: for a block that replaces ``state.noisy`` by a new
    array, after which the note is the float counts' only holder."""
    first = notes.get("first_stage")
    if first is None:
        return notes
    values, model = first
    small = compact_integers(values)
    return notes if small is values else {**notes, "first_stage": (small, model)}


def to_original_order(
    values: np.ndarray, order: np.ndarray | None, dtype: type | None = None
) -> np.ndarray:
    """Working-order values -> original bin order (``order[k]`` is the bin at position k),
    as ``dtype`` if given (working labels -> the labels a release keeps)."""
    if dtype is not None and values.dtype != dtype and (order is None or values.strides == (0,)):
        return values.astype(dtype)
    if order is None or values.strides == (0,):  # a constant keeps its order
        return values
    out = np.empty(values.shape, dtype=dtype or values.dtype)
    out[order] = values
    return out


@dataclass(frozen=True, kw_only=True)
class Block:
    """One step of a method.

    Subclasses set ``label`` (the ledger name), ``spends`` (whether the block needs a
    view of the data), ``constraints`` (a rule per setting, checked when the block is
    built; ``optional`` names settings that may be None) and implement :meth:`run`.
    ``share`` is the fraction of the method's epsilon this block may spend: a number
    in [0, 1] or ``REST``.
    """

    share: object = 0
    label: ClassVar[str] = "block"
    spends: ClassVar[bool] = False
    #: True when the block is right under zero-concentrated DP too: the kernel adds
    #: Gaussian noise and charges selections in rho, and any planning from a later
    #: block's budget goes through :func:`planned_variance` (``state.definition``).
    zcdp: ClassVar[bool] = False
    #: True when the block alone publishes an unbiased estimate whose noise does not
    #: depend on the data: its error is known before release (``dphist.accuracy``).
    unbiased: ClassVar[bool] = False
    constraints: ClassVar[Mapping[str, Constraint]] = {}
    optional: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        for name, constraint in self.constraints.items():
            check(name, getattr(self, name), constraint, optional=name in self.optional)
        positive = self.share is REST or as_share(self.share, name=f"share of {self.label}") > 0
        if positive and not self.spends:
            raise CompositionError(
                f"block {self.label!r} never reads the data, so its share must be 0; "
                f"got {self.share!r}"
            )
        if self.spends and not positive:
            raise BudgetPlanError(
                f"block {self.label!r} measures the data and needs a positive share"
            )

    @property
    def name(self) -> str:
        return self.label

    def run(self, state: State, view: PrivateView | None) -> State:
        raise NotImplementedError


@dataclass(frozen=True)
class Pipeline:
    """An ordered tuple of blocks forming one method; names must be unique."""

    blocks: tuple[Block, ...]

    def __post_init__(self) -> None:
        blocks = tuple(self.blocks)
        if not blocks or not all(isinstance(b, Block) for b in blocks):
            raise CompositionError("a pipeline needs one or more Block instances")
        names = [b.name for b in blocks]
        if len(set(names)) != len(names):
            raise CompositionError(f"block names must be unique within a pipeline; got {names}")
        object.__setattr__(self, "blocks", blocks)

    def describe(self) -> str:
        return " -> ".join(f"{b.name}({b.share!r})" for b in self.blocks)
