"""The exact noise of a linear release: the variance of any range's estimate.

Each model describes the noise in a release's estimate as a public linear structure
(no data): :class:`GroupNoise` (independent noisy totals of contiguous groups, each
spread evenly over its bins: identity, uniform, and every publication of a grouping),
:class:`ScatteredNoise` (the same for groups scattered over the bins by a sort),
:class:`TreeNoise` (least squares over a tree of measured interval totals: H, HB,
Boost, OPT-H, the hierarchical and GreedyH publications) and :class:`HaarNoise`
(Privelet), and :class:`BinNoise` (one independent draw per bin: identity, in
``O(1)`` memory). Each gives the variance of the estimate of any range ``[lo, hi)``
(``O(log N)`` or better per range, never an ``N x N`` matrix), of any weighted sum of
the bins, and says when a range's noise is one draw of the kernel's noise times a
coefficient (so intervals can use its exact tail), and the fourth cumulant of any
range's noise (so intervals can follow the heavier-than-normal tails of a sum of a few
Laplace draws). ``law`` is the kernel's noise: ``"laplace"`` (pure DP) or
``"gaussian"`` (zCDP).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .._numeric.compact import label_sizes, own_labels
from .._numeric.group_sums import group_range_sums
from .._numeric.posterior import (
    LevelFactors,
    TreeFactors,
    functional_variance,
    level_factors,
    level_range_variances,
    range_fourth_cumulants,
    range_variances,
    subtree_kurtosis,
    tree_factors,
)
from .._numeric.tree import TreeLayout
from .._numeric.wavelet import haar_depth, haar_inverse_adjoint, privelet_range_moment
from ..errors import ValidationError
from .tails import Tail, fourth_cumulant

__all__ = [
    "BinNoise",
    "GroupNoise",
    "HaarNoise",
    "NoiseModel",
    "ScatteredNoise",
    "TreeNoise",
    "layout_tree",
]


def _prefix_sums(values: np.ndarray) -> np.ndarray:
    """``[0, v0, v0 + v1, ...]``: range sums of per-group values in O(1)."""
    out = np.zeros(values.size + 1)
    np.cumsum(values, out=out[1:])
    return out


class NoiseModel:
    """Interface of the noise models: ``n`` bins, and per range ``[lo, hi)``."""

    n: int
    tail: Tail | None = None
    law: str = "laplace"

    def variance(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Noise variance of the estimate of each range (0 for an empty one)."""
        raise NotImplementedError

    def fourth_cumulant(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Fourth cumulant of the noise of each range's estimate."""
        raise NotImplementedError

    def functional_variance(self, a: np.ndarray) -> float:
        """Noise variance of ``sum_i a[i] * estimate[i]``."""
        raise NotImplementedError

    def single(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``c > 0`` where a range's noise is ``c`` times one draw of :attr:`tail`, else 0."""
        return np.zeros(np.shape(lo))

    def integral(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """True where a range's noise is a sum of whole integer draws (an integer)."""
        return np.zeros(np.shape(lo), dtype=bool)


class GroupNoise(NoiseModel):
    """Independent noisy totals of contiguous groups, each spread evenly over its bins.

    ``starts``: first bin of each group (increasing, from 0); ``total_variance[g]``:
    noise variance of group ``g``'s total; ``tail``: the law of one group's noise when
    each total is one draw (``None`` otherwise). Identity is one group per bin, uniform
    one group. ``O(1)`` per range.
    """

    def __init__(
        self, n: int, starts: np.ndarray, total_variance, tail: Tail | None = None, law=None
    ):
        starts = np.asarray(starts, dtype=np.int64)
        g = starts.size
        if (
            g == 0
            or starts[0] != 0
            or starts[-1] >= n
            or (g > 1 and (starts[1:] <= starts[:-1]).any())
        ):
            raise ValidationError("group starts must increase from 0 and stay below n")
        self.n = int(n)
        self.starts = starts
        self.total_variance = np.empty(g)
        self.total_variance[:] = total_variance
        self.tail = tail
        self.law = law or (tail.kind if tail is not None else "laplace")

    # what only error bars read is built at their first use, not with every release
    @cached_property
    def ends(self) -> np.ndarray:
        """One past the last bin of each group."""
        return np.append(self.starts[1:], self.n)

    @cached_property
    def sizes(self) -> np.ndarray:
        return (self.ends - self.starts).astype(np.float64)

    @cached_property
    def _k4(self) -> np.ndarray:
        return fourth_cumulant(self.total_variance, self.law)

    @cached_property
    def _cum_var(self) -> np.ndarray:
        return _prefix_sums(self.total_variance)

    @cached_property
    def _cum_k4(self) -> np.ndarray:
        return _prefix_sums(self._k4)

    def group_of(self, k: np.ndarray) -> np.ndarray:
        k = np.clip(k, 0, self.n - 1)
        return np.searchsorted(self.starts, k, side="right") - 1

    def _sum(self, lo, hi, per_group: np.ndarray, cum: np.ndarray, power: int) -> np.ndarray:
        """``sum_g (share of g's bins in the range)**power * per_group[g]`` (``cum``: the
        prefix sums of ``per_group``)."""
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        empty = lo >= hi
        ga = self.group_of(lo)
        gb = self.group_of(np.maximum(hi - 1, 0))
        v = per_group
        same = ((hi - lo) / self.sizes[ga]) ** power * v[ga]
        part_a = ((self.ends[ga] - lo) / self.sizes[ga]) ** power * v[ga]
        part_b = ((hi - self.starts[gb]) / self.sizes[gb]) ** power * v[gb]
        full = cum[np.maximum(gb, ga + 1)] - cum[ga + 1]
        out = np.where(ga == gb, same, part_a + full + part_b)
        return np.where(empty, 0.0, out)

    def variance(self, lo, hi):
        return self._sum(lo, hi, self.total_variance, self._cum_var, 2)

    def fourth_cumulant(self, lo, hi):
        return self._sum(lo, hi, self._k4, self._cum_k4, 4)

    def functional_variance(self, a):
        cum = np.concatenate(([0.0], np.cumsum(np.asarray(a, dtype=np.float64))))
        mean = (cum[self.ends] - cum[self.starts]) / self.sizes
        return float(np.dot(mean**2, self.total_variance))

    def single(self, lo, hi):
        if self.tail is None:
            return np.zeros(np.shape(lo))
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        ga = self.group_of(lo)
        one = (ga == self.group_of(np.maximum(hi - 1, 0))) & (hi > lo)
        return np.where(one, (hi - lo) / self.sizes[ga], 0.0)

    def integral(self, lo, hi):
        if self.tail is None:
            return np.zeros(np.shape(lo), dtype=bool)
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        gb = self.group_of(np.maximum(hi - 1, 0))
        return (self.starts[self.group_of(lo)] == lo) & (self.ends[gb] == hi)


class BinNoise(NoiseModel):
    """One independent draw of variance ``variance`` on every bin (identity, and the
    first stage of the two-stage methods): :class:`GroupNoise` with unit groups, held
    in ``O(1)`` memory so a release of 10**8 bins carries no per-bin model arrays."""

    def __init__(self, n: int, variance: float, tail: Tail | None = None, law=None):
        self.n = int(n)
        self.bin_variance = float(variance)
        self.tail = tail
        self.law = law or (tail.kind if tail is not None else "laplace")

    @cached_property
    def _k4(self) -> float:
        return float(fourth_cumulant(self.bin_variance, self.law))

    @staticmethod
    def _width(lo, hi) -> np.ndarray:
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        return np.maximum(hi - lo, 0).astype(np.float64)

    def variance(self, lo, hi):
        return self._width(lo, hi) * self.bin_variance

    def fourth_cumulant(self, lo, hi):
        return self._width(lo, hi) * self._k4

    def functional_variance(self, a):
        a = np.asarray(a, dtype=np.float64)
        return float(np.dot(a, a)) * self.bin_variance

    def single(self, lo, hi):
        if self.tail is None:
            return np.zeros(np.shape(lo))
        return (self._width(lo, hi) == 1).astype(np.float64)

    def integral(self, lo, hi):
        if self.tail is None:
            return np.zeros(np.shape(lo), dtype=bool)
        return self._width(lo, hi) > 0


class ScatteredNoise(NoiseModel):
    """Independent noisy group totals spread evenly, groups scattered over the bins
    (after a sort): ``labels[i]`` is bin ``i``'s group in the original bin order.
    ``O(sqrt(N))`` per range over a batch (Mo's ordering)."""

    def __init__(self, labels: np.ndarray, total_variance, tail: Tail | None = None, law=None):
        self.labels = own_labels(labels)
        self.n = int(self.labels.size)
        self.sizes = label_sizes(self.labels).astype(np.float64)
        self.total_variance = np.broadcast_to(
            np.asarray(total_variance, dtype=np.float64), self.sizes.shape
        ).copy()
        self.tail = tail
        self.law = law or (tail.kind if tail is not None else "laplace")

    def variance(self, lo, hi):
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        zero = np.zeros_like(self.sizes)
        quad, _ = group_range_sums(
            self.labels, self.total_variance / self.sizes**2, zero, zero, lo, hi
        )
        return quad

    def fourth_cumulant(self, lo, hi):
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        zero = np.zeros_like(self.sizes)
        k4 = fourth_cumulant(self.total_variance, self.law) / self.sizes**4
        return group_range_sums(self.labels, zero, zero, zero, lo, hi, quart=k4)[0]

    def functional_variance(self, a):
        mean = np.bincount(self.labels, weights=a, minlength=self.sizes.size) / self.sizes
        return float(np.dot(mean**2, self.total_variance))

    def single(self, lo, hi):
        if self.tail is None:
            return np.zeros(np.shape(lo))
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        one = hi - lo == 1
        return np.where(one, 1.0 / self.sizes[self.labels[np.minimum(lo, self.n - 1)]], 0.0)


class TreeNoise(NoiseModel):
    """Least squares over a tree of measured interval totals (exact GLS posterior,
    :mod:`dphist._numeric.posterior`). Built by :meth:`levels` for a fan-out tree with
    one variance per level, or :meth:`nodes` for any tree (pruned, GreedyH's)."""

    def __init__(self, factors: TreeFactors | LevelFactors, generic=None, law: str = "laplace"):
        self.factors = factors
        self.n = factors.n
        self.law = law
        self._generic = generic  # builds TreeFactors for weighted sums, when needed
        self._kurtosis = None

    @classmethod
    def levels(cls, layout: TreeLayout, level_variance, law: str = "laplace") -> TreeNoise:
        var = np.asarray(level_variance, dtype=np.float64)
        factors = level_factors(layout.n, layout.fanout, layout.spans, var)
        return cls(factors, lambda: layout_tree(layout, np.repeat(var, layout.level_counts)), law)

    @classmethod
    def nodes(cls, n, lo, hi, ptr, kids, variance, shares=None, law="laplace") -> TreeNoise:
        return cls(tree_factors(n, lo, hi, ptr, kids, variance, shares), law=law)

    def _tree(self) -> TreeFactors:
        if isinstance(self.factors, TreeFactors):
            return self.factors
        if self._generic is not None and not isinstance(self._generic, TreeFactors):
            self._generic = self._generic()
        return self._generic

    def variance(self, lo, hi):
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        if isinstance(self.factors, LevelFactors):
            return level_range_variances(self.factors, lo, hi)
        return range_variances(self.factors, lo, hi)

    def functional_variance(self, a):
        return functional_variance(self._tree(), a)

    def fourth_cumulant(self, lo, hi):
        f = self._tree()
        if self._kurtosis is None:
            measured = np.isfinite(f.var)
            safe = np.where(measured, f.var, 1.0)
            kappa = np.where(measured, fourth_cumulant(safe, self.law) / safe**4, 0.0)
            self._kurtosis = (kappa, subtree_kurtosis(f, kappa))
        kappa, big_g = self._kurtosis
        return range_fourth_cumulants(f, kappa, big_g, np.atleast_1d(lo), np.atleast_1d(hi))


def layout_tree(
    layout: TreeLayout, node_variance: np.ndarray, leaves: np.ndarray | None = None
) -> TreeFactors:
    """:class:`TreeFactors` of a :class:`TreeLayout` with per-node variances; ``leaves``
    (a node mask, e.g. a cut) makes those nodes leaves spreading their total evenly and
    drops the nodes below them."""
    var = np.asarray(node_variance, dtype=np.float64)
    stop = np.zeros(layout.n_nodes, dtype=bool) if leaves is None else np.asarray(leaves)
    inside = np.zeros(layout.n_nodes, dtype=bool)
    for lev in range(1, layout.n_levels):
        sl = layout.level_slice(lev)
        up = layout.parent[sl]
        inside[sl] = inside[up] | stop[up]
    keep = np.flatnonzero(~inside)
    new_id = np.cumsum(~inside) - 1
    count = np.where(stop[keep], 0, layout.n_children[keep])
    ptr = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(count, out=ptr[1:])
    kids = new_id[_kept_children(layout.first_child[keep], count)]
    return tree_factors(layout.n, layout.lo[keep], layout.hi[keep], ptr, kids, var[keep])


def _kept_children(first_child: np.ndarray, count: np.ndarray) -> np.ndarray:
    total = int(count.sum())
    start = np.repeat(first_child, count)
    before = np.repeat(np.cumsum(count) - count, count)
    return start + (np.arange(total, dtype=np.int64) - before)


class HaarNoise(NoiseModel):
    """Privelet: independent noise of variance ``variance`` on every unnormalised Haar
    coefficient, inverted (:mod:`dphist._numeric.wavelet`). ``O(log N)`` per range."""

    def __init__(self, n: int, variance: float, law: str = "laplace"):
        self.n, self.coefficient_variance, self.law = int(n), float(variance), law

    def _moment(self, lo, hi, power: int) -> np.ndarray:
        lo, hi = np.atleast_1d(lo).astype(np.int64), np.atleast_1d(hi).astype(np.int64)
        out = np.zeros(lo.shape)
        ok = lo < hi
        if np.any(ok):
            out[ok] = privelet_range_moment(self.n, lo[ok], hi[ok], power)
        return out

    def variance(self, lo, hi):
        return self.coefficient_variance * self._moment(lo, hi, 2)

    def fourth_cumulant(self, lo, hi):
        k4 = float(fourth_cumulant(self.coefficient_variance, self.law))
        return k4 * self._moment(lo, hi, 4)

    def functional_variance(self, a):
        g = haar_inverse_adjoint(np.asarray(a, dtype=np.float64), self.n)
        return float(self.coefficient_variance * np.dot(g, g))

    @property
    def depth(self) -> int:
        return haar_depth(self.n)
