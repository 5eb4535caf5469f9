"""The protected true counts: validated once, then reachable only by kernel primitives.

:func:`protect` checks the user's counts and seals a private copy in a
:class:`ProtectedCounts`. Its ``repr`` shows only the public domain size; it cannot
be pickled or copied. Code outside ``dphist._kernel`` never touches the sealed
array (a test walks the source to enforce this).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import DomainError, InputTypeError

__all__ = ["ProtectedCounts", "protect"]

# Largest total we accept: int64 sums of any subset, plus noise, cannot overflow.
_MAX_TOTAL = 1 << 62


def _as_count_array(counts: object) -> np.ndarray:
    if isinstance(counts, ProtectedCounts):
        raise InputTypeError("counts are already protected; pass the original array")
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


def protect(counts: object) -> ProtectedCounts:
    """Validate bin counts and seal them.

    Counts must form a non-empty 1-D array of finite, non-negative integers (floats
    holding whole numbers are accepted). Errors name what is wrong and where, never
    a value.
    """
    arr = _as_count_array(counts)
    if arr.ndim != 1:
        raise DomainError(f"counts must be 1-D; got an array of shape {arr.shape}")
    if arr.size == 0:
        raise DomainError("counts is empty: a histogram needs at least one bin")
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
        if np.abs(arr).max() >= 2.0**53:
            raise DomainError("counts given as floats must be below 2**53; pass int64 instead")
    neg = arr < 0
    if neg.any():
        raise DomainError(
            f"counts must be non-negative; {int(neg.sum())} entries are negative "
            f"(first at index {int(np.argmax(neg))})"
        )
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) >= _MAX_TOTAL:
        raise DomainError("counts are too large: the total must stay below 2**62")
    values = arr.astype(np.int64)
    if (
        float(values.max()) * values.size >= _MAX_TOTAL
        and int(values.sum(dtype=object)) >= _MAX_TOTAL
    ):
        raise DomainError("counts are too large: the total must stay below 2**62")
    return ProtectedCounts(values)


class ProtectedCounts:
    """Sealed true counts; the public part is the number of bins ``n``."""

    __slots__ = ("_true_counts",)

    def __init__(self, values: np.ndarray):
        sealed = np.array(values, dtype=np.int64, copy=True)
        sealed.flags.writeable = False
        self._true_counts = sealed

    @property
    def n(self) -> int:
        return int(self._true_counts.size)

    def _read(self) -> np.ndarray:
        return self._true_counts

    def __repr__(self) -> str:
        return f"ProtectedCounts(n={self.n})"

    def __reduce__(self):
        raise TypeError("protected counts cannot be pickled or copied")

    def __copy__(self):
        raise TypeError("protected counts cannot be pickled or copied")

    def __deepcopy__(self, memo):
        raise TypeError("protected counts cannot be pickled or copied")
