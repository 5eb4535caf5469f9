"""The workload kinds: all ranges, prefixes, windows of given lengths, explicit intervals."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dphist.errors import ValidationError, WorkloadError

__all__ = [
    "BIG_LENGTHS",
    "DEFAULT_MAX_QUERIES",
    "SMALL_LENGTHS",
    "AllRanges",
    "Intervals",
    "Prefix",
    "Windows",
    "Workload",
    "as_bounds",
    "as_int",
]

#: Largest number of queries :meth:`Workload.intervals` and :meth:`Workload.answers`
#: build by default (two int64 arrays of this length take 800 MB).
DEFAULT_MAX_QUERIES = 50_000_000

SMALL_LENGTHS = tuple(range(1, 11))
BIG_LENGTHS = tuple(range(100, 1001, 100))
_INT64_MAX = np.iinfo(np.int64).max


# --------------------------------------------------------------------------- helpers


def as_int(value: object, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise WorkloadError naming ``name``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise WorkloadError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    result = int(value)
    if low is not None and result < low:
        raise WorkloadError(f"{name} must be at least {low}, got {result}")
    if high is not None and result > high:
        raise WorkloadError(f"{name} must be at most {high}, got {result}")
    return result


def _prefix_array(values: ArrayLike, n: int, name: str) -> np.ndarray:
    """Validate a length ``n + 1`` vector; return it as int64 or float64.

    Integer input stays integer so that answers on counts are exact.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D numeric array: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise ValidationError(f"{name} must hold integers or floats, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != n + 1:
        raise ValidationError(
            f"{name} must be 1-D of length n + 1 = {n + 1} (index 0 is the empty prefix), "
            f"got shape {arr.shape}"
        )
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValidationError(f"{name} contains NaN or infinite values")
        return arr.astype(np.float64, copy=False)
    if arr.dtype.kind == "u" and arr.size and arr.max() > _INT64_MAX:
        raise ValidationError(f"{name} has values too large for int64")
    return arr.astype(np.int64, copy=False)


def as_bounds(values: ArrayLike, name: str) -> np.ndarray:
    """Validate one array of query bounds: 1-D, integer dtype, non-empty."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise WorkloadError(f"{name} must be a 1-D integer array: {exc}") from None
    if arr.ndim != 1:
        raise WorkloadError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise WorkloadError(f"{name} is empty; a workload needs at least one query")
    if arr.dtype.kind not in "iu":
        raise WorkloadError(f"{name} must have an integer dtype, got {arr.dtype}")
    return arr


def _window_sq_sum(e: np.ndarray, length: int) -> float:
    """Sum of ``(e[k + length] - e[k])**2`` over all ``k``: O(n)."""
    w = e[length:] - e[: e.shape[0] - length]
    return float(np.dot(w, w))


# --------------------------------------------------------------------------- classes


@dataclass(frozen=True)
class Workload(ABC):
    """A list of half-open ranges ``[lo, hi)`` over a domain of ``n`` bins.

    Subclasses describe the queries implicitly. Use the constructor functions of
    this module rather than the classes.

    Attributes
    ----------
    n : int
        Domain size (number of bins), a positive integer.
    """

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", as_int(self.n, "n", low=1))

    @property
    @abstractmethod
    def size(self) -> int:
        """Number of queries (a Python int; may be about ``n**2 / 2``)."""

    @abstractmethod
    def _intervals(self) -> tuple[np.ndarray, np.ndarray]: ...

    @abstractmethod
    def _squared_error_sum(self, e: np.ndarray) -> float: ...

    def _answers(self, p: np.ndarray) -> np.ndarray:
        los, his = self._intervals()
        return p[his] - p[los]

    def _check_size(self, max_queries: int) -> None:
        limit = as_int(max_queries, "max_queries", low=0)
        if self.size > limit:
            raise WorkloadError(
                f"{type(self).__name__} on n={self.n} has {self.size} queries, more than "
                f"max_queries={limit}; raise max_queries to materialise it anyway, or use "
                "squared_error_sum / dphist.metrics, which never build the queries"
            )

    def intervals(self, *, max_queries: int = DEFAULT_MAX_QUERIES) -> tuple[np.ndarray, np.ndarray]:
        """Materialise the query bounds.

        Parameters
        ----------
        max_queries : int, optional
            Refuse (WorkloadError) when the workload has more queries than this.

        Returns
        -------
        los, his : numpy.ndarray
            int64 arrays of length :attr:`size`; query ``q`` is ``[los[q], his[q])``.
            The order is the one documented by each kind.

        Notes
        -----
        Time and memory ``O(size)``.
        """
        self._check_size(max_queries)
        return self._intervals()

    def squared_error_sum(self, e: ArrayLike) -> float:
        """Sum over all queries of the squared error ``(e[hi] - e[lo])**2``.

        Parameters
        ----------
        e : array_like
            Prefix errors, length ``n + 1``: ``e[k] = sum_{i<k} (est_i - true_i)``,
            so ``e[0] = 0``. (Only differences are used, so a constant offset in
            ``e`` does not change the result.)

        Returns
        -------
        float
            The sum of squared query errors.

        Notes
        -----
        Never builds the queries: ``O(n)`` for :class:`AllRanges` and :class:`Prefix`,
        ``O(n * len(lengths))`` for :class:`Windows`, ``O(size)`` for
        :class:`Intervals`.
        """
        arr = _prefix_array(e, self.n, "e").astype(np.float64, copy=False)
        return float(self._squared_error_sum(arr))

    def answers(self, prefix: ArrayLike, *, max_queries: int = DEFAULT_MAX_QUERIES) -> np.ndarray:
        """Answers to every query, in the order of :meth:`intervals`.

        Parameters
        ----------
        prefix : array_like
            Prefix sums ``P`` of a histogram, length ``n + 1`` with ``P[0] = 0``.
            Integer input gives exact int64 answers; float input gives float64.
        max_queries : int, optional
            Refuse (WorkloadError) when the workload has more queries than this.

        Returns
        -------
        numpy.ndarray
            ``P[hi] - P[lo]`` for each query.

        Notes
        -----
        Time and memory ``O(size)``.
        """
        p = _prefix_array(prefix, self.n, "prefix")
        self._check_size(max_queries)
        return self._answers(p)


@dataclass(frozen=True)
class AllRanges(Workload):
    """All ``n (n + 1) / 2`` ranges ``[lo, hi)``, ordered by ``lo`` then ``hi``.

    The squared-error sum uses the identity
    ``sum_{0<=i<j<=n} (e_j - e_i)**2 = (n + 1) * sum_k (e_k - mean(e))**2``,
    evaluated on centred values so that no large terms cancel: ``O(n)``.
    """

    @property
    def size(self) -> int:
        """Number of queries, ``n (n + 1) / 2``."""
        return self.n * (self.n + 1) // 2

    def _intervals(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.n
        starts = np.arange(n, dtype=np.int64)
        per_start = n - starts  # ranges beginning at each lo
        los = np.repeat(starts, per_start)
        block_begin = np.cumsum(per_start) - per_start
        rank_in_block = np.arange(self.size, dtype=np.int64) - np.repeat(block_begin, per_start)
        return los, los + 1 + rank_in_block

    def _squared_error_sum(self, e: np.ndarray) -> float:
        c = e - e.mean()
        return (self.n + 1) * float(np.dot(c, c))


@dataclass(frozen=True)
class Prefix(Workload):
    """The ``n`` prefix ranges ``[0, j)`` for ``j = 1..n``, in that order."""

    @property
    def size(self) -> int:
        """Number of queries, ``n``."""
        return self.n

    def _intervals(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.n, dtype=np.int64), np.arange(1, self.n + 1, dtype=np.int64)

    def _squared_error_sum(self, e: np.ndarray) -> float:
        w = e[1:] - e[0]
        return float(np.dot(w, w))

    def _answers(self, p: np.ndarray) -> np.ndarray:
        return p[1:] - p[0]


@dataclass(frozen=True)
class Windows(Workload):
    """Every range of each given length, at every position.

    Queries are ordered by length (ascending), then by start. The point (identity)
    workload is ``Windows(n, (1,))``.

    Attributes
    ----------
    lengths : tuple of int
        Distinct range lengths, stored sorted. Each must lie in ``1..n``; a length
        above ``n`` is an error here (it would contribute no query and most likely
        means a wrong ``n``). :func:`windows` with ``drop_longer=True``,
        :func:`small_ranges` and :func:`big_ranges` drop such lengths instead. A
        single int is accepted and stored as a 1-tuple.
    """

    lengths: tuple[int, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        raw = self.lengths
        if isinstance(raw, int | np.integer) and not isinstance(raw, bool | np.bool_):
            raw = (raw,)
        if isinstance(raw, str | bytes) or not isinstance(raw, Iterable):
            raise WorkloadError(
                f"lengths must be an integer or an iterable of integers, got {type(raw).__name__}"
            )
        values = sorted({as_int(v, "each of lengths", low=1) for v in raw})
        if not values:
            raise WorkloadError("lengths is empty; give at least one range length")
        too_long = [v for v in values if v > self.n]
        if too_long:
            raise WorkloadError(
                f"lengths {too_long} exceed the domain size n={self.n}; every length must "
                "lie in 1..n (use windows(..., drop_longer=True) to drop them)"
            )
        object.__setattr__(self, "lengths", tuple(values))

    @property
    def size(self) -> int:
        """Number of queries, ``sum(n - L + 1 for L in lengths)``."""
        return sum(self.n - length + 1 for length in self.lengths)

    def _intervals(self) -> tuple[np.ndarray, np.ndarray]:
        los = [np.arange(self.n - length + 1, dtype=np.int64) for length in self.lengths]
        his = [lo + length for lo, length in zip(los, self.lengths, strict=True)]
        return np.concatenate(los), np.concatenate(his)

    def _squared_error_sum(self, e: np.ndarray) -> float:
        return math.fsum(_window_sq_sum(e, length) for length in self.lengths)

    def _answers(self, p: np.ndarray) -> np.ndarray:
        return np.concatenate([p[length:] - p[: self.n + 1 - length] for length in self.lengths])


@dataclass(frozen=True, eq=False, repr=False)
class Intervals(Workload):
    """An explicit list of ranges ``[lo[q], hi[q])``, kept in the given order.

    Attributes
    ----------
    lo, hi : numpy.ndarray
        Read-only int64 copies of the bounds; equal 1-D shapes, at least one query,
        ``0 <= lo < hi <= n`` elementwise. Duplicates are allowed and each counts.

    Notes
    -----
    Two instances are equal when ``n`` and both bound arrays are equal.
    """

    lo: np.ndarray
    hi: np.ndarray

    def __post_init__(self) -> None:
        super().__post_init__()
        lo = as_bounds(self.lo, "lo")
        hi = as_bounds(self.hi, "hi")
        if lo.shape != hi.shape:
            raise WorkloadError(
                f"lo and hi must have the same shape, got {lo.shape} and {hi.shape}"
            )
        checks = (
            (lo < 0, "lo must be >= 0"),
            (hi > self.n, f"hi must be <= n={self.n}"),
            (lo >= hi, "each range needs lo < hi (ranges are half-open [lo, hi))"),
        )
        for bad, message in checks:
            if np.any(bad):
                q = int(np.argmax(bad))
                raise WorkloadError(f"{message}; query {q} is [{lo[q]}, {hi[q]})")
        lo = lo.astype(np.int64, copy=True)
        hi = hi.astype(np.int64, copy=True)
        lo.setflags(write=False)
        hi.setflags(write=False)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Intervals):
            return NotImplemented
        return (
            self.n == other.n
            and np.array_equal(self.lo, other.lo)
            and np.array_equal(self.hi, other.hi)
        )

    def __hash__(self) -> int:
        return hash((self.n, self.lo.tobytes(), self.hi.tobytes()))

    def __repr__(self) -> str:
        return f"Intervals(n={self.n}, size={self.size})"

    @property
    def size(self) -> int:
        """Number of queries, ``len(lo)``."""
        return int(self.lo.shape[0])

    def _intervals(self) -> tuple[np.ndarray, np.ndarray]:
        return self.lo.copy(), self.hi.copy()

    def _squared_error_sum(self, e: np.ndarray) -> float:
        w = e[self.hi] - e[self.lo]
        return float(np.dot(w, w))

    def _answers(self, p: np.ndarray) -> np.ndarray:
        return p[self.hi] - p[self.lo]
