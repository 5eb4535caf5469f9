"""The bias of a grouping release, bounded or estimated from released values only.

A release that publishes one noisy total per group and spreads it evenly has, besides
its noise, a bias wherever a range cuts a group: ``(c/s) T_g - (the true count of the
c bins of g in the range)``. Groups a range covers whole or misses add none. Three
ways to account for it, each from public facts and released values only:

* :class:`Bracket` (counts are never negative): the true sum of a range lies between
  the true total of the groups inside it and that of the groups it touches, so the
  interval runs from a lower limit of the first to an upper limit of the second. It
  covers with certainty up to the noise; it is wide where cut groups are large.
* :class:`SplitBound`: a group that a biased top-down split (PrivTree; the certified
  S1 / S~ / DAWA partitions) kept whole had a small score, or it would have been split
  with high probability: half its L1 deviation (or its count) is below
  ``theta + depth * delta + q`` except with probability ``beta``, and half the L1
  deviation bounds the bias of any part of the group.
* :class:`FirstStage`: a method that first measured every bin (S2, the ordering and
  sorting methods) released those noisy counts to itself; their sum over a range is
  the true sum plus noise of exactly known law, whatever was done with them after. The
  interval comes from them (intersected with the bracket where groups are contiguous,
  each at ``alpha/2``): valid by construction, though not centred on the estimate, and
  as wide as the first stage's budget allows. The estimate differs from the first-stage
  answer by a known amount ``D``, so its standard error is taken as
  ``sqrt(D**2 + V)``, ``V`` the first-stage answer's exact noise variance: about the
  root-mean-square error on average (exactly when the two errors are uncorrelated),
  though one range's figure is as noisy as ``D``. (An estimate of the bias from the
  spread of the noisy counts inside each group understated the range errors of sorted
  groupings 2.3 times: their groups are scattered and the bins of a range are not a
  random sample of them.)
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._numeric.compact import label_dtype, label_sizes, own_labels
from .._numeric.group_sums import group_range_sums, runs_in_order
from ..errors import ValidationError
from .tails import Tail

__all__ = [
    "Bias",
    "Bracket",
    "FirstStage",
    "Groups",
    "NoBias",
    "SplitBound",
]


class Groups:
    """A public grouping of the bins: ``labels[i]`` in the original bin order, groups
    numbered by first bin when contiguous."""

    def __init__(self, labels: np.ndarray):
        self.labels = own_labels(labels)
        self.n = int(self.labels.size)
        self.sizes = label_sizes(self.labels)
        self.contiguous = bool(runs_in_order(self.labels))
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1])) if self.contiguous else None

    @classmethod
    def one(cls, n: int) -> Groups:
        """All ``n`` bins in one group (no pass over the labels, which are made at their
        first read: most releases never need them)."""
        obj = cls.__new__(cls)
        obj.n = int(n)
        obj.sizes = np.array([n], dtype=np.int64)
        obj.contiguous = True
        obj.starts = np.zeros(1, dtype=np.int64)
        return obj

    @functools.cached_property
    def labels(self) -> np.ndarray:
        """The labels of :meth:`one`'s grouping (all 0), made at their first read; a
        grouping made from labels holds them from the start."""
        return np.zeros(self.n, dtype=label_dtype(self.n))

    def cut_sums(
        self, lo, hi, mixed: np.ndarray, bound: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per range: ``sum_g mixed_g c_g (s_g - c_g)`` and ``sum_{g cut} bound_g``."""
        lo, hi = np.atleast_1d(lo).astype(np.int64), np.atleast_1d(hi).astype(np.int64)
        if not self.contiguous:
            zero = np.zeros(self.sizes.size)
            return group_range_sums(self.labels, zero, mixed, bound, lo, hi)
        empty = lo >= hi
        ga = self.labels[np.minimum(lo, self.n - 1)]
        gb = self.labels[np.maximum(hi - 1, 0)]
        s = self.sizes
        end_a = self.starts[ga] + s[ga]
        ca = np.where(ga == gb, hi - lo, end_a - lo)
        cb = np.where(ga == gb, 0, hi - self.starts[gb])
        m = mixed[ga] * ca * (s[ga] - ca) + np.where(ga == gb, 0.0, mixed[gb] * cb * (s[gb] - cb))
        cut_a = (ca > 0) & (ca < s[ga])
        cut_b = (ga != gb) & (cb > 0) & (cb < s[gb])
        b = np.where(cut_a, bound[ga], 0.0) + np.where(cut_b, bound[gb], 0.0)
        return np.where(empty, 0.0, m), np.where(empty, 0.0, b)

    def hull(self, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Contiguous groups only: the bins of the groups inside each range and of the
        groups it touches, as ``(inner_lo, inner_hi, outer_lo, outer_hi)``."""
        lo, hi = np.atleast_1d(lo).astype(np.int64), np.atleast_1d(hi).astype(np.int64)
        ga = self.labels[np.minimum(lo, self.n - 1)]
        gb = self.labels[np.maximum(hi - 1, 0)]
        ends = self.starts + self.sizes
        outer_lo, outer_hi = self.starts[ga], ends[gb]
        inner_lo = np.where(self.starts[ga] == lo, lo, ends[ga])
        inner_hi = np.where(ends[gb] == hi, hi, self.starts[gb])
        inner_hi = np.maximum(inner_hi, inner_lo)
        empty = lo >= hi
        return (
            np.where(empty, lo, inner_lo),
            np.where(empty, lo, inner_hi),
            np.where(empty, lo, outer_lo),
            np.where(empty, lo, outer_hi),
        )


class Bias:
    """No bias: the estimate is unbiased (linear methods without grouping)."""

    kind = "none"
    covers = "the noise (exact; the estimate is unbiased)"
    groups: Groups | None = None

    def bound(self, lo, hi, beta: float) -> np.ndarray:
        """``|bias| <=`` this except with probability ``beta`` (0 where not bounded)."""
        return np.zeros(np.shape(np.atleast_1d(lo)))


NoBias = Bias


class SplitBound(Bias):
    """Bound from a biased top-down split: group ``g`` was kept whole at tree level
    ``level[g]``, so its score (half its L1 deviation, or its count) is at most
    ``(theta + level * delta + q + 1) / unit`` except with probability ``beta``, where
    ``P(Z <= -q) <= beta`` for the split's discrete Laplace noise ``tail`` (all in
    lattice units of ``1/unit``)."""

    kind = "bound"

    def __init__(self, groups: Groups, level, theta: int, delta: int, tail: Tail, unit: int):
        self.groups = groups
        self.level = np.asarray(level, dtype=np.float64)
        self.theta, self.delta, self.tail, self.unit = theta, delta, tail, unit
        self.covers = (
            "the noise (exact given the released groups) and the grouping bias, bounded by "
            "the split that kept each group whole and by the groups around each range "
            "(counts are never negative); the standard error takes the bias at its bound, "
            "so it bounds the error from above"
        )

    def group_bound(self, beta: float) -> np.ndarray:
        p = math.exp(-1.0 / float(self.tail.scale))
        q = max(0, math.ceil(math.log(beta * (1.0 + p)) / math.log(p)))  # p**q/(1+p) <= beta
        return np.maximum(self.theta + self.level * self.delta + q + 1, 0) / self.unit

    def bound(self, lo, hi, beta):
        zero = np.zeros(self.groups.sizes.size)
        return self.groups.cut_sums(lo, hi, zero, self.group_bound(beta))[1]


class Bracket(Bias):
    """Counts are never negative: a range's true sum lies between the true totals of the
    contiguous groups inside it and of those it touches (see the module docstring)."""

    kind = "bracket"
    covers = (
        "the noise (exact given the released groups) and any grouping bias: the interval "
        "runs from the groups inside the range to the groups it touches (counts are never "
        "negative); the standard error takes the bias at that bracket's edge, so it bounds "
        "the error from above"
    )

    def __init__(self, groups: Groups):
        if not groups.contiguous:
            raise ValidationError("a bracket needs contiguous groups")
        self.groups = groups


class FirstStage(Bias):
    """Intervals and standard errors from the first-stage noisy counts ``values``
    (original bin order) and their exact error model ``model``; the bracket of
    ``groups`` where contiguous (see the module docstring)."""

    kind = "first_stage"
    covers = (
        "the true counts: intervals from the first-stage noisy counts the method released "
        "(exact), within the bracket of its groups where they are contiguous; the standard "
        "error adds the estimate's known distance from those counts to their noise"
    )

    def __init__(self, values: np.ndarray, model, groups: Groups):
        # the method's own array: float64, or integer counts in a compact type (their
        # prefix sums below are the same floats, exact below 2**53)
        integer = isinstance(values, np.ndarray) and np.issubdtype(values.dtype, np.integer)
        self.values = values if integer else np.asarray(values, dtype=np.float64)
        self.model = model
        self.groups = groups if groups.contiguous else None

    @functools.cached_property
    def prefix(self) -> np.ndarray:
        """Prefix sums of the first-stage counts, built at the first query (not while
        publishing, when the method's working arrays still take memory)."""
        prefix = np.zeros(self.values.size + 1)
        np.cumsum(self.values, out=prefix[1:])
        return prefix

    def distance(self, lo, hi, prefix: np.ndarray) -> np.ndarray:
        """The estimate's range answers less the first stage's."""
        return (prefix[hi] - prefix[lo]) - (self.prefix[hi] - self.prefix[lo])
