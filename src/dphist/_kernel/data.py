"""The protected true counts: validated once, then reachable only by kernel primitives.

:func:`protect` checks the user's counts and seals a private copy in a
:class:`ProtectedCounts`. Its ``repr`` shows only the public facts (the number of
bins and the privacy unit's record bound); it cannot be pickled or copied. Code
outside ``dphist._kernel`` never touches the sealed array (a test walks the source to
enforce this).

Counts are clamped at the public cap :func:`count_cap` (``floor(2**53 / n)``) before
they are sealed, so every count, total and partial sum is an integer exact in int64
and in float64 whatever the data: no method refuses, overflows or loses its noise to
rounding because a count is huge. Clamping each count at a public constant is
1-stable, so neighbours stay neighbours.
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache

import numpy as np

from .._jit import njit
from ..errors import DomainError, InputTypeError, InternalError, ValidationError

__all__ = [
    "MAX_TOTAL",
    "ProtectedCounts",
    "count_cap",
    "is_grid",
    "protect",
    "protect_grid",
    "records_per_unit",
]

MAX_TOTAL = 1 << 53
"""Largest total the sealed counts can reach: integers up to it are exact in float64."""

_FRAME_LIBRARIES = ("pandas", "polars", "pyarrow")
_RAW_RECORDS_HINT = (
    "counts must be a vector of bin counts in the public bin order; to count raw records "
    "use dh.histogram(values, edges=... | domain=... | categories=..., epsilon=..., "
    "method=...), and for a Series already in the public bin order pass .to_numpy()"
)


def records_per_unit(max_records: object) -> int:
    """The public bound on one privacy unit's records, checked: an integer >= 1."""
    if type(max_records) is int and max_records >= 1:
        return max_records
    if isinstance(max_records, bool) or not isinstance(max_records, numbers.Integral):
        raise InputTypeError(f"max_records must be an integer >= 1; got {max_records!r}")
    if max_records < 1:
        raise ValidationError(f"max_records must be >= 1; got {max_records!r}")
    return int(max_records)


def count_cap(n: int) -> int:
    """The public per-bin cap of a histogram of ``n`` bins: ``floor(2**53 / n)``.

    With every count at most this, the total and every partial sum stay at most
    ``2**53``, so int64 arithmetic never overflows and float64 holds them exactly.
    """
    return MAX_TOTAL // max(int(n), 1)


def _refuse_labelled(counts: object) -> None:
    """Refuse, by type and index type only, tables and labelled Series: their order
    is not known to be the public bin order (``value_counts()`` sorts by frequency)."""
    kind = type(counts).__name__
    if type(counts).__module__.split(".")[0] not in _FRAME_LIBRARIES:
        return
    if kind in ("DataFrame", "LazyFrame", "Table", "RecordBatch"):
        raise InputTypeError(f"counts is a {kind}; {_RAW_RECORDS_HINT}")
    index = getattr(counts, "index", None)
    if index is not None:  # pandas: only the default 0..n-1 index is the bin order
        default = type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1
        if not default:
            raise InputTypeError(
                f"counts is a Series indexed by labels ({type(index).__name__}); "
                + _RAW_RECORDS_HINT
            )


def _as_count_array(counts: object) -> np.ndarray:
    if type(counts) is np.ndarray and counts.dtype.kind in "iuf":  # the common case
        return counts
    if isinstance(counts, ProtectedCounts):
        raise InputTypeError("counts are already protected; pass the original array")
    _refuse_labelled(counts)
    if isinstance(counts, str | bytes | numbers.Number):
        raise InputTypeError(
            f"counts must be a 1-D array of bin counts; got {type(counts).__name__}"
        )
    try:
        arr = np.asarray(counts)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"counts could not be read as an array: {exc}") from None
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise InputTypeError("counts must contain numbers only") from None
    if arr.dtype.kind == "b":
        raise InputTypeError("counts must be integers, not booleans")
    if arr.dtype.kind not in "iuf":
        raise InputTypeError(f"counts must be numeric; got dtype {arr.dtype}")
    return arr


