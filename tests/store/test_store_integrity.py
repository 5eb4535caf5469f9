"""A corrupted, truncated or hand-edited store is refused with one clear line, and
nothing is charged or published from it."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dphist as dh
from dphist import cli
from dphist.errors import StoreIntegrityError
from dphist.store import BudgetStore

FAILS = "fails its check"


def _filled(location: str, n: int = 5) -> None:
    """Budget 'census' (cap 1) with n charges of 1/1000 and a recorded release."""
    with BudgetStore(location) as store:
        census = store.create("census", epsilon=1)
        grants = [census.charge(epsilon="0.001", method="identity") for _ in range(n)]
        rel = dh.publish(np.arange(4), epsilon="0.001", method="identity", rng=0)
        grants[0].record(rel, ["out.csv"])
        store.create("other", rho=1)


def _refused(location: str, name: str = "census") -> str:
    """The one-line error that opening the budget gives."""
    with (
        pytest.raises(StoreIntegrityError, match=FAILS) as info,
        BudgetStore(location, create=False) as store,
    ):
        store.budget(name)
    message = str(info.value)
    assert "\n" not in message and "docs/budget.md" in message
    return message


def _edit(table: str, old: str, new: str, where: str = "") -> str:
    """SQL replacing ``old`` by ``new`` in the tab-separated fields of ``table``'s rows."""
    return f"UPDATE {table} SET fields = replace(fields, '{old}', '{new}'){where}"


