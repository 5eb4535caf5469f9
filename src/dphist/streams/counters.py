"""Running totals from a continual counter's releases, with their exact error.

The kernel's :class:`~dphist._kernel.streams.ContinualCounter` releases noisy values;
this module turns them into the running total of every bin after each window (pure
post-processing) and states the error of each total exactly: the variance and fourth
cumulant of its noise, and for the factorization the bound on its lattice rounding.

* Tree (Dwork et al. 2010; Chan et al. 2011), with the bottom-up variance-optimal
  estimate of Honaker (TPDP 2015, "Efficient use of differentially private binary
  trees"): a completed node's estimate combines its own noisy total ``y`` (variance
  ``s2``) with the sum of its two children's estimates (variance ``2 V_{h-1}``) by
  inverse variances, ``V_0 = s2``, ``V_h = 1 / (1/s2 + 1/(2 V_{h-1}))``. The total of
  windows ``[0, t]`` is the sum of the estimates of the maximal complete nodes inside it
  (the binary digits of ``t + 1``). Online, these nodes' subtrees hold every measurement
  made so far and they are disjoint, so this is the best linear unbiased estimate from
  what has been released (the top-down half of Honaker's method needs nodes that are
  not complete yet). ``honaker=False`` gives the plain sum of noisy nodes, whose
  variance is ``s2`` times the number of binary ones of ``t + 1``.
* Square-root factorization: the total after window ``t`` is
  ``(L y)_t = sum_{j <= t} c_{t-j} y_j``, the true total plus ``sum_{k <= t} c_k z_{t-k}``
  (``z`` the lattice noise): variance ``v sum_{k <= t} c_k**2`` exactly (the closed form
  of Henzinger et al. 2023, with ``v`` the exact variance of one draw), plus the
  rounding of ``R x`` to the lattice ``g``, at most ``g/2 sum_{k <= t} c_k``, a
  deterministic error the intervals add in full. Under pure DP ``g`` is below a
  millionth of the noise scale; under zCDP the exact discrete Gaussian sampler spans at
  most 8,192 lattice steps per standard deviation ``sigma`` of a draw, so the bound is
  about ``sigma sum_k c_k / 16384``: 3% of a total's standard error at ``T = 2**20``.

"Expected error" in the benchmarks is the root-mean-square error of a running total,
``sqrt(Var)``; "largest over T" is its maximum over ``t < T`` (the paper's ``max_t``
measure of the mean squared error, in counts).
"""

from __future__ import annotations

import numpy as np

from .._kernel.streams import CounterNoise, CounterPlan, counter_noise, sqrt_coefficients
from ..uncertainty import Bias, ErrorModel
from ..uncertainty.noise import BinNoise
from ..uncertainty.tails import fourth_cumulant

__all__ = [
    "FactorizationEstimator",
    "SumNoise",
    "TreeEstimator",
    "estimator",
    "largest_error",
    "node_variances",
    "running_variances",
]


class SumNoise(BinNoise):
    """Independent noise of one law on every bin, each a fixed linear combination of
    discrete draws: the identity's per-bin model with the combination's ``variance`` and
    ``fourth`` cumulant (per bin)."""

    def __init__(self, n: int, variance: float, fourth: float, law: str):
        super().__init__(n, variance, None, law)
        self._k4 = float(fourth)


class _Ungrouped:
    contiguous = False


class RoundingBound(Bias):
    """A deterministic bias of at most ``per_bin`` on every bin (the lattice rounding)."""

    kind = "bound"
    groups = _Ungrouped()

    def __init__(self, per_bin: float):
        self.per_bin = float(per_bin)
        self.covers = (
            "the noise (exact) and the lattice rounding of the factorization, at most "
            f"{self.per_bin:.2g} per running total"
        )

    def bound(self, lo, hi, beta: float) -> np.ndarray:
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        return np.maximum(hi - lo, 0) * self.per_bin


def _fourth(noise: CounterNoise) -> float:
    """Fourth cumulant of one released value's noise, ``g**4`` times the draw's."""
    g4 = float(noise.g) ** 4
    return g4 * float(fourth_cumulant(noise.variance / float(noise.g) ** 2, noise.law))


def node_variances(levels: int, s2: float) -> np.ndarray:
    """Variance of the bottom-up estimate of a node at each height (Honaker)."""
    v = np.zeros(levels)
    if s2 <= 0.0:  # noise below float resolution: every estimate exact
        return v
    v[0] = s2
    for h in range(1, levels):
        v[h] = 1.0 / (1.0 / s2 + 1.0 / (2.0 * v[h - 1]))
    return v


