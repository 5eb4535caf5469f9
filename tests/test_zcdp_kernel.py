"""The kernel under zero-concentrated DP: discrete Gaussian measurements charged in rho,
selections at the epsilon their rho buys, the lattice Gaussian for real values, and
linear methods' variances."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dphist._kernel import (
    Accountant,
    GroupSums,
    Identity,
    IntervalSums,
    PrivateView,
    noise_source,
    protect,
)
from dphist._kernel.biased_split import BiasedSplit
from dphist._kernel.gaussian import discrete_gaussian_variance, gaussian_lattice
from dphist._kernel.operators import FourierCoefficients, WeightedIntervalSums
from dphist._kernel.selection import SFBoundaries, WorstQuery
from dphist._kernel.zcdp import pure_epsilon_within
from dphist._numeric.tree import tree_layout
from dphist.errors import BudgetExceededError


def zcdp_view(x, rho, seed=0, max_records=1):
    data = protect(np.asarray(x), max_records=max_records)
    budget = Accountant(Fraction(rho), label="test")
    return PrivateView(data, budget, noise_source(seed), "block", definition="zcdp"), budget


def test_identity_gets_gaussian_noise_of_variance_one_over_two_rho():
    x = np.zeros(20_000, dtype=np.int64)
    view, budget = zcdp_view(x, Fraction(1, 8))
    m = view.measure(Identity(x.size))
    (charge,) = budget.ledger
    assert (charge.primitive, charge.unit, charge.epsilon) == ("discrete_gaussian", "rho", 0.125)
    assert charge.sensitivity == 1 and charge.scale == 4  # sigma**2 = 1 / (2 rho)
    assert m.variance == pytest.approx(discrete_gaussian_variance(4, 1))
    assert np.var(m.values) == pytest.approx(4.0, rel=0.05)
    assert set(np.unique(m.values)) <= set(range(-40, 41))  # integers, light tails


def test_overlapping_intervals_pay_their_l2_sensitivity():
    n = 16  # a three-level binary tree over 4 leaves of 4 bins: coverage 3
    lo = np.array([0, 0, 8, 0, 4, 8, 12])
    hi = np.array([16, 8, 16, 4, 8, 12, 16])
    view, budget = zcdp_view(np.zeros(n, dtype=np.int64), Fraction(3, 2))
    view.measure(IntervalSums(n, lo, hi))
    (charge,) = budget.ledger
    assert charge.sensitivity == 3 and charge.scale == 1  # 3 / (2 * 3/2)
    assert budget.remaining == 0


def test_weighted_answers_and_privacy_units_scale_the_variance():
    n = 8
    q = WeightedIntervalSums(n, np.array([0, 0]), np.array([8, 4]), (Fraction(1, 2), 1))
    view, budget = zcdp_view(np.zeros(n, dtype=np.int64), Fraction(1), max_records=2)
    m = view.measure(q)
    # D2 = K**2 (1/4 + 1) = 5; sigma**2 = 5/2; the weight-1/2 answer gets 4 sigma**2
    assert budget.ledger[0].sensitivity == 5
    assert m.variance[0] == pytest.approx(discrete_gaussian_variance(10, 1))
    assert m.variance[1] == pytest.approx(discrete_gaussian_variance(5, 2))


def test_selections_run_at_the_epsilon_their_rho_buys():
    """A bounded-range choice (MWEM's) runs as the exponential mechanism at e**2/8 = rho;
    a pure step (PrivTree's biased split) at e**2/2 = rho."""
    x = np.array([0, 10, 0, 0, 30, 0], dtype=np.int64)
    view, budget = zcdp_view(x, Fraction(1, 2))
    sel = WorstQuery(np.zeros(6, dtype=np.int64), np.arange(1, 7), np.arange(6, 37, 6.0))
    view.select(sel, epsilon=Fraction(1, 8))
    split = BiasedSplit(tree_layout(6, 2), "count", 0.0)
    view.select(split, epsilon=Fraction(1, 8))
    charge, pure = budget.ledger
    assert charge.unit == "rho" and charge.epsilon == Fraction(1, 8)
    assert charge.primitive == "exponential_min"
    assert charge.scale == sel.scale(6, Fraction(1))  # epsilon 1: 1/8 = 1**2 / 8
    assert pure.primitive == "biased_split" and pure.unit == "rho"
    assert pure.scale == split.scale(6, Fraction(1, 2))  # epsilon 1/2: 1/8 = (1/2)**2 / 2
    assert pure_epsilon_within(Fraction(1, 8)) == Fraction(1, 2)


def test_structure_first_adds_its_choices_up_in_rho():
    """k - 1 = 3 exponential choices at e/3 each cost 3 (e/3)**2 / 8 = e**2 / 24."""
    sel = SFBoundaries(4, 10)
    assert sel.zcdp_cost(32) == Fraction(1, 24)
    view, budget = zcdp_view(np.arange(32) % 5, Fraction(3, 8))
    starts = view.select(sel)
    (charge,) = budget.ledger
    assert charge.scale == sel.scale(32, Fraction(3))  # 9/24 = 3/8
    assert starts[0] == 0 and len(starts) <= 4


def test_over_budget_is_refused_before_reading_and_real_values_get_lattice_gaussian():
    view, budget = zcdp_view(np.arange(8), Fraction(1, 10))
    with pytest.raises(BudgetExceededError):
        view.measure(GroupSums(np.zeros(8, dtype=np.int64)), epsilon=Fraction(1, 5))
    assert budget.ledger == ()
    m = view.measure_real(FourierCoefficients(8, 3))
    (charge,) = budget.ledger
    assert charge.primitive == "lattice_gaussian" and charge.unit == "rho"
    # D2 = 3/8 plus the rounding of 3 values on a lattice of at most sigma / 8192
    assert Fraction(3, 8) < charge.sensitivity < Fraction(3, 8) * (1 + Fraction(2, 10**3))
    assert charge.epsilon * 2 * charge.scale >= charge.sensitivity
    assert m.variance == pytest.approx(float(charge.sensitivity) / (2 * 0.1), rel=1e-6)
    exact = np.array([np.arange(8).sum() / np.sqrt(8)])
    assert abs(m.values[0] - exact[0]) < 8 * np.sqrt(m.variance)


def test_lattice_gaussian_bounds_the_rounded_statistic():
    """Brute force: rounding two neighbouring statistics to the lattice moves each of the
    ``changed`` values by at most g more, so their L2 distance is within sqrt(D2')."""
    rng = np.random.default_rng(5)
    d2, changed = Fraction(1, 3), 4
    g, eff, a, b = gaussian_lattice(d2, Fraction(1, 2), changed)
    gf = float(g)
    for _ in range(2000):
        f = rng.normal(size=changed) * 100
        step = rng.normal(size=changed)
        step *= np.sqrt(float(d2)) / np.linalg.norm(step)
        moved = np.linalg.norm(np.rint(f / gf) * gf - np.rint((f + step) / gf) * gf)
        assert moved**2 <= float(eff) * (1 + 1e-12)
    assert Fraction(a, b) >= eff / (2 * Fraction(1, 2) * g * g)
