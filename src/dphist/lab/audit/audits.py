"""The two-phase audit of one neighbour pair, of several, and of a registered method."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._kernel import (
    validate_epsilon,
)
from ...errors import ValidationError
from ...methods import get_method
from .bounds import ALPHA, PER_STATISTIC, TOP_K, delta_lower_bound, epsilon_lower_bound
from .events import Event, EventResult, candidates, project
from .features import Features
from .mechanisms import Mechanism, as_seed, children, method_mechanism
from .neighbours import Neighbour, catalogue, probe_boundaries, standard_histogram


@dataclass(frozen=True, eq=False)
class PairResult:
    """The audit of one neighbour pair."""

    mechanism: str
    pair: Neighbour
    epsilon: float
    eps_lb: float
    best: EventResult | None
    events: tuple[EventResult, ...]
    n_search: int
    n_confirm: int
    alpha: float
    seconds: float
    delta: float = 0.0
    delta_lb: float = -math.inf

    @property
    def flagged(self) -> bool:
        """True when the lower confidence bound exceeds the claim: ``eps_lb > epsilon``
        for pure DP; for an (epsilon, delta) claim, ``delta_lb > delta`` (some event has
        ``P_x(E) - e^epsilon P_x'(E)`` above delta)."""
        if self.delta > 0:
            return self.delta_lb > self.delta
        return self.eps_lb > self.epsilon

    @property
    def runs(self) -> int:
        return 2 * (self.n_search + self.n_confirm)


@dataclass(frozen=True, eq=False)
class AuditResult:
    """Audits of one mechanism on several pairs; ``eps_lb`` is the largest bound."""

    mechanism: str
    epsilon: float
    pairs: tuple[PairResult, ...]

    @property
    def worst(self) -> PairResult:
        if self.delta > 0:
            return max(self.pairs, key=lambda p: p.delta_lb)
        return max(self.pairs, key=lambda p: p.eps_lb)

    @property
    def eps_lb(self) -> float:
        return self.worst.eps_lb

    @property
    def flagged(self) -> bool:
        return any(p.flagged for p in self.pairs)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.pairs)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.pairs)

    @property
    def delta(self) -> float:
        return self.pairs[0].delta

    @property
    def delta_lb(self) -> float:
        return max(p.delta_lb for p in self.pairs)

    def summary(self) -> str:
        w = self.worst
        best = w.best.event if w.best is not None else "-"
        verdict = "FLAGGED" if self.flagged else "pass"
        claim = f"{self.epsilon:g}" + (f" with delta {self.delta:g}" if self.delta > 0 else "")
        found = f"eps_lb {self.eps_lb:.3f}" + (
            f", delta_lb {self.delta_lb:.4f}" if self.delta > 0 else ""
        )
        return (
            f"{self.mechanism}: claimed {claim}, {found} ({verdict}); "
            f"worst pair {w.pair.describe()}, event {best}; {self.runs} runs, "
            f"{self.seconds:.1f} s"
        )


def _as_neighbour(pair: Neighbour | tuple[object, object]) -> Neighbour:
    """A given pair of histograms as a :class:`Neighbour` (they must differ in one bin)."""
    if isinstance(pair, Neighbour):
        return pair
    x, x2 = (np.array(v, dtype=np.int64) for v in pair)
    diff = np.flatnonzero(x2 != x)
    if diff.size != 1:
        raise ValidationError(
            "a neighbour pair differs in one bin (by one record, or by a unit's records)"
        )
    i = int(diff[0])
    step = int(x2[i] - x[i])
    return Neighbour(x, x2, i, 1 if step > 0 else -1, "given", abs(step))


def _choose(events: list[Event], scores: np.ndarray, k: int) -> list[tuple[Event, bool, float]]:
    """The ``k`` best-scoring (event, favours x, score), at most PER_STATISTIC per statistic.

    ``scores`` holds the events favouring ``x`` first, then those favouring ``x'``.
    """
    chosen: list[tuple[Event, bool, float]] = []
    per_stat: dict[tuple[str, int], int] = {}
    for idx in np.argsort(-scores, kind="stable"):
        if len(chosen) == k or not np.isfinite(scores[idx]):
            break
        ev = events[idx % len(events)]
        key = (ev.kind, ev.stat)
        if per_stat.get(key, 0) >= PER_STATISTIC:
            continue
        per_stat[key] = per_stat.get(key, 0) + 1
        chosen.append((ev, bool(idx < len(events)), float(scores[idx])))
    return chosen


