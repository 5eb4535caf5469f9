"""The record pairs of the audit's catalogue, in every source: each releases on both sides
(or both raise the same public error) and stays one record apart, and the mechanism
audited on the counts is not flagged.

Pairs (``audit.record_catalogue``): ``-0.0`` added at a first, interior and last edge 0
and in a domain from 0, clipped and dropped; a NaN, NULL or None unit id added beside
one already there (K = 1); a ragged value and a ragged unit id (sources whose columns
hold lists). Mutants, the rules these pairs were built against, must be flagged: NaN
ids kept as one unit, and a list read by ``np.asarray``.

Default run: every pair of the DuckDB sources counted at four salts, the mechanism
audited on one edge pair; Spark (one JVM: the conftest sends its tests to one worker) on
a first-edge pair and a NaN-id pair. Extended (``-m extended``): every pair of every
source counted at eight salts and audited (about 15 minutes on one core, Spark's included).
"""

from __future__ import annotations

import numpy as np
import pytest

from dphist.lab import audit
from dphist.lab.audit import records

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("polars")

DUCKDB_SOURCES = records.FILES + records.IN_MEMORY
SEED = [20264, 34]
N_SEARCH, N_CONFIRM = 300, 1_200


def identity() -> audit.Mechanism:
    return audit.method_mechanism("identity", epsilon=1.0)


def check(results, audit_row=None) -> None:
    for r in results:
        if audit_row is not None and r.audit is not None:
            a = r.audit
            event = a.best.event if a.best is not None else "-"
            audit_row(f"record pair: {r.outcome.pair.describe()}", a.epsilon, a.eps_lb,
                      "FLAGGED" if a.flagged else "pass", event, a.runs, a.seconds)  # fmt: skip
    flagged = [r.summary() for r in results if r.flagged]
    assert not flagged, flagged


@pytest.mark.parametrize("source", DUCKDB_SOURCES)
def test_every_record_pair_releases_on_both_sides(source):
    pairs = records.record_catalogue([source])
    outcomes = [audit.ingest_pair(p, salts=4) for p in pairs]
    problems = [o.problem for o in outcomes if o.problem is not None]
    assert not problems, problems
    assert all(o.error is None for o in outcomes)  # every pair counts: no public error either
    for o in outcomes:
        x, x2 = o.counts[0]
        added = "-0.0" in o.pair.reason
        assert (x2 - x).sum() == (1 if added else 0), o.pair.describe()  # missing ids, ragged
    ragged = sum("ragged" in p.reason for p in pairs)
    assert ragged == (2 if source in records.RAGGED_SOURCES else 0)


def test_the_mechanism_on_an_edge_pair(audit_row):
    """The counts of an edge pair are the same in every source (checked above), so the
    default run audits the mechanism on one; the extended run on every pair."""
    pair = records.record_catalogue(["csv"])[0]  # -0.0 at a first edge 0, clipped
    results = audit.audit_records(identity(), [pair], n_search=N_SEARCH, n_confirm=N_CONFIRM,
                                  seed=SEED)  # fmt: skip
    assert results[0].audit is not None and results[0].audit.pair.x.tolist() == [1, 1, 0]
    assert results[0].audit.pair.x2.tolist() == [2, 1, 0]
    check(results, audit_row)


@pytest.mark.extended  # ~20 s with Spark's start; tests/test_spark.py covers the edges
def test_spark_record_pairs(spark, audit_row):
    """-0.0 at a first edge 0 aborted the Spark job; NaN ids were one unit. (Every Spark
    pair runs in the extended test: a Spark job takes a second or two.)"""
    catalogue = records.record_catalogue(["spark"])
    pairs = [catalogue[0], next(p for p in catalogue if "NAN" in p.reason)]
    results = audit.audit_records(identity(), pairs, spark=spark, salts=1, n_search=N_SEARCH,
                                  n_confirm=N_CONFIRM, seed=SEED)  # fmt: skip
    assert results[0].audit is not None and results[1].audit is None  # the NaN id is dropped
    check(results, audit_row)


# --------------------------------------------------------------------------- mutants


def test_nan_ids_kept_as_one_unit_are_flagged(monkeypatch):
    """The rule before: only NULL was missing, so every NaN id joined one unit, whose one
    kept record a new NaN-id record displaced at about half of the salts."""
    import importlib

    counting = importlib.import_module("dphist.ingest.count")
    monkeypatch.setattr(counting, "missing_id_sql", lambda unit_type, u="u": f"({u} IS NULL)")
    for source in ("parquet", "arrow", "polars"):
        pair = next(p for p in records.record_catalogue([source]) if "NAN" in p.reason)
        outcome = audit.ingest_pair(pair, salts=16)
        assert outcome.problem is not None and "moved the counts" in outcome.problem, source


def test_lists_read_by_asarray_are_flagged(monkeypatch):
    """The rule before: ``np.asarray`` inferred the list's shape, and a ragged element
    raised an error carrying it (on one side of the pair only)."""
    from dphist.ingest import sources

    def asarray(values, name, numbers):
        arr = np.asarray(values)
        if arr.dtype.kind in "OU":
            return sources._as_text(arr), True
        return arr, False

    monkeypatch.setattr(sources, "_elements", asarray)
    pair = next(p for p in records.record_catalogue(["list"]) if p.reason == "a ragged value")
    outcome = audit.ingest_pair(pair)
    assert outcome.problem is not None and outcome.problem.startswith("x' raised")


# --------------------------------------------------------------------------- extended


@pytest.mark.extended
@pytest.mark.parametrize("source", DUCKDB_SOURCES)
def test_every_record_pair_audited(source, audit_row):
    results = audit.audit_records(identity(), records.record_catalogue([source]), salts=8,
                                  seed=[*SEED, DUCKDB_SOURCES.index(source)])  # fmt: skip
    check(results, audit_row)


@pytest.mark.extended
def test_every_spark_record_pair_audited(spark, audit_row):
    results = audit.audit_records(identity(), records.record_catalogue(["spark"]), spark=spark,
                                  salts=8, seed=[*SEED, 99])  # fmt: skip
    check(results, audit_row)
