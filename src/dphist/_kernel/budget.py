"""Exact privacy accounting: epsilon as a rational, declared shares, a capped ledger.

Every epsilon a user types is read through its shortest decimal form, so ``0.1`` is
exactly 1/10 and ten charges of 0.1 fit exactly in a cap of 1.0 (``Fraction(0.1)``
would be slightly above 1/10 and the tenth would be refused). Shares of a method's
epsilon are resolved once, before any data is read; the one ``REST`` share is
computed by exact subtraction so the parts add up to epsilon exactly.

Accountants nest: a session's accountant caps the whole session, a release's caps
one publication, a block's slice caps one block (a level whose cap is all of an
untouched parent's is that parent: :meth:`Accountant.part`). A charge is checked
against every level and committed to all of them atomically, *before* the caller
reads any data.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..errors import BudgetExceededError, BudgetPlanError, InputTypeError, ValidationError

__all__ = [
    "MAX_EPSILON",
    "REST",
    "Accountant",
    "Charge",
    "Primitive",
    "as_fraction",
    "exact_text",
    "resolve_shares",
    "validate_epsilon",
]


def as_fraction(value: object, *, name: str) -> Fraction:
    """Read a number as an exact rational through its decimal form.

    Floats are read via ``repr`` (their shortest round-tripping decimal), so the
    rational is the number the user wrote. Integers, ``Fraction``, ``Decimal`` and
    decimal strings are exact already. Booleans and non-finite values are refused.
    """
    kind = type(value)
    if kind is Fraction:
        return value
    if kind is float and math.isfinite(value):
        return _shortest_decimal(value)
    if isinstance(value, bool | np.bool_):
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
    """The rational a float's shortest round-tripping decimal names (cached: the same
    few epsilons and shares are read on every release)."""
    return Fraction(repr(f))


_ZERO = Fraction(0)
_MAX_EPSILON_INT = 10**30
MAX_EPSILON = Fraction(_MAX_EPSILON_INT)
"""Largest epsilon accepted: beyond it the noise is far below one count and methods'
float arithmetic (``1/epsilon**2`` and the like) would leave the float range."""


def validate_epsilon(value: object, *, name: str = "epsilon") -> Fraction:
    """Return epsilon as an exact positive rational, or raise naming the argument."""
    if value is None:
        raise InputTypeError(f"{name} is required (a positive number such as 0.5); got None")
    eps = as_fraction(value, name=name)
    if eps.numerator <= 0:
        raise ValidationError(f"{name} must be > 0; got {value!r}")
    if eps.numerator > _MAX_EPSILON_INT * eps.denominator:  # eps > MAX_EPSILON, on integers
        shown = repr(value) if len(repr(value)) <= 30 else "a larger value"
        raise ValidationError(
            f"{name} must be at most 1e30 (larger values add no noise at all); got {shown}"
        )
    return eps


class _Rest:
    """Sentinel share: whatever the other blocks of a method leave."""

    _instance: _Rest | None = None

    def __new__(cls) -> _Rest:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REST"

    def __reduce__(self) -> str:
        return "REST"


REST = _Rest()


def as_share(value: object, *, name: str) -> Fraction:
    """An exact share of a budget in [0, 1]; :class:`BudgetPlanError` otherwise."""
    try:
        q = as_fraction(value, name=name)
    except (ValidationError, InputTypeError) as exc:
        raise BudgetPlanError(str(exc)) from None
    if not 0 <= q <= 1:
        raise BudgetPlanError(f"{name} must lie in [0, 1]; got {value!r}")
    return q


def resolve_shares(epsilon: Fraction, shares: Mapping[str, object]) -> dict[str, Fraction]:
    """Turn declared shares of ``epsilon`` into exact per-block budgets.

    Each share is a number in [0, 1] or ``REST``; fixed shares must sum to at most 1,
    at most one block takes ``REST`` and it must receive a positive amount.
    Raises :class:`BudgetPlanError` naming the offending block otherwise.
    """
    if len(shares) == 1 and next(iter(shares.values())) is REST:
        return {block: epsilon for block in shares}  # one block takes it all
    fixed: dict[str, Fraction] = {}
    rest: list[str] = []
    for block, share in shares.items():
        if share is REST:
            rest.append(block)
            continue
        fixed[block] = as_share(share, name=f"share of block {block!r}")
    total = sum(fixed.values(), Fraction(0))
    if total > 1:
        parts = ", ".join(f"{b}={float(q):g}" for b, q in fixed.items())
        raise BudgetPlanError(f"budget shares sum to {float(total):.6g} > 1 ({parts})")
    if len(rest) > 1:
        raise BudgetPlanError(f"only one block may take the REST share; got {rest}")
    out = {block: epsilon * q for block, q in fixed.items()}
    if rest:
        if total == 1:
            raise BudgetPlanError(
                f"block {rest[0]!r} takes the REST share but the other shares already sum to 1"
            )
        out[rest[0]] = epsilon - epsilon * total
    return {block: out[block] for block in shares}


class Primitive(StrEnum):
    """The kernel's primitives, as named in every ledger.

    Measurements release one noisy value per value they draw (at most the charge's
    ``size``); selections draw noise on candidate scores and release only a choice.
    """

    DISCRETE_LAPLACE = "discrete_laplace"
    DISCRETE_GAUSSIAN = "discrete_gaussian"
    LATTICE_LAPLACE = "lattice_laplace"
    LATTICE_GAUSSIAN = "lattice_gaussian"
    NOISY_PARTITION = "noisy_partition"
    NOISY_MIN = "noisy_min"
    EXPONENTIAL_MIN = "exponential_min"
    BIASED_SPLIT = "biased_split"

    @property
    def measures(self) -> bool:
        """True for a measurement, False for a selection."""
        return self in (
            Primitive.DISCRETE_LAPLACE,
            Primitive.DISCRETE_GAUSSIAN,
            Primitive.LATTICE_LAPLACE,
            Primitive.LATTICE_GAUSSIAN,
        )


@dataclass(frozen=True)
class Charge:
    """One entry of a ledger: a noisy measurement and what it cost.

    ``scale`` is the noise scale actually used, an exact rational at least
    ``sensitivity / epsilon``; ``size`` is the number of noisy values released.
    ``certified`` is False only for reference-mode primitives that reproduce a
    published noise scale known not to give epsilon-DP. Under zero-concentrated DP
    (``unit="rho"``) ``epsilon`` holds the charge's rho; for the discrete and lattice
    Gaussian ``sensitivity`` is the squared L2 sensitivity and ``scale`` the variance,
    with ``rho >= sensitivity / (2 scale)``; a selection's ``scale`` is the one its
    choices use at the epsilon the rho buys.
    """

    block: str
    primitive: Primitive
    epsilon: Fraction
    sensitivity: Fraction
    scale: Fraction
    size: int
    query: str
    certified: bool = True
    unit: str = "epsilon"

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form; exact rationals are kept as strings beside a float."""
        return {
            "block": self.block,
            "primitive": str(self.primitive),
            "epsilon": float(self.epsilon),
            "epsilon_exact": str(self.epsilon),
            "sensitivity": float(self.sensitivity),
            "scale": float(self.scale),
            "size": self.size,
            "query": self.query,
            "certified": self.certified,
            "unit": self.unit,
        }