def audit_pair(
    mechanism: Mechanism,
    pair: Neighbour | tuple[object, object],
    *,
    epsilon: object = None,
    delta: float | None = None,
    n_search: int = 2_000,
    n_confirm: int = 10_000,
    alpha: float = ALPHA,
    k: int = TOP_K,
    seed: object = 0,
) -> PairResult:
    """Two-phase audit of ``mechanism`` on one neighbour pair (see the module docs).

    ``epsilon`` and ``delta`` default to the mechanism's claim (``delta > 0``: events
    ranked and confirmed by the bound on ``P_x(E) - e^epsilon P_x'(E)``). ``seed`` (int
    or SeedSequence) fixes every run: the four streams (search/confirm x two inputs)
    are distinct children. A correct mechanism is flagged with probability <= ``alpha``.
    """
    pair = _as_neighbour(pair)
    if n_search < 10 or n_confirm < 10 or k < 1 or not 0 < alpha < 1:
        raise ValidationError("need n_search, n_confirm >= 10, k >= 1 and 0 < alpha < 1")
    claimed = float(validate_epsilon(mechanism.epsilon if epsilon is None else epsilon))
    claimed_delta = float(mechanism.delta if delta is None else delta)
    if not 0 <= claimed_delta < 1:
        raise ValidationError(f"delta must lie in [0, 1); got {claimed_delta!r}")
    at = claimed if claimed_delta > 0 else None
    start = time.perf_counter()
    s_a, s_b, c_a, c_b = children(as_seed(seed), 4)
    out_a = mechanism.run(pair.x, n_search, s_a)
    out_b = mechanism.run(pair.x2, n_search, s_b)
    feats = Features(pair, out_a, out_b)
    names, num_a = feats.numeric(out_a)
    _, num_b = feats.numeric(out_b)
    cands = candidates(num_a, num_b, names, feats)
    level = alpha / (2 * k)
    hits_a = np.array([c[1] for c in cands], dtype=np.float64)
    hits_b = np.array([c[2] for c in cands], dtype=np.float64)
    score_a = project(hits_a, hits_b, n_search, n_confirm, level, at)  # favours x
    score_b = project(hits_b, hits_a, n_search, n_confirm, level, at)  # favours x'
    chosen = _choose([c[0] for c in cands], np.concatenate([score_a, score_b]), k)

    results: list[EventResult] = []
    if chosen:
        conf_a = mechanism.run(pair.x, n_confirm, c_a)
        conf_b = mechanism.run(pair.x2, n_confirm, c_b)
        _, cn_a = feats.numeric(conf_a)
        _, cn_b = feats.numeric(conf_b)
        cc_a = feats.categorical_codes(conf_a)
        cc_b = feats.categorical_codes(conf_b)
        for ev, favours_x, score in chosen:
            ka = int(ev.indicator(cn_a, cc_a).sum())
            kb = int(ev.indicator(cn_b, cc_b).sum())
            top, bottom = (ka, kb) if favours_x else (kb, ka)
            lb = float(epsilon_lower_bound(top, bottom, n_confirm, level))
            dlb = float(delta_lower_bound(top, bottom, n_confirm, level, claimed))
            results.append(
                EventResult(
                    ev.description, "x" if favours_x else "x'", ka, kb, n_confirm, lb, score,
                    dlb if at is not None else float("nan"),
                )
            )  # fmt: skip
    key = (lambda r: r.delta_lb) if at is not None else (lambda r: r.eps_lb)
    best = max(results, key=key) if results else None
    return PairResult(
        mechanism=mechanism.name,
        pair=pair,
        epsilon=claimed,
        eps_lb=best.eps_lb if best is not None else -math.inf,
        best=best,
        events=tuple(results),
        n_search=n_search,
        n_confirm=n_confirm,
        alpha=alpha,
        seconds=time.perf_counter() - start,
        delta=claimed_delta,
        delta_lb=max((r.delta_lb for r in results), default=-math.inf)
        if at is not None
        else -math.inf,
    )


def audit(
    mechanism: Mechanism,
    pairs: Iterable[Neighbour | tuple[object, object]],
    *,
    epsilon: object = None,
    delta: float | None = None,
    n_search: int = 2_000,
    n_confirm: int = 10_000,
    alpha: float = ALPHA,
    k: int = TOP_K,
    seed: object = 0,
) -> AuditResult:
    """:func:`audit_pair` on every pair, each with its own child of ``seed``.

    The probability that a correct mechanism is flagged on any pair is at most
    ``len(pairs) * alpha``.
    """
    pairs = list(pairs)
    if not pairs:
        raise ValidationError("audit needs at least one neighbour pair")
    seeds = children(as_seed(seed), len(pairs))
    results = tuple(
        audit_pair(
            mechanism,
            p,
            epsilon=epsilon,
            delta=delta,
            n_search=n_search,
            n_confirm=n_confirm,
            alpha=alpha,
            k=k,
            seed=s,
        )
        for p, s in zip(pairs, seeds, strict=True)
    )
    claimed = float(validate_epsilon(mechanism.epsilon if epsilon is None else epsilon))
    return AuditResult(mechanism.name, claimed, results)


def method_catalogue(
    name: str, n: int = 8, params: Mapping[str, Any] | None = None
) -> tuple[Neighbour, ...]:
    """:func:`catalogue` for a registered method: tree-split pairs use the method's
    fan-out when it has one (``fanout`` parameter; 2 otherwise)."""
    info = get_method(name)
    fanout = dict(params or {}).get("fanout", info.defaults.get("fanout", 2))
    return catalogue(n, fanout=fanout if isinstance(fanout, int) else 2)


def audit_method(
    name: str,
    *,
    epsilon: object = 1.0,
    n_search: int = 2_000,
    n_confirm: int = 10_000,
    pairs: int | Iterable[Neighbour | tuple[object, object]] | None = None,
    params: Mapping[str, Any] | None = None,
    seed: object = 0,
    n: int = 8,
    alpha: float = ALPHA,
) -> AuditResult:
    """Audit the registered method ``name`` at ``epsilon`` (seeded mode).

    ``pairs``: explicit neighbour pairs; an int ``p`` for the first ``p`` pairs of
    :func:`method_catalogue` over ``n`` bins; or None for one decision boundary found
    by :func:`probe_boundaries` (bins around the first group boundary and the low
    bin of :func:`standard_histogram`) followed by the whole catalogue.
    """
    params = dict(params or {})
    mech = method_mechanism(name, epsilon=epsilon, **params)
    if pairs is None or isinstance(pairs, int):
        pool = method_catalogue(name, n, params)
        if pairs is None:
            half = n // 2
            probed = probe_boundaries(
                mech, standard_histogram(n), bins=[half - 1, half, half + 1], seed=seed, limit=1
            )
            pairs = probed + pool
        else:
            pairs = pool[: max(1, pairs)]
    return audit(
        mech,
        pairs,
        n_search=n_search,
        n_confirm=n_confirm,
        alpha=alpha,
        seed=seed,
    )
