"""The kernel: input sealing, query sensitivities, charge-before-read, views."""

import copy
import pickle
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dphist._kernel import (
    Accountant,
    GroupSums,
    Identity,
    IntervalSums,
    noise_source,
    protect,
    run_pipeline,
    validate_epsilon,
)
from dphist._kernel.data import ProtectedCounts
from dphist._kernel.view import PrivateView
from dphist.blocks import REST, Block, NoisyBins, State
from dphist.errors import (
    BudgetExceededError,
    BudgetPlanError,
    CompositionError,
    DomainError,
    InputTypeError,
    InternalError,
)

# ---------------------------------------------------------------- input sealing

SENTINEL = 987654321


@pytest.mark.parametrize(
    "bad, err, msg",
    [
        ([1, -SENTINEL, 2], DomainError, "negative"),
        ([1.0, float("nan")], DomainError, "NaN"),
        ([1.0, float("inf")], DomainError, "NaN or infinite"),
        ([1.5, 2.0], DomainError, "whole numbers"),
        ([], DomainError, "empty"),
        ([[1, 2], [3, 4]], DomainError, "1-D"),
        ([True, False], InputTypeError, "booleans"),
        (["a", "b"], InputTypeError, "numeric"),
        ("123", InputTypeError, "1-D array"),
        (5, InputTypeError, "1-D array"),
    ],
)
def test_bad_counts_are_refused_without_echoing_values(bad, err, msg):
    with pytest.raises(err, match=msg) as info:
        protect(bad)
    assert str(SENTINEL) not in str(info.value)
    assert "counts" in str(info.value)


def test_sealed_counts_are_a_private_copy():
    src = np.array([1, 2, 3])
    sealed = protect(src)
    src[0] = 100
    assert sealed.n == 3 and repr(sealed) == "ProtectedCounts(n=3, max_records=1)"
    assert protect([1.0, 2.0]).n == 2  # whole-number floats are accepted
    for attempt in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="cannot be pickled"):
            attempt(sealed)


# ---------------------------------------------------------------- query sensitivities


def dense(query, n):
    """The query matrix, column by column (brute force)."""
    cols = [query.apply(np.eye(n, dtype=np.int64)[i]) for i in range(n)]
    return np.stack(cols, axis=1)


def brute_sensitivity(query, n):
    return int(np.abs(dense(query, n)).sum(axis=0).max())


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 30))
def test_sensitivities_equal_brute_force_column_sums(data, n):
    x = np.array(data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)))
    labels = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    labels = np.unique(labels, return_inverse=True)[1]
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n)), min_size=1, max_size=40)
    )
    lo = np.array([min(a, b - 1) for a, b in pairs])
    hi = np.array([max(a + 1, b) for a, b in pairs])
    for q in (Identity(n), GroupSums(labels), IntervalSums(n, lo, hi)):
        assert q.sensitivity == brute_sensitivity(q, n)
        assert np.array_equal(q.apply(x), dense(q, n) @ x)
        assert q.size == dense(q, n).shape[0]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 16, 33, 100])
def test_haar_sums_by_brute_force(n):
    """Privelet's coefficients: the answers of the Haar intervals, the L1 and squared L2
    sensitivity of the dense matrix (every changed coefficient moves by one)."""
    from dphist._kernel.operators import HaarSums, SignedIntervalSums
    from dphist._numeric.wavelet import haar_depth, haar_intervals

    q = HaarSums(n)
    x = np.random.default_rng(n).integers(0, 50, n)
    assert np.array_equal(q.apply(x), SignedIntervalSums(n, *haar_intervals(n)).apply(x))
    matrix = dense(q, n)
    assert q.size == matrix.shape[0]
    assert q.sensitivity == brute_sensitivity(q, n) == haar_depth(n) + 1
    assert q.sensitivity2 == int((matrix**2).sum(axis=0).max())
    assert set(np.unique(matrix)) <= {-1, 0, 1}


def test_named_sensitivities():
    n = 37
    # a 4-level binary-ish tree as intervals: each bin is covered once per level
    lo, hi = [], []
    for width in (37, 16, 4, 1):
        starts = np.arange(0, n, width)
        lo += list(starts)
        hi += list(np.minimum(starts + width, n))
    assert IntervalSums(n, np.array(lo), np.array(hi)).sensitivity == 4
    prefix = IntervalSums(n, np.zeros(n, dtype=int), np.arange(1, n + 1))
    assert prefix.sensitivity == n
    assert GroupSums(np.array([2, 0, 1, 0, 2])).sensitivity == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: IntervalSums(5, np.array([0, 3]), np.array([2, 3])),  # empty interval
        lambda: IntervalSums(5, np.array([0]), np.array([6])),
        lambda: GroupSums(np.array([0, 2, 2])),  # group 1 empty
        lambda: GroupSums(np.array([], dtype=int)),
        lambda: Identity(0),
    ],
)
def test_malformed_queries_are_refused(make):
    with pytest.raises(ValueError):
        make()


# ---------------------------------------------------------------- views and charging


class SpyCounts(ProtectedCounts):
    __slots__ = ("reads",)

    def __init__(self, values):
        super().__init__(values)
        self.reads = 0

    def _read(self):
        self.reads += 1
        return super()._read()


