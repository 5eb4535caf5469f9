"""Sessions and dh.publish on a stored budget: the whole charge is committed before the
data is read, refused releases read nothing, releases are recorded when they return."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist import session as session_module
from dphist.errors import BudgetExceededError, InputTypeError, PrivacyError
from dphist.store import release_digest

COUNTS = np.array([3, 0, 5, 1, 0, 0, 7, 2, 9, 4, 0, 1, 2, 8, 3, 0])


@pytest.fixture
def store(tmp_path):
    with dh.BudgetStore(tmp_path / "b.sqlite") as opened:
        yield opened


@pytest.fixture
def reads(monkeypatch):
    """Spy on the runner (the only way a release reads the sealed counts): each call
    records how many charges the store held at that moment."""
    seen: list[int] = []
    real = session_module.run

    def spy(*args, **kwargs):
        seen.append(spy.budget.status().charges)
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "run", spy)
    return spy, seen


def test_each_release_is_charged_before_it_reads(store, reads):
    spy, seen = reads
    census = spy.budget = store.create("census", epsilon=1)
    with dh.Session(COUNTS, budget=census, rng=0) as s:
        assert s.epsilon == 1 and s.definition == dh.PureDP(1)
        s.publish("identity", epsilon=0.25)
        s.publish("H", epsilon=0.5)
    assert seen == [1, 2]
    entries = census.entries()
    assert [(e.method, e.amount, e.released) for e in entries] == [
        ("identity", Fraction(1, 4), True),
        ("H", Fraction(1, 2), True),
    ]


def test_over_budget_is_refused_before_any_read(store, reads):
    spy, seen = reads
    census = spy.budget = store.create("census", epsilon=1)
    census.charge(epsilon=0.75, method="elsewhere")  # another process spent most of it
    with pytest.raises(BudgetExceededError, match="budget 'census'"):
        dh.publish(COUNTS, epsilon=0.5, method="identity", budget=census)
    with dh.Session(COUNTS, budget=census) as s:
        assert s.epsilon == Fraction(1, 4)  # what was left when it opened
        census.charge(epsilon=0.25, method="elsewhere")
        with pytest.raises(BudgetExceededError, match="nothing was charged"):
            s.publish("identity", epsilon=0.25)
    assert seen == [] and census.spent == 1
    with pytest.raises(BudgetExceededError, match="nothing left"):
        dh.Session(COUNTS, budget=census)


def test_publish_records_the_release_it_returns(store):
    census = store.create("census", epsilon=1)
    rel = dh.publish(COUNTS, epsilon=0.5, method="H", budget=census, rng=3)
    [entry] = census.entries()
    assert entry.released and entry.digest == release_digest(rel)
    assert entry.release_method == "H" and entry.amount == rel.spent == Fraction(1, 2)


def test_auto_is_one_charge_for_its_whole_epsilon(store):
    census = store.create("census", epsilon=1)
    rel = dh.publish(COUNTS, epsilon=0.5, method="auto", budget=census, rng=0)
    [entry] = census.entries()
    assert (entry.method, entry.release_method) == ("auto", rel.method)
    assert entry.amount == Fraction(1, 2)
    assert sum(c.epsilon for c in rel.ledger) == Fraction(1, 2) == census.spent


def test_both_definitions(store):
    z = store.create("z", rho=0.1)
    rel = dh.publish(COUNTS, rho=0.05, method="H", budget=z, rng=0)
    assert rel.definition == "zcdp" and z.spent == Fraction(1, 20)
    pure = dh.publish(COUNTS, epsilon=0.2, method="identity", budget=z, rng=0)
    assert pure.definition == "pure" and z.spent == Fraction(1, 20) + Fraction(1, 50)
    with dh.Session(COUNTS, epsilon=0.1, budget=z, rng=0) as s:  # a pure session on rho
        assert s.definition == dh.PureDP(0.1)
        s.publish("identity", epsilon=0.1)
    with dh.Session(COUNTS, budget=z, rng=0) as s:  # the budget's own definition
        assert s.definition == dh.zCDP(Fraction(1, 40))  # 1/10 - 1/20 - 1/50 - 1/200
        s.publish("H", rho=0.01)
    census = store.create("census", epsilon=1)
    with pytest.raises(PrivacyError, match="zCDP does not imply pure DP"):
        dh.publish(COUNTS, rho=0.01, method="H", budget=census)
    assert census.status().charges == 0


def test_a_release_that_fails_after_its_charge_keeps_it_spent(store, monkeypatch):
    census = store.create("census", epsilon=1)

    def broken(*args, **kwargs):
        raise RuntimeError("the machine fell over")

    monkeypatch.setattr(session_module, "run", broken)
    with pytest.raises(RuntimeError):
        dh.publish(COUNTS, epsilon=0.5, method="identity", budget=census)
    [entry] = census.entries()
    assert not entry.released and census.spent == Fraction(1, 2)


def test_budget_must_be_a_stored_budget():
    with pytest.raises(InputTypeError, match="stored budget"):
        dh.publish(COUNTS, epsilon=0.5, method="identity", budget=dh.PureDP(1))


def test_histogram_is_charged_before_it_counts(store, monkeypatch):
    from dphist import ingest

    census = store.create("census", epsilon=1)
    counted = []
    real = ingest.count_values

    def spy(*args, **kwargs):
        counted.append(census.status().charges)
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest, "count_values", spy)
    ages = [3, 17, 17, 42, 88]
    rel = dh.histogram(ages, domain="0:100:10", epsilon=0.5, method="identity", budget=census)
    assert counted == [1]
    [entry] = census.entries()
    assert entry.released and entry.digest == release_digest(rel)
    with pytest.raises(BudgetExceededError):
        dh.histogram(ages, domain="0:100:10", epsilon=1, method="identity", budget=census)
    assert counted == [1]


@pytest.mark.parametrize(
    "values, binning",
    [
        (np.array(["a", "b", "c"]), {"domain": "0:10:1"}),  # text column, numeric bins
        (np.array([1.0, 2.0]), {"categories": ["a", "b"]}),  # numbers, categorical bins
    ],
)
def test_histogram_refuses_a_wrong_typed_column_before_charging(store, values, binning):
    from dphist.errors import ValidationError

    census = store.create("census", epsilon=1)
    with pytest.raises(ValidationError):
        dh.histogram(values, epsilon=0.5, method="identity", budget=census, **binning)
    assert census.status().charges == 0
    assert census.entries() == []


def test_histogram_refuses_a_too_large_method_before_charging(store, monkeypatch):
    from dphist import resources
    from dphist.errors import ValidationError

    census = store.create("census", epsilon=1)
    monkeypatch.setattr(resources, "available_memory", lambda: 1000)
    with pytest.raises(ValidationError, match="memory"):
        dh.histogram([1, 2, 3], domain="0:1000:1", epsilon=0.5, method="identity", budget=census)
    assert census.status().charges == 0
