"""White-box ledger check on random inputs, and bad-input fuzzing, for every method."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dphist as dh
from dphist._kernel import REST, ProtectedCounts, as_fraction, resolve_shares, validate_epsilon
from dphist.blocks import AbsoluteErrorGrouping, GroupTotals, NoisyBins, SortByNoisy
from dphist.errors import BudgetPlanError, DphistError, ValidationError
from dphist.lab import audit

METHODS = [m.name for m in dh.list_methods()]
SENTINEL = 987_654_321


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    counts=st.lists(st.integers(0, 1000), min_size=1, max_size=48),
    eps=st.floats(0.01, 10),
    seed=st.integers(0, 2**16),
)
def test_every_draw_is_charged_and_the_ledger_recomposes(method, counts, eps, seed):
    params = dict(dh.get_method(method).example)
    report = audit.ledger_check(method, counts, epsilon=eps, params=params, seed=seed)
    assert report.ok, report.problems
    assert report.values_drawn == report.values_charged


BAD_COUNTS = [
    [1.0, float("nan")],
    [1.0, float("inf")],
    [3, -SENTINEL],
    [0.5, SENTINEL],
    [],
    [[[1, 2]], [[3, 4]]],  # 3-D (a 2-D array is a 2-D histogram)
    ["x", "y"],
    [True, False],
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad", BAD_COUNTS, ids=range(len(BAD_COUNTS)))
def test_bad_counts_get_a_documented_error_without_values(method, bad):
    params = dict(dh.get_method(method).example)
    with pytest.raises(DphistError) as info:
        dh.publish(bad, epsilon=1.0, method=method, rng=0, **params)
    assert str(SENTINEL) not in str(info.value)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "abc", None])
def test_bad_epsilon_is_refused(method, eps):
    with pytest.raises(DphistError, match="epsilon"):
        dh.publish([1, 2, 3], epsilon=eps, method=method, rng=0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "counts, eps",
    [([SENTINEL * 1000], 1.0), ([10**12, 0, 10**12, 7], 0.5), ([0, 1, 0], 1e-3), ([5, 5], 1e3)],
    ids=["N=1 huge", "huge counts", "tiny eps", "large eps"],
)
def test_extreme_inputs_give_finite_outputs_of_the_right_length(method, counts, eps):
    params = dict(dh.get_method(method).example)
    if "bound" in params:
        params["bound"] = 10**12
    rel = dh.publish(counts, epsilon=eps, method=method, rng=1, **params)
    assert rel.estimate.shape == (len(counts),) and np.isfinite(rel.estimate).all()
    assert str(SENTINEL) not in repr(rel)


# --------------------------------------------------------------------------- budget splits
#
# Each method's split parameters are its public shares of epsilon: ``ratio`` (the
# share of the first, data-aware stage; privacy-assurance spec §6.C1) and SORTaki's
# ``gamma_in`` (the initializer's share). They are drawn here over (0, 1), extremes
# included; every release must still charge exactly epsilon in positive charges, each
# block exactly its declared share, and an inconsistent split must be refused with a
# dphist error before the kernel reads a single count.

SHARE_PARAMETERS = ("ratio", "gamma_in")
NOT_SHARES = ("eta",)  # AHP's threshold multiplier: a float in (0, 1) but no share
SPLIT_METHODS = [m.name for m in dh.list_methods() if set(SHARE_PARAMETERS) & set(m.defaults)]
EXTREMES = [1e-6, 1 - 1e-6]


def share_parameter(method: str) -> str:
    (name,) = [p for p in SHARE_PARAMETERS if p in dh.get_method(method).defaults]
    return name


def test_every_float_parameter_in_the_unit_interval_is_a_known_share():
    """A new split parameter must be added to SHARE_PARAMETERS (and so to the fuzz)."""
    for m in dh.list_methods():
        for name, default in m.defaults.items():
            if isinstance(default, float) and 0 < default < 1:
                assert name in SHARE_PARAMETERS + NOT_SHARES, (m.name, name)
    assert len(SPLIT_METHODS) >= 25


def first_stage_spend(method: str, params: dict, charges) -> Fraction:
    """Epsilon charged by the blocks the share parameter pays for: every block with a
    fixed share for ``ratio`` (or a lone block's selections), the initializer
    (``noisy_bins``) for ``gamma_in``."""
    blocks = dh.get_method(method).pipeline(**params).blocks
    if share_parameter(method) == "gamma_in":
        paid = {"noisy_bins"}
    else:
        paid = {b.name for b in blocks if b.share is not REST}
    if not paid:  # one block splitting its own budget (MWEM): the ratio pays its choices
        return sum((c.epsilon for c in charges if str(c.primitive) == "noisy_min"), Fraction(0))
    return sum((c.epsilon for c in charges if c.block in paid), Fraction(0))


def check_split(method: str, counts, eps, share, seed) -> None:
    params = {**dh.get_method(method).example, share_parameter(method): share}
    report = audit.ledger_check(method, counts, epsilon=eps, params=params, seed=seed)
    assert report.ok, report.problems
    assert report.charged == report.claimed == validate_epsilon(eps)
    assert all(c.epsilon > 0 for c in report.charges)
    assert report.values_drawn == report.values_charged
    blocks = dh.get_method(method).pipeline(**params).blocks
    plan = resolve_shares(report.claimed, {b.name: b.share for b in blocks})
    spent: dict[str, Fraction] = {}
    for c in report.charges:
        spent[c.block] = spent.get(c.block, Fraction(0)) + c.epsilon
    assert spent == {b: e for b, e in plan.items() if e > 0}
    expected = report.claimed * as_fraction(share, name="share")
    assert first_stage_spend(method, params, report.charges) == expected


numeric_shares = st.one_of(
    st.floats(1e-6, 1 - 1e-6),
    st.sampled_from(EXTREMES),
    st.fractions(Fraction(1, 10**6), Fraction(10**6 - 1, 10**6), max_denominator=10**6),
)
decimal_strings = st.decimals(Decimal("0.000001"), Decimal("0.999999"), places=12).map(str)


def shares_for(method: str):
    """Floats, extremes, fractions and exact decimal strings, for every method."""
    return st.one_of(
        numeric_shares, decimal_strings, st.sampled_from(["1e-6", "0.999999", Decimal("0.3")])
    )


@pytest.mark.parametrize("method", SPLIT_METHODS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    counts=st.lists(st.integers(0, 1000), min_size=1, max_size=24),
    eps=st.one_of(st.floats(0.01, 10), st.sampled_from([0.1, 1.0, "0.3", "1e-3"])),
    data=st.data(),
    seed=st.integers(0, 2**16),
)
def test_random_splits_charge_exactly_epsilon(method, counts, eps, data, seed):
    share = data.draw(shares_for(method), label="share")
    check_split(method, counts, eps, share, seed)


DECIMALS = ["0.000001", "0.999999", "0.3", "0.12345678901234567890123"]


@pytest.mark.parametrize("method", SPLIT_METHODS)
def test_exact_decimal_string_splits(method):
    for k, share in enumerate(DECIMALS):
        check_split(method, [5, 0, 17, 3, 3, 40, 1, 0], "0.7", share, k)


@pytest.mark.parametrize("method", ["O+S1", "O+S~"])
def test_halved_ratio_keeps_the_declared_split(method):
    """0.8474337369372327 / 2 has a shortest decimal whose double is not the ratio."""
    params = {"ratio": 0.8474337369372327}
    report = audit.ledger_check(method, [5, 0, 17, 3], epsilon=1.0, params=params)
    assert first_stage_spend(method, params, report.charges) == Fraction("0.8474337369372327")


class ReadSpy:
    """Counts the kernel's reads of the sealed counts during a test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.reads = 0
        original = ProtectedCounts._read

        def spy(data):
            self.reads += 1
            return original(data)

        monkeypatch.setattr(ProtectedCounts, "_read", spy)


def test_the_read_spy_sees_a_release(monkeypatch):
    spy = ReadSpy(monkeypatch)
    dh.publish([1, 2, 3], epsilon=1.0, method="AHP", rng=0)
    assert spy.reads >= 2


BAD_SHARES = [0, 0.0, -1e-9, -0.5, 1, 1.0, 1 + 1e-9, 2, float("nan"), float("inf"), -float("inf")]
BAD_SHARES += ["abc", True]


def _bad_share_cases():
    for m in SPLIT_METHODS:
        for k, bad in enumerate(BAD_SHARES):
            yield pytest.param(m, bad, id=f"{m}-{k}")


@pytest.mark.parametrize(("method", "bad"), list(_bad_share_cases()))
def test_inconsistent_split_is_refused_before_any_read(method, bad, monkeypatch):
    """Shares <= 0, >= 1, non-finite or not numbers: BudgetPlanError for block shares
    (``ratio``; on O+S1/O+S~ a ratio of 2 gives two halves of 1 that sum past 1) and
    ValidationError naming ``gamma_in`` for SORTaki's initializer share."""
    spy = ReadSpy(monkeypatch)
    param = share_parameter(method)
    params = {**dh.get_method(method).example, param: bad}
    expected = ValidationError if param == "gamma_in" else BudgetPlanError
    with pytest.raises(expected) as info:
        dh.publish([4, 0, 9, 1], epsilon=1.0, method=method, rng=0, **params)
    assert "share" in str(info.value) or param in str(info.value)
    assert spy.reads == 0


@pytest.mark.parametrize(
    "shares",
    [(0.6, 0.5), (0.5, 0.5), ("0.7", "0.3000000000000000000001"), (1e-6, 1.0)],
    ids=["sum 1.1", "sum 1 leaves REST nothing", "sum just above 1", "second share 1"],
)
def test_block_shares_summing_to_one_or_more_are_refused_before_any_read(shares, monkeypatch):
    spy = ReadSpy(monkeypatch)
    blocks = [
        NoisyBins(share=shares[0]),
        SortByNoisy(),
        AbsoluteErrorGrouping(share=shares[1], candidates="pow2"),
        GroupTotals(share=REST),
    ]
    with pytest.raises(BudgetPlanError, match="sum"):
        audit.ledger_check(blocks, [4, 0, 9, 1])
    assert spy.reads == 0