def protect(counts: object, *, max_records: int = 1) -> ProtectedCounts:
    """Validate bin counts, clamp them at the public cap and seal them.

    Counts must form a non-empty 1-D array of finite, non-negative whole numbers
    (floats holding whole numbers are accepted); anything else is not a histogram and
    is refused, with messages that name what is wrong and where, never a value.
    Counts above :func:`count_cap` are clamped to it. ``max_records`` is the public
    bound on the records one privacy unit contributes (checked by the caller); the
    kernel scales every sensitivity by it.
    """
    arr = _as_count_array(counts)
    if arr.ndim != 1:
        raise DomainError(f"counts must be 1-D; got an array of shape {arr.shape}")
    if arr.size == 0:
        raise DomainError("counts is empty: a histogram needs at least one bin")
    k = records_per_unit(max_records)
    fresh, total = _checked_clamped(arr, count_cap(arr.size))
    return ProtectedCounts.seal(fresh, k, total=total)


def _check_values(arr: np.ndarray) -> None:
    """Refuse counts that are not finite, non-negative whole numbers (naming what is
    wrong and where, never a value)."""
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise DomainError(
                f"counts must be finite; {int(bad.sum())} entries are NaN or infinite "
                f"(first at index {int(np.argmax(bad))})"
            )
        frac = arr != np.floor(arr)
        if frac.any():
            raise DomainError(
                f"counts must be whole numbers; {int(frac.sum())} entries have a fractional "
                f"part (first at index {int(np.argmax(frac))})"
            )
    if arr.dtype.kind != "u" and arr.min() < 0:  # one reduction, no temporary array
        neg = arr < 0
        raise DomainError(
            f"counts must be non-negative; {int(neg.sum())} entries are negative "
            f"(first at index {int(np.argmax(neg))})"
        )


def is_grid(counts: object) -> bool:
    """True when ``counts`` is a 2-D table of counts (an array of rank 2, a list of rows,
    or a DataFrame, which the kernel refuses with a hint)."""
    if type(counts).__name__ == "DataFrame":
        return True
    if isinstance(counts, np.ndarray):
        return counts.ndim == 2
    rows = isinstance(counts, list | tuple) and len(counts) > 0
    return rows and isinstance(counts[0], list | tuple | np.ndarray)


def protect_grid(counts: object, *, max_records: int = 1) -> ProtectedCounts:
    """:func:`protect` for a two-dimensional histogram: a ``rows x cols`` array of counts
    (row ``i``, column ``j`` is the cell of the ``i``-th bin of the first attribute and
    the ``j``-th of the second). The cells are sealed in row-major order with the public
    ``shape``; the cap is that of ``rows * cols`` bins. Sensitivities are those of the
    flattened vector: one record changes one cell by one.
    """
    if type(counts).__name__ == "DataFrame":
        raise InputTypeError(
            "counts is a DataFrame: its rows and columns are in the table's order, not known "
            "to be the public bin order; pass .to_numpy() when they are, or count raw records "
            "with dh.histogram2d(x, y, ...)"
        )
    arr = _as_count_array(counts)
    if arr.ndim != 2:
        raise DomainError(f"a 2-D histogram is a rows x cols array; got shape {arr.shape}")
    if arr.size == 0:
        raise DomainError(f"counts of shape {arr.shape} is empty: each axis needs a bin")
    flat = np.ascontiguousarray(arr).reshape(-1)
    k = records_per_unit(max_records)
    shape = (int(arr.shape[0]), int(arr.shape[1]))
    fresh, total = _checked_clamped(flat, count_cap(flat.size))
    return ProtectedCounts.seal(fresh, k, shape, total=total)


def _checked_clamped(arr: np.ndarray, cap: int) -> tuple[np.ndarray, int | None]:
    """The counts checked (:func:`_check_values`) and clamped (:func:`_clamped`), and
    their total when it came for free. int64 counts, the usual input, take one compiled
    pass that copies, clamps, sums and finds the smallest count (numpy's two passes
    take about four times as long, and a total query a third)."""
    if arr.dtype == np.int64 and arr.ndim == 1 and arr.flags.c_contiguous:
        out = np.empty(arr.size, dtype=np.int64)
        low, total = _clamp_int64(arr, cap, out)
        if low >= 0:
            return out, int(total)
    _check_values(arr)  # raises, naming what is wrong (or checks other dtypes)
    return _clamped(arr, cap), None