def make_view(values, cap, noise=7):
    data = SpyCounts(np.asarray(values))
    acc = Accountant(validate_epsilon(cap), label="release")
    view = PrivateView(data, acc.child(acc.cap, label="blk"), noise_source(noise), "blk")
    return data, acc, view


def test_measurement_charges_before_it_reads():
    data, acc, view = make_view([1, 2, 3], 1.0)
    m = view.measure(Identity(3), epsilon=0.4)
    assert data.reads == 1 and acc.spent == Fraction(2, 5)
    assert m.scale == Fraction(5, 2) and m.values.dtype == np.int64
    with pytest.raises(BudgetExceededError) as info:
        view.measure(Identity(3), epsilon=0.7)
    assert info.value.block == "blk" and info.value.primitive == "discrete_laplace"
    assert data.reads == 1, "an over-budget measurement must not read the data"


def test_sensitivity_comes_from_the_query_not_the_caller():
    _, acc, view = make_view(np.zeros(8, dtype=int), 1.0)
    m = view.measure(IntervalSums(8, np.zeros(8, dtype=int), np.arange(1, 9)), epsilon=0.5)
    (charge,) = acc.ledger
    assert charge.sensitivity == 8 and m.scale == 16
    assert np.isclose(m.variance, 2 * 16**2, rtol=1e-3)


def test_default_epsilon_is_the_rest_of_the_block_budget():
    _, acc, view = make_view([5, 5], 0.3)
    view.measure(Identity(2), epsilon=0.1)
    view.measure(Identity(2))
    assert acc.spent == Fraction(3, 10) and view.remaining == 0


def test_closed_view_refuses_to_measure():
    data, _, view = make_view([1, 2], 1.0)
    view.close()
    with pytest.raises(InternalError, match="after it returned"):
        view.measure(Identity(2))
    assert data.reads == 0


def test_a_charge_persists_when_the_mechanism_fails_after_reading():
    _, acc, view = make_view([1, 2], 1.0)

    class Exploding(Identity):
        def apply(self, x):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        view.measure(Exploding(2), epsilon=0.5)
    assert acc.spent == Fraction(1, 2)


def test_real_valued_measurement_charges_the_lattice_rounding():
    _, acc, view = make_view([10, 20, 30], 1.0)
    m = view.measure_real(Identity(3), epsilon=0.5)
    (charge,) = acc.ledger
    assert charge.primitive == "lattice_laplace"
    assert 1 < charge.sensitivity < 1 + 1e-6
    assert charge.scale >= charge.sensitivity / Fraction(1, 2)
    g = 2.0 ** np.floor(np.log2(1 / 2**20))
    assert np.allclose(m.values / g, np.round(m.values / g))  # on the lattice


@dataclass(frozen=True, kw_only=True)
class Recorder(Block):
    label = "recorder"
    spends = False

    def run(self, state, view):
        return state.with_(notes={"view": view})


@dataclass(frozen=True, kw_only=True)
class Greedy(Block):
    label = "greedy"
    spends = True

    def run(self, state, view):
        view.measure(Identity(view.n), epsilon=view.remaining * 2)
        return state


def run(blocks, eps=1.0, counts=(1, 2, 3), data=None):
    data = data if data is not None else protect(list(counts))
    acc = Accountant(validate_epsilon(10))
    budget = acc.child(validate_epsilon(eps), label="method")
    return run_pipeline(
        data,
        blocks,
        lambda plan: State(n=data.n, budgets=plan),
        epsilon=validate_epsilon(eps),
        budget=budget,
        noise=noise_source(1),
    ), budget


def test_a_block_without_share_gets_no_view():
    (state, timings), budget = run([NoisyBins(share=REST), Recorder()])
    assert state.notes["view"] is None
    assert set(timings) == {"noisy_bins", "recorder"} and budget.spent == 1


def test_a_block_cannot_exceed_its_share():
    with pytest.raises(BudgetExceededError) as info:
        run([Greedy(share=0.5)])
    assert info.value.block == "greedy"


def test_shares_are_checked_before_any_block_runs():
    spy = SpyCounts(np.array([1, 2, 3]))
    with pytest.raises(BudgetPlanError):
        run([NoisyBins(share=0.7), Greedy(share=0.6)], data=spy)
    assert spy.reads == 0
    with pytest.raises(CompositionError, match="must be 0"):
        Recorder(share=0.1)
    with pytest.raises(BudgetPlanError, match="positive share"):
        NoisyBins(share=0)
    with pytest.raises(CompositionError, match="unique"):
        run([NoisyBins(share=0.5), NoisyBins(share=0.5)])


def test_remembered_noise_terms_follow_a_replaced_scale_function(monkeypatch):
    """The kernel remembers each sensitivity and epsilon's noise scale; a scale function
    replaced for a while (as the privacy audit's mutants do) neither reads nor leaves
    an entry the real function's releases would use."""
    import dphist as dh
    from dphist._kernel import view as kernel_view

    def scales() -> list:
        rel = dh.publish(np.arange(8), method="identity", epsilon=1, rng=0)
        return [c.scale for c in rel.ledger]

    real = scales()
    original = kernel_view.rational_scale

    def halve(sensitivity, epsilon):
        t, s = original(sensitivity, epsilon)
        return t, 2 * s

    monkeypatch.setattr(kernel_view, "rational_scale", halve)
    halved = scales()
    monkeypatch.undo()
    assert [2 * h for h in halved] == real
    assert scales() == real
