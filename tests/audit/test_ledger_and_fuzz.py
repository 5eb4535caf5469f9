"""White-box ledger check on random inputs, and bad-input fuzzing, for every method."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dphist as dh
from dphist import audit
from dphist.errors import DphistError

METHODS = [m.name for m in dh.methods()]
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
    [[1, 2], [3, 4]],
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
