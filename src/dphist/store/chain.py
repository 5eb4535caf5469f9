"""A stored budget's hash chain, and what one release costs it.

A budget's *genesis* hash binds its store, name, definition, cap and creation time.
Charge ``k``'s hash binds the hash before it (the genesis for the first) and every
field of its row, including the total spent after it; a release's hash binds its
charge's hash and the release's fields. The budget's own row keeps the number of
charges and the last hash (the *head*). So a changed, removed, reordered or inserted
charge, a raised cap, a cut tail and an edited release all fail :func:`verify_charges`
or :func:`verify_releases`; so does a chain whose charges do not add up to its total
or go above its cap.

Fields are joined with the unit separator (U+001F), which no field may hold: names,
method labels and times are checked when written, file lists and ledgers are JSON
(which escapes control characters), the rest are digits and hex.

The chain finds corruption and hand edits; it is not a signature: whoever can write
the store and recompute SHA-256 can forge it, so guard the store itself with file
permissions or database roles (docs/budget.md).

Amounts are exact rationals written as text (``str(Fraction)``, as in the ledger) and
must read back to the very same text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from hashlib import sha256
from typing import NamedTuple

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
    "text_hash",
    "verify_charges",
    "verify_ledgers",
    "verify_releases",
]

SEP = "\x1f"


class Broken(Exception):
    """One problem found by the check (turned into one line by the store)."""


def row_hash(*fields: object) -> str:
    """SHA-256 of the fields joined by :data:`SEP` (which none of them may hold)."""
    text = SEP.join(map(str, fields))
    if text.count(SEP) != len(fields) - 1:
        raise ValueError("a budget store field cannot hold the unit separator U+001F")
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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


class ChargeRow(NamedTuple):
    """One row of ``dphist_charges``, as stored (the query's column order)."""

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
    name: str, definition: str, cap: Fraction, rows: Sequence[tuple], start: Tail
) -> Tail:
    """Follow the chain from ``start`` through ``rows`` (:class:`ChargeRow` fields, in
    order; when ``start`` is a charge, ``rows`` begin with it again and it must be
    unchanged); the new tail, or :class:`Broken` naming the first charge that fails.

    Every hash is recomputed; the charges must cost what their amounts say and add up
    to the last one's total, within the cap. (Each row's total is bound by its hash;
    only the last is added up, which is what the cap depends on.)
    """
    seq, previous, before = start.seq, start.hash, start.previous
    if seq > 0:
        if not rows or rows[0][0] != seq:
            raise Broken(f"charge {seq} of budget {name!r} is missing")
        first = ChargeRow._make(rows[0])
        if first.hash != previous or first.expected(before, name) != previous:
            raise Broken(f"charge {seq} of budget {name!r} does not match its hash (edited)")
        if first.spent != str(start.spent):
            raise Broken(f"charge {seq} of budget {name!r} does not add up")
        rows = rows[1:]
    tail = start
    if rows:
        k, mid = seq, f"{SEP}{name}{SEP}"
        for at_seq, at, method, release, amount, charged, spent, stored in rows:
            k += 1
            text = (
                f"{previous}{mid}{at_seq}{SEP}{at}{SEP}{method}{SEP}{release}"
                f"{SEP}{amount}{SEP}{charged}{SEP}{spent}"
            )
            if at_seq != k:
                raise Broken(f"charge {k} of budget {name!r} is missing")
            if sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != stored or (
                text.count(SEP) != 8
            ):
                raise Broken(f"charge {k} of budget {name!r} does not match its hash (edited)")
            before, previous = previous, stored
        spent = start.spent + _total(name, definition, rows)
        last = ChargeRow._make(rows[-1])
        if last.spent != str(spent):
            raise Broken(f"the charges of budget {name!r} do not add up to its total")
        tail = Tail(last.seq, previous, spent, before)
    if tail.spent > cap:
        raise Broken(f"budget {name!r} is charged above its cap")
    return tail


def _total(name: str, definition: str, rows: Iterable[tuple]) -> Fraction:
    """The sum of the charges, each checked to cost what its amount says."""
    total = Fraction(0)
    kinds = Counter((r[3], r[4], r[5]) for r in rows)  # definition, amount, charged
    for (release, amount_text, charged), count in kinds.items():
        where = f"a charge of budget {name!r} ({release} {amount_text})"
        amount = exact(amount_text, where)
        if release not in ("pure", "zcdp") or amount <= 0:
            raise Broken(f"{where} names no valid release")
        try:
            due = cost(definition, release, amount, name)
        except PrivacyError:
            raise Broken(f"{where} is a zCDP release on a pure budget") from None
        if charged != str(due):
            raise Broken(f"{where} does not cost what it says")
        total += due * count
    return total


def verify_releases(name: str, hashes: dict[int, str], releases: Iterable[tuple]) -> None:
    """Each release row (seq, fields..., hash) must follow an existing charge
    (``hashes``: seq to charge hash) and match its hash."""
    for seq, method, files, digest, ledger_hash, stored in releases:
        charge_hash = hashes.get(seq)
        if charge_hash is None:
            raise Broken(f"a release of budget {name!r} has no charge {seq}")
        text = f"{charge_hash}{SEP}{method}{SEP}{files}{SEP}{digest}{SEP}{ledger_hash}"
        if sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != stored or (
            text.count(SEP) != 4
        ):
            raise Broken(f"the release of charge {seq} of budget {name!r} does not match its hash")


def text_hash(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def verify_ledgers(name: str, ledgers: Iterable[tuple]) -> None:
    """Each stored ledger (seq, text, hash) must match the hash its release binds."""
    for seq, text, stored in ledgers:
        if text_hash(text) != stored:
            raise Broken(f"the ledger of charge {seq} of budget {name!r} does not match its hash")


def failed(where: str, problem: Broken | str) -> StoreIntegrityError:
    """The one line a store that fails its check is refused with."""
    return StoreIntegrityError(
        f"the budget store {where} fails its check: {problem}; nothing is charged or "
        "published from it (see docs/budget.md, 'Integrity')"
    )
