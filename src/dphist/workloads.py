"""Range-query workloads over a histogram domain, held implicitly.

A workload is a list of half-open ranges ``[lo, hi)`` with ``0 <= lo < hi <= n``
over a histogram of ``n`` bins. The answer to a range is ``P[hi] - P[lo]``, where
``P`` holds the prefix sums of the histogram (``P[0] = 0``, length ``n + 1``).

Workloads such as "all ranges" hold about ``n**2 / 2`` queries, so no kind stores
its queries. Each kind knows its size, sums squared query errors straight from the
prefix errors ``e_k = sum_{i<k} (est_i - true_i)`` in closed form or in ``O(n)``
per distinct range length, and builds its bounds only when asked (up to a limit).

Build workloads with the constructor functions (:func:`identity`,
:func:`all_ranges`, :func:`prefix`, :func:`fixed_length`, :func:`length_percent`,
:func:`small_ranges`, :func:`big_ranges`, :func:`windows`, :func:`random_ranges`,
:func:`explicit`). Every invalid workload argument raises
:class:`~dphist.errors.WorkloadError`; an array of prefix sums or prefix errors of
the wrong shape raises :class:`~dphist.errors.ValidationError`.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dphist.errors import ValidationError, WorkloadError

__all__ = [
    "DEFAULT_MAX_QUERIES",
    "AllRanges",
    "Intervals",
    "Prefix",
    "Windows",
    "Workload",
    "all_ranges",
    "big_ranges",
    "explicit",
    "fixed_length",
    "identity",
    "length_percent",
    "prefix",
    "random_ranges",
    "small_ranges",
    "windows",
]

#: Largest number of queries :meth:`Workload.intervals` and :meth:`Workload.answers`
#: build by default (two int64 arrays of this length take 800 MB).
DEFAULT_MAX_QUERIES = 50_000_000

_SMALL_LENGTHS = tuple(range(1, 11))
_BIG_LENGTHS = tuple(range(100, 1001, 100))
_INT64_MAX = np.iinfo(np.int64).max


# --------------------------------------------------------------------------- helpers


def _as_int(value: object, name: str, *, low: int | None = None, high: int | None = None) -> int:
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


def _as_bounds(values: ArrayLike, name: str) -> np.ndarray:
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
        object.__setattr__(self, "n", _as_int(self.n, "n", low=1))

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
        limit = _as_int(max_queries, "max_queries", low=0)
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
        values = sorted({_as_int(v, "each of lengths", low=1) for v in raw})
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
        lo = _as_bounds(self.lo, "lo")
        hi = _as_bounds(self.hi, "hi")
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


# --------------------------------------------------------------------------- constructors


def identity(n: int) -> Windows:
    """Point workload: the ``n`` single bins ``[i, i + 1)``.

    Parameters
    ----------
    n : int
        Domain size.

    Returns
    -------
    Windows
        ``Windows(n, (1,))``.
    """
    return Windows(n, (1,))


def all_ranges(n: int) -> AllRanges:
    """All ``n (n + 1) / 2`` ranges of the domain (the interval workload).

    Parameters
    ----------
    n : int
        Domain size.

    Returns
    -------
    AllRanges
        Evaluated in ``O(n)`` from prefix errors; never materialised unless asked.
    """
    return AllRanges(n)


def prefix(n: int) -> Prefix:
    """The ``n`` prefix ranges ``[0, j)``, ``j = 1..n``.

    Parameters
    ----------
    n : int
        Domain size.

    Returns
    -------
    Prefix
    """
    return Prefix(n)


def fixed_length(n: int, length: int) -> Windows:
    """Every range of one length, at all ``n - length + 1`` positions.

    Parameters
    ----------
    n : int
        Domain size.
    length : int
        Range length, ``1 <= length <= n``.

    Returns
    -------
    Windows
    """
    n = _as_int(n, "n", low=1)
    return Windows(n, (_as_int(length, "length", low=1, high=n),))


def length_percent(n: int, r: float) -> Windows:
    """Every range whose length is ``r`` percent of the domain, at all positions.

    Parameters
    ----------
    n : int
        Domain size.
    r : float
        Percentage in ``(0, 100]``.

    Returns
    -------
    Windows
        Single length ``max(1, round(r * n / 100))``. Python's ``round`` is used, so
        an exact tie goes to the even integer (``n=250, r=1`` gives length 2).
    """
    n = _as_int(n, "n", low=1)
    if isinstance(r, bool | np.bool_) or not isinstance(r, numbers.Real):
        raise WorkloadError(f"r must be a real number (a percentage), got {type(r).__name__}")
    pct = float(r)
    if not (math.isfinite(pct) and 0.0 < pct <= 100.0):
        raise WorkloadError(f"r must be a percentage in (0, 100], got {pct!r}")
    return Windows(n, (max(1, round(pct * n / 100.0)),))


def windows(n: int, lengths: Iterable[int] | int, *, drop_longer: bool = False) -> Windows:
    """Every range of each given length, at all positions.

    Parameters
    ----------
    n : int
        Domain size.
    lengths : int or iterable of int
        Range lengths, each at least 1; duplicates are ignored.
    drop_longer : bool, optional
        If true, silently drop lengths above ``n`` (WorkloadError if none is left);
        if false (default) such a length is an error.

    Returns
    -------
    Windows
    """
    n = _as_int(n, "n", low=1)
    if drop_longer:
        if isinstance(lengths, int | np.integer) and not isinstance(lengths, bool | np.bool_):
            lengths = (lengths,)
        if isinstance(lengths, str | bytes) or not isinstance(lengths, Iterable):
            raise WorkloadError(
                "lengths must be an integer or an iterable of integers, "
                f"got {type(lengths).__name__}"
            )
        given = [_as_int(v, "each of lengths", low=1) for v in lengths]
        kept = [v for v in given if v <= n]
        if given and not kept:
            raise WorkloadError(f"no length in {sorted(set(given))} fits the domain size n={n}")
        lengths = kept
    return Windows(n, lengths)


def small_ranges(n: int) -> Windows:
    """Every range of length 1..10 at all positions (lengths above ``n`` dropped).

    Parameters
    ----------
    n : int
        Domain size.

    Returns
    -------
    Windows
        Lengths ``1..min(10, n)``.
    """
    return windows(n, _SMALL_LENGTHS, drop_longer=True)


def big_ranges(n: int) -> Windows:
    """Every range of length 100, 200, ..., 1000 at all positions.

    Lengths above ``n`` are dropped; a domain with ``n < 100`` has no such range and
    raises WorkloadError.

    Parameters
    ----------
    n : int
        Domain size.

    Returns
    -------
    Windows
    """
    return windows(n, _BIG_LENGTHS, drop_longer=True)


def random_ranges(n: int, count: int, rng: int | np.random.Generator) -> Intervals:
    """``count`` ranges drawn independently and uniformly from all ranges.

    Each query picks two distinct cut points uniformly from ``0..n`` and sorts them
    into ``lo < hi``. Every one of the ``n (n + 1) / 2`` ranges is therefore equally
    likely (probability ``2 / (n (n + 1))`` per draw); a range of length ``L`` comes
    up with probability ``(n - L + 1) / (n (n + 1) / 2)`` and the mean length is
    ``(n + 2) / 3``. Draws are with replacement, so duplicates can occur.

    Parameters
    ----------
    n : int
        Domain size.
    count : int
        Number of queries, at least 1.
    rng : int or numpy.random.Generator
        A non-negative seed, or a generator (which is advanced).

    Returns
    -------
    Intervals

    Notes
    -----
    Time and memory ``O(count)``.
    """
    n = _as_int(n, "n", low=1)
    count = _as_int(count, "count", low=1)
    if isinstance(rng, np.random.Generator):
        gen = rng
    else:
        if isinstance(rng, bool | np.bool_) or not isinstance(rng, int | np.integer):
            raise WorkloadError(
                f"rng must be an integer seed or a numpy.random.Generator, got {type(rng).__name__}"
            )
        gen = np.random.default_rng(_as_int(rng, "rng", low=0))
    first = gen.integers(0, n + 1, size=count, dtype=np.int64)
    second = gen.integers(0, n, size=count, dtype=np.int64)
    second += second >= first  # uniform over the n cut points other than `first`
    return Intervals(n, np.minimum(first, second), np.maximum(first, second))


def explicit(n: int, lo: ArrayLike, hi: ArrayLike) -> Intervals:
    """A workload given by explicit bounds: queries ``[lo[q], hi[q])``.

    Parameters
    ----------
    n : int
        Domain size.
    lo, hi : array_like of int
        Equal-shape 1-D integer arrays with ``0 <= lo < hi <= n``; at least one query.

    Returns
    -------
    Intervals
        Holds read-only int64 copies of the bounds.
    """
    return Intervals(n, lo, hi)
