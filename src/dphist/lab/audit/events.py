"""Candidate events and their search-phase scores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bounds import (
    FEW_VALUES,
    QUANTILES,
    SEARCH_LEVEL,
    clopper_pearson,
    delta_lower_bound,
    epsilon_lower_bound,
)
from .features import Features


@dataclass(frozen=True)
class Event:
    kind: str  # "threshold" or "category"
    stat: int
    op: str = ">="
    threshold: float = 0.0
    codes: frozenset[int] = frozenset()
    description: str = ""

    def indicator(self, numeric: np.ndarray, codes: list[np.ndarray]) -> np.ndarray:
        if self.kind == "threshold":
            col = numeric[:, self.stat]
            return col >= self.threshold if self.op == ">=" else col < self.threshold
        return np.isin(codes[self.stat], np.fromiter(self.codes, dtype=np.int64))


@dataclass(frozen=True)
class EventResult:
    """One confirmed event: ``hits_x`` / ``hits_x2`` of ``runs`` confirm runs per side."""

    event: str
    favours: str  # "x" or "x'": the input under which the event is likelier
    hits_x: int
    hits_x2: int
    runs: int
    eps_lb: float
    search_score: float
    delta_lb: float = float("nan")  # for an (epsilon, delta) claim: P_x(E) - e^eps P_x'(E)


def candidates(
    numeric_a: np.ndarray,
    numeric_b: np.ndarray,
    names: list[str],
    feats: Features,
) -> list[tuple[Event, int, int]]:
    """Every catalogue event with its search counts (hits under x, hits under x')."""
    out: list[tuple[Event, int, int]] = []
    runs = numeric_a.shape[0]
    for s, name in enumerate(names):
        a, b = numeric_a[:, s], numeric_b[:, s]
        pooled = np.concatenate([a, b])
        uniq = np.unique(pooled)
        if uniq.size < 2:
            continue
        if uniq.size <= FEW_VALUES:
            thresholds = uniq[1:]
        else:
            thresholds = np.unique(np.quantile(pooled, QUANTILES, method="inverted_cdf"))
            thresholds = thresholds[thresholds > uniq[0]]
        sa, sb = np.sort(a), np.sort(b)
        ge_a = runs - np.searchsorted(sa, thresholds, side="left")
        ge_b = runs - np.searchsorted(sb, thresholds, side="left")
        for t, ka, kb in zip(thresholds.tolist(), ge_a.tolist(), ge_b.tolist(), strict=True):
            out.append((Event("threshold", s, ">=", t, description=f"{name} >= {t:.6g}"), ka, kb))
            out.append(
                (
                    Event("threshold", s, "<", t, description=f"{name} < {t:.6g}"),
                    runs - ka,
                    runs - kb,
                )
            )
    for c, (cat, (ca, cb)) in enumerate(zip(feats.categoricals, feats._search_codes, strict=True)):
        size = len(cat.index)
        na = np.bincount(ca, minlength=size)
        nb = np.bincount(cb, minlength=size)
        for code in np.flatnonzero(na + nb >= 5).tolist():
            ev = Event("category", c, codes=frozenset([code]), description=cat.describe(code))
            out.append((ev, int(na[code]), int(nb[code])))
        ratio = (na + 0.5) / (nb + 0.5)
        for order in (np.argsort(-ratio, kind="stable"), np.argsort(ratio, kind="stable")):
            ka = np.cumsum(na[order])
            kb = np.cumsum(nb[order])
            for j in _prefix_lengths(size):
                codes = frozenset(order[:j].tolist())
                desc = f"{cat.name} in a set of {j} search-ranked categories"
                out.append(
                    (Event("category", c, codes=codes, description=desc), ka[j - 1], kb[j - 1])
                )
    return out


def _prefix_lengths(size: int) -> list[int]:
    """Union sizes tried for ranked categories: 2..16, then growing by a quarter."""
    lengths = list(range(2, min(size, 17)))
    j = 16
    while j < size - 1:
        j = max(j + 1, int(j * 1.25))
        if j < size:
            lengths.append(j)
    return lengths


def project(
    hits_a, hits_b, n_search: int, n_confirm: int, level: float, epsilon: float | None = None
) -> np.ndarray:
    """Score: the confirm bound reached if the truth were the search 95% bounds (the
    epsilon bound, or with ``epsilon`` the delta bound at that epsilon)."""
    lo, _ = clopper_pearson(hits_a, n_search, SEARCH_LEVEL)
    _, up = clopper_pearson(hits_b, n_search, SEARCH_LEVEL)
    if epsilon is not None:
        return delta_lower_bound(lo * n_confirm, up * n_confirm, n_confirm, level, epsilon)
    return epsilon_lower_bound(lo * n_confirm, up * n_confirm, n_confirm, level)
