"""Private views, the two measurement primitives, and the pipeline runner.

A block that has a budget share receives a :class:`PrivateView`: the only way to
learn anything about the true counts. Each measurement

1. derives the sensitivity from the query (never from the caller),
2. fixes the exact rational noise scale,
3. charges the block's budget slice -- which raises :class:`BudgetExceededError`
   naming the block and primitive if it would overspend -- and only then
4. reads the counts, answers the query and adds exact discrete Laplace noise.

:func:`run_pipeline` resolves every block's share before any data is read, hands a
view only to blocks with a positive share, and closes each view when its block
returns, so a view kept by a block is useless afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from ..errors import CompositionError, InternalError
from .budget import Accountant, Charge, as_fraction, resolve_shares
from .data import ProtectedCounts
from .noise import NoiseSource, discrete_laplace_variance, lattice_parameters, rational_scale
from .operators import Query

__all__ = ["Measurement", "PrivateView", "run_pipeline"]


@dataclass(frozen=True, eq=False)
class Measurement:
    """Noisy answers to one query; ``variance`` is the noise variance of each answer."""

    values: np.ndarray
    query: Query
    epsilon: Fraction
    scale: Fraction
    variance: float

    def __post_init__(self) -> None:
        self.values.flags.writeable = False


class PrivateView:
    """A block's handle on the protected counts, charged against its budget slice."""

    __slots__ = ("_budget", "_data", "_noise", "_open", "block")

    def __init__(self, data: ProtectedCounts, budget: Accountant, noise: NoiseSource, block: str):
        self._data = data
        self._budget = budget
        self._noise = noise
        self._open = True
        self.block = block

    def __repr__(self) -> str:
        return f"PrivateView(block={self.block!r}, n={self.n}, remaining={self.remaining})"

    def __reduce__(self):
        raise TypeError("private views cannot be pickled or copied")

    @property
    def n(self) -> int:
        """Number of bins (public)."""
        return self._data.n

    @property
    def remaining(self) -> Fraction:
        """Budget this block has left."""
        return self._budget.remaining

    def _epsilon(self, epsilon: object) -> Fraction:
        if not self._open:
            raise InternalError(f"block {self.block!r} used its view after it returned")
        if epsilon is None:
            return self._budget.remaining
        return as_fraction(epsilon, name="epsilon")

    def _check(self, query: Query) -> None:
        if not isinstance(query, Query):
            raise InternalError(f"block {self.block!r} passed a non-query {type(query).__name__}")
        if query.n != self.n:
            raise InternalError(f"query over {query.n} bins on a view of {self.n} bins")

    def measure(self, query: Query, *, epsilon: object = None) -> Measurement:
        """Answer ``query`` with exact discrete Laplace noise of scale >= sensitivity/epsilon.

        ``epsilon`` defaults to all the budget the block has left.
        """
        eps = self._epsilon(epsilon)
        self._check(query)
        sensitivity = query.sensitivity
        t, s = rational_scale(sensitivity, eps)
        self._budget.charge(
            Charge(
                self.block,
                "discrete_laplace",
                eps,
                sensitivity,
                Fraction(t, s),
                query.size,
                query.describe(),
            )
        )
        exact = query.apply(self._data._read())
        noisy = exact + self._noise.discrete_laplace(t, s, query.size)
        return Measurement(noisy, query, eps, Fraction(t, s), discrete_laplace_variance(t, s))

    def measure_real(self, query: Query, *, epsilon: object = None) -> Measurement:
        """Release a real-valued statistic by the lattice Laplace mechanism.

        The value is rounded to a power-of-two lattice ``g`` and ``g`` times exact
        discrete Laplace noise is added; the charged sensitivity includes the
        rounding (``sensitivity + changed * g``). See ``noise.lattice_parameters``.
        """
        eps = self._epsilon(epsilon)
        self._check(query)
        g, sensitivity, t, s = lattice_parameters(query.sensitivity, eps, query.changed)
        scale = g * Fraction(t, s)
        self._budget.charge(
            Charge(
                self.block, "lattice_laplace", eps, sensitivity, scale, query.size, query.describe()
            )
        )
        exact = np.asarray(query.apply_real(self._data._read()), dtype=np.float64)
        gf = float(g)
        noisy = np.rint(exact / gf) * gf + gf * self._noise.discrete_laplace(t, s, query.size)
        return Measurement(noisy, query, eps, scale, gf * gf * discrete_laplace_variance(t, s))

    def close(self) -> None:
        self._open = False


class Block(Protocol):
    """What the runner needs of a block: a unique name, a share and a run method."""

    name: str
    share: Any

    def run(self, state: Any, view: PrivateView | None) -> Any: ...


def run_pipeline(
    data: ProtectedCounts,
    blocks: Sequence[Block],
    start: Callable[[dict[str, Fraction]], Any],
    *,
    epsilon: Fraction,
    budget: Accountant,
    noise: NoiseSource,
) -> tuple[Any, dict[str, float]]:
    """Run ``blocks`` in order; each spends at most its share of ``epsilon``.

    All shares are resolved (and may fail) before any block runs; ``start(plan)``
    builds the initial state from the public per-block budgets. A block with share
    zero gets ``view=None``. Returns the final state and seconds spent per block.
    """
    names = [b.name for b in blocks]
    if len(set(names)) != len(names):
        raise CompositionError(f"block names must be unique within a method; got {names}")
    plan = resolve_shares(epsilon, {b.name: b.share for b in blocks})
    state = start(dict(plan))
    timings: dict[str, float] = {}
    for block in blocks:
        eps = plan[block.name]
        view = None
        if eps > 0:
            view = PrivateView(data, budget.child(eps, label=block.name), noise, block.name)
        start = time.perf_counter()
        try:
            state = block.run(state, view)
        finally:
            if view is not None:
                view.close()
        timings[block.name] = time.perf_counter() - start
    return state, timings
