"""A stored budget's hash chain, and what one release costs it.

A budget's *genesis* hash binds its store, name, definition, cap and creation time.
Charge ``k``'s hash binds the hash before it (the genesis for the first) and every
field of its row, including the total spent after it; a release's hash binds its
charge's hash and the release's fields. The budget's own row keeps the number of
charges and the last hash (the *head*). So a changed, removed, reordered or inserted
charge, a raised cap, a cut tail and an edited release all fail :func:`verify_chain`;
so does a chain whose charges do not add up to its total or go above its cap.

Fields are joined with a tab, which no field may hold: names, method labels and times
are checked when written (nor may they hold a lone surrogate, which neither database
stores), file lists and ledgers are JSON (which escapes control characters), the rest
are digits and hex. A row stores its fields as that one text, exactly what its hash
covers: checking a row is one hash of what was read, and no field can be read back
differently from how it was hashed.

A *seal* spares reading the chain row by row: one SHA-256 over the stored texts of a
prefix of charges (each with its release, :data:`ROW`), written by a reader that has
just checked those rows one by one. Rows are only ever appended, so a later read whose
prefix hashes to the seal holds exactly the rows checked then, and only the charges
after it are followed one by one (:func:`seal_digest`). A prefix holding more releases
than its seal is stale (a release recorded late): it is checked row by row and sealed
again. One holding fewer charges or releases, or other texts, was edited.

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
    "BATCH",
    "ROWS",
    "Broken",
    "Charge",
    "Tail",
    "charge_hash",
    "cost",
    "exact",
    "failed",
    "genesis",
    "joined",
    "release_hash",
    "row_hash",
    "seal_digest",
    "sealed_tail",
    "text_hash",
    "verify_chain",
    "verify_ledgers",
]

SEP = "\t"

# Each charge with its release as one text (what ``show`` prints and a seal covers): its
# number, fields and hash, its release's fields and hash ('' until it is recorded), joined
# by newlines in the database, so that reading 10**5 of them makes one string each.
ROWS = (
    "SELECT CAST(c.seq AS TEXT) || '\n' || c.fields || '\n' || c.hash || '\n' || "
    "coalesce(r.fields, '') || '\n' || coalesce(r.hash, '') FROM dphist_charges c "
    "LEFT JOIN dphist_releases r ON r.budget = c.budget AND r.seq = c.seq "
    "WHERE c.budget = ? ORDER BY c.seq"
)
BATCH = 4096  # rows hashed per update of a seal (a few MB at a time, never the whole text)


class Broken(Exception):
    """One problem found by the check (turned into one line by the store)."""


def row_hash(*fields: object) -> str:
    """SHA-256 of the fields joined by :data:`SEP` (which none of them may hold)."""
    text = SEP.join(map(str, fields))
    if text.count(SEP) != len(fields) - 1:
        raise ValueError("a budget store field cannot hold a tab")
    return sha256(text.encode()).hexdigest()


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


class Charge(NamedTuple):
    """One charge's fields; a row of ``dphist_charges`` stores them as one text,
    :meth:`text`, exactly what its hash covers."""

    at: str
    method: str
    definition: str
    amount: str
    charged: str
    spent: str

    def text(self) -> str:
        return joined(self)

    @classmethod
    def parse(cls, text: str) -> Charge:
        return cls._make(text.split(SEP))


def joined(fields: Sequence[str]) -> str:
    """A row's fields as the one text it stores (none may hold :data:`SEP`)."""
    text = SEP.join(fields)
    if text.count(SEP) != len(fields) - 1:
        raise ValueError("a budget store field cannot hold a tab")
    return text


def charge_hash(previous: str, name: str, seq: int, fields: str) -> str:
    """Charge ``seq``'s hash: the hash before it, the budget, its number, its fields."""
    return text_hash(f"{previous}{SEP}{name}{SEP}{seq}{SEP}{fields}")


def release_hash(charge: str, fields: str) -> str:
    """A release's hash: its charge's hash and its fields."""
    return text_hash(f"{charge}{SEP}{fields}")


@dataclass(frozen=True)
class Tail:
    """The end of a verified chain: charges so far, the last hash and the one before
    it, total spent."""

    seq: int
    hash: str
    spent: Fraction
    previous: str = ""


