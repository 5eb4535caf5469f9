"""MWEM (``dphist.blocks.mwem``): the segment form against a bin-level oracle, the
worst-query selection, the ledger, and accuracy where the paper says it helps."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._kernel import WorstQuery, noise_source
from dphist._kernel.selection import report_noisy_min
from dphist.blocks.mwem import _answers, _inside, _refine
from dphist.blocks.mwem import replay_updates as _replay
from dphist.errors import ValidationError


def oracle(x, total, queries, values, passes):
    """MWEM's history replays on every bin (the definition), continuing from ``x``."""
    x = x.copy()
    for _ in range(passes):
        for (lo, hi), v in zip(queries, values, strict=True):
            q = np.zeros(x.size)
            q[lo:hi] = 1.0
            x = x * np.exp(q * (v - x[lo:hi].sum()) / (2.0 * total))
            x *= total / x.sum()
    return x


@pytest.mark.parametrize("seed", range(5))
def test_segment_updates_match_the_bin_level_definition(seed):
    rng = np.random.default_rng(seed)
    n, total = 37, 500.0
    queries = []
    for _ in range(6):
        lo, hi = sorted(rng.choice(n + 1, 2, replace=False))
        queries.append((int(lo), int(hi)))
    values = rng.uniform(0, total, len(queries))
    cuts, mass = np.array([0, n]), np.array([total])
    want = np.full(n, total / n)
    for k, (lo, hi) in enumerate(queries):
        cuts, mass = _refine(cuts, mass, lo, hi)
        inside = _inside(cuts, *(np.array(v) for v in zip(*queries[: k + 1], strict=True)))
        mass = _replay(mass, inside, values[: k + 1], total, 7)
        want = oracle(want, total, queries[: k + 1], values[: k + 1], 7)
        got = np.repeat(mass / np.diff(cuts), np.diff(cuts))
        np.testing.assert_allclose(got, want, rtol=1e-10)
        lo_all, hi_all = np.arange(n), np.arange(1, n + 1)
        np.testing.assert_allclose(_answers(cuts, mass, lo_all, hi_all), want, rtol=1e-10)


def test_worst_query_is_the_largest_error_at_large_epsilon():
    x = np.array([0, 10, 0, 0, 30, 0], dtype=np.int64)
    lo, hi = np.zeros(6, dtype=np.int64), np.arange(1, 7)
    answers = np.array([6.0, 12, 18, 24, 30, 36])  # uniform estimate of a total of 36
    # errors |prefix - answer|: 6, 2, 8, 14, 10, 4 -> the prefix [0, 4)
    pick = WorstQuery(lo, hi, answers).choose(x, Fraction(10**6), noise_source(1))
    assert pick == 3


def test_worst_query_is_a_noisy_choice_at_small_epsilon():
    x = np.array([0, 10, 0, 0, 30, 0], dtype=np.int64)
    sel = WorstQuery(np.zeros(6, dtype=np.int64), np.arange(1, 7), np.arange(6, 37, 6.0))
    noise = noise_source(3)
    picks = np.bincount([sel.choose(x, Fraction(1, 10), noise) for _ in range(600)], minlength=6)
    assert (picks > 30).all()  # scale 20 against score gaps of at most 12
    assert picks[3] == picks.max()


def test_ledger_has_rounds_choices_and_measurements():
    x = np.arange(64) % 7
    rel = dh.publish(x, method="MWEM", epsilon=1.0, rounds=5, ratio=0.4, rng=0)
    kinds = [str(c.primitive) for c in rel.ledger]
    assert kinds.count("noisy_min") == 5 and kinds.count("discrete_laplace") == 6
    assert rel.spent == Fraction(1)
    assert sum(c.epsilon for c in rel.ledger if str(c.primitive) == "noisy_min") == Fraction(2, 5)
    assert np.all(rel.estimate >= 0)


def test_estimate_keeps_the_noisy_total_and_learns_a_step():
    x = np.zeros(1024, dtype=np.int64)
    x[:256] = 400
    rel = dh.publish(x, method="MWEM", epsilon=10.0, rng=4)
    assert abs(rel.estimate.sum() - x.sum()) < 50
    assert rel.estimate[:256].mean() > 5 * rel.estimate[256:].mean()
    flat = np.full(1024, x.sum() / 1024)
    assert dh.metrics.interval_mse(x, rel.estimate) < dh.metrics.interval_mse(x, flat) / 10


def test_empty_data_gives_a_flat_small_estimate():
    rel = dh.publish(np.zeros(100, dtype=np.int64), method="MWEM", epsilon=1.0, rng=0)
    assert np.all(rel.estimate >= 0) and rel.estimate.sum() < 200


def test_dyadic_candidates_and_bad_options():
    x = np.arange(50)
    assert dh.publish(x, method="MWEM", epsilon=1.0, queries="dyadic", rng=0).estimate.size == 50
    with pytest.raises(ValidationError):
        dh.publish(x, method="MWEM", epsilon=1.0, queries="all")
    with pytest.raises(ValidationError):
        dh.publish(x, method="MWEM", epsilon=1.0, rounds=0)


@pytest.mark.parametrize("n", [1, 5])
def test_noise_far_above_the_total_keeps_the_estimate_finite(n):
    for seed in range(5):
        rel = dh.publish(np.zeros(n, dtype=np.int64), method="MWEM", epsilon=0.001, rng=seed)
        assert np.all(np.isfinite(rel.estimate)) and np.all(rel.estimate >= 0)


def test_report_noisy_min_takes_huge_and_infinite_scores():
    noise = noise_source(0)
    scores = np.array([np.inf, 3.0, 1e30, -1e30 + 1])
    picks = {report_noisy_min(scores, Fraction(1), Fraction(1), noise) for _ in range(50)}
    assert picks == {3}
