"""MWEM: multiplicative weights over interval queries chosen privately (Hardt et al. 2012)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit
from .._kernel import GroupSums, IntervalSums, PrivateView, WorstQuery, as_fraction
from .._numeric.tree import tree_layout
from ..uncertainty import ErrorModel
from .base import Block, State
from .constraints import Interval, Options, Share, rules

__all__ = ["MultiplicativeWeights"]

QUERIES = ("prefix", "dyadic")


@dataclass(frozen=True, kw_only=True)
class MultiplicativeWeights(Block):
    """MWEM (Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1) over interval queries.

    Starting from the uniform histogram with a noisy total, each of ``rounds`` rounds
    picks the candidate query the current estimate answers worst (kernel selection
    :class:`~dphist._kernel.WorstQuery`, ``ratio`` of the block's epsilon over all
    rounds), measures it (the rest, shared by the total and the ``rounds`` queries)
    and replays every measurement ``replays`` times through the multiplicative-weights
    update ``x_i <- x_i exp(q_i (m_q - q(x)) / (2 total))`` with renormalization to the
    total. Candidates are the ``"prefix"`` queries ``[0, j)`` (DPBench's 1-D workload)
    or the ``"dyadic"`` intervals of the binary tree; a chosen query leaves the pool.
    DPBench's defaults: 10 rounds, half of epsilon for the choices, 100 replays; it
    takes the total as known, here it is measured.

    The estimate stays constant between the endpoints of the measured queries, so the
    updates run on those at most ``2 rounds + 1`` segments, never on the bins.
    Privacy: ``rounds`` selections and ``rounds + 1`` interval sums of sensitivity 1,
    each charged by the kernel; the updates are post-processing.
    """

    label = "mwem"
    zcdp = True
    spends = True
    constraints = rules(
        rounds=Interval(int, 1, 1000),
        ratio=Share(),
        replays=Interval(int, 1, 10_000),
        queries=Options(*QUERIES),
    )
    rounds: int = 10
    ratio: object = 0.5
    replays: int = 100
    queries: str = "prefix"

    def run(self, state: State, view: PrivateView | None) -> State:
        n = state.n
        lo, hi = _candidates(n, self.queries)
        rounds = min(self.rounds, lo.size)  # a chosen query leaves the pool
        eps, ratio = view.remaining, as_fraction(self.ratio, name="ratio")
        choose_eps = eps * ratio / rounds
        measure_eps = eps * (1 - ratio) / (rounds + 1)
        total = view.measure(GroupSums(np.zeros(n, dtype=np.int64)), epsilon=measure_eps)
        total = max(float(total.values[0]), 1.0)
        cuts = np.array([0, n], dtype=np.int64)
        mass = np.array([total])
        measured_lo, measured_hi, values = [], [], []
        pool = np.ones(lo.size, dtype=bool)
        for _ in range(rounds):
            left = np.flatnonzero(pool)
            answers = _answers(cuts, mass, lo[left], hi[left])
            pick = int(
                left[view.select(WorstQuery(lo[left], hi[left], answers), epsilon=choose_eps)]
            )
            pool[pick] = False
            m = view.measure(IntervalSums(n, lo[[pick]], hi[[pick]]), epsilon=measure_eps)
            measured_lo.append(int(lo[pick]))
            measured_hi.append(int(hi[pick]))
            values.append(float(m.values[0]))
            cuts, mass = _refine(cuts, mass, measured_lo[-1], measured_hi[-1])
            inside = _inside(cuts, np.array(measured_lo), np.array(measured_hi))
            mass = _replay(mass, inside, np.array(values), total, self.replays)
        lengths = np.diff(cuts)
        return state.with_(
            estimate=np.repeat(mass / lengths, lengths),
            uncertainty=ErrorModel.without(
                "MWEM's estimate is a nonlinear function of its noisy answers and of queries "
                "chosen from the data; nothing released bounds its error"
            ),
        )


def _candidates(n: int, queries: str) -> tuple[np.ndarray, np.ndarray]:
    """Public candidate intervals ``[lo, hi)``."""
    if queries == "prefix":
        return np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)
    tree = tree_layout(n, 2)
    return tree.lo.astype(np.int64), tree.hi.astype(np.int64)


def _prefix_at(cuts: np.ndarray, mass: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Mass of ``[0, j)`` under the piecewise-uniform estimate (``mass`` spread evenly
    on each segment ``[cuts[s], cuts[s+1])``)."""
    before = np.concatenate(([0.0], np.cumsum(mass)))
    s = np.clip(np.searchsorted(cuts, j, side="right") - 1, 0, mass.size - 1)
    return before[s] + mass[s] / (cuts[s + 1] - cuts[s]) * (j - cuts[s])


def _answers(cuts: np.ndarray, mass: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Answers of the piecewise-uniform estimate to the intervals ``[lo, hi)``."""
    return _prefix_at(cuts, mass, hi) - _prefix_at(cuts, mass, lo)


def _refine(cuts: np.ndarray, mass: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Add the cuts ``lo`` and ``hi``; a split segment's mass is shared by length."""
    new = np.union1d(cuts, [lo, hi])
    return new, np.maximum(np.diff(_prefix_at(cuts, mass, new)), 0.0)


def _inside(cuts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``inside[q, s]``: segment ``s`` lies in query ``q`` (every query ends on cuts)."""
    return (cuts[None, :-1] >= lo[:, None]) & (cuts[None, 1:] <= hi[:, None])


@njit(cache=True)
def _replay(mass, inside, values, total, passes):  # pragma: no cover - compiled
    """Multiplicative-weights updates over all measurements, ``passes`` times."""
    mass = mass.copy()
    for _ in range(passes):
        for q in range(values.shape[0]):
            answer = 0.0
            for s in range(mass.shape[0]):
                if inside[q, s]:
                    answer += mass[s]
            # beyond e**300 the mass is all inside (or outside) the query already;
            # the cap keeps the products finite when the noise dwarfs the total
            factor = np.exp(min(max((values[q] - answer) / (2.0 * total), -300.0), 300.0))
            norm = 0.0
            for s in range(mass.shape[0]):
                if inside[q, s]:
                    mass[s] *= factor
                norm += mass[s]
            if norm > 0.0:
                for s in range(mass.shape[0]):
                    mass[s] *= total / norm
    return mass
