"""A stored budget and its parts: :class:`StoredBudget`, :class:`Grant`, :class:`Status`,
:class:`Entry`; and how sessions use one.

A release against a stored budget goes in three steps:

1. :meth:`StoredBudget.charge` commits the release's whole charge in one exclusive,
   synced transaction, after following the hash chain to its head and checking the
   cap; a charge that does not fit raises :class:`~dphist.errors.BudgetExceededError`
   and spends nothing.
2. The caller reads the data, draws the noise and writes its files.
3. :meth:`Grant.record` stores the release: its method, files, a hash of the released
   values and its ledger.

A crash before step 1 commits spends nothing; after it the charge stands (it is never
refunded) and shows without a release until step 3. The store holds names, amounts,
times, file names and hashes: never a record, a count or an estimate.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .._exact import exact_text, validate_epsilon
from ..definitions import PureDP, budget_of, zCDP
from ..errors import BudgetExceededError, InputTypeError, ValidationError
from .chain import SEP, cost

if TYPE_CHECKING:
    from .store import BudgetStore

__all__ = [
    "Entry",
    "Grant",
    "Status",
    "StoredBudget",
    "entries",
    "file_names",
    "release_digest",
    "session_budget",
    "stored_cost",
]


def _label(method: object) -> str:
    if not isinstance(method, str) or not method.strip() or len(method) > 200:
        raise ValidationError(f"a charge needs the method's name (a short text); got {method!r}")
    if any(ord(c) < 32 or 0xD800 <= ord(c) < 0xE000 for c in method):
        raise ValidationError("a method's name cannot hold control characters or lone surrogates")
    return method.strip()


def _release_terms(epsilon: object, rho: object) -> tuple[str, Fraction]:
    """A release's definition and amount from ``epsilon=`` or ``rho=`` (exactly one)."""
    if (epsilon is None) == (rho is None):
        raise ValidationError("give either epsilon= (pure DP) or rho= (zCDP), exactly one")
    if rho is None:
        return "pure", validate_epsilon(epsilon)
    return "zcdp", validate_epsilon(rho, name="rho")


@dataclass(frozen=True)
class Status:
    """A stored budget at one moment: its definition and cap, what is spent."""

    name: str
    definition: PureDP | zCDP
    spent: Fraction
    charges: int
    created: str

    @property
    def cap(self) -> Fraction:
        return self.definition.amount

    @property
    def remaining(self) -> Fraction:
        return self.cap - self.spent

    @property
    def unit(self) -> str:
        """``"epsilon"`` or ``"rho"``: what the cap and the spent total count."""
        return self.definition.name


class Entry(NamedTuple):
    """One charge of a stored budget and, once its files were written, its release.

    ``amount`` is what the release spends under its own ``definition`` ("pure" or
    "zcdp"); ``charged`` what it costs the budget (rho = epsilon**2 / 2 for a pure
    release against a zCDP budget). ``released`` is False for a charge whose release
    never arrived (interrupted or failed after the charge): it stays spent.
    """

    seq: int
    time: str
    method: str
    definition: str
    amount: Fraction
    charged: Fraction
    released: bool
    release_method: str | None
    files: tuple[str, ...]
    digest: str | None


def entries(rows: Iterable[str]) -> list[Entry]:
    """:class:`Entry` objects from :meth:`StoredBudget.rows`."""
    number: dict[str, Fraction] = {}  # amounts repeat: read each once
    make, out, none = Entry._make, [], (False, None, (), None)
    for row in rows:
        seq, charge, _, release, _ = row.split("\n")
        at, method, definition, amount, charged, _ = charge.split(SEP)
        a = number.get(amount) or number.setdefault(amount, Fraction(amount))
        c = number.get(charged) or number.setdefault(charged, Fraction(charged))
        done = none
        if release:
            by, files, digest, _ = release.split(SEP)
            done = (True, by, file_names(files), digest)
        out.append(make((int(seq), at, method, definition, a, c, *done)))
    return out


def file_names(text: str) -> tuple[str, ...]:
    """A release's file names from their JSON list. Without a backslash no name holds an
    escape (a quote or control character would need one), so the names are the text
    between ``", "`` separators: the common case, ten times faster than a JSON parse."""
    if "\\" in text:
        return tuple(json.loads(text))
    return () if text == "[]" else tuple(text[2:-2].split('", "'))


def release_digest(release: Any) -> str:
    """SHA-256 of a release's released values and ledger: the same release gives the
    same hash whatever file format it was written in."""
    import numpy as np  # here only: a release exists, so numpy is loaded already

    h = hashlib.sha256()
    values = getattr(release, "estimate", None)
    arrays = [values] if values is not None else list(getattr(release, "histograms", ()))
    for array in arrays:
        a = np.ascontiguousarray(array)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    h.update(json.dumps([c.to_dict() for c in release.ledger], sort_keys=True).encode())
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Grant:
    """A durable charge for one release: committed, never refunded.

    Publish at most ``amount`` (the release's epsilon, or rho under
    ``definition == "zcdp"``), write the files, then :meth:`record` the release.
    ``spent`` is the budget's total after this charge.
    """

    budget: StoredBudget
    seq: int
    definition: str
    amount: Fraction
    charged: Fraction
    spent: Fraction
    hash: str

    @property
    def remaining(self) -> Fraction:
        """What the budget had left right after this charge."""
        return self.budget.cap - self.spent

    def record(self, release: Any, files: Iterable[str | os.PathLike[str]] = ()) -> None:
        """Store ``release`` (a :class:`~dphist.Release` or a group-size release) as this
        charge's release, with the ``files`` it was written to (after they are written).
        Refused if the release spent more than this charge or under another definition."""
        self.budget.store._record(self, release, [str(Path(f).resolve()) for f in files])


