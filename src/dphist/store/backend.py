"""Where a budget store lives: one SQLite file (WAL) or a PostgreSQL database.

Both hold the same tables (:data:`SCHEMA`) and offer the same three things:
:meth:`~SQLiteDB.transaction` (``write=True``: an exclusive transaction whose commit
is synced to disk before it returns; ``write=False``: one consistent snapshot),
:meth:`~SQLiteDB.rows` and :meth:`~SQLiteDB.run` inside it, and :meth:`~SQLiteDB.check`,
the database's own integrity check.

* **SQLite** (the default, standard library): WAL journal, ``synchronous=FULL`` (every
  commit fsyncs the log), ``BEGIN IMMEDIATE`` for writes (one writer at a time across
  processes; the others wait up to :data:`BUSY_SECONDS`), ``PRAGMA quick_check`` as its
  check. WAL needs a local file system: use PostgreSQL across machines.
* **PostgreSQL** (a ``postgresql://`` URL, extra ``dphist[postgres]``): each write
  transaction sets ``synchronous_commit = on`` whatever the server's default, and the
  store locks the budget's row (``FOR UPDATE``) before reading what it has spent.

SQL is written once with ``?`` placeholders (PostgreSQL's driver gets ``%s``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import StoreError, StoreIntegrityError

__all__ = ["BUSY_SECONDS", "SCHEMA", "SEALS", "connect", "default_location", "is_url"]

BUSY_SECONDS = 60.0  # how long a writer waits for another one before giving up

# A row of dphist_charges keeps its fields as one tab-separated text (time, method, the
# release's definition and amount, the charge, the total after it), a release's fields
# likewise (method, files as JSON, the release's hash, its ledger's hash): the very text
# each row's hash covers (chain.py). Ledgers, the bulk, sit apart from what `show` reads.
# A budget's seal: charges 1 to `charges`, holding `releases` releases, hash to `digest`
# (chain.seal_digest). Stores made before seals existed get the table with their first seal.
SEALS = """CREATE TABLE IF NOT EXISTS dphist_seals (
        budget TEXT PRIMARY KEY REFERENCES dphist_budgets (name),
        charges INTEGER NOT NULL,
        releases INTEGER NOT NULL,
        digest TEXT NOT NULL)"""
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS dphist_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dphist_budgets (
        name TEXT PRIMARY KEY,
        definition TEXT NOT NULL CHECK (definition IN ('pure', 'zcdp')),
        cap TEXT NOT NULL,
        created TEXT NOT NULL,
        genesis TEXT NOT NULL,
        charges INTEGER NOT NULL,
        head TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dphist_charges (
        budget TEXT NOT NULL REFERENCES dphist_budgets (name),
        seq INTEGER NOT NULL,
        fields TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (budget, seq))""",
    """CREATE TABLE IF NOT EXISTS dphist_releases (
        budget TEXT NOT NULL,
        seq INTEGER NOT NULL,
        fields TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (budget, seq),
        FOREIGN KEY (budget, seq) REFERENCES dphist_charges (budget, seq))""",
    """CREATE TABLE IF NOT EXISTS dphist_ledgers (
        budget TEXT NOT NULL,
        seq INTEGER NOT NULL,
        ledger TEXT NOT NULL,
        PRIMARY KEY (budget, seq),
        FOREIGN KEY (budget, seq) REFERENCES dphist_charges (budget, seq))""",
    SEALS,
)


def is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def default_location() -> str:
    """``$DPHIST_BUDGET_STORE`` if set, else ``budgets.sqlite`` in the per-user data
    folder (``$XDG_DATA_HOME/dphist`` or ``~/.local/share/dphist``; ``~/Library/Application
    Support/dphist`` on macOS, ``%LOCALAPPDATA%\\dphist`` on Windows): never beside the data."""
    chosen = os.environ.get("DPHIST_BUDGET_STORE", "").strip()
    if chosen:
        return chosen
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return str(base / "dphist" / "budgets.sqlite")


