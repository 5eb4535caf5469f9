"""A release's error model: standard errors and intervals for any range.

:class:`ErrorModel` joins the exact noise of a release (:mod:`.noise`) and what is
known of its bias (:mod:`.bias`). For a range ``[lo, hi)`` with estimate ``e``:

* ``stderr``: exact for unbiased releases; for a grouping release with a bounded bias
  an upper bound on the root-mean-square error (the bias at its bound, or for
  contiguous groups at the bracket's farther edge where that is smaller); with
  first-stage noisy counts ``sqrt(D**2 + V)`` (see :mod:`.bias`), whose mean is about
  the mean squared error;
* the ``1 - alpha`` interval is ``e -+ q`` with ``q`` the noise quantile (the exact tail
  of one discrete draw where the range's noise is one draw, else a kurtosis-matched
  law) plus a bias bound (noise and bound at ``alpha/2`` each), the bracket of the
  groups inside and around the range (``alpha/2`` per side), or the first-stage
  interval. Lower limits below 0 rise to 0 (true counts never are
  negative, so this never changes whether an interval holds the truth); an upper
  limit is never raised, which would. Last, an interval grows to hold its estimate
  (a negative estimate keeps its own value as the lower limit): a table never states
  an estimate outside its interval, and a wider interval holds the truth as often.

A model may withhold intervals (``withheld`` gives the reason): for methods whose
error cannot be bounded from released values, or whose measured coverage fell short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DphistError
from .bias import Bias
from .noise import NoiseModel
from .tails import check_alpha, mixed_factor

__all__ = ["ErrorModel", "NoErrorBarError", "noise_quantile", "workload_total"]

STDERR_BETA = 0.05  # the failure probability of a bias bound inside a standard error


class NoErrorBarError(DphistError):
    """The release states no error bar (the reason says why)."""


@dataclass(frozen=True, eq=False)
class ErrorModel:
    """Noise, bias and what the intervals cover; ``withheld`` the reason no error bars
    are given (None when they are)."""

    noise: NoiseModel | None
    bias: Bias = field(default_factory=Bias)
    withheld: str | None = None

    @classmethod
    def without(cls, reason: str) -> ErrorModel:
        return cls(None, Bias(), reason)

    @property
    def n(self) -> int:
        return self.noise.n

    @property
    def covers(self) -> str:
        """What the standard errors and intervals account for, in words."""
        if self.withheld is not None:
            return "nothing: " + self.withheld
        return self.bias.covers

    @property
    def exact(self) -> bool:
        """True when the standard error is exact (the estimate is unbiased)."""
        return self.withheld is None and self.bias.kind == "none"

    def _check(self) -> None:
        if self.withheld is not None:
            raise NoErrorBarError(f"this release states no error bar: {self.withheld}")

    def variance(self, lo, hi, prefix: np.ndarray) -> np.ndarray:
        """Squared standard error of each range (see the module docstring)."""
        self._check()
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        var = self.noise.variance(lo, hi)
        kind, groups = self.bias.kind, self.bias.groups
        if kind == "none":
            return var
        if kind == "first_stage":
            # an estimate of the mean squared error, not a bound: kept as it is (a minimum
            # with another figure would bias it down)
            return self.bias.distance(lo, hi, prefix) ** 2 + self.bias.model.noise.variance(lo, hi)
        own = var + self.bias.bound(lo, hi, STDERR_BETA) ** 2 if kind == "bound" else np.inf
        if groups is None or not groups.contiguous:
            return own
        # contiguous groups: the bracket's figure holds too (its ends one standard error
        # out, their totals being noisy); the smaller is kept
        ilo, ihi, olo, ohi = groups.hull(lo, hi)
        inner = prefix[ihi] - prefix[ilo] - np.sqrt(self.noise.variance(ilo, ihi))
        outer = prefix[ohi] - prefix[olo] + np.sqrt(self.noise.variance(olo, ohi))
        est = prefix[hi] - prefix[lo]
        return np.minimum(own, var + np.maximum(np.abs(est - inner), np.abs(outer - est)) ** 2)

    def intervals(
        self, lo, hi, prefix: np.ndarray, alpha: object, nonnegative: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ``1 - alpha`` limits for each range ``[lo, hi)``; with
        ``nonnegative=False`` lower limits are not raised to 0."""
        self._check()
        a = check_alpha(alpha)
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        est = prefix[hi] - prefix[lo]
        kind = self.bias.kind
        if kind == "bracket":
            lower, upper = self._bracket(lo, hi, prefix, a)
        elif kind == "first_stage":
            lower, upper = self._first_stage(lo, hi, prefix, a)
        elif kind == "bound" and self.bias.groups.contiguous:
            # the split's bound and the bracket both hold: their meet, alpha/2 each
            half = self._noise_quantile(lo, hi, a / 4.0) + self.bias.bound(lo, hi, a / 4.0)
            b_lo, b_hi = self._bracket(lo, hi, prefix, a / 2.0)
            lower, upper = _meet(est - half, est + half, b_lo, b_hi)
        else:
            share = a / 2.0 if kind == "bound" else a
            half = self._noise_quantile(lo, hi, share)
            if kind == "bound":
                half = half + self.bias.bound(lo, hi, a / 2.0)
            lower, upper = est - half, est + half
        # true counts are never negative: a lower limit below 0 rises to 0, which never
        # changes whether the interval holds the truth (an interval wholly below 0 is
        # left as it is: it holds nothing either way)
        if nonnegative:
            lower = np.where(upper >= 0.0, np.maximum(lower, 0.0), lower)
        lower, upper = np.minimum(lower, est), np.maximum(upper, est)  # hold the estimate
        empty = lo >= hi
        return np.where(empty, 0.0, lower), np.where(empty, 0.0, upper)

    def _noise_quantile(self, lo, hi, alpha: float) -> np.ndarray:
        return noise_quantile(self.noise, alpha, lo, hi)

    def _first_stage(self, lo, hi, prefix, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        first = self.bias
        if first.groups is None:
            return first.model.intervals(lo, hi, first.prefix, alpha)
        lower, upper = first.model.intervals(lo, hi, first.prefix, alpha / 2.0)
        return _meet(lower, upper, *self._bracket(lo, hi, prefix, alpha / 2.0))

    def _bracket(self, lo, hi, prefix, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        ilo, ihi, olo, ohi = self.bias.groups.hull(lo, hi)
        inner, outer = prefix[ihi] - prefix[ilo], prefix[ohi] - prefix[olo]
        lower = np.where(ihi > ilo, inner - self._noise_quantile(ilo, ihi, alpha), 0.0)
        return lower, outer + self._noise_quantile(olo, ohi, alpha)

    def describe(self) -> dict[str, Any]:
        """JSON-safe summary for a release's files."""
        return {
            "error_bars": self.withheld is None,
            "covers": self.covers,
            "exact": self.exact,
        }


def noise_quantile(noise: Any, alpha: float, *query: np.ndarray) -> np.ndarray:
    """Half-width ``q`` with ``P(|noise| > q) <= alpha`` for each query of a noise model
    (ranges ``lo, hi``, or rectangles ``r0, r1, c0, c1`` of a 2-D model): the exact tail
    where the noise is one draw times a coefficient, else the kurtosis-matched law,
    with the continuity step where the noise is a sum of whole integer draws."""
    var = noise.variance(*query)
    k4 = noise.fourth_cumulant(*query)
    kurtosis = np.where(var > 0, k4 / np.where(var > 0, var, 1.0) ** 2, 0.0)
    q = mixed_factor(alpha, kurtosis) * np.sqrt(var)
    # an integer error within q is within the integer nearest q - 1/2 (continuity)
    q = np.where(noise.integral(*query), np.maximum(np.ceil(q - 0.5), 0.0), q)
    coef = noise.single(*query)
    if noise.tail is not None and np.any(coef > 0):
        q = np.where(coef > 0, coef * noise.tail.quantile(alpha), q)
    return q


def _meet(a_lo, a_hi, b_lo, b_hi) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of two intervals that each hold the truth with probability
    ``1 - alpha/2`` (so it holds it with ``1 - alpha``); where they are disjoint one of
    them missed, and their hull is kept (it holds the truth whenever the other does)."""
    lower, upper = np.maximum(a_lo, b_lo), np.minimum(a_hi, b_hi)
    apart = lower > upper
    return (
        np.where(apart, np.minimum(a_lo, b_lo), lower),
        np.where(apart, np.maximum(a_hi, b_hi), upper),
    )


def workload_total(noise: NoiseModel, workload: Any) -> float:
    """Summed noise variance over every query of a :mod:`dphist.workloads` workload,
    without listing the queries where the workload has a closed form: all ranges from
    the prefix variances and the variance of their sum (``(n + 1) sum_k Var(P_k) -
    Var(sum_k P_k)``), prefixes from their variances, windows per length in ``O(n)``
    range variances; explicit intervals one by one."""
    from ..workloads import AllRanges, Prefix, Windows

    n = noise.n
    k = np.arange(n + 1, dtype=np.int64)
    if isinstance(workload, AllRanges | Prefix):
        prefix_var = noise.variance(np.zeros(n + 1, dtype=np.int64), k)
        if isinstance(workload, Prefix):
            return float(prefix_var.sum())
        weights = (n - np.arange(n)).astype(np.float64)  # sum_k P_k = sum_i (n - i) x_i
        return float((n + 1) * prefix_var.sum() - noise.functional_variance(weights))
    if isinstance(workload, Windows):
        total = 0.0
        for length in workload.lengths:
            start = np.arange(n - length + 1, dtype=np.int64)
            total += float(noise.variance(start, start + length).sum())
        return total
    lo, hi = workload.intervals()
    return float(noise.variance(lo, hi).sum())