class StoredBudget:
    """One data set's durable budget in a :class:`BudgetStore` (``store.budget(name)``).

    ``dh.Session(counts, budget=b)`` runs a session under the budget's definition that
    charges every release to it first; ``dh.publish(counts, epsilon=..., method=...,
    budget=b)`` does so for one release. :meth:`charge` is the step below both.
    """

    def __init__(self, store: BudgetStore, name: str, row: tuple):
        definition, cap, created, first = row[:4]
        self.store = store
        self.name = name
        self.definition: PureDP | zCDP = (
            PureDP(Fraction(cap)) if definition == "pure" else zCDP(Fraction(cap))
        )
        self.created = created
        self._identity = (definition, cap, created, first)

    @property
    def cap(self) -> Fraction:
        return self.definition.amount

    @property
    def unit(self) -> str:
        return self.definition.name

    def status(self) -> Status:
        """The cap and what is spent now (one read of the chain's head)."""
        return self.store._status(self)

    @property
    def spent(self) -> Fraction:
        return self.status().spent

    @property
    def remaining(self) -> Fraction:
        return self.status().remaining

    def cost(self, *, epsilon: object = None, rho: object = None) -> Fraction:
        """What a release of ``epsilon`` (or ``rho``) would cost this budget, in its unit;
        :class:`~dphist.errors.PrivacyError` for a rho release against a pure budget."""
        definition, amount = _release_terms(epsilon, rho)
        return cost(self.definition.definition, definition, amount, self.name)

    def charge(self, *, epsilon: object = None, rho: object = None, method: str) -> Grant:
        """Commit the whole charge of one release before anything is read.

        Raises :class:`~dphist.errors.BudgetExceededError` (nothing charged) if it does
        not fit in what is left, :class:`~dphist.errors.StoreIntegrityError` if the
        store fails its check.
        """
        definition, amount = _release_terms(epsilon, rho)
        due = cost(self.definition.definition, definition, amount, self.name)
        return self.store._charge(self, definition, amount, due, _label(method))

    def entries(self) -> list[Entry]:
        """Every charge in order, with its release where one was recorded (the whole
        chain is checked first)."""
        return self.history()[1]

    def history(self) -> tuple[Status, list[Entry]]:
        """The budget's status and every charge, read together (chain checked)."""
        status, rows = self.rows()
        return status, entries(rows)

    def rows(self) -> tuple[Status, list[str]]:
        """The status and every charge with its release as stored, chain checked: one
        text per charge, in order, holding its number, fields, hash, release fields and
        release hash joined by newlines (a charge's fields, tab-separated: time, method,
        definition, amount, charged, total; a release's: method, files as JSON, digest,
        ledger hash; both release texts '' until it is recorded). For tools that print or
        export many charges; :meth:`history` parses them into :class:`Entry` objects."""
        return self.store._history(self)

    def __repr__(self) -> str:
        return (
            f"StoredBudget({self.name!r}, {self.unit}={exact_text(self.cap)}, "
            f"store={self.store.location!r})"
        )

    def __reduce__(self):
        raise TypeError("a stored budget holds a connection; open the store in each process")


def session_budget(epsilon: object, budget: object) -> tuple[PureDP | zCDP, StoredBudget | None]:
    """A session's definition and cap, and the stored budget it charges (or None).

    With a stored budget: ``epsilon=`` gives a pure-DP session of at most that much
    (charged as rho = epsilon**2 / 2 against a zCDP budget); without it the session
    runs under the budget's definition with what is left now as its cap.
    """
    if not isinstance(budget, StoredBudget):
        return budget_of(epsilon, budget), None
    if epsilon is not None:
        return PureDP(epsilon), budget
    left = budget.remaining
    if left <= 0:
        raise BudgetExceededError(
            f"budget {budget.name!r} has nothing left of its {budget.unit}="
            f"{exact_text(budget.cap)}",
            block=budget.name,
            primitive="budget store",
            requested=Fraction(0),
            remaining=left,
        )
    return type(budget.definition)(left), budget


def stored_cost(budget: object, epsilon: object, rho: object) -> Fraction:
    """What one release costs ``budget`` (a :class:`StoredBudget`), checked before any read."""
    if not isinstance(budget, StoredBudget):
        raise InputTypeError(
            "budget= must be a stored budget (dh.BudgetStore(...).budget(name)); for a "
            f"plain cap give epsilon= or rho=; got {type(budget).__name__}"
        )
    return budget.cost(epsilon=epsilon, rho=rho)
