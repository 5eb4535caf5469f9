"""The exact exponential mechanism (``dphist._kernel.exponential``) behind zCDP
selections: its law, its exponent's rounding and its replay of the random words."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dphist._kernel import noise_source
from dphist._kernel.exponential import exponential_draw
from dphist._kernel.noise import GeneratorBits
from dphist._kernel.selection import exponential_min


def chi2_pvalue(draws: np.ndarray, p: np.ndarray) -> float:
    observed = np.bincount(draws, minlength=p.size)
    expected = p * draws.size
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.parametrize(("p", "q"), [(1, 3), (7, 2), (0, 1)])
def test_law_is_proportional_to_exp_minus_d_p_over_q(p, q):
    d = np.array([0, 1, 2, 5, 3, 0, 40], dtype=np.int64)
    bits = GeneratorBits(np.random.default_rng(p + 10 * q))
    draws = np.array([exponential_draw(bits, d, p, q) for _ in range(20_000)])
    w = np.exp(-d * p / q)
    assert chi2_pvalue(draws, w / w.sum()) > 1e-4


def test_exponential_min_follows_its_scores_and_huge_gaps_are_never_chosen():
    """Scores 0, 2, 4, inf with sensitivity 1 at epsilon 1: weights exp(-s/(2(1+g)))."""
    scores = np.array([0.0, 2.0, 4.0, np.inf])
    noise = noise_source(3)
    draws = np.array(
        [exponential_min(scores, Fraction(1), Fraction(1), noise) for _ in range(20_000)]
    )
    g = 2.0**-21
    w = np.exp(-scores[:3] / (2 * (1 + g)))
    assert not np.any(draws == 3) and chi2_pvalue(draws, w / w.sum()) > 1e-4


def test_draws_replay_the_same_stream():
    d = np.arange(200, dtype=np.int64) * 50  # most proposals rejected: many words
    a = [exponential_draw(GeneratorBits(np.random.default_rng(9)), d, 1, 1) for _ in range(3)]
    b = [exponential_draw(GeneratorBits(np.random.default_rng(9)), d, 1, 1) for _ in range(3)]
    assert a == b and all(i == 0 for i in a)  # index 0 has weight 1, the next exp(-50)


def test_exponent_is_rounded_down_to_what_the_sampler_holds():
    """An exponent with a huge denominator is rounded down (more private), never up."""
    seen = []

    class Spy:
        def exponential_index(self, d, p, q):
            seen.append((p, q))
            return 0

    eps = Fraction(10**40 + 1, 3 * 10**40)
    exponential_min(np.array([0.0, 1.0]), Fraction(1), eps, Spy())
    (p, q), g = seen[0], Fraction(1, 2**21)
    rate = eps * g / (2 * (1 + g))
    assert Fraction(p, q) <= rate and rate - Fraction(p, q) <= Fraction(1, q) and q <= 2**56
