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
from _thread import RLock  # threading.RLock's C type, made without a Python call
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from .._exact import MAX_EPSILON, as_fraction, exact_text, validate_epsilon
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


_ZERO = Fraction(0)


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


@dataclass(frozen=True, init=False)
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

    def __init__(
        self,
        block: str,
        primitive: Primitive,
        epsilon: Fraction,
        sensitivity: Fraction,
        scale: Fraction,
        size: int,
        query: str,
        certified: bool = True,
        unit: str = "epsilon",
    ) -> None:
        # the fields filled at once (a frozen dataclass's own __init__ sets them one by one)
        self.__dict__.update(
            block=block,
            primitive=primitive,
            epsilon=epsilon,
            sensitivity=sensitivity,
            scale=scale,
            size=size,
            query=query,
            certified=certified,
            unit=unit,
        )

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
        if not isinstance(cap, Fraction) or cap.as_integer_ratio()[0] < 0:
            raise ValidationError(f"budget cap must be a non-negative Fraction; got {cap!r}")
        self.cap = cap
        self.label = label
        self._cn, self._cd = cap.as_integer_ratio()
        self._sn, self._sd = 0, 1  # spent = _sn / _sd, in lowest terms
        # this level and its ancestors, nearest first (fixed: a parent never changes)
        self._levels: tuple[Accountant, ...] = (self, *(parent._levels if parent else ()))
        self._lock: RLock = parent._lock if parent is not None else RLock()
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
        mn, md = eps.as_integer_ratio() if isinstance(eps, Fraction) else (0, 1)
        if mn <= 0:
            raise ValidationError(f"a charge needs a positive exact epsilon; got {eps!r}")
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
