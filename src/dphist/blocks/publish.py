"""Data-independent publication blocks: noise on every bin, or on the total."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._kernel import BlockSums, Identity, Measurement, PrivateView, TotalAndTop
from ..uncertainty import BinNoise, Bracket, ErrorModel, GroupNoise, Groups, Tail
from .base import Block, State, constant
from .error_bars import law_of

__all__ = ["AutoFeatures", "NoisyBins", "NoisyTotal"]

_FIRST = np.zeros(1, dtype=np.int64)  # one group starting at bin 0


@lru_cache(maxsize=64)
def _every_bin(n: int) -> Identity:
    """The identity query over ``n`` bins (queries are immutable: one per domain)."""
    return Identity(n)


@lru_cache(maxsize=64)
def _total(n: int) -> BlockSums:
    """The total of ``n`` bins as one block sum."""
    return BlockSums(n, n)


_MODELS: dict[tuple, tuple] = {}


def _public_model(kind: str, n: int, m: Measurement, view: PrivateView) -> tuple:
    """``(error model, per-bin variance)`` of noise ``kind`` ("bins": one draw a bin;
    "total": one draw on the total, spread evenly) over ``n`` bins, for the noise law
    and scale of ``m``. Both follow from public facts (``n``, the law, the scale), so
    releases with the same ones share them (immutable; built once, not per release)."""
    law = law_of(view)
    key = (kind, n, law, *m.scale.as_integer_ratio())
    found = _MODELS.get(key)
    if found is None:
        tail = Tail(law, m.scale)
        if kind == "bins":
            found = (ErrorModel(BinNoise(n, m.variance, tail)), constant(n, m.variance))
        else:
            noise = GroupNoise(n, _FIRST, m.variance, tail)
            found = (ErrorModel(noise, Bracket(Groups.one(n))), constant(n, m.variance / n**2))
        if len(_MODELS) < 256:
            _MODELS[key] = found
    return found


@dataclass(frozen=True, kw_only=True)
class NoisyBins(Block):
    """Noisy count of every bin (the Laplace mechanism, Dwork et al. 2006).

    Privacy: one measurement of the identity query (sensitivity 1) with the block's
    whole share. The noisy counts become both ``noisy`` and the current ``estimate``;
    each bin's error is one draw of the noise.
    """

    label = "noisy_bins"
    zcdp = True
    unbiased = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        m = view.measure(_every_bin(view.n))
        noisy = m.values.astype(np.float64)
        model, variance = _public_model("bins", state.n, m, view)
        del m  # the kernel's int64 answers: the float copy is the working array
        # the error bars keep the first-stage counts for the whole release (a block that
        # replaces ``noisy`` compacts them: compact_first_stage)
        notes = {**state.notes, "first_stage": (noisy, model)}
        return state.with_(
            noisy=noisy, estimate=noisy, variance=variance, uncertainty=model, notes=notes
        )


@dataclass(frozen=True, kw_only=True)
class NoisyTotal(Block):
    """Noisy total spread evenly over all bins (the Uniform baseline).

    Privacy: one measurement of the total (sensitivity 1) with the block's share.
    The estimate is biased wherever the counts are not flat; its intervals bracket a
    range between 0 and the whole total (counts are never negative). The estimate and
    its variance are each one number viewed per bin (read-only, no ``n``-sized array).
    """

    label = "noisy_total"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        m = view.measure(_total(view.n))  # one block: the total
        total = float(m.values[0])
        n = state.n
        model, variance = _public_model("total", n, m, view)
        return state.with_(
            estimate=constant(n, total / n),  # one number viewed per bin, like the variance
            variance=variance,
            uncertainty=model,
        )


@dataclass(frozen=True, kw_only=True)
class AutoFeatures(Block):
    """The facts ``method="auto"`` chooses from: a noisy total and the noisy number of
    records in the fullest tenth of the bins, in ``notes["features"]``; the estimate
    spreads the total evenly.

    Privacy: one measurement of :class:`~dphist._kernel.TotalAndTop` (L1 and squared
    L2 sensitivity 2) with the block's whole share, Laplace or, under zCDP, Gaussian.
    """

    label = "auto_features"
    spends = True
    zcdp = True  # one kernel measurement: Gaussian noise at squared L2 sensitivity 2

    def run(self, state: State, view: PrivateView | None) -> State:
        m = view.measure(TotalAndTop(view.n))
        total, top = (float(v) for v in m.values)
        return state.with_(
            estimate=np.full(state.n, total / state.n),
            notes={**state.notes, "features": (total, top)},
        )
