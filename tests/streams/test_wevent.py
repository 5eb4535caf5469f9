"""Window mechanisms: hand-worked budgets on tiny streams, the w-window invariant of
the ledger on random runs, and the BA mutant that forgets absorbed budget."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.errors import BudgetExceededError, ValidationError
from dphist.streams.ledger import SlidingLedger
from dphist.streams.wevent import WEVENT, BudgetAbsorption, expected_abs_error

F = Fraction


def _run(windows, mechanism, w, epsilon=1, **kw):
    s = dh.stream(windows, epsilon=epsilon, mechanism=mechanism, w=w, **kw)
    return s, list(s)


def test_periodic_charges_each_window_its_own_budget_and_names_it():
    days = [np.array([3, 1]), np.array([0, 2]), np.array([5, 5])]
    s, out = _run(days, "periodic", None, epsilon=F(1, 2), rng=1)
    assert [r.index for r in out] == [0, 1, 2]
    assert all(e.spent == e.span == F(1, 2) and e.w == 1 for e in s.ledger)
    assert [r.release.params["window"] for r in out] == [0, 1, 2]
    assert s.spent == F(3, 2)  # a record in every window: sequential composition


def test_periodic_publishes_with_any_registered_method():
    days = [np.arange(16) % 5 for _ in range(3)]
    s, out = _run(days, "periodic", None, method="hb", rng=2)
    assert all(r.release.method == "HB" and r.kind == "published" for r in out)
    assert all(sum(c.epsilon for c in e.charges) == 1 for e in s.ledger)


def test_uniform_and_sample_budgets_by_hand():
    days = [np.array([1, 2, 3])] * 5
    s, _ = _run(days, "uniform", 3, rng=0)
    assert [e.spent for e in s.ledger] == [F(1, 3)] * 5
    assert [e.span for e in s.ledger] == [F(1, 3), F(2, 3), 1, 1, 1]
    s, out = _run(days, "sample", 3, rng=0)
    assert [e.spent for e in s.ledger] == [1, 0, 0, 1, 0]
    assert [r.kind for r in out] == ["published", "repeated", "repeated", "published", "repeated"]
    assert [e.source for e in s.ledger] == [None, 0, 0, None, 3]
    np.testing.assert_array_equal(out[1].estimate, out[0].estimate)


def test_bd_repeats_a_stream_that_does_not_change():
    """Large constant counts over 400 bins (the test's mean is sharp): window 0 differs
    from the zero prior and is published with 1; windows 1 and 2 would publish with 1/2,
    whose error is twice what the release they would replace has, so they repeat it."""
    days = [np.full(400, 1000)] * 3
    for seed in range(5):
        s, out = _run(days, "bd", 3, epsilon=4, rng=seed)
        assert [r.kind for r in out] == ["published", "repeated", "repeated"]
        assert [e.source for e in s.ledger] == [None, 0, 0]
        assert [e.spent for e in s.ledger] == [F(2, 3) + 1, F(2, 3), F(2, 3)]


def test_bd_budgets_by_hand():
    """BD at eps 4, w 2, share 1/2: tests 1 each; the publication pool 2, window 0 offers
    half of it (1), window 1 half of what is left (1/2) and so on."""
    days = [np.full(4, 1000 * (i + 1)) for i in range(4)]  # always changing: always published
    s, _ = _run(days, "bd", 2, epsilon=4, rng=3)
    assert [e.spent for e in s.ledger] == [1 + 1, 1 + F(1, 2), 1 + F(3, 4), 1 + F(5, 8)]
    assert all(e.span <= 4 for e in s.ledger)


def test_ba_absorbs_and_nullifies_by_hand():
    """BA at eps 6, w 3 over 400 bins: tests 1 each, allotment 1. Zeros match the zero
    prior (repeated); the jump at window 3 absorbs three allotments and nullifies
    windows 4 and 5 (no test, no charge); window 6 could publish with one allotment,
    whose error exceeds the change it sees (the noise of a publication at 3), so it
    repeats; window 7's jump absorbs two."""
    days = [np.zeros(400, int)] * 3 + [np.full(400, 1000)] * 4 + [np.full(400, 5000)]
    for seed in range(5):
        s, out = _run(days, "ba", 3, epsilon=6, rng=seed)
        assert [r.kind[0] for r in out] == list("rrrprrrp")
        assert [e.spent for e in s.ledger] == [1, 1, 1, 4, 0, 0, 1, 3]
        assert [e.span for e in s.ledger] == [1, 2, 3, 6, 5, 4, 1, 4]
        assert [e.source for e in s.ledger] == [None] * 3 + [None, 3, 3, 3, None]


def _random_stream(rng, T, n):
    level = rng.integers(0, 50, n)
    out = []
    for _ in range(T):
        if rng.random() < 0.3:
            level = rng.integers(0, 50, n) * rng.integers(1, 20)
        out.append(level + rng.integers(0, 3, n))
    return out


@pytest.mark.parametrize("mechanism", WEVENT)
def test_no_w_consecutive_windows_exceed_the_budget(mechanism):
    rng = np.random.default_rng(11)
    for trial in range(6):
        w, eps = int(rng.integers(1, 6)), F(int(rng.integers(1, 9)), int(rng.integers(1, 5)))
        s, _ = _run(_random_stream(rng, 25, 6), mechanism, w, epsilon=eps, rng=trial)
        spent = [e.spent for e in s.ledger]
        for i, e in enumerate(s.ledger):
            window = spent[max(0, i - w + 1) : i + 1]
            assert e.span == sum(window) <= eps
            assert e.spent == sum(c.epsilon for c in e.charges)


class ForgetfulBA(BudgetAbsorption):
    """The mutant: forgets the allotments a publication absorbed, so every window finds
    all ``w`` of them unused, and nullifies nothing."""

    def step(self, i, data, account, noise):
        return self.decide(i, data, account, noise, min(i + 1, self.w) * self.unit)


def _mutant_stream(windows, epsilon, w, cap=None, rng=None):
    s = dh.stream(windows, epsilon=epsilon, mechanism="ba", w=w, rng=rng)
    engine = s._engine
    engine.schedule = ForgetfulBA(F(epsilon), w)
    if cap is not None:  # the unchecked mutant, for the statistical audit
        engine.ledger = SlidingLedger(F(cap), w)
    return s


def test_the_ledger_refuses_ba_that_forgets_absorbed_budget():
    """The mutant's window 3 absorbs three allotments and window 4 the same three again,
    bringing windows 2 to 4 to 1 + 4 + 4 > 6: refused before window 4 is read."""
    days = [np.zeros(400, int)] * 3 + [np.full(400, 1000), np.full(400, 5000)]
    with pytest.raises(BudgetExceededError):
        list(_mutant_stream(days, 6, 3, rng=0))
    assert len(list(dh.stream(days, epsilon=6, mechanism="ba", w=3, rng=0))) == 5


def test_expected_abs_error_of_the_identity_publication():
    e = F(1, 2)
    p = np.exp(-0.5)
    assert expected_abs_error(e) == pytest.approx(2 * p / (1 - p * p))
    assert expected_abs_error(F(1, 10**20)) == np.inf


def test_bad_options_are_refused_before_anything_is_read():
    def never():
        raise AssertionError("read")
        yield

    for kw in (
        dict(mechanism="ba"),  # no w
        dict(mechanism="bd", w=0),
        dict(mechanism="ba", w=2, method="hb"),
        dict(mechanism="ba", w=2, share=1),
        dict(mechanism="periodic", w=3),
        dict(mechanism="nope", w=2),
        dict(mechanism="tree"),
        dict(mechanism="uniform", w=2, horizon=4),
    ):
        with pytest.raises(ValidationError):
            dh.stream(never(), epsilon=1, **kw)
    with pytest.raises(ValidationError):
        dh.stream(never(), rho=1, mechanism="bd", w=2)


def _paper_budgets(mechanism, ledger, dis, epsilon, w):
    """The paper's budget rules (Kellaris et al. 2014, Algorithms BD and BA) replayed
    over the decisions a run made: for each window the publication budget it was offered
    (``None`` where BA nullifies it) and what it spent on publication."""
    u, offered, spent, last, last_budget = epsilon / (2 * w), [], [], -1, epsilon / (2 * w)
    for e in ledger:
        t = e.index
        if mechanism == "bd":
            offer = (epsilon / 2 - sum(spent[max(0, t - w + 1) : t])) / 2
        else:
            t_n = last_budget / u - 1  # windows the last publication nullifies
            offer = None if t - last <= t_n else u * min(t - (last + t_n), w)
        offered.append(offer)
        published = e.kind == "published"
        spent.append(offer if published else F(0))
        if published:
            last, last_budget = t, offer
            assert dis[t] > expected_abs_error(offer)  # publish iff the change beats the error
        elif offer is not None:
            assert dis[t] <= expected_abs_error(offer)
    return offered, spent


@pytest.mark.parametrize("mechanism", ["bd", "ba"])
def test_budgets_follow_the_papers_rules_on_random_streams(mechanism):
    """Oracle: every window's test charge, publication budget and nullification equal
    the paper's rules replayed over the run's own publish/repeat decisions."""
    rng = np.random.default_rng(5)
    for trial in range(8):
        w, eps = int(rng.integers(1, 6)), F(int(rng.integers(2, 12)), int(rng.integers(1, 3)))
        s, out = _run(_random_stream(rng, 30, 8), mechanism, w, epsilon=eps, rng=trial)
        dis = [r.release.params.get("dissimilarity") for r in out]
        offered, spent = _paper_budgets(mechanism, s.ledger, dis, eps, w)
        for e, offer, pub in zip(s.ledger, offered, spent, strict=True):
            test = [c.epsilon for c in e.charges if c.block == "dissimilarity"]
            if offer is None:  # nullified: repeats, no test, no charge
                assert e.kind == "repeated" and e.spent == 0
            else:
                assert test == [eps / (2 * w)]
                assert e.spent == eps / (2 * w) + pub
