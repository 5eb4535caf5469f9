"""Exact rationals for budgets, without numpy: reading an epsilon as typed, printing one.

One reading of every epsilon, for the kernel's accountant (``_kernel.budget``
re-exports it) and for what must start fast and never needs the kernel: privacy
definitions, the budget store and the ``dphist budget`` commands.
"""

from __future__ import annotations

import math
import numbers
import sys
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

from .errors import InputTypeError, ValidationError

__all__ = ["MAX_EPSILON", "as_fraction", "exact_text", "validate_epsilon"]

_MAX_EPSILON_INT = 10**30
MAX_EPSILON = Fraction(_MAX_EPSILON_INT)


def _is_bool(value: object) -> bool:
    numpy = sys.modules.get("numpy")  # a numpy boolean exists only once numpy is loaded
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


def as_fraction(value: object, *, name: str) -> Fraction:
    """Read a number as an exact rational through its decimal form (floats via their
    shortest round-tripping ``repr``, so 0.1 is 1/10); booleans and non-finite values
    are refused."""
    kind = type(value)
    if kind is Fraction:
        return value
    if kind is float and math.isfinite(value):
        return _shortest_decimal(value)
    if _is_bool(value):
        raise InputTypeError(f"{name} must be a number; got a boolean ({value!r})")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValidationError(f"{name} must be finite; got {value!r}")
        return Fraction(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise ValidationError(f"{name} must be finite; got {f!r}")
        return _shortest_decimal(f)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ValidationError(f"{name} must be a number; got the string {value!r}") from None
    raise InputTypeError(f"{name} must be a number; got {type(value).__name__}")


@lru_cache(maxsize=1024)
def _shortest_decimal(f: float) -> Fraction:
    return Fraction(repr(f))


def validate_epsilon(value: object, *, name: str = "epsilon") -> Fraction:
    """Return epsilon as an exact positive rational, or raise naming the argument."""
    if value is None:
        raise InputTypeError(f"{name} is required (a positive number such as 0.5); got None")
    eps = as_fraction(value, name=name)
    num, den = eps.as_integer_ratio()  # one call (a Fraction's numerator is a property)
    if num <= 0:
        raise ValidationError(f"{name} must be > 0; got {value!r}")
    if num > _MAX_EPSILON_INT * den:  # eps > MAX_EPSILON, on integers
        shown = repr(value) if len(repr(value)) <= 30 else "a larger value"
        raise ValidationError(
            f"{name} must be at most 1e30 (larger values add no noise at all); got {shown}"
        )
    return eps


def exact_text(q: Fraction) -> str:
    """A short exact rendering of a rational: decimal when it terminates, else a/b."""
    d = q.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:
        with localcontext() as ctx:
            ctx.prec = 80
            text = format(Decimal(q.numerator) / Decimal(q.denominator), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{q.numerator}/{q.denominator}"
