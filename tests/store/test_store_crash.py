"""Crashes: a process killed (SIGKILL) after its charge commits never gets it back, one
killed before the commit spends nothing, and the store always opens and passes its
check afterwards, having spent at least what the files on disk show.

The benchmark (``benchmarks/budget.py``) kills 500 publish runs at random points;
these tests kill at chosen points, and (extended) a few dozen at random ones.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dphist.store import BudgetStore

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="kills processes (Linux)")


def _forked(target, *args) -> int:
    process = multiprocessing.get_context("fork").Process(target=target, args=args)
    process.start()
    process.join(timeout=60)
    return process.exitcode


def _charge_then_die(location: str) -> None:
    store = BudgetStore(location, create=False)
    store.budget("census").charge(epsilon=0.25, method="identity")
    os.kill(os.getpid(), signal.SIGKILL)


def _die_inside_the_charge(location: str) -> None:
    store = BudgetStore(location, create=False)
    run = store._db.run

    def dying(sql: str, params=()) -> None:
        if sql.startswith("UPDATE dphist_budgets"):  # the charge row is in, not committed
            os.kill(os.getpid(), signal.SIGKILL)
        run(sql, params)

    store._db.run = dying
    store.budget("census").charge(epsilon=0.25, method="identity")


def _new(location: str) -> None:
    with BudgetStore(location) as store:
        store.create("census", epsilon=1)


def test_a_crash_after_the_commit_never_refunds(location):
    _new(location)
    assert _forked(_charge_then_die, location) == -signal.SIGKILL
    with BudgetStore(location, create=False) as store:
        [status] = store.check()
        assert status.spent == Fraction(1, 4)
        [entry] = store.budget("census").entries()
        assert not entry.released


def test_a_crash_inside_the_charge_spends_nothing(location):
    _new(location)
    assert _forked(_die_inside_the_charge, location) == -signal.SIGKILL
    with BudgetStore(location, create=False) as store:
        [status] = store.check()
        assert (status.spent, status.charges) == (0, 0)
        grant = store.budget("census").charge(epsilon=1, method="identity")
        assert grant.seq == 1


def _inputs(folder: Path, rows: int) -> Path:
    ages = np.random.default_rng(0).integers(0, 100, rows)
    data = folder / "visits.csv"
    data.write_text("age\n" + "\n".join(map(str, ages)) + "\n")
    return data


def _publish(data: Path, store: Path, out: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "dphist", "publish", str(data), "-c", "age"]
    args += ["--domain", "0:100:5", "--epsilon", "0.01", "--method", "H", "--out", str(out)]
    args += ["--budget", "census", "--budget-store", str(store)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _consistent(store: Path, folder: Path) -> tuple[Fraction, Fraction]:
    """The store opens and passes its check; what it spent and what the files show."""
    with BudgetStore(store, create=False) as opened:
        [status] = opened.check()
        entries = opened.budget("census").entries()
    on_disk = Fraction(0)
    for path in folder.glob("out-*.json"):
        on_disk += Fraction(json.loads(path.read_text())["release"]["spent_exact"])
        assert any(str(path.resolve()) in e.files for e in entries) or any(
            not e.released for e in entries
        )
    assert status.spent == sum((e.charged for e in entries), Fraction(0))
    assert status.spent >= on_disk
    return status.spent, on_disk


def test_a_publish_killed_after_its_charge_keeps_it_spent(tmp_path):
    store = tmp_path / "b.sqlite"
    _new(str(store))
    proc = _publish(_inputs(tmp_path, 20_000), store, tmp_path / "out-0.json")
    with proc:
        line = proc.stdout.readline()  # printed once the charge is committed
        proc.kill()
    assert line.startswith("Charged epsilon = 0.01 to budget 'census'")
    spent, _ = _consistent(store, tmp_path)
    assert spent == Fraction(1, 100)


@pytest.mark.extended
def test_publishes_killed_at_random_points(tmp_path):
    store = tmp_path / "b.sqlite"
    _new(str(store))
    data = _inputs(tmp_path, 200_000)
    rng = random.Random(29)
    started = time.perf_counter()
    with _publish(data, store, tmp_path / "complete.json") as full:
        full.communicate(timeout=300)
    runtime = time.perf_counter() - started
    for i in range(12):
        with _publish(data, store, tmp_path / f"out-{i}.json") as proc:
            time.sleep(rng.uniform(0, runtime))
            proc.kill()
        _consistent(store, tmp_path)
    spent, on_disk = _consistent(store, tmp_path)
    assert spent >= on_disk + Fraction(1, 100)  # and complete.json
