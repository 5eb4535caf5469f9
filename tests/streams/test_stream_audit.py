"""Neighbour audits of the stream mechanisms: two streams that differ by one record in
each of ``w`` consecutive windows (w-event neighbours) for BD and BA, by one record in
one window for the counters; BA that forgets absorbed budget (run without the ledger's
cap, which refuses it, see test_wevent.py) is flagged."""

from __future__ import annotations

import numpy as np
import pytest

import dphist as dh
from dphist.lab import audit

from .test_wevent import _mutant_stream

T, N, W = 6, 2, 6
BASE = np.zeros((T, N), np.int64)
BASE[::2] = 200  # alternating: every window changes, so BA and BD keep publishing


def _pair(windows):
    x2 = BASE.copy()
    x2[windows, 0] += 1
    return audit.Neighbour(BASE.ravel(), x2.ravel(), 0, 1, f"one record in windows {windows}")


def _mechanism(name, eps, run):
    def f(x, gen):
        return np.concatenate([r.estimate for r in run(list(np.asarray(x).reshape(T, N)), gen)])

    return audit.function_mechanism(name, f, epsilon=eps)


def _stream(kind, eps, **kw):
    return lambda days, gen: dh.stream(days, epsilon=eps, mechanism=kind, rng=gen, **kw)


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("kind", ["bd", "ba"])
def test_w_event_mechanisms_pass(kind):
    mech = _mechanism(kind, 3, _stream(kind, 3, w=W))
    result = audit.audit(mech, [_pair(slice(0, T))], n_search=600, n_confirm=2_400, seed=[32, 1])
    assert not result.flagged, result.summary()


@pytest.mark.extended
@pytest.mark.statistical
def test_ba_that_forgets_absorbed_budget_is_flagged():
    mech = _mechanism("forgetful BA", 3, lambda d, g: _mutant_stream(d, 3, W, cap=100, rng=g))
    result = audit.audit(mech, [_pair(slice(0, T))], n_search=1_000, n_confirm=4_000, seed=[7])
    assert result.flagged, result.summary()


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("kind", ["tree", "factorization"])
def test_counters_pass(kind):
    mech = _mechanism(kind, 1, _stream(kind, 1, horizon=T))
    result = audit.audit(mech, [_pair([1])], n_search=600, n_confirm=2_400, seed=[32, 2])
    assert not result.flagged, result.summary()