def connect(location: str | os.PathLike[str] | None, create: bool) -> SQLiteDB | PostgresDB:
    """Open the store at ``location`` (None: :func:`default_location`)."""
    where = default_location() if location is None else os.fspath(location)
    if is_url(where):
        return PostgresDB(where)
    return SQLiteDB(Path(where).expanduser().absolute(), create)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class SQLiteDB:
    """One SQLite file in WAL mode; ``fresh`` when this call created it."""

    kind = "sqlite"
    for_update = ""
    duplicate: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)

    def __init__(self, path: Path, create: bool):
        self.where = str(path)
        if path.is_dir():
            raise StoreError(f"the budget store {self.where} is a directory, not a file")
        self.fresh = not path.exists()
        if self.fresh:
            if not create:
                raise StoreError(
                    f"no budget store at {self.where}; create a budget with "
                    "'dphist budget init NAME --epsilon E' (or give --store)"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self.con = sqlite3.connect(
                path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the budget store {self.where}: {exc}") from None
        try:
            mode = self.con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            for pragma in ("synchronous = FULL", "foreign_keys = ON", "cell_size_check = ON"):
                self.con.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            self.con.close()
            raise self._error(exc) from None
        if str(mode).lower() != "wal":
            self.con.close()
            raise StoreError(f"the budget store {self.where} cannot use a WAL journal here")
        if self.fresh:
            _sync_directory(path.parent)

    def _error(self, exc: sqlite3.Error) -> StoreError:
        text = _first_line(exc)
        if isinstance(exc, sqlite3.DatabaseError) and any(
            word in text for word in ("malformed", "not a database", "corrupt")
        ):
            return StoreIntegrityError(
                f"the budget store {self.where} fails its check: the file is damaged ({text}); "
                "nothing is charged or published from it (see docs/budget.md, 'Integrity')"
            )
        if "locked" in text or "busy" in text:
            return StoreError(
                f"the budget store {self.where} stayed locked by another process for "
                f"{BUSY_SECONDS:g} s; try again"
            )
        return StoreError(f"the budget store {self.where} failed: {text}")

    @contextlib.contextmanager
    def transaction(self, write: bool) -> Iterator[SQLiteDB]:
        with self._lock:
            try:
                self.con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise self._error(exc) from None
            try:
                yield self
            except BaseException:
                if self.con.in_transaction:
                    self.con.execute("ROLLBACK")
                raise
            try:
                self.con.execute("COMMIT")
            except sqlite3.Error as exc:
                if self.con.in_transaction:
                    self.con.execute("ROLLBACK")
                raise self._error(exc) from None

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self.con.execute(sql, params).fetchall()
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.rows(sql, params)

    def has_table(self, name: str) -> bool:
        found = self.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return bool(found)

    def lock_schema(self) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` already excludes every other writer."""

    def check(self) -> list[str]:
        """SQLite's own check of the file's pages and records: the problems, or []."""
        with self.transaction(write=False):
            found = [row[0] for row in self.rows("PRAGMA quick_check")]
        return [] if found == ["ok"] else found

    def backup(self, target: Path) -> None:
        """An online, consistent copy of the whole store in a new SQLite file."""
        with self._lock:
            copy = sqlite3.connect(target)
            try:
                self.con.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")
            except sqlite3.Error as exc:
                raise self._error(exc) from None
            finally:
                copy.close()

    def close(self) -> None:
        self.con.close()


def _sync_directory(folder: Path) -> None:
    """Make a new file's directory entry durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _safe_url(url: str) -> str:
    """The URL as shown in messages: host, port and database, never the user or password."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{host}{port}{parts.path}"


class PostgresDB:
    """A PostgreSQL database reached with psycopg (version 3)."""

    kind = "postgresql"
    for_update = " FOR UPDATE"
    fresh = True  # the tables may be created in a database that has none

    def __init__(self, url: str):
        self.where = _safe_url(url)
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "a PostgreSQL budget store needs the psycopg driver: pip install 'dphist[postgres]'"
            ) from None
        self._psycopg = psycopg
        self.duplicate = (psycopg.errors.UniqueViolation,)
        self._lock = threading.RLock()
        try:
            self.con = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            message = f"cannot reach the budget store {self.where}: {_first_line(exc)}"
            raise StoreError(message) from None

    def _error(self, exc: Exception) -> StoreError:
        return StoreError(f"the budget store {self.where} failed: {_first_line(exc)}")

    @contextlib.contextmanager
    def transaction(self, write: bool) -> Iterator[PostgresDB]:
        with self._lock:
            try:
                with self.con.transaction():
                    if write:
                        self.con.execute("SET LOCAL synchronous_commit TO on")
                    else:
                        self.con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    yield self
            except self._psycopg.errors.UniqueViolation:
                raise
            except self._psycopg.Error as exc:
                raise self._error(exc) from None

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        cursor = self.con.execute(sql.replace("?", "%s"), tuple(params))
        return cursor.fetchall() if cursor.description is not None else []

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.con.execute(sql.replace("?", "%s"), tuple(params))

    def has_table(self, name: str) -> bool:
        return self.rows("SELECT to_regclass(?) IS NOT NULL", (name,))[0][0]

    def lock_schema(self) -> None:
        """Serialise concurrent creations of the tables (an advisory lock of this name)."""
        self.run("SELECT pg_advisory_xact_lock(hashtext('dphist budget store'))")

    def check(self) -> list[str]:
        """PostgreSQL checks its own pages (data checksums, WAL replay): nothing to add."""
        return []

    def backup(self, target: Path) -> None:
        raise StoreError(
            f"back up the PostgreSQL budget store {self.where} with pg_dump "
            "(see docs/budget.md, 'Backups')"
        )

    def close(self) -> None:
        self.con.close()
