"""AHP, SReB_GCA, DAWA and the SORTaki configurations as methods."""

import math
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._numeric.bucketing import waf_estimate
from dphist.blocks import State, Threshold, WeightedAverage
from dphist.errors import ValidationError
from dphist.methods.sortaki_configs import SORTAKI_CONFIGS

SORTAKI = ["GAHP", "sGAHP", "stGAHP", "sDAHP", "sDWF", "DPC", "sDPC", "sDAWA"]


def test_ahp_maps_clusters_back_to_the_original_bins():
    # data-aware spec §2.4 (4): h = [7, 0, 3]; negligible noise, no threshold
    rel = dh.publish([7, 0, 3], epsilon=1e7, method="AHP", eta=0.0, rng=0)
    assert np.allclose(rel.estimate, [7, 0, 3], atol=1e-4)
    assert sorted(np.bincount(rel.groups).tolist()) in ([1, 1, 1], [1, 2])


@pytest.mark.parametrize("method", ["AHP", "SReB_GCA", *SORTAKI])
def test_released_values_are_equal_within_groups(method):
    x = np.random.default_rng(1).poisson(3, 200) * (np.arange(200) % 3 == 0)
    rel = dh.publish(x, epsilon=0.5, method=method, rng=2)
    for g in np.unique(rel.groups):
        vals = rel.estimate[rel.groups == g]
        assert np.allclose(vals, vals[0])


@pytest.mark.parametrize(
    "method, expected",
    [
        ("AHP", [("noisy_bins", Fraction(17, 20)), ("group_totals", Fraction(3, 20))]),
        ("SReB_GCA", [("noisy_bins", Fraction(1, 2)), ("group_totals", Fraction(1, 2))]),
        ("DAWA", [("l1_grouping", Fraction(1, 4)), ("fixed_queries", Fraction(3, 4))]),
        ("sDWF", [("noisy_bins", Fraction(9, 10)), ("finalizer", Fraction(1, 10))]),
        (
            "sDAWA",
            [
                ("noisy_bins", Fraction(9, 10)),
                ("l1_grouping", Fraction(1, 40)),
                ("finalizer", Fraction(3, 40)),
            ],
        ),
    ],
)
def test_default_budget_splits(method, expected):
    rel = dh.publish(np.arange(50) % 7, epsilon=1, method=method, rng=0)
    assert [(c.block, c.epsilon) for c in rel.ledger] == expected


@pytest.mark.parametrize("name", SORTAKI)
@pytest.mark.parametrize("gamma_in", [0.3, 0.5, 0.7, 0.9])
def test_sortaki_shares_compose_to_epsilon(name, gamma_in):
    rel = dh.publish(np.arange(40) % 5, epsilon=0.5, method=name, gamma_in=gamma_in, rng=0)
    assert rel.spent == Fraction(1, 2)
    assert rel.ledger[0].epsilon == Fraction(1, 2) * Fraction(repr(gamma_in))


@pytest.mark.parametrize("name", ["sGAHP", "sDWF", "sDAWA"])
def test_sorting_without_an_initializer_budget_is_refused(name):
    with pytest.raises(ValidationError, match="gamma_in"):
        dh.publish([1, 2, 3], epsilon=1, method=name, gamma_in=0)


def test_table_two_is_fully_registered():
    names = {m.name for m in dh.list_methods()}
    assert set(SORTAKI_CONFIGS) - {"Identity"} <= names | {"DAWA"}


def test_threshold_zeroes_noisy_counts_below_theta():
    noisy = np.array([-3.0, 0.5, 2.0, 10.0])
    state = State(n=4, noisy=noisy, budgets={"noisy_bins": Fraction(1)})
    out = Threshold(eta=1.0).run(state, None)
    theta = math.log(4)
    assert np.array_equal(out.noisy, np.where(noisy >= theta, noisy, 0.0))


class ScriptedView:
    def __init__(self, x, noise):
        self.x, self.noise = np.asarray(x), noise

    def measure(self, query, epsilon=None):
        from dphist._kernel.view import Measurement

        values = query.apply(self.x) + self.noise[: query.size]
        return Measurement(values, query, Fraction(1), Fraction(1), 2.0)