@njit(cache=True)
def _clamp_int64(arr, cap, out):  # pragma: no cover - compiled
    """``out[:] = min(arr, cap)``; returns ``min(arr.min(), 0)`` and ``out.sum()`` (at
    most ``n cap <= 2**53``: no overflow)."""
    low = 0
    total = 0
    for i in range(arr.shape[0]):
        v = arr[i]
        low = min(low, v)
        c = min(v, cap)
        out[i] = c
        total += c
    return low, total


def _clamped(arr: np.ndarray, cap: int) -> np.ndarray:
    """``min(arr, cap)`` as a new int64 array, exact for every dtype (cap <= 2**53 is exact
    in float64 and rounding to float is monotone, so a float at or above cap stays
    there). One pass, one new array: the input is never copied on the way."""
    out = np.empty(arr.shape, dtype=np.int64)
    if arr.dtype.kind == "f":
        np.minimum(arr, float(cap), out=out, casting="unsafe")  # whole numbers: exact
    elif cap > _int_max(arr.dtype):
        out[...] = arr  # a narrow integer type never reaches the cap
    else:
        np.minimum(arr, arr.dtype.type(cap), out=out, casting="unsafe")
    return out


@lru_cache(maxsize=16)
def _int_max(dtype: np.dtype) -> int:
    return int(np.iinfo(dtype).max)


class ProtectedCounts:
    """Sealed true counts; public: the number of bins ``n``, the ``shape`` of the domain
    (``(n,)``, or ``(rows, cols)`` for a 2-D histogram sealed in row-major order) and
    ``max_records``, the most records one privacy unit contributes (1 when the unit is
    a record)."""

    __slots__ = ("_sum", "_true_counts", "max_records", "n", "shape")

    def __init__(self, values: np.ndarray, max_records: int = 1):
        sealed = np.array(values, dtype=np.int64, copy=True)
        sealed.flags.writeable = False
        self._true_counts = sealed
        self._sum = None
        self.max_records = int(max_records)
        self.n = int(sealed.size)
        self.shape = (self.n,)

    @classmethod
    def seal(
        cls,
        fresh: np.ndarray,
        max_records: int = 1,
        shape: tuple[int, ...] | None = None,
        *,
        total: int | None = None,
    ) -> ProtectedCounts:
        """Seal an int64 array nobody else holds, without copying it (``protect``'s
        clamped array: at 10**8 bins a copy is 800 MB); ``total`` is its sum when the
        caller has it already."""
        obj = cls.__new__(cls)
        fresh.setflags(write=False)
        obj._true_counts = fresh
        obj._sum = total
        obj.max_records = int(max_records)
        obj.n = fresh.size
        obj.shape = (obj.n,)
        if shape is not None:
            obj.shape = tuple(int(s) for s in shape)
            if math.prod(obj.shape) != fresh.size:
                raise InternalError("the shape does not hold the sealed cells")
        return obj

    def reordered(self, order: np.ndarray) -> ProtectedCounts:
        """The same counts as a 1-D histogram whose bin ``k`` is cell ``order[k]`` (a public
        permutation, e.g. the Hilbert order of a 2-D grid), sealed. A permutation maps
        neighbours to neighbours, so every guarantee carries over."""
        perm = np.asarray(order)
        if perm.shape != (self.n,) or not np.array_equal(np.sort(perm), np.arange(self.n)):
            raise InternalError("a reordering must be a permutation of the bins")
        return ProtectedCounts.seal(self._true_counts[perm], self.max_records, total=self._sum)

    def _read(self) -> np.ndarray:
        return self._true_counts

    def _total(self) -> int:
        """The sum of the sealed counts (exact: at most 2**53), summed once."""
        if self._sum is None:
            self._sum = int(self._true_counts.sum())
        return self._sum

    def __repr__(self) -> str:
        dims = "" if len(self.shape) == 1 else f", shape={self.shape}"
        return f"ProtectedCounts(n={self.n}{dims}, max_records={self.max_records})"

    def __reduce__(self):
        raise TypeError("protected counts cannot be pickled or copied")

    def __copy__(self):
        raise TypeError("protected counts cannot be pickled or copied")

    def __deepcopy__(self, memo):
        raise TypeError("protected counts cannot be pickled or copied")
