"""The budget store: :class:`BudgetStore`, one SQLite file or a PostgreSQL database
holding a durable budget per data set (:mod:`.budget`), its hash chain (:mod:`.chain`)
checked before anything is charged.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import secrets
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from .._exact import exact_text
from ..definitions import budget_of, zCDP
from ..errors import (
    BudgetExceededError,
    PrivacyError,
    StoreError,
    StoreIntegrityError,
    ValidationError,
)
from .backend import SCHEMA, SEALS, connect
from .budget import Grant, Status, StoredBudget, release_digest
from .chain import (
    ROWS,
    Broken,
    Charge,
    Tail,
    charge_hash,
    exact,
    failed,
    genesis,
    joined,
    release_hash,
    seal_digest,
    sealed_tail,
    text_hash,
    verify_chain,
    verify_ledgers,
)

__all__ = ["BudgetStore", "checked_name"]

FORMAT = "dphist-budget-store/1"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_BUDGET = "SELECT definition, cap, created, genesis, charges, head FROM dphist_budgets"
_CHARGES = "SELECT seq, fields, hash FROM dphist_charges WHERE budget = ?"
_RELEASES = "SELECT seq, fields, hash FROM dphist_releases WHERE budget = ?"
_SEAL = "SELECT charges, releases, digest FROM dphist_seals WHERE budget = ?"
_SEALED = "SELECT count(*) FROM dphist_releases WHERE budget = ? AND seq <= ?"
_RESEAL = (
    "INSERT INTO dphist_seals (budget, charges, releases, digest) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (budget) DO UPDATE SET charges = excluded.charges, releases = "
    "excluded.releases, digest = excluded.digest WHERE excluded.charges > "
    "dphist_seals.charges OR (excluded.charges = dphist_seals.charges AND "
    "excluded.releases > dphist_seals.releases)"
)
RESEAL = 1000  # charges checked one by one past the seal before a new seal is written


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def checked_name(name: object) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValidationError(
            f"a budget's name is 1 to 100 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit; got {name!r}"
        )
    return name


class BudgetStore:
    """Durable privacy budgets, one per data set, in one SQLite file or a PostgreSQL database.

    Parameters
    ----------
    location : path, ``postgresql://`` URL or None
        None: ``$DPHIST_BUDGET_STORE``, else ``budgets.sqlite`` in the per-user data
        folder (:func:`dphist.store.default_location`).
    create : bool
        Create the store when it does not exist yet (a new SQLite file, or the tables
        in a PostgreSQL database). An existing file is never re-created.

    Opening runs the database's own check; each budget's hash chain is checked when it
    is opened (:meth:`budget`), from its seal on (:mod:`.chain`), and followed to its
    head on every charge. A store that fails raises
    :class:`~dphist.errors.StoreIntegrityError`.

    Example
    -------
    >>> import dphist as dh
    >>> store = dh.BudgetStore("budgets.sqlite")                  # doctest: +SKIP
    >>> census = store.create("census-2030", epsilon=4)          # doctest: +SKIP
    >>> rel = dh.publish(counts, epsilon=0.5, method="H", budget=census)  # doctest: +SKIP
    """

    def __init__(self, location: str | os.PathLike[str] | None = None, *, create: bool = True):
        self._db = connect(location, create)
        self._tails: dict[str, Tail] = {}
        try:
            self._id = self._open(create)
        except BaseException:
            self._db.close()
            raise

    @property
    def location(self) -> str:
        """Where the store is (a PostgreSQL URL without its user or password)."""
        return self._db.where

    def _open(self, create: bool) -> str:
        problems = self._db.check()
        if problems:
            raise failed(self.location, f"the database's own check found: {problems[0]}")
        with self._db.transaction(write=False):
            ready = self._db.has_table("dphist_meta")
            meta = dict(self._db.rows("SELECT key, value FROM dphist_meta")) if ready else {}
        if not ready:
            if not self._db.fresh:
                raise failed(self.location, "it holds no budget tables (empty or not a store)")
            if not create:
                raise StoreError(
                    f"no budget store in {self.location}; create a budget with "
                    "'dphist budget init NAME --epsilon E'"
                )
            meta = self._create_tables()
        if meta.get("format") != FORMAT or not meta.get("id"):
            raise failed(self.location, f"unknown format {meta.get('format')!r}")
        return meta["id"]

    def _create_tables(self) -> dict[str, str]:
        with self._db.transaction(write=True):
            self._db.lock_schema()
            for statement in SCHEMA:
                self._db.run(statement)
            self._db.run(
                "INSERT INTO dphist_meta (key, value) VALUES (?, ?), (?, ?) "
                "ON CONFLICT (key) DO NOTHING",
                ("format", FORMAT, "id", secrets.token_hex(16)),
            )
            return dict(self._db.rows("SELECT key, value FROM dphist_meta"))

    # ------------------------------------------------------------------ budgets

    def create(
        self, name: str, *, epsilon: object = None, rho: object = None, budget: object = None
    ) -> StoredBudget:
        """A new budget ``name`` with cap ``epsilon`` (pure DP), ``rho`` (zCDP) or
        ``budget=dh.PureDP(...) / dh.zCDP(...)``. A budget is never reset or raised."""
        name = checked_name(name)
        if rho is not None:
            if epsilon is not None or budget is not None:
                raise ValidationError("give one of epsilon=, rho= or budget=")
            budget = zCDP(rho)
        chosen = budget_of(epsilon, budget)
        cap, created = str(chosen.amount), _now()
        first = genesis(self._id, name, chosen.definition, cap, created)
        row = (chosen.definition, cap, created, first, 0, first)
        try:
            with self._db.transaction(write=True):
                self._db.run(
                    "INSERT INTO dphist_budgets (definition, cap, created, genesis, charges, "
                    "head, name) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*row, name),
                )
        except self._db.duplicate:
            raise StoreError(
                f"a budget named {name!r} already exists in {self.location}; a budget is "
                "never reset or raised: give the new period a new name"
            ) from None
        stored = StoredBudget(self, name, row)
        self._tails[name] = Tail(0, first, Fraction(0))
        return stored

    def budget(self, name: str, *, check: bool = True) -> StoredBudget:
        """The budget ``name``, its whole chain checked (``check=False`` leaves that to
        the first charge, which then walks the chain under its lock, or to
        :meth:`StoredBudget.entries`)."""
        with self._db.transaction(write=False):
            row = self._db.rows(f"{_BUDGET} WHERE name = ?", (str(name),))
            if not row:
                raise StoreError(self._unknown(name))
            stored = StoredBudget(self, str(name), row[0])
            seal = self._verify(stored, row[0], ledgers=True)[2] if check else None
        self._reseal(stored.name, seal)
        return stored

    __getitem__ = budget

    def _unknown(self, name: object) -> str:
        known = [r[0] for r in self._db.rows("SELECT name FROM dphist_budgets ORDER BY name")]
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        return (
            f"no budget named {name!r} in {self.location}.{hint} 'dphist budget list' "
            "shows them; 'dphist budget init' creates one"
        )

    def budgets(self, *, full: bool = False) -> list[Status]:
        """Every budget's status, by name (each chain checked; ``full``: every charge
        one by one, and each seal must agree)."""
        out, seals = [], {}
        with self._db.transaction(write=False):
            for name, *row in self._db.rows(
                "SELECT name, definition, cap, created, genesis, charges, head "
                "FROM dphist_budgets ORDER BY name"
            ):
                stored = StoredBudget(self, name, tuple(row))
                tail, _, seals[name] = self._verify(stored, tuple(row), ledgers=True, full=full)
                out.append(Status(name, stored.definition, tail.spent, tail.seq, stored.created))
        for name, seal in seals.items():
            self._reseal(name, seal)
        return out

    def check(self) -> list[Status]:
        """The database's own check and every budget's whole chain, row by row; their
        statuses, or :class:`~dphist.errors.StoreIntegrityError`."""
        problems = self._db.check()
        if problems:
            raise failed(self.location, f"the database's own check found: {problems[0]}")
        return self.budgets(full=True)

    def backup(self, target: str | os.PathLike[str]) -> Path:
        """Copy a SQLite store, consistently and while in use, to the new file ``target``
        (checked after the copy); PostgreSQL stores are backed up with ``pg_dump``."""
        path = Path(target).expanduser()
        if path.exists():
            raise StoreError(f"the backup target {str(path)!r} exists; give a new file name")
        self._db.backup(path)
        with BudgetStore(path, create=False) as copy:
            copy.check()
        return path

    # ------------------------------------------------------------------ chain

    def _chain(self, name: str, start: int = 0) -> tuple[list[tuple], list[tuple]]:
        """One budget's charges from ``start`` on and releases after it, ``(seq, fields,
        hash)`` each, in order (what :func:`.chain.verify_chain` checks)."""
        charges = self._db.rows(f"{_CHARGES} AND seq >= ? ORDER BY seq", (name, start))
        return charges, self._db.rows(f"{_RELEASES} AND seq > ? ORDER BY seq", (name, start))

    def _ledgers(self, name: str) -> list[tuple]:
        """Each release with its stored ledger, and any ledger without a release:
        ``(seq, ledger or None, release fields or None)``."""
        return self._db.rows(
            "SELECT r.seq, l.ledger, r.fields FROM dphist_releases r LEFT JOIN dphist_ledgers l "
            "ON l.budget = r.budget AND l.seq = r.seq WHERE r.budget = ? UNION ALL "
            "SELECT l.seq, l.ledger, NULL FROM dphist_ledgers l WHERE l.budget = ? AND NOT "
            "EXISTS (SELECT 1 FROM dphist_releases r WHERE r.budget = l.budget AND r.seq = l.seq)",
            (name, name),
        )

    def _verify(
        self, stored: StoredBudget, row: tuple, *, ledgers: bool = False, full: bool = False
    ) -> tuple[Tail, list[str], tuple | None]:
        """Check one budget inside a read transaction: its genesis, the charges after its
        seal one by one (``full``: every charge, and the seal must agree), its head, and
        with ``ledgers`` every stored ledger (``show`` prints none and reads none). The
        tail, every charge with its release (:data:`.chain.ROWS`, one text each), and a
        new seal or None."""
        definition, cap, created, first, count, head = row
        name = stored.name
        rows = [text for (text,) in self._db.rows(ROWS, (name,))]
        try:
            if first != genesis(self._id, name, definition, cap, created):
                raise Broken(f"budget {name!r} does not match its hash (its cap was edited)")
            sealed, released, problem = self._sealed(name, first, rows)
            start = sealed_tail(first, rows, 0 if full else sealed)
            charges, releases = self._chain(name, start.seq)
            tail = verify_chain(name, definition, exact(cap, "a cap"), charges, releases, start)
            _check_head(name, tail, count, head)
            if problem:  # the rows hold one by one, yet do not match their seal
                raise Broken(problem)
            if ledgers:
                verify_ledgers(name, self._ledgers(name))
        except Broken as problem:
            raise failed(self.location, problem) from None
        self._tails[name] = tail
        seal = None
        if rows and (sealed == 0 or len(rows) - sealed >= RESEAL):
            released = (0 if full else released) + len(releases)
            digest = seal_digest(name, first, released, rows)
            seal = None if digest is None else (len(rows), released, digest)
        return tail, rows, seal

    def _sealed(self, name: str, first: str, rows: list[str]) -> tuple[int, int, str | None]:
        """How many charges and releases of ``rows`` the budget's seal vouches for, and
        the problem when it disagrees. A seal covering more releases than are stored is
        stale (one was recorded later): it vouches for nothing, harmlessly; one covering
        more charges or releases than are stored, or other texts, disagrees."""
        if not self._db.has_table("dphist_seals"):
            return 0, 0, None  # a store made before seals existed
        found = self._db.rows(_SEAL, (name,))
        if not found:
            return 0, 0, None
        charges, releases, digest = found[0]
        [(now,)] = self._db.rows(_SEALED, (name, charges))
        if len(rows) < charges or now < releases:
            return 0, 0, f"budget {name!r} holds fewer rows than its seal covers (removed)"
        if now > releases:
            return 0, 0, None
        if seal_digest(name, first, releases, rows[:charges]) != digest:
            return 0, 0, f"budget {name!r} does not match its seal (a sealed row was edited)"
        return charges, releases, None

    def _reseal(self, name: str, seal: tuple | None) -> None:
        """Write a new seal (charges, releases, digest) of rows just checked one by one,
        unless a newer one is there. Best effort: a store this process may only read
        stays as it is (checked one by one, only slower)."""
        if seal is None:
            return
        try:
            with self._db.transaction(write=True):
                if not self._db.has_table("dphist_seals"):
                    self._db.lock_schema()
                    self._db.run(SEALS)
                self._db.run(_RESEAL, (name, *seal))
        except StoreIntegrityError:
            raise
        except StoreError:
            pass

    def _status(self, stored: StoredBudget) -> Status:
        with self._db.transaction(write=False):
            row = self._current(stored)
            count, head = row[4], row[5]
            last = self._db.rows(f"{_CHARGES} AND seq = ?", (stored.name, count))
            try:
                spent = (
                    Fraction(0) if count == 0 else exact(Charge.parse(last[0][1]).spent, "a total")
                )
                if (last[0][2] if last else row[3]) != head:
                    raise Broken(f"budget {stored.name!r} lost its last charge")
            except (Broken, IndexError):
                raise failed(self.location, f"budget {stored.name!r} lost charges") from None
        return Status(stored.name, stored.definition, spent, count, stored.created)

    def _current(self, stored: StoredBudget, lock: str = "") -> tuple:
        """The budget's row (locked for a charge), which must still be the one opened."""
        row = self._db.rows(f"{_BUDGET} WHERE name = ?{lock}", (stored.name,))
        if not row or tuple(row[0][:4]) != stored._identity:
            raise failed(self.location, f"budget {stored.name!r} was removed or edited")
        return row[0]

    def _charge(
        self, stored: StoredBudget, definition: str, amount: Fraction, due: Fraction, method: str
    ) -> Grant:
        """One exclusive, synced transaction: follow the chain from the last checked
        charge to the head, check the cap, append the charge, move the head."""
        name = stored.name
        with self._db.transaction(write=True):
            row = self._current(stored, self._db.for_update)
            start = self._tails.get(name) or Tail(0, row[3], Fraction(0))
            newer = self._db.rows(f"{_CHARGES} AND seq >= ? ORDER BY seq", (name, start.seq))
            try:
                tail = verify_chain(name, row[0], stored.cap, newer, (), start)
                _check_head(name, tail, row[4], row[5])
            except Broken as problem:
                raise failed(self.location, problem) from None
            self._tails[name] = tail
            if tail.spent + due > stored.cap:
                left = stored.cap - tail.spent
                raise BudgetExceededError(
                    f"budget {name!r} has {stored.unit}={exact_text(left)} left of "
                    f"{exact_text(stored.cap)}; this release needs {exact_text(due)} (short by "
                    f"{exact_text(due - left)}); nothing was charged",
                    block=name,
                    primitive="budget store",
                    requested=due,
                    remaining=left,
                )
            seq, spent = tail.seq + 1, tail.spent + due
            fields = Charge(_now(), method, definition, str(amount), str(due), str(spent)).text()
            digest = charge_hash(tail.hash, name, seq, fields)
            self._db.run(
                "INSERT INTO dphist_charges (budget, seq, fields, hash) VALUES (?, ?, ?, ?)",
                (name, seq, fields, digest),
            )
            self._db.run(
                "UPDATE dphist_budgets SET charges = ?, head = ? WHERE name = ?",
                (seq, digest, name),
            )
        self._tails[name] = Tail(seq, digest, spent, tail.hash)
        return Grant(stored, seq, definition, amount, due, spent, digest)

    def _record(self, grant: Grant, release: Any, files: list[str]) -> None:
        definition = getattr(release, "definition", "pure")
        spent = sum((c.epsilon for c in release.ledger), Fraction(0))
        if definition != grant.definition or spent > grant.amount:
            raise PrivacyError(
                f"this release spent {exact_text(spent)} under {definition!r}; its charge "
                f"{grant.seq} of budget {grant.budget.name!r} covers {exact_text(grant.amount)} "
                f"under {grant.definition!r}"
            )
        method = getattr(release, "method", None) or ",".join(getattr(release, "methods", ()))
        ledger = {
            "private": bool(release.private),
            "spent": str(spent),
            "charges": [c.to_dict() for c in release.ledger],
        }
        text = json.dumps(ledger, separators=(",", ":"))
        fields = joined((method, json.dumps(files), release_digest(release), text_hash(text)))
        key = (grant.budget.name, grant.seq)
        try:
            with self._db.transaction(write=True):
                self._db.run(
                    "INSERT INTO dphist_releases (budget, seq, fields, hash) VALUES (?, ?, ?, ?)",
                    (*key, fields, release_hash(grant.hash, fields)),
                )
                self._db.run(
                    "INSERT INTO dphist_ledgers (budget, seq, ledger) VALUES (?, ?, ?)",
                    (*key, text),
                )
        except self._db.duplicate:
            raise StoreError(
                f"charge {grant.seq} of budget {grant.budget.name!r} already has its release"
            ) from None

    def _history(self, stored: StoredBudget) -> tuple[Status, list[str]]:
        with self._db.transaction(write=False):
            tail, rows, seal = self._verify(stored, self._current(stored))
        self._reseal(stored.name, seal)
        status = Status(stored.name, stored.definition, tail.spent, tail.seq, stored.created)
        return status, rows

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        self._db.close()

    def __del__(self) -> None:  # a store left open closes with its last reference
        db = getattr(self, "_db", None)
        if db is not None:
            db.close()

    def __enter__(self) -> BudgetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BudgetStore({self.location!r})"

    def __reduce__(self):
        raise TypeError("a budget store holds a connection; open it in each process")


def _check_head(name: str, tail: Tail, count: int, head: str) -> None:
    """The budget's row must name the chain's last charge."""
    if count > tail.seq:
        raise Broken(f"charges {tail.seq + 1} to {count} of budget {name!r} are missing")
    if count != tail.seq or head != tail.hash:
        raise Broken(f"budget {name!r} does not end where its chain ends (edited)")
