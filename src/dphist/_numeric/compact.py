"""Compact per-bin arrays: what a method keeps per bin at 10**8 bins.

Group labels take the narrowest integer type that holds them (:func:`label_dtype`:
int32 below 2**31 bins), are written in one pass from group starts (in bin order or
scattered by a sort order) and counted without widening (numpy's ``bincount`` copies
int32 labels to int64). A value per group spread over the bins (a grouping's noise
variance) stays one number per group until it is read (:class:`PerGroup`). Noisy
counts that are whole numbers shrink to the smallest integer type holding them
(:func:`compact_integers`). Every function returns the same values as its plain numpy
form; only the bytes per bin differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .segment import check_starts

__all__ = [
    "PerGroup",
    "compact_integers",
    "label_dtype",
    "label_sizes",
    "labels_from_starts",
    "own_labels",
    "scattered_labels",
]


_INT32_MAX = int(np.iinfo(np.int32).max)


def label_dtype(n: int) -> type:
    """The integer type of the group labels of ``n`` bins: int32 when every label
    (``0..groups-1``, fewer than ``n``) fits, else int64. Half the bytes of int64 at
    10**8 bins; labels are only compared and used as indices, never multiplied."""
    return np.int32 if int(n) <= _INT32_MAX else np.int64


def labels_from_starts(starts: npt.ArrayLike, n: int, dtype: type | None = None) -> np.ndarray:
    """Group label (0, 1, ...) of each of the ``n`` bins, from the group start indices,
    written in one pass (``dtype``: :func:`label_dtype` of ``n`` unless given)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValidationError(f"n must be a positive integer; got {n!r}")
    dtype = label_dtype(n) if dtype is None else dtype
    s = check_starts(starts, int(n))
    if s.size > np.iinfo(dtype).max:
        raise ValidationError(f"{s.size} groups do not fit {np.dtype(dtype).name} labels")
    out = np.empty(int(n), dtype=dtype)
    _write_labels(s, np.empty(0, dtype=np.int64), out)
    return out


def scattered_labels(starts: npt.ArrayLike, order: np.ndarray) -> np.ndarray:
    """Group labels in the original bin order of groups found on a sorted domain:
    ``out[order[k]]`` is the group of position ``k`` (``starts``: the groups' first
    positions), written in one pass without the working-order labels."""
    order = np.asarray(order)
    if order.ndim != 1 or order.size < 1 or not np.issubdtype(order.dtype, np.integer):
        raise ValidationError("order must be a non-empty 1-D integer permutation")
    s = check_starts(starts, int(order.size))
    out = np.empty(order.size, dtype=label_dtype(order.size))
    _write_labels(s, order, out)
    return out


@njit(cache=True)
def _write_labels(starts, order, out):  # pragma: no cover - compiled
    """Position ``i`` of the groups starting at ``starts`` gets its group's number, in
    ``out[order[i]]`` (``out[i]`` when ``order`` is empty)."""
    k = 0
    scatter = order.size > 0
    for i in range(out.size):
        if k + 1 < starts.size and starts[k + 1] == i:
            k += 1
        out[order[i] if scatter else i] = k


def label_sizes(labels: np.ndarray) -> np.ndarray:
    """``np.bincount(labels)`` (int64) of non-negative integer labels in their own type:
    numpy's bincount copies labels other than int64 to int64 first."""
    labels = np.asarray(labels)
    if labels.dtype != np.int32:
        return np.bincount(labels).astype(np.int64, copy=False)
    if labels.size and labels.min() < 0:
        raise ValidationError("labels must be non-negative")
    return _count_labels(labels, int(labels.max()) + 1 if labels.size else 0)


@njit(cache=True)
def _count_labels(labels, groups):  # pragma: no cover - compiled
    out = np.zeros(groups, dtype=np.int64)
    for i in range(labels.size):
        out[labels[i]] += 1
    return out


def own_labels(labels: np.ndarray) -> np.ndarray:
    """Group labels as a contiguous int32 or int64 array: labels of either type are kept
    (no int64 copy of int32 labels), anything else becomes int64."""
    arr = np.asarray(labels)
    if arr.dtype in (np.int32, np.int64):
        return np.ascontiguousarray(arr)
    return np.ascontiguousarray(arr, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class PerGroup:
    """``values[labels]`` not yet built: ``values[g]`` is group ``g``'s number and
    ``labels[i]`` the group of bin ``i`` (the labels are shared, not copied). A
    grouping's per-bin noise variance kept so costs the groups' numbers, not 8 bytes
    per bin."""

    values: np.ndarray
    labels: np.ndarray

    def per_bin(self) -> np.ndarray:
        """The number of every bin's group: a new read-only float64 array."""
        out = np.asarray(self.values, dtype=np.float64)[self.labels]
        out.flags.writeable = False
        return out


def compact_integers(values: np.ndarray) -> np.ndarray:
    """Whole-numbered float ``values`` in the smallest signed integer type holding them
    all (int8, int16 or int32), else ``values`` itself: released noisy counts kept for
    the error bars take 1-4 bytes per bin, not 8 (their float sums are the same)."""
    if values.dtype != np.float64 or values.ndim != 1 or values.size == 0:
        return values
    lo, hi, whole = _integer_range(values)
    if not whole:
        return values
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return values.astype(dtype)
    return values


@njit(cache=True)
def _integer_range(values):  # pragma: no cover - compiled
    """``(min, max, whether every value is a whole number)`` of a non-empty float array
    in one pass, no temporary arrays (NaN and infinities are not whole)."""
    lo = values[0]
    hi = values[0]
    whole = True
    for i in range(values.size):
        v = values[i]
        if not (v == np.floor(v) and np.isfinite(v)):
            whole = False
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    return lo, hi, whole
