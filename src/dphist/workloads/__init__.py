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
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from dphist.errors import WorkloadError

from .kinds import (
    BIG_LENGTHS,
    DEFAULT_MAX_QUERIES,
    SMALL_LENGTHS,
    AllRanges,
    Intervals,
    Prefix,
    Windows,
    Workload,
    as_int,
)
from .rectangles import (
    Rectangles,
    RectangleWorkload,
    Windows2D,
    marginals,
    random_rectangles,
    rectangles,
    rectangles_of_size,
)

__all__ = [
    "DEFAULT_MAX_QUERIES",
    "AllRanges",
    "Intervals",
    "Prefix",
    "RectangleWorkload",
    "Rectangles",
    "Windows",
    "Windows2D",
    "Workload",
    "all_ranges",
    "big_ranges",
    "explicit",
    "fixed_length",
    "identity",
    "length_percent",
    "marginals",
    "prefix",
    "random_ranges",
    "random_rectangles",
    "rectangles",
    "rectangles_of_size",
    "small_ranges",
    "windows",
]


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
    n = as_int(n, "n", low=1)
    return Windows(n, (as_int(length, "length", low=1, high=n),))


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
    n = as_int(n, "n", low=1)
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
    n = as_int(n, "n", low=1)
    if drop_longer:
        if isinstance(lengths, int | np.integer) and not isinstance(lengths, bool | np.bool_):
            lengths = (lengths,)
        if isinstance(lengths, str | bytes) or not isinstance(lengths, Iterable):
            raise WorkloadError(
                "lengths must be an integer or an iterable of integers, "
                f"got {type(lengths).__name__}"
            )
        given = [as_int(v, "each of lengths", low=1) for v in lengths]
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
    return windows(n, SMALL_LENGTHS, drop_longer=True)


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
    return windows(n, BIG_LENGTHS, drop_longer=True)


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
    n = as_int(n, "n", low=1)
    count = as_int(count, "count", low=1)
    if isinstance(rng, np.random.Generator):
        gen = rng
    else:
        if isinstance(rng, bool | np.bool_) or not isinstance(rng, int | np.integer):
            raise WorkloadError(
                f"rng must be an integer seed or a numpy.random.Generator, got {type(rng).__name__}"
            )
        gen = np.random.default_rng(as_int(rng, "rng", low=0))
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
