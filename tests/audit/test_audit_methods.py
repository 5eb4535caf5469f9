"""Every registered method under the statistical audit and the white-box ledger check.

Privacy-assurance spec §6.B1 and §6.C1. The registry is read at collection time, so
a newly registered method is audited without touching this file.

Standard mode (``pytest -m extended``, which CI runs after the default run; the
default run audits only the methods in ``QUICK``): each method at epsilon = 1 on 8
bins and two neighbour pairs -- a decision boundary found by probing the method with
common random numbers (spec §1.2.2 N2) and one pair of the catalogue (rotating
through it across methods) -- with N_search = 800 and N_confirm = 3,200 runs per
side. That is 16,000 runs per method, 2-16 s of CPU each (about 0.1-1 ms per run);
the file takes about 2.5 minutes on 2 cores (``pytest -n 2 -m extended``) and twice
that on one. A correct method is flagged on a pair with probability at most 1e-6, so
this file's false-alarm rate is at most ``2 * len(methods) * 1e-6``; with the fixed
seeds it is deterministic.

Exhaustive mode (``pytest -m exhaustive`` or ``EXHAUSTIVE = True`` in conftest.py,
about 30 minutes on 2 cores): the boundary pair plus five catalogue pairs at
epsilon = 1, two pairs at epsilon = 0.25 and the budget-split extremes 0.05 and 0.95
for methods with a ``ratio``, with 2,000 / 8,000 runs per side (up to 10 pairs and
200,000 runs per method).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import dphist as dh
from dphist.lab import audit

METHODS = [m.name for m in dh.list_methods()]
N_BINS = 8


def params_of(name: str) -> dict:
    """Public parameters a method requires (never derived from the audited data): the
    registry's example values, e.g. StructureFirst's bound on any count (1000, above
    every count the audits use)."""
    return dict(dh.get_method(name).example)


N_SEARCH, N_CONFIRM = 800, 3_200


def seed_of(name: str, *extra: int) -> list[int]:
    """A fixed audit seed per method (stable when methods are added or reordered)."""
    return [20260, zlib.crc32(name.encode()), *extra]


def boundary_pairs(mech: audit.Mechanism, name: str) -> list[audit.Neighbour]:
    half = N_BINS // 2
    return list(
        audit.probe_boundaries(
            mech,
            audit.standard_histogram(N_BINS),
            bins=[half - 1, half, half + 1],
            span=6,
            probes=4,
            seed=seed_of(name, 1),
            limit=1,
        )
    )


def default_pairs(mech: audit.Mechanism, name: str) -> list[audit.Neighbour]:
    pool = audit.method_catalogue(name, N_BINS)
    rotating = pool[METHODS.index(name) % len(pool)]
    probed = boundary_pairs(mech, name)
    return [*probed, rotating] if probed else [pool[0], rotating]


def record(audit_row, result: audit.AuditResult, label: str) -> None:
    worst = result.worst
    event = worst.best.event if worst.best is not None else "-"
    audit_row(
        label,
        result.epsilon,
        result.eps_lb,
        "FLAGGED" if result.flagged else "pass",
        f"{event} [{worst.pair.describe()}]",
        result.runs,
        result.seconds,
    )


QUICK = ("identity",)
"""Audited in the default run; every other method's audit runs under ``extended``."""


@pytest.mark.statistical
@pytest.mark.parametrize(
    "name", [m if m in QUICK else pytest.param(m, marks=pytest.mark.extended) for m in METHODS]
)
def test_method_is_not_flagged(name, audit_row):
    mech = audit.method_mechanism(name, epsilon=1.0, **params_of(name))
    pairs = default_pairs(mech, name)
    result = audit.audit(mech, pairs, n_search=N_SEARCH, n_confirm=N_CONFIRM, seed=seed_of(name))
    record(audit_row, result, f"method: {name}")
    assert len(result.pairs) == 2
    assert not result.flagged, result.summary()


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize(
    ("n", "epsilon"),
    [(8, 1.0), (13, 0.3), (1, 0.7), (40, 2.5)],
    ids=["8-1", "13-0.3", "1-0.7", "40-2.5"],
)
def test_ledger_recomposes_exactly(name, n, epsilon):
    counts = np.random.default_rng(n).poisson(6, n)
    report = audit.ledger_check(name, counts, epsilon=epsilon, params=params_of(name), seed=n)
    assert report.ok, report.problems
    assert report.charged == report.claimed
    assert report.values_drawn >= report.values_charged > 0


# --------------------------------------------------------------------------- extended

EXT_SEARCH, EXT_CONFIRM = 2_000, 8_000


@pytest.mark.exhaustive
@pytest.mark.statistical
@pytest.mark.parametrize("name", METHODS)
def test_method_extended(name, audit_row):
    info = dh.get_method(name)
    results = []
    mech = audit.method_mechanism(name, epsilon=1.0, **params_of(name))
    pool = list(audit.method_catalogue(name, N_BINS))
    pairs = boundary_pairs(mech, name) + pool[:5]
    results.append(
        audit.audit(mech, pairs, n_search=EXT_SEARCH, n_confirm=EXT_CONFIRM, seed=seed_of(name, 2))
    )
    small = audit.method_mechanism(name, epsilon=0.25, **params_of(name))
    results.append(
        audit.audit(
            small, pool[:2], n_search=EXT_SEARCH, n_confirm=EXT_CONFIRM, seed=seed_of(name, 3)
        )
    )
    if "ratio" in info.defaults:
        for k, ratio in enumerate((0.05, 0.95)):
            split = audit.method_mechanism(name, epsilon=1.0, **{**params_of(name), "ratio": ratio})
            results.append(
                audit.audit(
                    split,
                    [pool[k]],
                    n_search=EXT_SEARCH,
                    n_confirm=EXT_CONFIRM,
                    seed=seed_of(name, 4 + k),
                )
            )
    for res in results:
        record(audit_row, res, f"extended: {res.mechanism} at {res.epsilon:g}")
    flagged = [r.summary() for r in results if r.flagged]
    assert not flagged, flagged
