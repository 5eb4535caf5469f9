"""Input checks shared by the numeric modules: real and count vectors, real, positive
and whole numbers, bounded integers, each refused with a :class:`ValidationError` that
names the argument."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError

__all__ = [
    "count_vector", "first_nonfinite", "positive_int", "positive_number", "real_number",
    "real_vector", "whole_number",
]  # fmt: skip


@njit(cache=True)
def first_nonfinite(y):
    """Index of the first NaN or infinite entry of a float array, -1 if none (no copy)."""
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return i
    return -1


def real_vector(y: npt.ArrayLike, name: str, *, allow_empty: bool = True) -> np.ndarray:
    """``y`` as a fresh-or-shared contiguous float64 1-D array of finite values."""
    if isinstance(y, str | bytes):
        raise ValidationError(f"{name} must be a 1-D array of numbers, not a string")
    try:
        arr = np.asarray(y)
    except Exception as exc:  # ragged nested sequences and the like
        raise ValidationError(f"{name} must be a 1-D array of numbers ({exc})") from None
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValidationError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D; got an array with {arr.ndim} dimensions")
    if arr.size == 0 and not allow_empty:
        raise ValidationError(f"{name} is empty; at least one bin is needed")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if first_nonfinite(arr) >= 0:
        raise ValidationError(f"{name} contains NaN or infinite values")
    return arr


def count_vector(values: npt.ArrayLike, name: str) -> np.ndarray:
    """Non-negative integer counts (integer dtype, or floats with integral values)."""
    if isinstance(values, str | bytes):
        raise ValidationError(f"{name} must be a 1-D array of integers, not a string")
    try:
        arr = np.asarray(values)
    except Exception as exc:
        raise ValidationError(f"{name} must be a 1-D array of integers ({exc})") from None
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D; got an array with {arr.ndim} dimensions")
    if arr.dtype == np.bool_:
        raise ValidationError(f"{name} must hold integers, not booleans")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise ValidationError(f"{name} must hold whole numbers")
    elif not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError(f"{name} must hold integers; got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValidationError(f"{name} must be non-negative")
    if arr.max() >= 2**62:
        raise ValidationError(f"{name} holds values too large for int64 arithmetic")
    return arr.astype(np.int64)


def real_number(value: object, name: str) -> float:
    """A real number, not NaN (infinities allowed: open bounds)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise ValidationError(f"{name} must be a real number; got {type(value).__name__}")
    v = float(value)
    if math.isnan(v):
        raise ValidationError(f"{name} must not be NaN")
    return v


def positive_number(value: object, name: str) -> float:
    """A finite real number above zero."""
    v = real_number(value, name)
    if not (math.isfinite(v) and v > 0.0):
        raise ValidationError(f"{name} must be a finite number > 0; got {v!r}")
    return v


def whole_number(value: object, name: str) -> int:
    """An integer, or a real number with an integral value."""
    if isinstance(value, bool | np.bool_):
        raise ValidationError(f"{name} must be an integer, not a boolean")
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real) and float(value).is_integer():
        return int(value)
    raise ValidationError(f"{name} must be an integer; got {value!r}")


def positive_int(value: object, name: str, minimum: int) -> int:
    """An integer (not a boolean) of at least ``minimum``."""
    if type(value) is int and value >= minimum:  # the usual case: no abstract-class check
        return value
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValidationError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValidationError(f"{name} must be at least {minimum}, got {value}")
    return value
