"""Continual counters: the kernel's plan and charge, brute-force oracles for the
estimates and their exact error, the closed form of the factorization."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dphist import streams
from dphist._kernel import Accountant, noise_source
from dphist._kernel.streams import (
    ContinualCounter,
    CounterNoise,
    CounterPlan,
    Dissimilarity,
    counter_noise,
    sqrt_coefficients,
)
from dphist.errors import BudgetExceededError, PrivacyError, ValidationError
from dphist.streams.counters import TreeEstimator, largest_error, running_variances

HUGE = 10**6  # noise of scale 1e-6: every draw is 0


def _counter(kind, T, n=1, amount=HUGE, definition="pure", k=1, cap=None, rng=0):
    account = Accountant(Fraction(cap if cap is not None else amount), label="test")
    c = ContinualCounter(
        CounterPlan(kind, T), n, amount=Fraction(amount), budget=account,
        noise=noise_source(rng), definition=definition, max_records=k,
    )  # fmt: skip
    return c, account


def test_dissimilarity_sensitivity_by_brute_force():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 9):
        q = Dissimilarity(rng.normal(3, 2, n))
        assert q.sensitivity == Fraction(1, n) and q.changed == 1
        x = rng.integers(0, 6, n)
        base = q.apply_real(x)[0]
        for i in range(n):
            for step in (-1, 1):
                y = x.copy()
                y[i] += step
                assert abs(q.apply_real(y)[0] - base) <= 1 / n + 1e-12
    with pytest.raises(TypeError):
        q.apply(x)


def test_tree_sensitivity_is_the_most_measured_nodes_of_a_window():
    for T in (1, 2, 3, 7, 8, 13, 64, 100):
        plan = CounterPlan("tree", T)
        covering = [
            sum(1 for h in range(plan.levels) if (((t >> h) + 1) << h) <= T) for t in range(T)
        ]
        assert plan.sensitivity == plan.sensitivity2 == max(covering)


def test_factorization_sensitivities_bound_the_first_column_exactly():
    for T in (1, 2, 5, 40):
        exact = [Fraction(math.comb(2 * k, k), 4**k) for k in range(T)]
        plan = CounterPlan("factorization", T)
        l1, l2 = sum(exact), sum(c * c for c in exact)
        assert l1 <= plan.sensitivity <= l1 * (1 + Fraction(1, 10**8))
        assert l2 <= plan.sensitivity2 <= l2 * (1 + Fraction(1, 10**8))
        assert l1 == (2 * T - 1) * exact[-1]  # the closed form of the column sum


def test_sqrt_factorization_squares_to_the_running_sum():
    T = 24
    c = sqrt_coefficients(T)
    R = np.array([[c[i - j] if i >= j else 0.0 for j in range(T)] for i in range(T)])
    assert np.allclose(R @ R, np.tril(np.ones((T, T))), atol=1e-12)


def test_a_counter_charges_its_horizon_once_before_reading():
    c, account = _counter("tree", 8, amount=1)
    assert len(account.ledger) == 1
    charge = account.ledger[0]
    assert charge.epsilon == 1 and charge.sensitivity == 4 and charge.size == 15
    with pytest.raises(BudgetExceededError):
        _counter("tree", 8, amount=1, cap=Fraction(1, 2))
    c, _ = _counter("tree", 2)
    c.step([1])
    c.step([2])
    with pytest.raises(PrivacyError, match="horizon"):
        c.step([3])


def test_a_privacy_unit_multiplies_the_sensitivity():
    _, account = _counter("tree", 16, amount=1, k=3)
    assert account.ledger[0].sensitivity == 3 * 5
    _, account = _counter("tree", 16, amount=Fraction(1, 2), definition="zcdp", k=3)
    assert account.ledger[0].sensitivity == 9 * 5


def test_noise_free_counters_release_the_true_running_totals():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, size=(13, 4))
    for kind in ("tree", "factorization"):
        s = streams.stream(list(x), epsilon=HUGE, mechanism=kind, horizon=13, rng=1)
        totals = np.array([r.estimate for r in s])
        assert np.allclose(totals, np.cumsum(x, axis=0), atol=1e-6)


def test_tree_estimates_are_the_best_linear_unbiased_ones():
    """Bottom-up Honaker against generalised least squares over every node completed so
    far, estimates and variances, on a horizon that is not a power of two."""
    T = 13
    plan = CounterPlan("tree", T)
    nodes = [(h, j) for h in range(plan.levels) for j in range(T >> h)]
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, T).astype(float)
    y = {(h, j): x[j << h : (j + 1) << h].sum() + rng.normal() for h, j in nodes}
    est = TreeEstimator(plan, 1, CounterNoise("gaussian", (9, 1), Fraction(1)))
    s2 = est.noise.variance
    for t in range(T):
        done = {h: np.array([y[(h, j)]]) for h, j in nodes if ((j + 1) << h) - 1 == t}
        estimate = est.update(done)[0]
        seen = [(h, j) for h, j in nodes if ((j + 1) << h) - 1 <= t]
        A = np.zeros((len(seen), t + 1))
        for r, (h, j) in enumerate(seen):
            A[r, j << h : (j + 1) << h] = 1
        xhat = np.linalg.lstsq(A, np.array([y[s] for s in seen]), rcond=None)[0]
        assert estimate == pytest.approx(xhat.sum(), abs=1e-9)
        blue = s2 * np.linalg.inv(A.T @ A).sum()
        assert est.model().noise.bin_variance == pytest.approx(blue, rel=1e-12)


def test_factorization_variance_is_its_closed_form():
    T = 20
    c = sqrt_coefficients(T)
    _, noise = counter_noise(CounterPlan("factorization", T), 1, Fraction(1, 2), "zcdp")
    R = np.array([[c[i - j] if i >= j else 0.0 for j in range(T)] for i in range(T)])
    expected = noise.variance * (R**2).sum(axis=1)  # Var((L z)_t) = v ||row t of L||**2
    assert np.allclose(running_variances("factorization", T, noise), expected, rtol=1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize("definition", ["pure", "zcdp"])
def test_factorization_error_matches_its_closed_form_in_simulation(definition):
    """4,000 independent bins of one stream: their squared errors average to the closed
    form at every window (a chi-square band of +-12% at 4,000 bins)."""
    T, n = 16, 4000
    rng = np.random.default_rng(5)
    x = rng.poisson(20, size=(T, n))
    amount = Fraction(2) if definition == "pure" else Fraction(1)
    kw = {"epsilon": amount} if definition == "pure" else {"rho": amount}
    s = streams.stream(list(x), mechanism="factorization", horizon=T, rng=7, **kw)
    out = list(s)
    err = np.array([r.estimate for r in out]) - np.cumsum(x, axis=0)
    _, noise = counter_noise(CounterPlan("factorization", T), n, amount, definition)
    model = running_variances("factorization", T, noise)
    assert np.allclose((err**2).mean(axis=1), model, rtol=0.12)
    assert all(
        r.stderr[0] == pytest.approx(math.sqrt(v), rel=1e-6)
        for r, v in zip(out, model, strict=True)
    )


def test_the_factorization_beats_the_best_tree_under_zcdp_only():
    for e in range(8, 21, 4):
        T = 1 << e
        f = largest_error("factorization", T, 1, "zcdp")
        assert (
            f
            < largest_error("tree", T, 1, "zcdp")
            < largest_error("tree", T, 1, "zcdp", honaker=False)
        )
        assert largest_error("factorization", T, 1, "pure") > largest_error("tree", T, 1, "pure")


def test_the_factorization_refuses_histories_it_cannot_hold():
    with pytest.raises(ValidationError, match="keeps every window"):
        _counter("factorization", 1 << 20, n=1 << 10)
