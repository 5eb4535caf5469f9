"""Exact Clopper-Pearson bounds and the epsilon lower bounds they give."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import beta as _beta

from ...errors import ValidationError

ALPHA = 1e-6
"""Default false-alarm probability per audited neighbour pair."""

TOP_K = 5
"""Events kept from the search phase and confirmed."""

SEARCH_LEVEL = 0.05  # one-sided level of the search-phase ranking bounds
PER_STATISTIC = 2  # at most this many kept events share one statistic
_TAIL = np.array([0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4])
QUANTILES = np.concatenate([_TAIL, [0.5], 1 - _TAIL[::-1]])
FEW_VALUES = 64  # a statistic with at most this many values uses all of them
MAX_CATEGORIES = 4096  # categorical statistics with more search categories are dropped
MAX_SHIFTED = 8  # largest "moved coordinates" set for the joint-tail statistics
TOL = 1e-9


def clopper_pearson(k: Any, n: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided Clopper-Pearson bounds for ``k`` successes in ``n`` trials.

    Returns ``(lower, upper)``: ``P(p < lower) <= level`` and ``P(p > upper) <= level``
    (each bound on its own; a two-sided interval of coverage ``1 - 2 level``).
    ``lower = Beta(level; k, n-k+1)`` quantile (0 when ``k = 0``) and ``upper`` the
    ``1 - level`` quantile of ``Beta(k+1, n-k)`` (1 when ``k = n``). ``k`` may be
    fractional (used only to rank events).
    """
    if not 0 < level < 1:
        raise ValidationError(f"level must lie in (0, 1); got {level!r}")
    k = np.asarray(k, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), k.shape)
    k = np.clip(k, 0.0, n)
    lower = np.zeros(k.shape)
    upper = np.ones(k.shape)
    pos = k > 0
    if np.any(pos):
        lower[pos] = _beta.ppf(level, k[pos], n[pos] - k[pos] + 1)
    below = k < n
    if np.any(below):
        upper[below] = _beta.isf(level, k[below] + 1, n[below] - k[below])
    return lower, upper


def epsilon_lower_bound(hits_a: Any, hits_b: Any, runs: Any, level: float) -> np.ndarray:
    """``ln(CP_lower(hits_a) / CP_upper(hits_b))``: a lower confidence bound on epsilon.

    With probability at least ``1 - 2 level`` the true ratio ``P_a(E) / P_b(E)`` is at
    least ``exp`` of the result. ``-inf`` when ``hits_a`` is 0.
    """
    lo, _ = clopper_pearson(hits_a, runs, level)
    _, up = clopper_pearson(hits_b, runs, level)
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(up)


def delta_lower_bound(
    hits_a: Any, hits_b: Any, runs: Any, level: float, epsilon: float
) -> np.ndarray:
    """``CP_lower(hits_a) - exp(epsilon) CP_upper(hits_b)``: a lower confidence bound on
    ``P_a(E) - exp(epsilon) P_b(E)``, which an (epsilon, delta)-DP mechanism keeps at
    most ``delta`` for every event ``E``. With probability at least ``1 - 2 level`` the
    true difference is at least the result."""
    lo, _ = clopper_pearson(hits_a, runs, level)
    _, up = clopper_pearson(hits_b, runs, level)
    return lo - np.exp(epsilon) * up


def suite_false_alarm_bound(pairs: int, alpha: float = ALPHA) -> float:
    """Probability bound that a suite of ``pairs`` pair audits flags a correct mechanism."""
    return min(1.0, pairs * alpha)