def test_weighted_average_equals_the_closed_form():
    x = np.array([4, 6, 1, 1, 1, 9])
    noisy = np.array([5.0, 4.0, 0.0, 2.0, 1.5, 8.0])
    labels = np.array([0, 0, 1, 1, 1, 2])
    state = State(n=6, noisy=noisy, variance=np.full(6, 8.0), labels=labels)
    noise = np.array([1, -2, 3])
    out = WeightedAverage(share=1).run(state, ScriptedView(x, noise))
    totals = np.bincount(labels, weights=x) + noise
    expected = waf_estimate(noisy, np.array([0, 2, 5]), totals, var_in=8.0, var_f=2.0)
    assert np.allclose(out.estimate, expected)
    # a bucket of one bin: weights var_f/(var_f + var_in) = 0.2 on the initializer
    assert np.isclose(out.estimate[5], 0.2 * 8.0 + 0.8 * (9 + 3))


# ---------------------------------------------------------------- older competitors


def test_noise_first_oracle():
    # data-aware spec §3.3 (1), with negligible noise
    x = [0, 0, 0, 0, 10, 10, 10, 10]
    rel = dh.publish(x, epsilon=1e6, method="NF", rng=0)
    assert np.allclose(rel.estimate, x, atol=1e-3) and rel.groups.tolist() == [0] * 4 + [1] * 4
    assert len(rel.ledger) == 1  # structure is post-processing


def test_gs_oracle():
    # data-aware spec §5: h = [5,1,9,2,6,8], w = 2
    rel = dh.publish([5, 1, 9, 2, 6, 8], epsilon=1e7, method="GS", width=2, rng=0)
    assert np.allclose(rel.estimate, [5.5, 1.5, 8.5, 1.5, 5.5, 8.5], atol=1e-4)


def test_structure_first_needs_a_public_bound():
    from dphist.errors import DataDependentParameterError

    with pytest.raises(DataDependentParameterError, match="public upper bound"):
        dh.publish([1, 2, 3], epsilon=1, method="SF")
    rel = dh.publish([0, 0, 10, 10], epsilon=1e4, method="SF", bound=10, k=2, rng=0)
    assert rel.groups.tolist() == [0, 0, 1, 1]
    assert rel.ledger[0].sensitivity == 21  # 2F + 1


def test_php_and_efpa_recover_simple_inputs():
    x = np.array([0, 0, 0, 0, 10, 10, 10, 10])
    rel = dh.publish(x, epsilon=1e6, method="P-HP", rng=0)
    assert np.allclose(rel.estimate, x, atol=1e-3)
    assert rel.groups[3] != rel.groups[4]  # the split between the two plateaus is found
    rel = dh.publish(np.full(16, 5), epsilon=1e6, method="EFPA", rng=0)
    assert np.allclose(rel.estimate, 5, atol=1e-3)
    assert [c.primitive for c in rel.ledger] == ["noisy_min", "lattice_laplace"]


def test_fourier_basis_is_orthonormal():
    from dphist._kernel.selection import fourier_coefficients, inverse_fourier

    for n in (1, 2, 3, 8, 9):
        phi = np.stack([fourier_coefficients(row) for row in np.eye(n)], axis=1)
        assert np.allclose(phi @ phi.T, np.eye(n))
        x = np.arange(n, dtype=float)
        assert np.allclose(inverse_fourier(fourier_coefficients(x)), x)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 16, 24, 33])
def test_fourier_l1_bound_covers_the_exact_sensitivity(n):
    """Brute force: max over bins of the L1 norm of the first k rows of the basis."""
    from dphist._kernel.operators import fourier_l1_bound
    from dphist._kernel.selection import fourier_coefficients

    phi = np.stack([fourier_coefficients(row) for row in np.eye(n)], axis=1)
    exact = np.cumsum(np.abs(phi), axis=0).max(axis=1)  # exact[k-1] for the first k rows
    for k in range(1, n + 1):
        bound = fourier_l1_bound(n, k)
        assert exact[k - 1] <= bound <= min(np.sqrt(k), k / np.sqrt(n) + 0.5 / np.sqrt(n)) + 1e-5
        if k <= 3 and n % 8 == 0:
            assert float(bound) == pytest.approx(exact[k - 1], abs=1e-5)  # attained


def test_report_noisy_min_is_calibrated():
    """At scale 2D/eps the winner among two scores D apart follows the Laplace race."""
    from dphist._kernel.noise import noise_source
    from dphist._kernel.selection import report_noisy_min

    src = noise_source(3)
    wins = sum(
        report_noisy_min(np.array([0.0, 1.0]), Fraction(1), Fraction(1), src) == 0
        for _ in range(4000)
    )
    # P(Z0 < Z1 + 1) for independent Laplace(2): 1 - 0.5 e^{-1/2} (1 + 1/4) = 0.6209
    assert abs(wins / 4000 - 0.6209) < 0.03
