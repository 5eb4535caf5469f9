"""The public API: publish, Session, Release, registry."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist import workloads as wl
from dphist.errors import (
    BudgetExceededError,
    DomainError,
    InputTypeError,
    PrivacyError,
    UnknownMethodError,
    ValidationError,
    WorkloadError,
)


@pytest.mark.statistical
def test_identity_noise_variance_is_two_over_epsilon_squared():
    n, eps = 10**6, 0.1
    counts = np.zeros(n, dtype=np.int64)
    rel = dh.publish(counts, epsilon=eps, method="identity", rng=2024)
    var = rel.estimate.var()
    assert abs(var / (2 / eps**2) - 1) < 0.03
    # and within sampling error of the exact discrete Laplace variance it reports
    exact = rel.noise_variance[0]
    assert abs(var / exact - 1) < 6 * math.sqrt(2 / n) * 3  # ~6 sd (kurtosis 6 -> sd ratio 7/n)
    assert np.all(rel.estimate == np.round(rel.estimate))


def test_publish_api_shape_and_ledger(small_counts):
    rel = dh.publish(small_counts, epsilon=0.5, method="identity", rng=7)
    assert rel.estimate.shape == (8,) and rel.estimate.dtype == np.float64
    assert not rel.estimate.flags.writeable
    assert rel.spent == Fraction(1, 2) == rel.epsilon
    (charge,) = rel.ledger
    assert (charge.block, charge.primitive, charge.sensitivity) == (
        "noisy_bins",
        "discrete_laplace",
        1,
    )
    assert rel.private is False and "none" in rel.guarantee
    assert "NOT PRIVATE" in repr(rel)


def test_range_queries_match_sums_of_the_estimate(small_counts):
    rel = dh.publish(small_counts, epsilon=1, method="identity", rng=1)
    e = rel.estimate
    for lo in range(9):
        for hi in range(lo, 9):
            assert math.isclose(rel.range_sum(lo, hi), e[lo:hi].sum(), abs_tol=1e-9)
    los, his = np.array([0, 2, 5]), np.array([8, 4, 5])
    assert np.allclose(rel.ranges(los, his), [e.sum(), e[2:4].sum(), 0])
    w = wl.all_ranges(8)
    lo, hi = w.intervals()
    assert np.allclose(rel.answer(w), [e[a:b].sum() for a, b in zip(lo, hi, strict=True)])
    assert rel.point(3) == e[3]


@pytest.mark.parametrize("lo, hi", [(-1, 2), (0, 9), (5, 3)])
def test_bad_ranges_are_refused(small_counts, lo, hi):
    rel = dh.publish(small_counts, epsilon=1, method="identity", rng=1)
    with pytest.raises(WorkloadError):
        rel.range_sum(lo, hi)
    with pytest.raises(WorkloadError):
        rel.ranges(np.array([lo]), np.array([hi]))


def test_answer_refuses_a_workload_of_another_size(small_counts):
    rel = dh.publish(small_counts, epsilon=1, method="identity", rng=1)
    with pytest.raises(WorkloadError):
        rel.answer(wl.prefix(9))


def test_session_caps_the_total_and_names_the_shortfall(small_counts):
    with dh.Session(small_counts, epsilon=1.0, rng=3) as s:
        for _ in range(10):
            s.publish("identity", epsilon=0.1)
        assert s.spent == 1 and len(s.ledger) == 10
        with pytest.raises(BudgetExceededError, match=r"short by 0\.1"):
            s.publish("identity", epsilon=0.1)
    with pytest.raises(PrivacyError, match="closed"):
        s.publish("identity", epsilon=0.1)


def test_session_releases_use_independent_noise(small_counts):
    with dh.Session(small_counts, epsilon=1.0, rng=3) as s:
        a = s.publish("identity", epsilon=0.5)
        b = s.publish("identity", epsilon=0.5)
    assert not np.array_equal(a.estimate, b.estimate)


def test_same_seed_same_release_even_after_numpy_global_seed_changes(small_counts):
    a = dh.publish(small_counts, epsilon=0.3, method="identity", rng=11)
    np.random.seed(123)  # noqa: NPY002
    b = dh.publish(small_counts, epsilon=0.3, method="identity", rng=11)
    c = dh.publish(small_counts, epsilon=0.3, method="identity", rng=np.random.default_rng(11))
    assert np.array_equal(a.estimate, b.estimate)
    assert c.private is False


def test_secure_mode_is_private_and_unseeded(small_counts):
    rel = dh.publish(small_counts, epsilon=1, method="identity")
    assert rel.private is True and "CSPRNG" in rel.guarantee
    assert "seed" not in json.dumps(rel.to_dict()).lower().replace("seeded", "")


def test_to_dict_is_json_safe_and_exact(small_counts):
    d = json.loads(dh.publish(small_counts, epsilon=0.7, method="uniform", rng=1).to_json())
    assert d["epsilon_exact"] == "7/10" and d["spent_exact"] == "7/10"
    assert d["ledger"][0]["block"] == "noisy_total" and len(d["estimate"]) == 8


def test_uniform_spreads_a_noisy_total(small_counts):
    rel = dh.publish(small_counts, epsilon=2, method="uniform", rng=5)
    assert np.allclose(rel.estimate, rel.estimate[0])
    assert rel.ledger[0].sensitivity == 1
    p = math.exp(-2)  # discrete Laplace of scale 1/2: variance 2p/(1-p)^2, divided by n^2
    assert np.isclose(rel.noise_variance[0], 2 * p / (1 - p) ** 2 / 64, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, err, word",
    [
        ({"epsilon": 0}, ValidationError, "epsilon"),
        ({"epsilon": -1}, ValidationError, "epsilon"),
        ({"epsilon": float("nan")}, ValidationError, "epsilon"),
        ({"epsilon": float("inf")}, ValidationError, "epsilon"),
        ({"epsilon": None}, InputTypeError, "epsilon"),
        ({"epsilon": 1, "rng": 1.5}, InputTypeError, "rng"),
        ({"epsilon": 1, "rng": "seed"}, InputTypeError, "rng"),
        ({"epsilon": 1, "rng": True}, InputTypeError, "rng"),
        ({"epsilon": 1, "method": "identiy"}, UnknownMethodError, "identity"),
        ({"epsilon": 1, "method": 3}, UnknownMethodError, "unknown"),
        ({"epsilon": 1, "bogus": 2}, ValidationError, "bogus"),
    ],
)
def test_bad_arguments_get_clear_errors(small_counts, kwargs, err, word):
    kwargs = {"method": "identity", **kwargs}
    with pytest.raises(err, match=word):
        dh.publish(small_counts, **kwargs)


def test_bad_counts_via_the_api():
    with pytest.raises(DomainError, match="negative"):
        dh.publish([1, -2], epsilon=1, method="identity")


def test_aliases_and_case_resolve_to_the_same_method():
    assert dh.get_method("LPA").name == dh.get_method("identity").name == "identity"
    assert dh.get_method(" Dp_Base ").name == "identity"


def test_every_method_is_documented_and_cited():
    infos = dh.list_methods()
    assert {"identity", "uniform"} <= {m.name for m in infos}
    for m in infos:
        assert m.summary and m.cite and m.name in str(m)


@pytest.mark.parametrize("method", [m.name for m in dh.list_methods()])
@pytest.mark.parametrize("counts", [[0], [5], [0] * 17, list(range(33))])
def test_every_method_runs_on_edge_inputs(method, counts):
    rel = dh.publish(counts, epsilon=0.25, method=method, rng=0, **dh.get_method(method).example)
    assert rel.estimate.shape == (len(counts),) and np.isfinite(rel.estimate).all()
    assert 0 < rel.spent <= Fraction(1, 4)
    assert all(c.epsilon > 0 for c in rel.ledger)


@pytest.mark.parametrize("method", [m.name for m in dh.list_methods()])
def test_huge_epsilon_recovers_what_the_method_can_see(method):
    counts = np.array([4, 4, 4, 4, 4])
    rel = dh.publish(counts, epsilon=10**6, method=method, rng=0, **dh.get_method(method).example)
    assert np.allclose(rel.estimate, counts, atol=1e-3)