class Accountant:
    """A ledger with a hard cap; children draw on their parent's cap too.

    ``charge`` checks the request against this accountant and every ancestor and
    commits it to all of them under one lock, so concurrent requests can never take
    any level above its cap. Charges are never rolled back: a mechanism that fails
    after reading the data has still spent its budget. Each level keeps what it spent
    as an exact pair of integers, so a charge adds and compares integers only.
    """

    __slots__ = ("_cd", "_charges", "_cn", "_levels", "_lock", "_sd", "_sn", "cap", "label")

    def __init__(self, cap: Fraction, *, label: str = "session", parent: Accountant | None = None):
        if not isinstance(cap, Fraction) or cap.numerator < 0:
            raise ValidationError(f"budget cap must be a non-negative Fraction; got {cap!r}")
        self.cap = cap
        self.label = label
        self._cn, self._cd = cap.numerator, cap.denominator
        self._sn, self._sd = 0, 1  # spent = _sn / _sd, in lowest terms
        # this level and its ancestors, nearest first (fixed: a parent never changes)
        self._levels: tuple[Accountant, ...] = (self, *(parent._levels if parent else ()))
        self._lock: threading.RLock = parent._lock if parent is not None else threading.RLock()
        self._charges: list[Charge] = []

    @property
    def spent(self) -> Fraction:
        return Fraction(self._sn, self._sd) if self._sn else _ZERO

    @property
    def remaining(self) -> Fraction:
        return self.cap - self.spent if self._sn else self.cap

    @property
    def ledger(self) -> tuple[Charge, ...]:
        with self._lock:
            return tuple(self._charges)

    def _short(self, mn: int, md: int) -> Accountant | None:
        """The nearest level that cannot spend ``mn / md`` more, or None."""
        for level in self._levels:
            sd = level._sd
            if (level._sn * md + mn * sd) * level._cd > level._cn * sd * md:  # spent + more > cap
                return level
        return None

    def child(self, cap: Fraction, *, label: str) -> Accountant:
        """A sub-budget of at most ``cap``; refused at once if ``cap`` exceeds what remains."""
        with self._lock:
            level = self._short(cap.numerator, cap.denominator)
            if level is not None:
                raise BudgetExceededError(
                    f"{label!r} asked for epsilon={exact_text(cap)} but {level.label!r} has "
                    f"only epsilon={exact_text(level.remaining)} left "
                    f"(short by {exact_text(cap - level.remaining)})",
                    block=label,
                    primitive="reserve",
                    requested=cap,
                    remaining=level.remaining,
                )
            return Accountant(cap, label=label, parent=self)

    def part(self, cap: Fraction, *, label: str) -> Accountant:
        """:meth:`child`, or this accountant itself when ``cap`` is all of it and nothing
        is spent yet: a sub-ledger with its parent's cap and no sibling is its parent
        (one level fewer to check and commit on every charge)."""
        if not self._sn and (cap is self.cap or cap == self.cap):
            return self
        return self.child(cap, label=label)

    def charge(self, charge: Charge) -> Charge:
        """Record ``charge`` at every level, or raise :class:`BudgetExceededError`."""
        eps = charge.epsilon
        if not isinstance(eps, Fraction) or eps.numerator <= 0:
            raise ValidationError(f"a charge needs a positive exact epsilon; got {eps!r}")
        mn, md = eps.numerator, eps.denominator
        with self._lock:
            level = self._short(mn, md)
            if level is not None:
                raise BudgetExceededError(
                    f"block {charge.block!r} asked {charge.primitive} for "
                    f"epsilon={exact_text(eps)} but {level.label!r} has only "
                    f"epsilon={exact_text(level.remaining)} left "
                    f"(short by {exact_text(level.spent + eps - level.cap)})",
                    block=charge.block,
                    primitive=charge.primitive,
                    requested=eps,
                    remaining=level.remaining,
                )
            for level in self._levels:
                if level._sn:
                    n, d = level._sn * md + mn * level._sd, level._sd * md
                    g = math.gcd(n, d)
                    level._sn, level._sd = n // g, d // g
                else:
                    level._sn, level._sd = mn, md
                level._charges.append(charge)
        return charge


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
