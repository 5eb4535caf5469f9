"""Budget-store fixtures: a fresh SQLite file, or a fresh PostgreSQL schema.

PostgreSQL tests need a server: ``DPHIST_TEST_POSTGRES`` names a database on it
(``bash .ci/postgres start`` starts one on loopback and prints its URL; CI does so).
Without that variable they skip with that reason; with it set, a server that cannot
be reached is a failure, not a skip. Each test gets its own schema, dropped after.
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import quote

import pytest

PG_ENV = "DPHIST_TEST_POSTGRES"


@pytest.fixture(autouse=True)
def _no_user_store(tmp_path, monkeypatch):
    """No test touches the per-user store: the default location is a file in tmp_path."""
    monkeypatch.setenv("DPHIST_BUDGET_STORE", str(tmp_path / "default-store.sqlite"))


@pytest.fixture(scope="session")
def pg_server() -> str:
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        pytest.skip(
            f"no PostgreSQL server for the budget-store tests: set {PG_ENV}=postgresql://... "
            "('bash .ci/postgres start' runs one on loopback and prints its URL)"
        )
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (dphist[postgres])")
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        pytest.fail(f"{PG_ENV} is set but the server cannot be reached: {exc}")
    return url


def schema_url(server: str, schema: str) -> str:
    sep = "&" if "?" in server else "?"
    return f"{server}{sep}options={quote(f'-csearch_path={schema}')}"


@pytest.fixture
def pg_location(pg_server):
    """A PostgreSQL URL whose tables land in a fresh schema of their own."""
    import psycopg

    schema = f"dphist_t_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {schema}")
    yield schema_url(pg_server, schema)
    with psycopg.connect(pg_server, autocommit=True) as con:
        con.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    """A new store's location on each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "budgets.sqlite")
    return request.getfixturevalue("pg_location")


def raw_sql(location: str, sql: str, params: tuple = ()) -> list[tuple]:
    """Run SQL on the store behind dphist's back (to edit or inspect rows)."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as con:
            cur = con.execute(sql.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []
    import sqlite3

    con = sqlite3.connect(location, isolation_level=None)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


@pytest.fixture
def sql():
    """``sql(location, statement, params)``: :func:`raw_sql`."""
    return raw_sql
