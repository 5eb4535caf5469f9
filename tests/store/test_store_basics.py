"""The budget store on both backends: exact caps, both definitions, lasting state,
releases recorded after their charge, names and locations."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.errors import (
    BudgetExceededError,
    PrivacyError,
    StoreError,
    StoreIntegrityError,
    ValidationError,
)
from dphist.store import BudgetStore, default_location, release_digest
from dphist.store.backend import _safe_url


def test_ten_tenths_fit_and_the_eleventh_is_refused_without_a_charge(location):
    with BudgetStore(location) as store:
        census = store.create("census", epsilon=1)
        grants = [census.charge(epsilon=0.1, method="identity") for _ in range(10)]
        assert [g.seq for g in grants] == list(range(1, 11))
        assert grants[-1].spent == 1 and grants[-1].remaining == 0
        with pytest.raises(BudgetExceededError, match="nothing was charged") as info:
            census.charge(epsilon=0.1, method="identity")
        assert info.value.requested == Fraction(1, 10) and info.value.remaining == 0
        status = census.status()
        assert (status.spent, status.charges, status.remaining) == (1, 10, 0)


def test_state_outlives_the_store_object(location):
    with BudgetStore(location) as store:
        store.create("census", epsilon=4).charge(epsilon="1/3", method="H")
    with BudgetStore(location, create=False) as again:
        census = again.budget("census")
        assert census.spent == Fraction(1, 3) and census.remaining == Fraction(11, 3)
        assert census.cap == 4 and census.unit == "epsilon"
        assert [s.name for s in again.budgets()] == ["census"]


def test_amounts_are_exact_rationals_stored_as_text(location, sql):
    with BudgetStore(location) as store:
        z = store.create("z", rho="0.3")
        z.charge(epsilon=0.1, method="identity")  # rho = 0.1**2 / 2 exactly
        z.charge(rho="1/7", method="H")
    rows = sql(location, "SELECT fields FROM dphist_charges ORDER BY seq")
    # time, method, then the release's definition and amount, the charge, the total
    fields = [tuple(text.split("\t")[2:]) for (text,) in rows]
    assert fields == [("pure", "1/10", "1/200", "1/200"), ("zcdp", "1/7", "1/7", "207/1400")]
    assert sql(location, "SELECT cap FROM dphist_budgets") == [("3/10",)]


def test_pure_release_on_rho_budget_costs_half_epsilon_squared(location):
    with BudgetStore(location) as store:
        z = store.create("z", rho=0.5)
        assert z.cost(epsilon=0.5) == Fraction(1, 8)
        grant = z.charge(epsilon=0.5, method="identity")
        assert grant.definition == "pure"
        assert (grant.amount, grant.charged) == (Fraction(1, 2), Fraction(1, 8))
        z.charge(epsilon=0.5, method="identity")
        z.charge(rho=0.25, method="H")
        with pytest.raises(BudgetExceededError):
            z.charge(epsilon="0.0001", method="identity")
        assert z.remaining == 0


def test_rho_release_on_pure_budget_is_refused_with_the_reason(location):
    with BudgetStore(location) as store:
        census = store.create("census", epsilon=1)
        with pytest.raises(PrivacyError, match="zCDP does not imply pure DP"):
            census.charge(rho=0.01, method="H")
        with pytest.raises(PrivacyError, match="zCDP does not imply pure DP"):
            census.cost(rho=0.01)
        assert census.status().charges == 0


def test_a_release_is_recorded_after_its_charge_and_shown_with_its_files(location, tmp_path):
    with BudgetStore(location) as store:
        census = store.create("census", epsilon=1)
        first = census.charge(epsilon=0.5, method="identity")
        census.charge(epsilon=0.25, method="H")  # its release never arrives
        rel = dh.publish(np.arange(6), epsilon=0.5, method="identity", rng=1)
        first.record(rel, [tmp_path / "out.csv"])
        a, b = census.entries()
        assert a.released and a.files == (str((tmp_path / "out.csv").resolve()),)
        assert a.digest == release_digest(rel) and a.release_method == "identity"
        assert not b.released and b.files == () and b.digest is None
        assert census.spent == Fraction(3, 4)  # the lost release stays spent
        with pytest.raises(StoreError, match="already has its release"):
            first.record(rel)


def test_a_release_larger_than_its_charge_is_not_recorded(location):
    with BudgetStore(location) as store:
        census = store.create("census", epsilon=1)
        grant = census.charge(epsilon=0.25, method="identity")
        rel = dh.publish(np.arange(6), epsilon=0.5, method="identity", rng=1)
        with pytest.raises(PrivacyError, match=r"covers 0\.25"):
            grant.record(rel)
        z = dh.publish(np.arange(6), rho=0.1, method="identity", rng=1)
        with pytest.raises(PrivacyError):
            grant.record(z)
        assert not census.entries()[0].released


def test_digest_names_the_released_values_not_the_file_format():
    a = dh.publish(np.arange(6), epsilon=0.5, method="identity", rng=1)
    b = dh.publish(np.arange(6), epsilon=0.5, method="identity", rng=1)
    c = dh.publish(np.arange(6), epsilon=0.5, method="identity", rng=2)
    assert release_digest(a) == release_digest(b) != release_digest(c)


def test_names_duplicates_and_unknown_budgets(location):
    with BudgetStore(location) as store:
        store.create("census-2030", epsilon=1)
        with pytest.raises(StoreError, match=r"already exists.*never reset or raised"):
            store.create("census-2030", epsilon=5)
        with pytest.raises(StoreError, match="Did you mean 'census-2030'"):
            store.budget("census-2003")
        for bad in ("", "has space", "-x", "a" * 101, "semi;colon", 3):
            with pytest.raises(ValidationError, match="budget's name"):
                store.create(bad, epsilon=1)
        with pytest.raises(ValidationError):
            store.create("both", epsilon=1, rho=1)
        assert store["census-2030"].cap == 1


def test_a_missing_store_is_not_created_where_only_read(tmp_path):
    path = tmp_path / "nowhere" / "b.sqlite"
    with pytest.raises(StoreError, match="no budget store"):
        BudgetStore(path, create=False)
    assert not path.parent.exists()


def test_an_existing_empty_file_is_never_turned_into_a_new_store(tmp_path):
    path = tmp_path / "b.sqlite"
    path.write_bytes(b"")  # a store truncated to nothing must not come back empty
    for create in (True, False):
        with pytest.raises(StoreIntegrityError, match="fails its check"):
            BudgetStore(path, create=create)


def test_default_location_is_the_variable_else_the_user_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("DPHIST_BUDGET_STORE", str(tmp_path / "x.sqlite"))
    assert default_location() == str(tmp_path / "x.sqlite")
    monkeypatch.delenv("DPHIST_BUDGET_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr("sys.platform", "linux")
    assert default_location() == str(tmp_path / "data" / "dphist" / "budgets.sqlite")
    store = BudgetStore()
    assert store.location == default_location()
    store.close()


def test_messages_never_show_a_password():
    url = "postgresql://alice:s3cret@db.example.org:6543/budgets?sslmode=require"
    assert _safe_url(url) == "postgresql://db.example.org:6543/budgets"


def test_an_unreachable_server_is_one_clear_error_without_the_password():
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError, match="cannot reach the budget store") as info:
        BudgetStore("postgresql://alice:s3cret@127.0.0.1:9/nothing", create=False)
    assert "s3cret" not in str(info.value) and "alice" not in str(info.value)


def test_stored_budgets_are_not_pickled(tmp_path):
    import pickle

    with BudgetStore(tmp_path / "b.sqlite") as store:
        census = store.create("census", epsilon=1)
        with pytest.raises(TypeError, match="each process"):
            pickle.dumps(census)
        with pytest.raises(TypeError, match="each process"):
            pickle.dumps(store)


def test_file_names_read_back_as_json_would():
    """The fast reading of a release's file list agrees with a JSON parse on every name
    that needs an escape and every one that does not."""
    import json

    from dphist.store.budget import file_names

    names = ["/a/b.csv", 'quo"te', "comma, space", 'tricky", "x', "é.csv", "back\\slash",
             "tab\there", "", "[x]"]  # fmt: skip
    for chosen in [[], *([n] for n in names), names, names[:3]]:
        text = json.dumps(chosen)
        assert file_names(text) == tuple(chosen) == tuple(json.loads(text))