def verify_chain(
    name: str,
    definition: str,
    cap: Fraction,
    charges: Sequence[tuple],
    releases: Sequence[tuple],
    start: Tail,
) -> Tail:
    """Follow the chain from ``start`` through ``charges`` and check ``releases``, both
    ``(seq, fields, hash)`` in order (when ``start`` is a charge, ``charges`` begin with
    it again and it must be unchanged; ``releases`` belong to the charges given). The
    new tail, or :class:`Broken` naming the first row that fails.

    Every hash is recomputed over the stored text itself (nothing is re-serialized);
    the charges must cost what their amounts say and add up to the last one's total,
    within the cap. (Each row's total is bound by its hash; only the last is added up,
    which is what the cap depends on.)
    """
    seq, previous, before = start.seq, start.hash, start.previous
    new = charges
    if seq > 0:
        if not charges or charges[0][0] != seq:
            raise Broken(f"charge {seq} of budget {name!r} is missing")
        _, fields, stored = charges[0]
        if stored != previous or charge_hash(before, name, seq, fields) != previous:
            raise Broken(f"charge {seq} of budget {name!r} does not match its hash (edited)")
        if Charge.parse(fields).spent != str(start.spent):
            raise Broken(f"charge {seq} of budget {name!r} does not add up")
        new = charges[1:]
    k, mid = seq, f"{SEP}{name}{SEP}"
    for at_seq, fields, stored in new:
        k += 1
        if at_seq != k:
            raise Broken(f"charge {k} of budget {name!r} is missing")
        if sha256(f"{previous}{mid}{k}{SEP}{fields}".encode()).hexdigest() != stored or (
            fields.count(SEP) != 5
        ):
            raise Broken(f"charge {k} of budget {name!r} does not match its hash (edited)")
        before, previous = previous, stored
    first = charges[0][0] if charges else 1
    for at_seq, fields, stored in releases:
        i = at_seq - first
        if not 0 <= i < len(charges):
            raise Broken(f"a release of budget {name!r} has no charge {at_seq}")
        if sha256(f"{charges[i][2]}{SEP}{fields}".encode()).hexdigest() != stored or (
            fields.count(SEP) != 3
        ):
            raise Broken(
                f"the release of charge {at_seq} of budget {name!r} does not match its hash"
            )
    tail = start
    if new:
        spent = start.spent + _total(name, definition, [c[1] for c in new])
        if Charge.parse(new[-1][1]).spent != str(spent):
            raise Broken(f"the charges of budget {name!r} do not add up to its total")
        tail = Tail(k, previous, spent, before)
    if tail.spent > cap:
        raise Broken(f"budget {name!r} is charged above its cap")
    return tail


def _total(name: str, definition: str, fields: Iterable[str]) -> Fraction:
    """The sum of the charges, each checked to cost what its amount says."""
    total = Fraction(0)
    # what a charge costs sits between its method and its total: count each kind once
    kinds = Counter(text.split(SEP, 2)[2].rsplit(SEP, 1)[0] for text in fields)
    for kind, count in kinds.items():
        release, amount_text, charged = kind.split(SEP)
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


def text_hash(text: str) -> str:
    return sha256(text.encode()).hexdigest()


def verify_ledgers(name: str, ledgers: Iterable[tuple]) -> None:
    """Each release's stored ledger must match the hash its release binds (its last
    field); rows are ``(seq, ledger text or None, release fields or None)``."""
    for seq, text, release in ledgers:
        if text is None:
            raise Broken(f"the ledger of charge {seq} of budget {name!r} is missing")
        if release is None:
            raise Broken(f"a ledger of budget {name!r} has no release {seq}")
        if text_hash(text) != release.rsplit(SEP, 1)[-1]:
            raise Broken(f"the ledger of charge {seq} of budget {name!r} does not match its hash")


def seal_digest(name: str, first: str, releases: int, rows: Sequence[str]) -> str | None:
    """The seal of ``rows`` (:data:`ROWS` of charges 1 to ``len(rows)``, holding
    ``releases`` releases) of the budget whose genesis hash is ``first``: one SHA-256 of
    all their values joined by newlines, fed a batch of rows at a time. None when a value
    holds a newline itself (no checked one does), so that the joined text splits back
    into the very same values."""
    head = f"dphist seal/1{SEP}{name}{SEP}{first}{SEP}{len(rows)}{SEP}{releases}\n"
    digest, newlines = sha256(head.encode()), 0
    for i in range(0, len(rows), BATCH):
        text = "\n".join(rows[i : i + BATCH])
        if i:
            text = "\n" + text
        newlines += text.count("\n")
        digest.update(text.encode())
    if newlines != max(5 * len(rows) - 1, 0):
        return None
    return digest.hexdigest()


def sealed_tail(first: str, rows: Sequence[str], sealed: int) -> Tail:
    """Where the first ``sealed`` of ``rows`` end: the last one's number, hash and total,
    and the hash before it (:func:`verify_chain` follows the later charges from there)."""
    if sealed == 0:
        return Tail(0, first, Fraction(0))
    _, fields, last, *_ = rows[sealed - 1].split("\n")
    before = rows[sealed - 2].split("\n")[2] if sealed > 1 else first
    return Tail(sealed, last, exact(fields.rsplit(SEP, 1)[-1], "a sealed total"), before)


def failed(where: str, problem: Broken | str) -> StoreIntegrityError:
    """The one line a store that fails its check is refused with."""
    return StoreIntegrityError(
        f"the budget store {where} fails its check: {problem}; nothing is charged or "
        "published from it (see docs/budget.md, 'Integrity')"
    )
