"""Resuming a stream from its state file: the windows released before a restart are
not released or charged again, the sliding ledger carries across the restart, and a
window cut off mid-release is closed at the most its mechanism could have spent."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.errors import ValidationError

F = Fraction
OPTS = dict(time="t", column="v", window=10, start=0, end=60, domain=(0, 100, 10))


def _spans_ok(entries, w, cap):
    spent = [e.spent for e in entries]
    assert [e.index for e in entries] == list(range(len(entries)))
    for i, e in enumerate(entries):
        assert e.span == sum(spent[max(0, i - w + 1) : i + 1]) <= cap


def test_a_restarted_stream_carries_on_where_it_stopped(tmp_path):
    path = tmp_path / "roads.npz"
    kw = dict(OPTS, epsilon=1, mechanism="uniform", w=3, rng=0)
    first = dh.stream_frames(**kw, state=path)
    first.advance(25)  # windows 0 and 1 close, then the process dies
    second = dh.stream_frames(**kw, state=path)
    second.close()
    assert [r.index for r in first.releases] == [0, 1]
    assert [r.index for r in second.releases] == [2, 3, 4, 5]
    both = first.ledger + second.ledger
    assert [e.spent for e in both] == [F(1, 3)] * 6
    _spans_ok(both, 3, 1)
    assert second.ledger[0].span == 1  # windows 0 and 1 count in window 2's span
    with pytest.raises(ValidationError, match="closed"):  # the stream had ended
        dh.stream_frames(**kw, state=path)(None, 9)


def test_a_window_cut_off_mid_release_is_closed_at_its_most_and_never_again(tmp_path):
    """BA at eps 6, w 3 over empty windows (allotment 1, tests 1): windows 0 and 1 test
    and repeat the zero prior; the process dies while releasing window 2, which could
    have absorbed three allotments: it is closed at 1 + 3 = 4, as if it had published,
    so windows 3 and 4 are nullified (0) and window 5 tests again (1)."""
    path = tmp_path / "s.npz"
    kw = dict(OPTS, epsilon=6, mechanism="ba", w=3, rng=1)

    def crash(rel):
        if rel.index == 2:
            raise KeyboardInterrupt

    first = dh.stream_frames(**kw, state=path, on_release=crash)
    with pytest.raises(KeyboardInterrupt):
        first.advance(35)
    second = dh.stream_frames(**kw, state=path)
    second.close()
    assert second.ledger[0].kind == "interrupted"
    both = first.ledger[:2] + second.ledger
    assert [e.spent for e in both] == [1, 1, 4, 0, 0, 1]
    _spans_ok(both, 3, 6)
    released = [r.index for r in second.releases]
    assert released == [3, 4, 5]  # window 2 is never released again


def test_state_refused_where_it_cannot_resume(tmp_path):
    path = tmp_path / "s.npz"
    dh.stream_frames(**OPTS, epsilon=1, mechanism="bd", w=2, state=path, rng=0).advance(15)
    for kw in (
        dict(epsilon=1, mechanism="bd", w=3),  # another stream's file
        dict(epsilon=F(1, 2), mechanism="bd", w=2),
    ):
        with pytest.raises(ValidationError, match="another stream"):
            dh.stream_frames(**OPTS, **kw, state=path)
    for kw, state in (
        (dict(epsilon=1, mechanism="tree", horizon=8), path),
        (dict(epsilon=1, privacy_unit="p", max_records=2), tmp_path / "u.npz"),
        (dict(epsilon=1), tmp_path / "s.json"),
    ):
        with pytest.raises(ValidationError):
            dh.stream_frames(**OPTS, **kw, state=state)
    assert not (tmp_path / "u.npz").exists()


def test_bd_state_round_trips_its_spent_budgets(tmp_path):
    path = tmp_path / "s.npz"
    kw = dict(OPTS, epsilon=4, mechanism="bd", w=3, rng=2)
    first = dh.stream_frames(**kw, state=path)
    first.advance(30)
    engine = first._stream._engine
    second = dh.stream_frames(**kw, state=path)
    other = second._stream._engine
    assert list(other.schedule._spent) == list(engine.schedule._spent)
    assert other.schedule.offer(3) == engine.schedule.offer(3)
    np.testing.assert_array_equal(other.schedule.last, engine.schedule.last)


def test_the_budget_store_is_charged_once_per_window_across_a_restart(tmp_path):
    store = dh.BudgetStore(tmp_path / "budget.db")
    store.create("roads", epsilon=100)
    kw = dict(OPTS, epsilon=1, mechanism="uniform", w=3, rng=0)
    dh.stream_frames(**kw, state=tmp_path / "s.npz", budget=store.budget("roads")).advance(25)
    again = dh.BudgetStore(tmp_path / "budget.db").budget("roads")  # a new process
    second = dh.stream_frames(**kw, state=tmp_path / "s.npz", budget=again)
    second.close()
    assert again.spent == 2 and len(again.entries()) == 6  # six windows of 1/3
