"""The one way a method runs: its blocks on sealed counts, under a budget.

:func:`run` resolves the method's budget shares, runs its blocks through the kernel
(:func:`dphist._kernel.run_pipeline`: every read charged first) and returns the
:class:`Outcome` in the original bin order. :class:`~dphist.Session`, the audit and
the experiments all call it, so a release, an audited run and a measured run are the
same computation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from operator import attrgetter
from typing import Any

import numpy as np

from .._kernel import Accountant, Charge, NoiseSource, ProtectedCounts, run_pipeline
from .._numeric.compact import PerGroup
from ..blocks import Pipeline, State, to_original_order
from ..errors import InternalError

__all__ = ["Outcome", "run"]

_CERTIFIED = attrgetter("certified")


@dataclass(frozen=True, eq=False, init=False)
class Outcome:
    """What one run of a method released, in the original bin order.

    ``variance`` is the per-bin noise variance where the method states it (a
    :class:`~dphist._numeric.compact.PerGroup` from a grouping: spread when read); ``groups``
    the released grouping of the bins (if any); ``uncertainty`` the error model of the
    estimate (:mod:`dphist.uncertainty`; None when the last block states none);
    ``timings`` the seconds per block (they depend on the data: for experiments, never
    for a release's files); ``state`` the blocks' final state in working order
    (released values only: for stage audits).
    """

    estimate: np.ndarray
    variance: np.ndarray | PerGroup | None
    groups: np.ndarray | None
    ledger: tuple[Charge, ...]
    timings: dict[str, float] = field(default_factory=dict)
    state: State | None = None
    uncertainty: Any = None

    def __init__(
        self,
        estimate: np.ndarray,
        variance: np.ndarray | PerGroup | None,
        groups: np.ndarray | None,
        ledger: tuple[Charge, ...],
        timings: dict[str, float] | None = None,
        state: State | None = None,
        uncertainty: Any = None,
    ) -> None:
        # the fields filled at once (a frozen dataclass's own __init__ sets them one by one)
        self.__dict__.update(
            estimate=estimate,
            variance=variance,
            groups=groups,
            ledger=ledger,
            timings={} if timings is None else timings,
            state=state,
            uncertainty=uncertainty,
        )

    @property
    def certified(self) -> bool:
        """False when a step reproduced a published noise scale that is not epsilon-DP."""
        return all(map(_CERTIFIED, self.ledger))

    @property
    def spent(self) -> Fraction:
        return sum((c.epsilon for c in self.ledger), Fraction(0))


def _final(values: np.ndarray | PerGroup | None, order: np.ndarray | None) -> Any:
    """A released array in the original bin order, read-only: a release adopts it
    without copying (the run is over, nothing writes to it again). A per-group value
    stays one (its labels are in the original order)."""
    if values is None:
        return None
    if isinstance(values, PerGroup):
        return values if order is None else _final(values.per_bin(), order)
    out = values if order is None else to_original_order(values, order)
    out.setflags(write=False)
    return out


def run(
    method: Pipeline | Sequence[Any],
    data: ProtectedCounts,
    *,
    epsilon: Fraction,
    budget: Accountant,
    noise: NoiseSource,
    definition: str = "pure",
) -> Outcome:
    """Run ``method`` (a :class:`~dphist.blocks.Pipeline` or its blocks) on ``data``.

    ``budget`` is the accountant the run charges (a release's child of a session, say);
    ``epsilon`` is the method's total, split by its blocks' shares before any read;
    under ``definition="zcdp"`` it is a rho (see ``dphist._kernel.view``).
    """
    blocks = method.blocks if isinstance(method, Pipeline) else tuple(method)
    n = data.n
    shape = data.shape if len(data.shape) == 2 else None
    state, timings = run_pipeline(
        data,
        blocks,
        lambda plan: State.start(n, plan, definition, shape),
        epsilon=epsilon,
        budget=budget,
        noise=noise,
        definition=definition,
    )
    if state.estimate is None or state.estimate.shape != (n,):
        raise InternalError(f"the method produced no estimate of {n} bins")
    order = state.order
    return Outcome(
        estimate=_final(state.estimate, order),
        variance=_final(state.variance, order),
        groups=_final(state.labels, order),
        ledger=budget.ledger,
        timings=timings,
        state=state,
        uncertainty=state.uncertainty,
    )