EDITS = {
    "amount lowered": _edit(
        "dphist_charges", "\t1/1000\t1/1000", "\t1/10000\t1/1000", " WHERE seq = 2"
    ),
    "spent lowered": _edit("dphist_charges", "\t1/200", "\t0", " WHERE seq = 5"),
    "cap raised": "UPDATE dphist_budgets SET cap = '100' WHERE name = 'census'",
    "definition changed": "UPDATE dphist_budgets SET definition = 'zcdp' WHERE name = 'census'",
    "last charge deleted": "DELETE FROM dphist_charges WHERE seq = 5",
    "middle charge deleted": "DELETE FROM dphist_charges WHERE seq = 3",
    "head moved back": "UPDATE dphist_budgets SET charges = 4 WHERE name = 'census'",
    "release files edited": _edit("dphist_releases", "out.csv", "in.csv"),
    "release moved": "UPDATE dphist_releases SET seq = 2",
    "ledger edited": "UPDATE dphist_ledgers SET ledger = '{}'",
    "ledger moved": "UPDATE dphist_ledgers SET seq = 2",
    "ledger deleted": "DELETE FROM dphist_ledgers",
    "charge method edited": _edit(
        "dphist_charges", "\tidentity\t", "\tuniform\t", " WHERE seq = 1"
    ),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_hand_edited_row_is_refused(location, sql, edit):
    _filled(location)
    sql(location, EDITS[edit])
    _refused(location)
    with BudgetStore(location, create=False) as store:  # other budgets stay usable
        assert store.budget("other").cap == 1


@pytest.mark.parametrize("sealed", [False, True])
def test_a_forged_appended_charge_is_refused(location, sql, sealed):
    (_sealed if sealed else _filled)(location)
    sql(
        location,
        "INSERT INTO dphist_charges VALUES ('census', 6, "
        "'x\tidentity\tpure\t1/1000\t1/1000\t3/500', 'f00d')",
    )
    assert "charge 6" in _refused(location)


def test_an_edit_after_opening_is_caught_at_the_next_charge(location, sql):
    _filled(location)
    with BudgetStore(location, create=False) as store:
        census = store.budget("census")
        census.charge(epsilon=0.1, method="H")
        sql(location, _edit("dphist_charges", "\t1/10\t", "\t1/100\t", " WHERE seq = 6"))
        with pytest.raises(StoreIntegrityError, match="charge 6"):
            census.charge(epsilon=0.1, method="H")
        sql(location, _edit("dphist_charges", "\t1/100\t", "\t1/10\t", " WHERE seq = 6"))
        census.charge(epsilon=0.1, method="H")  # undone: the chain holds again
        sql(location, "DELETE FROM dphist_charges WHERE seq = 7")
        with pytest.raises(StoreIntegrityError, match="charge 7"):
            census.charge(epsilon=0.1, method="H")
    assert sql(location, "SELECT count(*) FROM dphist_charges WHERE budget = 'census'") == [(6,)]


def test_a_truncated_file_is_refused(tmp_path):
    path = tmp_path / "b.sqlite"
    _filled(str(path), n=400)
    size = path.stat().st_size
    assert size > 4 * 4096
    with path.open("r+b") as f:
        f.truncate(size // 2)
    with (
        pytest.raises(StoreIntegrityError, match=FAILS) as info,
        BudgetStore(path, create=False) as store,
    ):
        store.budget("census")
    assert "\n" not in str(info.value)


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_a_charge_is_refused(tmp_path, sql):
    path = tmp_path / "b.sqlite"
    _filled(str(path))
    [(stored_hash,)] = sql(str(path), "SELECT hash FROM dphist_charges WHERE seq = 3")
    offset = path.read_bytes().find(stored_hash.encode())
    assert offset > 0
    _flip(path, offset + 10)
    assert "charge 3" in _refused(str(path))


def test_a_flipped_byte_in_a_page_header_is_refused(tmp_path):
    path = tmp_path / "b.sqlite"
    _filled(str(path), n=400)
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    _flip(path, 3 * page)  # the b-tree page type of page 4
    _refused(str(path))


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "b.sqlite"
    path.write_bytes(b"age\n3\n17\n" * 100)
    with pytest.raises(StoreIntegrityError, match=FAILS):
        BudgetStore(path)
    assert path.read_bytes() == b"age\n3\n17\n" * 100


def test_nothing_is_published_from_a_store_that_fails(tmp_path, sql, capsys):
    path = tmp_path / "b.sqlite"
    _filled(str(path))
    sql(str(path), EDITS["cap raised"])
    (tmp_path / "v.csv").write_text("age\n3\n17\n42\n")
    out = tmp_path / "out.csv"
    args = ["publish", str(tmp_path / "v.csv"), "-c", "age", "--domain", "0:50:10"]
    args += ["--epsilon", "0.1", "--method", "identity", "--out", str(out)]
    code = cli.main([*args, "--budget", "census", "--budget-store", str(path)])
    err = capsys.readouterr().err
    assert code == 1 and FAILS in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert cli.main(["budget", "show", "census", "--store", str(path)]) == 1
    assert cli.main(["budget", "check", "--store", str(path)]) == 1
    assert FAILS in capsys.readouterr().err
    store_ok = tmp_path / "ok.sqlite"
    _filled(str(store_ok))
    assert cli.main(["budget", "check", "--store", str(store_ok)]) == 0


def test_a_release_without_its_charge_is_refused(tmp_path, sql):
    """A release moved past the last charge (SQLite lets a raw edit break the foreign
    key; PostgreSQL refuses the edit itself)."""
    path = str(tmp_path / "b.sqlite")
    _filled(path)
    sql(path, "UPDATE dphist_releases SET seq = 99")
    assert "no charge 99" in _refused(path)


# ------------------------------------------------------------------ seals


def _sealed(location: str, n: int = 5) -> None:
    """:func:`_filled`, then opened once: the check seals the rows it followed."""
    _filled(location, n)
    with BudgetStore(location, create=False) as store:
        store.budget("census")


def _seal(location: str, sql) -> list[tuple]:
    return sql(location, "SELECT charges, releases FROM dphist_seals WHERE budget = 'census'")


SEALED_EDITS = ["amount lowered", "spent lowered", "middle charge deleted", "last charge deleted",
                "head moved back", "release files edited", "release moved",
                "charge method edited"]  # fmt: skip


@pytest.mark.parametrize("edit", SEALED_EDITS)
def test_an_edited_sealed_row_is_refused(location, sql, edit):
    _sealed(location)
    assert _seal(location, sql) == [(5, 1)]
    sql(location, EDITS[edit])
    _refused(location)
    with (
        BudgetStore(location, create=False) as store,
        pytest.raises(StoreIntegrityError, match=FAILS),
    ):
        store.budget("census", check=False).rows()  # what show reads


def test_show_prints_nothing_from_an_edited_sealed_row(tmp_path, sql, capsys):
    """``budget show`` (run without Typer) refuses with one line and prints no line."""
    path = str(tmp_path / "b.sqlite")
    _sealed(path)
    sql(path, EDITS["release files edited"])
    assert cli.main(["budget", "show", "census", "--store", path]) == 1
    out, err = capsys.readouterr()
    assert out == "" and FAILS in err and len(err.strip().splitlines()) == 1


def test_a_seal_that_disagrees_is_refused(location, sql):
    _sealed(location)
    sql(location, "UPDATE dphist_seals SET digest = 'f00d'")
    assert "does not match its seal" in _refused(location)
    with pytest.raises(StoreIntegrityError, match="its seal"), BudgetStore(location) as store:
        store.check()  # the chain holds row by row: the seal alone is wrong


def test_rows_removed_under_a_seal_are_refused(location, sql):
    """A deleted release and its ledger pass a check row by row (as a charge whose release
    never came); under a seal they are missed."""
    _sealed(location)
    sql(location, "DELETE FROM dphist_ledgers")
    sql(location, "DELETE FROM dphist_releases")
    with (
        BudgetStore(location, create=False) as store,
        pytest.raises(StoreIntegrityError, match="fewer rows than its seal"),
    ):
        store.budget("census", check=False).rows()


def test_a_stale_seal_is_harmless_and_renewed(location, sql):
    rel = dh.publish(np.arange(4), epsilon="0.001", method="identity", rng=0)
    with BudgetStore(location) as store:
        census = store.create("census", epsilon=1)
        done, late = (census.charge(epsilon="0.001", method="identity") for _ in range(2))
        done.record(rel, [])
        store.budget("census")
        assert _seal(location, sql) == [(2, 1)]
        late.record(rel, [])  # recorded after the seal: it holds one release too few
        census.charge(epsilon="0.001", method="identity")  # and a charge came after it
        status, rows = census.rows()
        assert status.charges == 3 and [bool(r.split("\n")[3]) for r in rows] == [True, True, False]
        assert _seal(location, sql) == [(3, 2)]  # checked row by row, sealed again
        assert [e.released for e in census.entries()] == [True, True, False]
        assert store.check()[0].spent == Fraction(3, 1000)


def test_a_store_made_before_seals_is_read_and_sealed(location, sql):
    _filled(location, n=3)
    sql(location, "DROP TABLE dphist_seals")
    with BudgetStore(location, create=False) as store:
        assert store.budget("census").status().charges == 3
    assert _seal(location, sql) == [(3, 1)]
