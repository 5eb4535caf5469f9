"""The audit harness itself: exact bounds, positive controls, power, reproducibility.

Privacy-assurance spec §1.2.6 (T1 exact statistics, T2 positive controls with power,
T5 determinism) and §6.B2. Everything runs with fixed seeds, so outcomes are
deterministic; the statistical guarantee (false alarm <= alpha per pair) holds for
any seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.stats import binomtest

from dphist.blocks import REST, Block, GroupTotals
from dphist.errors import ValidationError
from dphist.lab import audit
from dphist.lab.audit import features

SEED = 4242


def laplace(scale):
    """x + discrete Laplace noise of ``scale`` per bin, batched (production sampler)."""

    def run(x, runs, generator):
        noise = audit.seeded_laplace(generator, scale, runs * x.size)
        return x + noise.reshape(runs, x.size)

    return run


def exact(x, runs, generator):
    return np.tile(x.astype(np.float64), (runs, 1))


# --------------------------------------------------------------------------- bounds (T1)


@pytest.mark.parametrize(
    ("k", "n", "level"),
    [(0, 10, 0.025), (5, 10, 0.025), (10, 10, 0.025), (1, 1000, 1e-7), (731, 1000, 1e-4)],
)
def test_clopper_pearson_matches_the_exact_binomial_interval(k, n, level):
    lo, up = audit.clopper_pearson(k, n, level)
    ref = binomtest(k, n).proportion_ci(confidence_level=1 - 2 * level, method="exact")
    assert lo == pytest.approx(ref.low, abs=1e-12)
    assert up == pytest.approx(ref.high, abs=1e-12)


def test_clopper_pearson_known_values():
    # textbook value: 5 of 10, 95% two-sided
    lo, up = audit.clopper_pearson(5, 10, 0.025)
    assert (float(lo), float(up)) == pytest.approx((0.187086, 0.812914), abs=1e-6)
    # closed forms at the edges: k = 0 and k = n
    lo, up = audit.clopper_pearson(0, 20, 0.05)
    assert lo == 0 and up == pytest.approx(1 - 0.05 ** (1 / 20), rel=1e-12)
    lo, up = audit.clopper_pearson(20, 20, 0.05)
    assert up == 1 and lo == pytest.approx(0.05 ** (1 / 20), rel=1e-12)
    # vectorised, ordered around the estimate
    k = np.arange(0, 101, 5)
    lo, up = audit.clopper_pearson(k, 100, 1e-7)
    assert np.all(lo <= k / 100) and np.all(k / 100 <= up)
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(up) > 0)


def test_clopper_pearson_rejects_bad_levels():
    with pytest.raises(ValidationError):
        audit.clopper_pearson(1, 10, 0.0)


def test_epsilon_lower_bound_known_answers():
    level = 1e-6 / 10
    lb = audit.epsilon_lower_bound(7310, 2690, 10_000, level)
    lo, _ = audit.clopper_pearson(7310, 10_000, level)
    _, up = audit.clopper_pearson(2690, 10_000, level)
    assert lb == pytest.approx(math.log(lo / up), rel=1e-12)
    assert 0.8 < lb < 1.0  # the identity witness at epsilon = 1 (true ratio e)
    assert audit.epsilon_lower_bound(0, 0, 100, level) == -math.inf
    assert audit.epsilon_lower_bound(50, 50, 100, level) < 0
    # a deterministic difference seen in every run: bounded by the sample size only
    assert audit.epsilon_lower_bound(4000, 0, 4000, level) == pytest.approx(
        math.log((level ** (1 / 4000)) / (1 - level ** (1 / 4000))), rel=1e-9
    )


def test_clopper_pearson_coverage_by_simulation():
    """One-sided 5% bounds miss the truth in at most 5% of 20,000 binomial draws."""
    rng = np.random.default_rng(SEED)
    for p in (0.02, 0.3, 0.9):
        k = rng.binomial(200, p, size=20_000)
        lo, up = audit.clopper_pearson(k, 200, 0.05)
        assert np.mean(lo > p) <= 0.05 + 0.005
        assert np.mean(up < p) <= 0.05 + 0.005


def test_suite_false_alarm_bound():
    assert audit.suite_false_alarm_bound(12) == pytest.approx(1.2e-5)
    assert audit.suite_false_alarm_bound(12, alpha=0.5) == 1.0


# --------------------------------------------------------------------------- neighbours


@pytest.mark.parametrize("n", [4, 8, 13, 16])
def test_catalogue_pairs_are_neighbours(n):
    pairs = audit.catalogue(n, fanout=2)
    assert len(pairs) >= 6
    keys = set()
    for p in pairs:
        diff = p.x2 - p.x
        assert np.count_nonzero(diff) == 1 and diff[p.bin] == p.sign in (-1, 1)
        assert p.x.min() >= 0 and p.x2.min() >= 0 and p.x.size == n
        keys.add((p.x.tobytes(), p.bin, p.sign))
    assert len(keys) == len(pairs)  # no duplicates
    reasons = " ".join(p.reason for p in pairs)
    for word in ("group boundary", "zero bin", "low bin", "first bin", "last bin", "empty"):
        assert word in reasons
    assert {p.sign for p in pairs} == {-1, 1}


def test_neighbours_follow_groups_and_tree_splits():
    x = np.array([5, 5, 5, 9, 9, 9, 9, 9, 2, 2])
    groups = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    pairs = audit.neighbours(x, groups=groups, fanout=2)
    at = {(p.bin, p.sign): p.reason for p in pairs}
    assert at[(3, +1)].startswith("group boundary") and at[(4, -1)].startswith("group boundary")
    assert "tree split" in at[(8, +1)] and "tree split" in at[(7, -1)]  # 10 leaves: [0,8) [8,10)
    limited = audit.neighbours(x, groups=groups, fanout=2, limit=3)
    assert [(p.bin, p.sign) for p in limited] == [(p.bin, p.sign) for p in pairs[:3]]


def test_pairs_refuse_negative_counts():
    with pytest.raises(ValidationError):
        audit.pair([0, 3], 0, -1)
    mech = audit.function_mechanism("exact", exact, vectorized=True)
    with pytest.raises(ValidationError):
        audit.audit_pair(mech, ([1, 2], [2, 3]))  # differs in two bins


def test_unit_pairs_differ_by_a_units_records_in_one_bin():
    p = audit.pair([1, 2], 0, +1, records=3)
    assert p.x2.tolist() == [4, 2] and p.records == 3 and "+3" in p.describe()
    with pytest.raises(ValidationError):
        audit.pair([1, 2], 1, -1, records=3)  # counts stay non-negative


def test_probe_boundaries_finds_a_raw_threshold():
    def threshold(x, generator):  # groups bin 0 with bin 1 iff x_0 >= 7 (raw data!)
        labels = np.array([0, 0, 1]) if x[0] >= 7 else np.array([0, 1, 2])
        return x + audit.seeded_laplace(generator, 1, x.size), labels

    mech = audit.function_mechanism("threshold", threshold)
    found = audit.probe_boundaries(mech, [4, 9, 9], bins=[0], span=5, seed=1, limit=1)
    assert len(found) == 1
    assert (found[0].x[0], found[0].x2[0]) == (6, 7) and "3/3" in found[0].reason


# --------------------------------------------------------------------------- positive controls (T2)


def test_correct_laplace_passes_with_a_tight_bound(audit_row):
    mech = audit.function_mechanism("Laplace, scale 1/eps", laplace(1), vectorized=True)
    res = audit.audit(mech, audit.catalogue(8)[:4], n_search=5000, n_confirm=20_000, seed=SEED)
    audit_row("control: correct Laplace", 1, res.eps_lb, "pass", _best(res), res.runs, res.seconds)
    assert not res.flagged, res.summary()
    assert res.eps_lb >= 0.8


def test_identity_passes_with_a_tight_bound(audit_row):
    res = audit.audit_method(
        "identity", epsilon=1.0, n_search=2000, n_confirm=10_000, pairs=1, seed=SEED
    )
    audit_row(
        "control: identity (registry)", 1, res.eps_lb, "pass", _best(res), res.runs, res.seconds
    )
    assert not res.flagged, res.summary()
    assert res.eps_lb >= 0.8
    best = res.worst.best
    assert best.event.startswith("y[3]")  # a one-coordinate tail at the changed bin
    assert res.worst.pair.bin == 3


@dataclass(frozen=True, kw_only=True)
class PublicPairs(Block):
    """A public, data-independent grouping: bins (0,1), (2,3), ..."""

    label = "public_pairs"

    def run(self, state, view):
        return state.with_(labels=np.arange(state.n, dtype=np.int64) // 2)


@pytest.mark.extended
def test_fixed_partition_group_means_pass_with_a_tight_bound(audit_row):
    mech = audit.pipeline_mechanism("group means", [PublicPairs(), GroupTotals(share=REST)])
    x = audit.standard_histogram(8)
    res = audit.audit(mech, [audit.pair(x, 5, -1)], n_search=2000, n_confirm=10_000, seed=SEED)
    audit_row(
        "control: fixed-partition group means",
        1,
        res.eps_lb,
        "pass",
        _best(res),
        res.runs,
        res.seconds,
    )
    assert not res.flagged, res.summary()
    assert res.eps_lb >= 0.8


def test_correct_laplace_passes_at_small_epsilon():
    mech = audit.function_mechanism("Laplace", laplace(4), epsilon=0.25, vectorized=True)
    res = audit.audit(mech, audit.catalogue(8)[:2], n_search=2000, n_confirm=10_000, seed=SEED)
    assert not res.flagged, res.summary()
    assert 0 < res.eps_lb <= 0.25


# --------------------------------------------------------------------------- harness sanity


def test_non_private_exact_output_is_flagged(audit_row):
    mech = audit.function_mechanism("output = x", exact, vectorized=True)
    res = audit.audit(mech, audit.catalogue(8)[:2], n_search=500, n_confirm=2000, seed=SEED)
    audit_row("sanity: output = x", 1, res.eps_lb, "FLAGGED", _best(res), res.runs, res.seconds)
    assert res.flagged and all(p.flagged for p in res.pairs)
    # every run differs: the bound is limited only by the sample size
    assert res.eps_lb == pytest.approx(audit.epsilon_lower_bound(2000, 0, 2000, 1e-7))


@pytest.mark.parametrize(("factor", "epsilon"), [(0.25, 1.0), (0.5, 0.25)])
def test_too_little_noise_is_flagged(factor, epsilon, audit_row):
    scale = factor / epsilon  # true loss epsilon / factor
    mech = audit.function_mechanism(
        f"Laplace x{factor}", laplace(scale), epsilon=epsilon, vectorized=True
    )
    res = audit.audit(mech, audit.catalogue(8)[:2], n_search=2000, n_confirm=10_000, seed=SEED)
    audit_row(
        f"sanity: noise x{factor}",
        epsilon,
        res.eps_lb,
        "FLAGGED",
        _best(res),
        res.runs,
        res.seconds,
    )
    assert res.flagged, res.summary()
    assert res.eps_lb <= epsilon / factor  # never above the truth (w.p. 1 - alpha)


def test_grouping_structure_is_an_event():
    """A released grouping that follows raw data is caught through the grouping itself."""

    def leaky(x, generator):
        noisy = x + audit.seeded_laplace(generator, 1, x.size)
        labels = (x >= 10).astype(np.int64)  # raw counts decide the grouping
        return noisy, labels

    mech = audit.function_mechanism("leaky grouping", leaky)
    res = audit.audit_pair(mech, ([9, 0, 3], [10, 0, 3]), n_search=500, n_confirm=2000, seed=1)
    assert res.flagged and res.eps_lb > 4.5
    assert {res.best.hits_x, res.best.hits_x2} == {0, 2000}


# --------------------------------------------------------------------------- reproducibility (T5)


def test_a_fixed_seed_reproduces_the_audit():
    mech = audit.method_mechanism("S2")
    pair = audit.catalogue(8)[0]
    a = audit.audit_pair(mech, pair, n_search=300, n_confirm=600, seed=7)
    b = audit.audit_pair(mech, pair, n_search=300, n_confirm=600, seed=7)
    c = audit.audit_pair(mech, pair, n_search=300, n_confirm=600, seed=8)
    assert a.eps_lb == b.eps_lb
    assert [(e.event, e.hits_x, e.hits_x2) for e in a.events] == [
        (e.event, e.hits_x, e.hits_x2) for e in b.events
    ]
    assert [(e.hits_x, e.hits_x2) for e in a.events] != [(e.hits_x, e.hits_x2) for e in c.events]


def test_the_four_streams_are_distinct():
    seen = []

    def spy(x, runs, generator):
        seen.append(generator.bit_generator.random_raw(4).tolist())
        return np.zeros((runs, x.size)) + generator.integers(0, 2, size=(runs, 1))

    mech = audit.function_mechanism("spy", spy, vectorized=True)
    audit.audit_pair(mech, ([1, 2], [2, 2]), n_search=50, n_confirm=50, seed=3)
    assert len(seen) == 4 and len({tuple(s) for s in seen}) == 4


def test_method_mechanism_matches_publish():
    import dphist as dh

    mech = audit.method_mechanism("S2", epsilon=0.5)
    seed = np.random.SeedSequence(11)
    out = mech.run(np.array([3, 0, 5, 1]), 3, seed)
    for r, child in enumerate(np.random.SeedSequence(11).spawn(3)):
        rel = dh.publish([3, 0, 5, 1], epsilon=0.5, method="S2", rng=np.random.default_rng(child))
        assert np.array_equal(out.values[r], rel.estimate)
        assert np.array_equal(out.labels[r], rel.groups)


def _best(res: audit.AuditResult) -> str:
    w = res.worst
    return f"{w.best.event if w.best else '-'} [{w.pair.describe()}]"


# --------------------------------------------------------------------------- extended


@pytest.mark.exhaustive
@pytest.mark.statistical
def test_calibration_no_false_flags(audit_row):
    """Spec §6.B4: 200 audits of correct mechanisms (Laplace at epsilon 1 and 0.25,
    4-16 bins, catalogue pairs) flag nothing; the largest eps_lb is recorded."""
    rng = np.random.default_rng(SEED)
    bounds = []
    runs = 0
    for k in range(200):
        epsilon = 1.0 if k % 2 == 0 else 0.25
        n = int(rng.integers(4, 17))
        pool = audit.catalogue(n, fanout=2)
        chosen = pool[int(rng.integers(len(pool)))]
        mech = audit.function_mechanism(
            "Laplace", laplace(1 / epsilon), epsilon=epsilon, vectorized=True
        )
        res = audit.audit_pair(mech, chosen, n_search=5000, n_confirm=20_000, seed=[SEED, k])
        assert not res.flagged, (k, res.pair.describe(), res.best)
        bounds.append(res.eps_lb / epsilon)
        runs += res.runs
    audit_row(
        "calibration: 200 correct audits", 1, max(bounds), "pass", "max eps_lb / epsilon", runs, 0
    )


# --------------------------------------------------------------------------- Fourier view (E5)


@pytest.mark.parametrize("n", [2, 3, 7, 8])
def test_fourier_view_matches_the_kernel_basis(n):
    from dphist._kernel.selection import fourier_coefficients

    y = np.random.default_rng(n).normal(size=(6, n))
    expected = np.array([fourier_coefficients(row) for row in y])
    np.testing.assert_allclose(features.fourier(y), expected, atol=1e-12)
    # orthonormal: the squared norm is kept
    np.testing.assert_allclose((features.fourier(y) ** 2).sum(axis=1), (y**2).sum(axis=1))


def test_retained_coefficients_hand_worked():
    c = np.array(
        [
            [3.0, 0.0, 0.0, 0.0],
            [3.0, -1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            [5.0, 0.0, 0.0, 1e-13],  # rounding-level tail
            [1.0, 0.0, 0.0, 2.0],
        ]
    )
    assert features.retained(c).tolist() == [1, 2, 0, 1, 4]


def test_low_pass_outputs_expose_how_many_coefficients_were_kept():
    """A mechanism keeping 1 or 3 noisy coefficients depending on x_0 (a raw
    decision): the statistic reads K off the output, 1 under x and 3 under x'."""
    from dphist._kernel.selection import inverse_fourier

    def low_pass(x, generator):
        k = 3 if x[0] > 0 else 1
        coeffs = np.zeros(x.size)
        coeffs[:k] = 5.0 + audit.seeded_laplace(generator, 1, k)
        return inverse_fourier(coeffs)

    mech = audit.function_mechanism("raw low-pass", low_pass)
    pair = audit.pair([0, 4, 4, 4], 0, +1)
    a = mech.run(pair.x, 50, np.random.SeedSequence(1))
    b = mech.run(pair.x2, 50, np.random.SeedSequence(2))
    feats = features.Features(pair, a, b)
    names, col_a = feats.numeric(a)
    _, col_b = feats.numeric(b)
    j = names.index("number of retained Fourier coefficients")
    assert set(col_a[:, j]) == {1} and set(col_b[:, j]) == {3}
