"""Exact budget accounting: decimal-read rationals, shares, nested caps, concurrency."""

import threading
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._kernel.budget import (
    REST,
    Accountant,
    Charge,
    as_fraction,
    resolve_shares,
    validate_epsilon,
)
from dphist.errors import BudgetExceededError, BudgetPlanError, InputTypeError, ValidationError


def charge(eps, block="b", primitive="p"):
    return Charge(block, primitive, as_fraction(eps, name="eps"), Fraction(1), Fraction(1), 1, "q")


def test_decimal_reading_is_what_the_user_typed():
    assert as_fraction(0.1, name="e") == Fraction(1, 10)
    assert as_fraction("0.25", name="e") == Fraction(1, 4)
    assert as_fraction(Decimal("0.3"), name="e") == Fraction(3, 10)
    assert as_fraction(3, name="e") == 3
    assert Fraction(0.1) != Fraction(1, 10)  # why decimal reading matters


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), -0.0, "abc", None, True])
def test_bad_epsilon_is_refused_naming_the_argument(bad):
    with pytest.raises((ValidationError, InputTypeError), match="epsilon"):
        validate_epsilon(bad)


def test_ten_tenths_fit_in_one_and_the_eleventh_is_refused():
    acc = Accountant(validate_epsilon(1.0))
    for _ in range(10):
        acc.charge(charge(0.1))
    assert acc.spent == 1 and acc.remaining == 0
    with pytest.raises(BudgetExceededError) as info:
        acc.charge(charge(0.1, block="blk", primitive="discrete_laplace"))
    assert info.value.block == "blk" and info.value.primitive == "discrete_laplace"
    assert "blk" in str(info.value) and "discrete_laplace" in str(info.value)
    assert acc.spent == 1 and len(acc.ledger) == 10


def test_point_one_plus_point_two_fits_in_point_three():
    acc = Accountant(validate_epsilon(0.3))
    acc.charge(charge(0.1))
    acc.charge(charge(0.2))
    assert acc.remaining == 0


@settings(max_examples=200, deadline=None)
@given(cap=st.floats(1e-3, 10), requests=st.lists(st.floats(1e-4, 3), min_size=1, max_size=30))
def test_accepted_exactly_when_exact_sum_fits(cap, requests):
    acc = Accountant(validate_epsilon(cap))
    exact_cap = Fraction(repr(cap))
    spent = Fraction(0)
    for r in requests:
        q = Fraction(repr(r))
        if spent + q <= exact_cap:
            acc.charge(charge(r))
            spent += q
        else:
            with pytest.raises(BudgetExceededError):
                acc.charge(charge(r))
    assert acc.spent == spent <= exact_cap


def test_child_caps_and_parent_caps_both_bind():
    root = Accountant(Fraction(1))
    child = root.child(Fraction(1, 2), label="release")
    child.charge(charge(0.25))
    with pytest.raises(BudgetExceededError):
        child.charge(charge(0.3))  # child cap
    with pytest.raises(BudgetExceededError, match="short by"):
        root.child(Fraction(4, 5), label="big")  # only 3/4 left at the root
    assert root.spent == Fraction(1, 4) and root.ledger == child.ledger


def test_concurrent_charges_never_exceed_the_cap():
    acc = Accountant(Fraction(5))
    accepted = []

    def worker():
        n = 0
        for _ in range(1000):
            try:
                acc.charge(charge("0.001"))
                n += 1
            except BudgetExceededError:
                pass
        accepted.append(n)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == 5000 and acc.spent == 5


def test_shares_resolve_exactly_with_rest():
    eps = validate_epsilon(0.7)
    plan = resolve_shares(eps, {"a": 0.85, "b": REST})
    assert plan == {"a": Fraction(119, 200), "b": Fraction(21, 200)}
    assert sum(plan.values()) == eps
    plan = resolve_shares(eps, {"a": 0.25, "b": 0.5})
    assert sum(plan.values()) == Fraction(21, 40)  # shares below 1 leave budget unspent


@pytest.mark.parametrize(
    "shares, msg",
    [
        ({"a": 0.6, "b": 0.5}, "sum to"),
        ({"a": REST, "b": REST}, "only one"),
        ({"a": 1, "b": REST}, "already sum to 1"),
        ({"a": -0.1}, r"\[0, 1\]"),
        ({"a": 1.5}, r"\[0, 1\]"),
        ({"a": float("nan")}, "finite"),
        ({"a": "x"}, "number"),
    ],
)
def test_bad_shares_are_refused(shares, msg):
    with pytest.raises(BudgetPlanError, match=msg):
        resolve_shares(Fraction(1), shares)


@settings(max_examples=100, deadline=None)
@given(eps=st.floats(1e-3, 10), r=st.floats(0.0, 1.0))
def test_float_style_splits_never_overspend(eps, r):
    plan = resolve_shares(validate_epsilon(eps), {"a": r, "b": REST} if r < 1 else {"a": r})
    assert sum(plan.values()) == Fraction(repr(eps))
