"""Linear count queries that know their own sensitivity.

A query maps the count vector ``x`` to integer answers. Its L1 sensitivity under
add/remove-one-record neighbours (``x' = x +- e_i``) is the largest number of answers
one bin contributes to, i.e. the maximum column L1 norm of the query matrix. The
kernel reads it from the query; no block ever states a sensitivity.

* :class:`Identity` -- every bin: sensitivity 1.
* :class:`GroupSums` -- sums over disjoint groups (any order): sensitivity 1.
* :class:`BlockSums` -- sums over consecutive blocks of one width: sensitivity 1.
* :class:`IntervalSums` -- sums over arbitrary half-open intervals: sensitivity is
  the maximum number of intervals covering one bin (a tree of h levels: h; the n
  prefix sums: n), computed exactly with a difference array.
* :class:`SignedIntervalSums` -- differences of two adjacent interval sums (Haar
  coefficients): sensitivity is the maximum coverage of their spans.
* :class:`WeightedIntervalSums` -- interval sums with per-query weights (GreedyH
  strategies): sensitivity is the maximum weighted coverage, exactly.

* :class:`TotalAndTop` -- the total and the records in the fullest tenth of the bins
  (not linear): one record moves each by at most one, sensitivity 2.

No query matrix is ever built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .._jit import njit
from .._numeric.wavelet import haar_depth, haar_forward, haar_size
from ..errors import ValidationError
from .budget import as_fraction

__all__ = [
    "BlockSums",
    "FourierCoefficients",
    "GroupSums",
    "HaarSums",
    "Identity",
    "IntervalSums",
    "Query",
    "SignedIntervalSums",
    "TotalAndTop",
    "WeightedIntervalSums",
]


class Query:
    """Base class: ``n`` input bins, ``size`` integer answers, exact ``sensitivity``."""

    n: int

    @property
    def size(self) -> int:
        raise NotImplementedError

    @property
    def sensitivity(self) -> Fraction:
        raise NotImplementedError

    @property
    def sensitivity2(self) -> Fraction:
        """Squared L2 sensitivity ``max over one record of ||q(x) - q(x')||_2**2``, exact
        (the Gaussian mechanism's input). For answers that move by 0 or 1 it is the
        number that move, the L1 sensitivity."""
        raise NotImplementedError

    def apply(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @property
    def changed(self) -> int:
        """How many answers one record can change; for 0/1 queries, the sensitivity."""
        return int(self.sensitivity)

    def apply_real(self, x: np.ndarray) -> np.ndarray:
        """Answers as floats, for the lattice Laplace primitive."""
        return self.apply(x).astype(np.float64)

    def describe(self) -> str:
        return f"{type(self).__name__}(n={self.n}, size={self.size})"


_ONE, _TWO = Fraction(1), Fraction(2)  # shared sensitivities (Fractions are immutable)
_integer = lru_cache(maxsize=256)(Fraction)  # an integer sensitivity, made once


def _prefix(x: np.ndarray) -> np.ndarray:
    """Exact int64 prefix sums with a leading 0: a range sum is two lookups."""
    out = np.zeros(len(x) + 1, dtype=np.int64)
    np.cumsum(np.asarray(x, dtype=np.int64), out=out[1:])
    return out


def _check_n(n: object) -> int:
    if type(n) is int and n >= 1:  # the usual case: one test
        return n
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise ValidationError(f"query domain size must be a positive integer; got {n!r}")
    return int(n)


@dataclass(frozen=True)
class Identity(Query):
    """Every bin's count."""

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", _check_n(self.n))

    @property
    def size(self) -> int:
        return self.n

    @property
    def sensitivity(self) -> Fraction:
        return _ONE

    @property
    def sensitivity2(self) -> Fraction:
        return _ONE

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=np.int64, copy=True)


#: Thresholds of :func:`top_mass`: 1, 2, 3, then 2**e * (4, 5, 6, 7) / 4 for 2 <= e <= 62.
_GRID = (1, 2, 3, *((4 + j) << (e - 2) for e in range(2, 63) for j in range(4)))
_GRID_SIZE = len(_GRID)


def _bucket_of(v: int) -> int:
    """Index of the grid bucket ``[_GRID[q], _GRID[q + 1])`` holding ``v >= 1``."""
    if v < 4:
        return v - 1
    e = v.bit_length() - 1
    return 3 + 4 * (e - 2) + ((v >> (e - 2)) & 3)


_SMALL = 1 << 16


def _bucket_table() -> np.ndarray:
    """:func:`_bucket_of` for every ``v < 2**16`` at once (0 for ``v = 0``)."""
    v = np.arange(_SMALL, dtype=np.int64)
    e = np.frexp(v.astype(np.float64))[1].astype(np.int64) - 1  # bit length - 1 (exact)
    shift = np.maximum(e - 2, 0)
    out = np.where(v < 4, v - 1, 3 + 4 * (e - 2) + ((v >> shift) & 3))
    out[0] = 0
    return out.astype(np.uint8)


_BUCKET_LOOKUP = _bucket_table()


@njit(cache=True)
def _grid_buckets(x: np.ndarray, lookup: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Count and sum of the positive bins in each grid bucket (one pass)."""
    count = np.zeros(_GRID_SIZE, dtype=np.int64)
    total = np.zeros(_GRID_SIZE, dtype=np.int64)
    for v in x:
        if v <= 0:
            continue
        shift = 0
        while (v >> shift) >= lookup.size:  # a shift keeps the leading three bits
            shift += 8
        q = lookup[v >> shift] + 4 * shift
        count[q] += 1
        total[q] += v
    return count, total


def total_and_top_mass(x: np.ndarray, k: int) -> tuple[int, int]:
    """The total and ``min over t in {0} and the grid of k*t + sum((x - t)^+)``.

    The second is an upper bound on the sum of the ``k`` largest counts: exact when the
    k-th largest is 0 or on the grid, at most 1.25x when it is not (take the first grid
    point above it). Each term is 1-Lipschitz in every count, so the minimum is too:
    one record moves it by at most one. One pass, no sort."""
    count, mass = _grid_buckets(np.asarray(x, dtype=np.int64), _BUCKET_LOOKUP)
    k = int(k)
    total = int(mass.sum())
    best = total  # t = 0
    filled = np.flatnonzero(count)
    # thresholds above the first one past the largest count only give larger k*t
    start = min(int(filled[-1]) + 1, _GRID_SIZE - 1) if filled.size else -1
    above_count = above_total = 0
    for q in range(start, -1, -1):  # exact integers: no overflow
        above_count += int(count[q])
        above_total += int(mass[q])
        best = min(best, k * _GRID[q] + above_total - above_count * _GRID[q])
    return total, best


@dataclass(frozen=True)
class TotalAndTop(Query):
    """Two answers: the number of records and the records in the fullest tenth of the
    bins (``k = ceil(n / 10)``, measured as in :func:`total_and_top_mass`).

    Adding or removing one record moves the total by one and the top mass by at most
    one (a minimum of 1-Lipschitz functions): L1 sensitivity 2, squared L2 sensitivity
    2. (The top mass is not linear; its sensitivity is checked by brute force in the
    tests.)
    """

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", _check_n(self.n))

    @property
    def k(self) -> int:
        return -(-self.n // 10)

    @property
    def size(self) -> int:
        return 2

    @property
    def sensitivity(self) -> Fraction:
        return _TWO

    @property
    def sensitivity2(self) -> Fraction:
        return _TWO

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.array(total_and_top_mass(x, self.k), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class GroupSums(Query):
    """Sums over disjoint groups: ``labels[i]`` is bin i's group in ``0..groups-1``.

    Every bin belongs to exactly one group, so one record changes one sum by one:
    sensitivity 1 whatever the grouping (contiguous or not).
    """

    labels: np.ndarray
    groups: int = field(init=False)

    def __post_init__(self) -> None:
        labels = np.asarray(self.labels)
        if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
            raise ValidationError("group labels must be a non-empty 1-D integer array")
        groups = int(labels.max()) + 1
        if labels.min() < 0 or np.bincount(labels, minlength=groups).min() == 0:
            raise ValidationError("group labels must be 0..g-1 with every group non-empty")
        labels = labels.astype(np.int64)
        labels.flags.writeable = False
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "groups", groups)

    @property
    def n(self) -> int:  # type: ignore[override]
        return int(self.labels.size)

    @property
    def size(self) -> int:
        return self.groups

    @property
    def sensitivity(self) -> Fraction:
        return _ONE

    @property
    def sensitivity2(self) -> Fraction:
        return _ONE

    def apply(self, x: np.ndarray) -> np.ndarray:
        # integer sums, exact (sealed counts total at most 2**53, the count cap), with
        # no float copy of the counts
        return _group_sums(self.labels, np.asarray(x, dtype=np.int64), self.groups)


@njit(cache=True)
def _group_sums(labels, x, groups):  # pragma: no cover - compiled
    out = np.zeros(groups, dtype=np.int64)
    for i in range(labels.size):
        out[labels[i]] += x[i]
    return out


@dataclass(frozen=True)
class BlockSums(Query):
    """Sums over consecutive blocks ``[j w, min((j + 1) w, n))`` of width ``w``: one level
    of a fan-out tree, with no bound arrays (a level of 10**8 bins would need 1.6 GB).

    The blocks partition the bins, so one record changes one sum by one:
    sensitivity 1.
    """

    n: int
    width: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", _check_n(self.n))
        object.__setattr__(self, "width", _check_n(self.width))

    @property
    def size(self) -> int:
        return -(-self.n // self.width)

    @property
    def sensitivity(self) -> Fraction:
        return _ONE

    @property
    def sensitivity2(self) -> Fraction:
        return _ONE

    def apply(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.int64)
        if self.width == 1:
            return np.array(x, copy=True)
        if self.width >= self.n:  # one block: the total
            return np.array([x.sum()], dtype=np.int64)
        return np.add.reduceat(x, np.arange(0, self.n, self.width, dtype=np.int64))

    @property
    def whole(self) -> bool:
        """One block: the query is the total (which the sealed counts keep)."""
        return self.width >= self.n


@dataclass(frozen=True, eq=False)
class IntervalSums(Query):
    """Sums over half-open intervals ``[lo[k], hi[k])`` of an ``n``-bin domain."""

    n: int
    lo: np.ndarray
    hi: np.ndarray

    def __post_init__(self) -> None:
        n = _check_n(self.n)
        lo = np.asarray(self.lo)
        hi = np.asarray(self.hi)
        if (
            lo.ndim != 1
            or lo.shape != hi.shape
            or lo.size == 0
            or not (np.issubdtype(lo.dtype, np.integer) and np.issubdtype(hi.dtype, np.integer))
        ):
            raise ValidationError("interval bounds must be two non-empty 1-D integer arrays")
        if lo.min() < 0 or hi.max() > n or np.any(lo >= hi):
            raise ValidationError(f"intervals must satisfy 0 <= lo < hi <= n={n}")
        _freeze(self, n, lo=lo, hi=hi)

    @property
    def size(self) -> int:
        return int(self.lo.size)

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(int(_coverage(self.n, self.lo, self.hi).max()))

    @property
    def sensitivity2(self) -> Fraction:
        return self.sensitivity  # each covering answer moves by exactly 1

    def apply(self, x: np.ndarray) -> np.ndarray:
        prefix = _prefix(x)
        return prefix[self.hi] - prefix[self.lo]


def _freeze(query: Query, n: int, **arrays: np.ndarray) -> None:
    """Set a frozen query's ``n`` and its bound arrays (int64, read-only)."""
    object.__setattr__(query, "n", n)
    for name, values in arrays.items():
        values = np.asarray(values).astype(np.int64)
        values.flags.writeable = False
        object.__setattr__(query, name, values)


def _coverage(n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How many of the intervals ``[lo, hi)`` cover each bin (difference array)."""
    delta = np.bincount(lo, minlength=n + 1) - np.bincount(hi, minlength=n + 1)
    return np.cumsum(delta[:-1])


@dataclass(frozen=True, eq=False)
class SignedIntervalSums(Query):
    """Differences ``sum x[lo:mid] - sum x[mid:hi]`` (Haar-style coefficients).

    Each bin enters a coefficient with weight +-1 when it lies in ``[lo, hi)``, so
    the sensitivity is the maximum number of intervals ``[lo, hi)`` covering one bin.
    ``mid == hi`` makes a coefficient a plain interval sum.
    """

    n: int
    lo: np.ndarray
    mid: np.ndarray
    hi: np.ndarray

    def __post_init__(self) -> None:
        n = _check_n(self.n)
        arrays = [np.asarray(a) for a in (self.lo, self.mid, self.hi)]
        if (
            any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays)
            or arrays[0].size == 0
            or not all(np.issubdtype(a.dtype, np.integer) for a in arrays)
        ):
            raise ValidationError("coefficient bounds must be three equal 1-D integer arrays")
        lo, mid, hi = arrays
        if lo.min() < 0 or hi.max() > n or np.any(lo >= mid) or np.any(mid > hi):
            raise ValidationError(f"coefficients must satisfy 0 <= lo < mid <= hi <= n={n}")
        _freeze(self, n, lo=lo, mid=mid, hi=hi)

    @property
    def size(self) -> int:
        return int(self.lo.size)

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(int(_coverage(self.n, self.lo, self.hi).max()))

    @property
    def sensitivity2(self) -> Fraction:
        return self.sensitivity  # each covering coefficient moves by exactly 1

    def apply(self, x: np.ndarray) -> np.ndarray:
        prefix = _prefix(x)
        return 2 * prefix[self.mid] - prefix[self.lo] - prefix[self.hi]


@dataclass(frozen=True)
class HaarSums(Query):
    """Privelet's unnormalised Haar coefficients (:mod:`dphist._numeric.wavelet`): the
    total, then per level of the binary tree over the counts zero-padded to
    ``2**m`` (``m = ceil(log2 n)``; root level first) the difference between the two
    halves of every node holding a real bin.

    One record changes the total and, on each of the ``m`` levels, the one difference
    of the node holding its bin, each by exactly 1: L1 sensitivity ``m + 1``, squared
    L2 sensitivity ``m + 1``. Answered by pairwise sums, ``O(n)``, no bound arrays.
    """

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", _check_n(self.n))

    @property
    def size(self) -> int:
        return haar_size(self.n)

    @property
    def sensitivity(self) -> Fraction:
        return _integer(haar_depth(self.n) + 1)

    @property
    def sensitivity2(self) -> Fraction:
        return self.sensitivity

    def apply(self, x: np.ndarray) -> np.ndarray:
        return haar_forward(np.asarray(x, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class WeightedIntervalSums(Query):
    """Interval sums answered with per-query weights ``w_q > 0`` (a weighted strategy).

    The released quantity is ``w_q * sum x[lo_q:hi_q]``; its L1 sensitivity is the
    largest weighted coverage ``max_i sum_{q covers i} w_q``, computed exactly from the
    weights read as decimals. The kernel answers query ``q`` as the plain sum plus
    noise of scale ``sensitivity / (w_q * epsilon)``, which is the same mechanism
    rescaled by ``1/w_q``; ``Measurement.values`` are the plain noisy sums.
    """

    n: int
    lo: np.ndarray
    hi: np.ndarray
    weights: tuple[Fraction, ...]

    def __post_init__(self) -> None:
        base = IntervalSums(self.n, self.lo, self.hi)
        weights = tuple(as_fraction(w, name="query weight") for w in self.weights)
        if len(weights) != base.size or min(weights) <= 0:
            raise ValidationError("need one positive weight per interval")
        object.__setattr__(self, "n", base.n)
        object.__setattr__(self, "lo", base.lo)
        object.__setattr__(self, "hi", base.hi)
        object.__setattr__(self, "weights", weights)

    @property
    def size(self) -> int:
        return int(self.lo.size)

    @property
    def sensitivity(self) -> Fraction:
        return _max_weighted_coverage(self.lo, self.hi, self.weights)

    @property
    def sensitivity2(self) -> Fraction:
        """``max_i sum_{q covers i} w_q**2``: the weighted answers covering a bin move by
        their weights."""
        return _max_weighted_coverage(self.lo, self.hi, tuple(w * w for w in self.weights))

    def apply(self, x: np.ndarray) -> np.ndarray:
        prefix = _prefix(x)
        return prefix[self.hi] - prefix[self.lo]


def _max_weighted_coverage(lo: np.ndarray, hi: np.ndarray, weights: tuple) -> Fraction:
    """``max_i sum_{q: lo_q <= i < hi_q} weights_q``, exactly (a sweep over endpoints)."""
    events: dict[int, Fraction] = {}
    for a, b, w in zip(lo.tolist(), hi.tolist(), weights, strict=True):
        events[a] = events.get(a, Fraction(0)) + w
        events[b] = events.get(b, Fraction(0)) - w
    best = running = Fraction(0)
    for pos in sorted(events):
        running += events[pos]
        best = max(best, running)
    return best


def fourier_l1_bound(n: int, k: int) -> Fraction:
    """A rational upper bound on ``max_j sum_{r<k} |phi_r(j)|`` for the first ``k`` rows
    of the orthonormal real Fourier basis (see ``selection.fourier_coefficients``).

    Row 0 and the alternating row give ``1/sqrt(N)`` each; a cosine-sine pair gives
    ``sqrt(2/N) (|cos t| + |sin t|) <= 2/sqrt(N)``; a lone cosine ``sqrt(2/N)``. So the
    bound is ``(1 + 2 pairs + sqrt(2) lone + alternating)/sqrt(N)``, ``k/sqrt(N)`` for odd
    ``k``, attained for ``k <= 3`` when 8 divides N, and never above the L2 argument's
    ``sqrt(k)``. Rounded up at the sixth decimal.
    """
    half = (n - 1) // 2
    rest = k - 1
    pairs, lone, alternating = min(rest, 2 * half) // 2, min(rest, 2 * half) % 2, rest > 2 * half
    numerator = 1 + 2 * pairs + alternating + lone * Fraction(1414214, 10**6)  # >= sqrt 2
    by_rows = numerator * 10**6 / math.isqrt(n * 10**12)  # floor(sqrt(N) 10**6) <= sqrt(N)
    by_l2 = Fraction(math.isqrt(k * 10**12) + 1, 10**6)  # > sqrt(k)
    return min(by_rows, by_l2)


@dataclass(frozen=True, eq=False)
class FourierCoefficients(Query):
    """The first ``k`` coefficients in the orthonormal real Fourier basis (EFPA).

    Real-valued: release with ``PrivateView.measure_real``. One record in bin ``j``
    moves coefficient ``r`` by ``phi_r(j)``, so the L1 sensitivity is
    ``max_j sum_{r<k} |phi_r(j)|``, bounded by :func:`fourier_l1_bound` (``k/sqrt(N)``
    for odd ``k``, far below the ``sqrt(k)`` of the L2 argument when ``k << N``); at
    most ``k`` coefficients change.
    """

    n: int
    k: int

    def __post_init__(self) -> None:
        n = _check_n(self.n)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= n:
            raise ValidationError(f"k must be an integer in [1, {n}]; got {self.k!r}")
        object.__setattr__(self, "n", n)

    @property
    def size(self) -> int:
        return self.k

    @property
    def sensitivity(self) -> Fraction:
        return fourier_l1_bound(self.n, self.k)

    @property
    def sensitivity2(self) -> Fraction:
        """``max_j sum_{r<k} phi_r(j)**2``: 1/N for row 0 and the alternating row, 2/N for
        a cosine-sine pair (cos**2 + sin**2 = 1), at most 2/N for a lone cosine, so
        ``(k + lone)/N`` (``k/N`` for odd ``k``), never above 1."""
        rest = min(self.k - 1, 2 * ((self.n - 1) // 2))
        return min(Fraction(1), Fraction(self.k + rest % 2, self.n))

    @property
    def changed(self) -> int:
        return self.k

    def apply(self, x: np.ndarray) -> np.ndarray:
        raise TypeError("Fourier coefficients are real-valued: use measure_real")

    def apply_real(self, x: np.ndarray) -> np.ndarray:
        from .selection import fourier_coefficients

        return fourier_coefficients(x)[: self.k]
