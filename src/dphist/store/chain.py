"""A stored budget's hash chain, and what one release costs it.

A budget's *genesis* hash binds its store, name, definition, cap and creation time.
Charge ``k``'s hash binds the hash before it (the genesis for the first) and every
field of its row, including the running total spent after it; a release's hash binds
its charge's hash and the release's fields. The budget's own row keeps the number of
charges and the last hash (the *head*). So a changed, removed, reordered or inserted
charge, a raised cap, a cut tail and an edited release all fail :func:`verify_charges`
or :func:`verify_release`.

The chain finds corruption and hand edits; it is not a signature: whoever can write
the store and recompute SHA-256 can forge it, so guard the store itself with file
permissions or database roles (docs/budget.md).

Amounts are exact rationals written as text (``str(Fraction)``, as in the ledger) and
must read back to the very same text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from ..errors import PrivacyError, StoreIntegrityError

__all__ = [
    "Broken",
    "ChargeRow",
    "Tail",
    "cost",
    "exact",
    "failed",
    "genesis",
    "row_hash",
    "verify_charges",
    "verify_release",
]


def row_hash(*fields: object) -> str:
    """SHA-256 of the fields, each length-prefixed so no two field lists collide."""
    h = hashlib.sha256()
    for field in fields:
        data = str(field).encode("utf-8", "surrogatepass")
        h.update(b"%d:" % len(data))
        h.update(data)
    return h.hexdigest()


def genesis(store_id: str, name: str, definition: str, cap: str, created: str) -> str:
    return row_hash("dphist budget/1", store_id, name, definition, cap, created)


def cost(budget: str, release: str, amount: Fraction, name: str) -> Fraction:
    """What a release spending ``amount`` under definition ``release`` ("pure" or "zcdp")
    costs a budget kept under ``budget``: the amount itself under the same definition;
    rho = epsilon**2 / 2 for a pure release against a zCDP budget (an epsilon-DP
    mechanism is (epsilon**2 / 2)-zCDP: Bun and Steinke 2016, Proposition 1.4); a zCDP
    release against a pure budget is refused, as zCDP does not imply pure DP."""
    if budget == release:
        return amount
    if budget == "zcdp" and release == "pure":
        return amount * amount / 2
    raise PrivacyError(
        f"budget {name!r} is pure epsilon-DP: a rho-zCDP release cannot be charged to it "
        "(zCDP does not imply pure DP); publish with epsilon, or keep this data set's "
        "budget in rho"
    )


def exact(text: object, what: str) -> Fraction:
    """An amount read back from the store; it must be the canonical text of a rational."""
    try:
        value = Fraction(str(text))
    except (ValueError, ZeroDivisionError):
        raise Broken(f"{what} is not an exact number ({text!r})") from None
    if str(value) != text or value < 0:
        raise Broken(f"{what} is not a canonical non-negative rational ({text!r})")
    return value


class Broken(Exception):
    """One problem found by the check (turned into one line by the store)."""


@dataclass(frozen=True)
class ChargeRow:
    """One row of ``dphist_charges``, as stored."""

    seq: int
    at: str
    method: str
    definition: str
    amount: str
    charged: str
    spent: str
    hash: str

    def expected(self, previous: str, name: str) -> str:
        return row_hash(
            previous, name, self.seq, self.at, self.method, self.definition, self.amount,
            self.charged, self.spent,
        )  # fmt: skip


@dataclass(frozen=True)
class Tail:
    """The end of a verified chain: charges so far, the last hash and the one before
    it, total spent."""

    seq: int
    hash: str
    spent: Fraction
    previous: str = ""


def verify_charges(
    name: str, definition: str, cap: Fraction, rows: Iterable[ChargeRow], start: Tail
) -> Tail:
    """Follow the chain from ``start`` through ``rows`` (in order; when ``start`` is a
    charge, ``rows`` begin with it again and it must be unchanged); the new tail, or
    :class:`Broken` naming the first charge that fails."""
    seq, previous, spent, before = start.seq, start.hash, start.spent, start.previous
    rows = iter(rows)
    if seq > 0:
        row = next(rows, None)
        if row is None or row.seq != seq:
            raise Broken(f"charge {seq} of budget {name!r} is missing")
        if (
            row.hash != previous
            or row.expected(before, name) != previous
            or row.spent != str(spent)
        ):
            raise Broken(f"charge {seq} of budget {name!r} does not match its hash (edited)")
    for row in rows:
        where = f"charge {row.seq} of budget {name!r}"
        if row.seq != seq + 1:
            raise Broken(f"charge {seq + 1} of budget {name!r} is missing")
        if row.hash != row.expected(previous, name):
            raise Broken(f"{where} does not match its hash (edited or corrupted)")
        amount = exact(row.amount, where)
        charged = exact(row.charged, where)
        if row.definition not in ("pure", "zcdp"):
            raise Broken(f"{where} names an unknown definition")
        try:
            due = cost(definition, row.definition, amount, name)
        except PrivacyError:
            raise Broken(f"{where} is a zCDP release on a pure budget") from None
        spent += charged
        if charged != due or amount <= 0 or exact(row.spent, where) != spent:
            raise Broken(f"{where} does not add up")
        if spent > cap:
            raise Broken(f"budget {name!r} is charged above its cap")
        seq, previous, before = row.seq, row.hash, previous
    return Tail(seq, previous, spent, before)


def verify_release(
    name: str, charge_hash: str | None, seq: int, fields: tuple, stored: str
) -> None:
    """A release row must follow an existing charge and match its hash."""
    if charge_hash is None:
        raise Broken(f"a release of budget {name!r} has no charge {seq}")
    if row_hash(charge_hash, *fields) != stored:
        raise Broken(f"the release of charge {seq} of budget {name!r} does not match its hash")


def failed(where: str, problem: Broken | str) -> StoreIntegrityError:
    """The one line a store that fails its check is refused with."""
    return StoreIntegrityError(
        f"the budget store {where} fails its check: {problem}; nothing is charged or "
        "published from it (see docs/budget.md, 'Integrity')"
    )
