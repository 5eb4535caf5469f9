"""No overspending under races: processes charging one budget at once never spend
more than its cap, and the ones that do not fit are refused before reading data.

Smaller than the benchmark (``benchmarks/budget.py``: 8 processes, 1,000 charges, 20
repetitions); the workers are forked so they start at once without importing again.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.errors import BudgetExceededError
from dphist.store import BudgetStore

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the race workers are forked (Linux)"
)


def _charger(location: str, start, n: int, out) -> None:
    with BudgetStore(location, create=False) as store:
        budget = store.budget("race")
        start.wait()
        granted = 0
        for _ in range(n):
            try:
                budget.charge(epsilon="1/100", method="race")
                granted += 1
            except BudgetExceededError:
                pass
    out.put(granted)


def _publisher(location: str, start, n: int, out) -> None:
    from dphist import session

    reads = []
    real = session.run
    session.run = lambda *a, **k: reads.append(1) or real(*a, **k)
    with BudgetStore(location, create=False) as store:
        budget = store.budget("race")
        start.wait()
        done = refused = 0
        for _ in range(n):
            try:
                dh.publish(np.arange(8), epsilon=0.1, method="identity", budget=budget)
                done += 1
            except BudgetExceededError:
                refused += 1
    out.put((done, refused, len(reads)))


def _race(location: str, target, processes: int, n: int) -> list:
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Barrier(processes), ctx.Queue()
    workers = [ctx.Process(target=target, args=(location, start, n, out)) for _ in range(processes)]
    for w in workers:
        w.start()
    results = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    return results


def test_racing_processes_grant_exactly_the_cap(location):
    with BudgetStore(location) as store:
        store.create("race", epsilon=1)
    granted = _race(location, _charger, processes=4, n=40)
    assert sum(granted) == 100
    with BudgetStore(location, create=False) as store:
        [status] = store.check()
        assert (status.spent, status.charges) == (1, 100)


def test_racing_publishes_refuse_before_reading(location):
    with BudgetStore(location) as store:
        store.create("race", epsilon=1)
    dh.publish(np.arange(8), epsilon=0.1, method="identity")  # compiled once, before the fork
    results = _race(location, _publisher, processes=3, n=5)
    done = sum(r[0] for r in results)
    assert done == 10 and sum(r[1] for r in results) == 5
    assert all(reads == published for published, _, reads in results)
    with BudgetStore(location, create=False) as store:
        entries = store.budget("race").entries()
        assert len(entries) == 10 and all(e.released for e in entries)


def test_threads_sharing_one_store_object(tmp_path):
    with BudgetStore(tmp_path / "b.sqlite") as store:
        budget = store.create("race", epsilon=1)
        granted = []

        def charge() -> None:
            for _ in range(30):
                try:
                    budget.charge(epsilon="1/100", method="race")
                    granted.append(1)
                except BudgetExceededError:
                    pass

        threads = [threading.Thread(target=charge) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(granted) == 100 and budget.spent == Fraction(1)
