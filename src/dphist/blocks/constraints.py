"""Declarative checks of block settings, so that every message names the setting.

A block declares ``constraints = rules(noise=Options("certified", "reference"), ...)``
and :class:`~dphist.blocks.base.Block` checks each field against its constraint when
the block is built (before any data is read). The field names are the method
parameters users pass (``fanout``, ``noise``, ``k``, ...), so messages name them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .._kernel import as_fraction
from ..errors import InputTypeError, ValidationError

__all__ = ["AnyOf", "Constraint", "Interval", "Options", "Share", "check", "rules"]


class Constraint:
    """A rule one setting must satisfy; :meth:`describe` completes "must be ..."."""

    def accepts(self, value: object) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values."""

    choices: tuple[object, ...]

    def __init__(self, *choices: object):
        object.__setattr__(self, "choices", tuple(choices))

    def accepts(self, value: object) -> bool:
        return any(value == c and type(value) is type(c) for c in self.choices)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of ``kind`` (int or float) in ``[low, high]`` (None: unbounded); floats
    must be finite; booleans are never numbers here."""

    kind: type
    low: float | None = None
    high: float | None = None

    def accepts(self, value: object) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int and not isinstance(value, numbers.Integral):
            return False
        if self.kind is float and not (
            isinstance(value, numbers.Real) and math.isfinite(float(value))
        ):
            return False
        low_ok = self.low is None or value >= self.low
        return low_ok and (self.high is None or value <= self.high)

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a finite number"
        if self.low is not None and self.high is not None:
            return f"{what} in [{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{what} >= {self.low:g}"
        return what if self.high is None else f"{what} <= {self.high:g}"


@dataclass(frozen=True)
class Share(Constraint):
    """A share of a budget strictly between 0 and 1, read exactly as a decimal (a number
    or a decimal string, as block shares are)."""

    def accepts(self, value: object) -> bool:
        try:
            return 0 < as_fraction(value, name="share") < 1
        except (ValidationError, InputTypeError, TypeError, ValueError):
            return False

    def describe(self) -> str:
        return "a share in (0, 1)"


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Any of several constraints (e.g. an integer >= 2 or the option ``"hb"``)."""

    parts: tuple[Constraint, ...]

    def __init__(self, *parts: Constraint):
        object.__setattr__(self, "parts", tuple(parts))

    def accepts(self, value: object) -> bool:
        return any(p.accepts(value) for p in self.parts)

    def describe(self) -> str:
        return " or ".join(p.describe() for p in self.parts)


def check(name: str, value: object, constraint: Constraint, *, optional: bool = False) -> None:
    """Raise :class:`ValidationError` naming ``name`` unless ``value`` satisfies it."""
    if optional and value is None:
        return
    if not constraint.accepts(value):
        raise ValidationError(f"{name} must be {constraint.describe()}; got {value!r}")


def rules(**constraints: Constraint) -> Mapping[str, Constraint]:
    """A block's ``constraints``: one read-only rule per setting."""
    return MappingProxyType(constraints)