def _node_weights(levels: int, s2: float) -> np.ndarray:
    """Weight of a node's own total in its bottom-up estimate (1 for a leaf)."""
    v = node_variances(levels, s2)
    w = np.ones(levels)
    if s2 > 0.0:
        w[1:] = 2.0 * v[:-1] / (s2 + 2.0 * v[:-1])
    return w


def _node_fourth(levels: int, s2: float, k4: float) -> np.ndarray:
    w = _node_weights(levels, s2)
    out = np.empty(levels)
    out[0] = k4
    for h in range(1, levels):
        out[h] = w[h] ** 4 * k4 + 2.0 * (1.0 - w[h]) ** 4 * out[h - 1]
    return out


def _bits(m: np.ndarray, levels: int) -> np.ndarray:
    """``(len(m), levels)`` 0/1 matrix of the binary digits of ``m``."""
    return ((m[:, None] >> np.arange(levels)) & 1).astype(np.float64)


def running_variances(
    kind: str, horizon: int, noise: CounterNoise, *, honaker: bool = True
) -> np.ndarray:
    """Noise variance of the running total after each window ``t < horizon`` (per bin)."""
    v = noise.variance
    if kind == "factorization":
        c = sqrt_coefficients(horizon)
        return v * np.cumsum(c * c)
    levels = CounterPlan("tree", horizon).levels
    per_node = node_variances(levels, v) if honaker else np.full(levels, v)
    m = np.arange(1, horizon + 1, dtype=np.int64)
    return _bits(m, levels) @ per_node


def largest_error(
    kind: str, horizon: int, amount: object, definition: str = "zcdp", *, honaker: bool = True
) -> float:
    """The largest root-mean-square error of a running total over ``t < horizon`` for a
    counter of budget ``amount`` (public arithmetic; no data, no noise)."""
    _, noise = counter_noise(CounterPlan(kind, horizon), 1, amount, definition)
    return float(np.sqrt(running_variances(kind, horizon, noise, honaker=honaker).max()))


class TreeEstimator:
    """Running totals from the tree's node releases (bottom-up Honaker estimates)."""

    def __init__(self, plan: CounterPlan, n: int, noise: CounterNoise):
        self.plan, self.n, self.noise = plan, n, noise
        levels = plan.levels
        s2 = noise.variance
        self.weights = _node_weights(levels, s2)
        self.node_var = node_variances(levels, s2)
        self.node_k4 = _node_fourth(levels, s2, _fourth(noise))
        self._best = np.zeros((levels, n))  # latest node estimate at each height
        self._t = -1

    def update(self, nodes: dict[int, np.ndarray]) -> np.ndarray:
        """Fold in the nodes window ``t`` completed; the running totals after it."""
        self._t += 1
        for h in sorted(nodes):
            y = nodes[h].astype(np.float64)
            if h == 0:
                estimate = y
            else:
                below = self._previous + self._best[h - 1]  # the node's two children
                estimate = self.weights[h] * y + (1.0 - self.weights[h]) * below
            self._previous = self._best[h].copy() if h + 1 in nodes else None
            self._best[h] = estimate
        return self._digits() @ self._best

    def _digits(self) -> np.ndarray:
        return _bits(np.array([self._t + 1]), self.plan.levels)[0]

    def model(self) -> ErrorModel:
        d = self._digits()
        return ErrorModel(SumNoise(self.n, d @ self.node_var, d @ self.node_k4, self.noise.law))


class FactorizationEstimator:
    """Running totals ``L y`` from the factorization's releases (keeps every ``y``)."""

    def __init__(self, plan: CounterPlan, n: int, noise: CounterNoise):
        self.plan, self.n, self.noise = plan, n, noise
        self.coef = sqrt_coefficients(plan.horizon)
        self._released = np.zeros((plan.horizon, n))
        self._t = -1

    def update(self, y: np.ndarray) -> np.ndarray:
        self._t += 1
        t = self._t
        self._released[t] = y
        return self.coef[t::-1] @ self._released[: t + 1]

    def model(self) -> ErrorModel:
        c = self.coef[: self._t + 1]
        law = self.noise.law
        draw = self.noise.variance
        noise = SumNoise(
            self.n, draw * float(np.sum(c * c)), _fourth(self.noise) * float(np.sum(c**4)), law
        )
        rounding = float(self.noise.g) / 2.0 * float(np.sum(c))
        return ErrorModel(noise, RoundingBound(rounding))


def estimator(
    plan: CounterPlan, n: int, noise: CounterNoise
) -> TreeEstimator | FactorizationEstimator:
    """The running-total estimator of a counter's releases."""
    if plan.kind == "tree":
        return TreeEstimator(plan, n, noise)
    return FactorizationEstimator(plan, n, noise)
