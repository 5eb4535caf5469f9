"""Data-independent publication blocks: noise on every bin, or on the total."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import GroupSums, Identity, PrivateView, TotalAndSupport
from .base import Block, State, constant

__all__ = ["AutoFeatures", "NoisyBins", "NoisyTotal"]


@dataclass(frozen=True, kw_only=True)
class NoisyBins(Block):
    """Noisy count of every bin (the Laplace mechanism, Dwork et al. 2006).

    Privacy: one measurement of the identity query (sensitivity 1) with the block's
    whole share. The noisy counts become both ``noisy`` and the current ``estimate``.
    """

    label = "noisy_bins"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        m = view.measure(Identity(view.n))
        noisy = m.values.astype(np.float64)
        return state.with_(noisy=noisy, estimate=noisy, variance=constant(state.n, m.variance))


@dataclass(frozen=True, kw_only=True)
class NoisyTotal(Block):
    """Noisy total spread evenly over all bins (the Uniform baseline).

    Privacy: one measurement of the total (sensitivity 1) with the block's share.
    """

    label = "noisy_total"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        m = view.measure(GroupSums(np.zeros(view.n, dtype=np.int64)))
        total = float(m.values[0])
        return state.with_(
            estimate=np.full(state.n, total / state.n),
            variance=constant(state.n, m.variance / state.n**2),
        )


@dataclass(frozen=True, kw_only=True)
class AutoFeatures(Block):
    """The facts ``method="auto"`` chooses from: a noisy total and a noisy number of
    non-empty bins, in ``notes["features"]``; the estimate spreads the total evenly.

    Privacy: one measurement of :class:`~dphist._kernel.TotalAndSupport` (sensitivity
    2) with the block's whole share.
    """

    label = "auto_features"
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        m = view.measure(TotalAndSupport(view.n))
        total, nonempty = (float(v) for v in m.values)
        return state.with_(
            estimate=np.full(state.n, total / state.n),
            notes={**state.notes, "features": (total, nonempty)},
        )
