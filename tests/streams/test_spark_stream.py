"""Spark Structured Streaming: ``dh.stream_frames`` as a ``foreachBatch`` function
releases the windows ``dh.stream`` releases from the same records, with the same noise,
ledger and budget store, while only per-window counts reach the driver."""

from __future__ import annotations

import numpy as np
import pytest

import dphist as dh
from dphist import BudgetStore

RNG = np.random.default_rng(3)
N = 600
EDGES = dh.ingest.binning(domain="-3.7:100:0.7").edges
TIMES = np.round(RNG.uniform(-5, 65, N), 2)
TIMES[::17] = np.nan  # no valid time
TIMES[5] = 10.0  # on a window's start
TIMES[6] = np.nextafter(10.0, 0)
TIMES[7] = 1e300  # far ahead: dropped, and no overflow under ANSI SQL
VALUES = np.round(RNG.normal(50, 30, N), 1)
VALUES[::11] = np.nan
VALUES[1 : 3 * 20 : 3] = EDGES[:20]  # on, and beside, edges
VALUES[2 : 3 * 20 : 3] = np.nextafter(EDGES[:20], -np.inf)
VALUES[9] = -0.0
PERSON = RNG.integers(0, 40, N).astype(float)
PERSON[::23] = np.nan  # a missing unit id
OPTIONS = dict(time="t", column="v", window=10, start=0, end=60, domain="-3.7:100:0.7")


def _rows(sel):
    return [
        (None if np.isnan(t) else float(t), None if np.isnan(v) else float(v),
         None if np.isnan(p) else float(p))
        for t, v, p in zip(TIMES[sel], VALUES[sel], PERSON[sel], strict=True)
    ]  # fmt: skip


def _batches(spark, parts=3):
    cuts = np.array_split(np.arange(N), parts)
    return [spark.createDataFrame(_rows(c), "t double, v double, p double") for c in cuts]


def _chunks(parts=3):
    return [{"t": TIMES[c], "v": VALUES[c], "p": PERSON[c]}
            for c in np.array_split(np.arange(N), parts)]  # fmt: skip


def _same(spark_releases, python_releases):
    assert [r.index for r in spark_releases] == [r.index for r in python_releases]
    for a, b in zip(spark_releases, python_releases, strict=True):
        assert (a.entry.start, a.entry.end, a.kind) == (b.entry.start, b.entry.end, b.kind)
        assert a.entry.charges == b.entry.charges and a.entry.span == b.entry.span
        assert np.array_equal(a.estimate, b.estimate)


def test_one_batch_releases_what_dh_stream_releases(spark):
    """The fast check: one foreachBatch call, then the end of the source."""
    opts = dict(OPTIONS, domain=(0, 100, 10), epsilon=1)
    s = dh.stream_frames(**opts, rng=2)
    s(_batches(spark, 1)[0], 0)
    s.close()
    _same(s.releases, list(dh.stream(_chunks(1), **opts, rng=2)))
    assert len(s.releases) == 6


@pytest.mark.extended
def test_batches_release_what_dh_stream_releases(spark, tmp_path):
    """Each foreachBatch call as Spark makes it (a DataFrame and a batch id): the same
    windows, estimates (same seed, so the same noise on the same counts), ledger and
    budget-store charges as dh.stream on the same records."""
    stores = [BudgetStore(tmp_path / f"{k}.db") for k in ("spark", "python")]
    budgets = [s.create("roads", epsilon=100) for s in stores]
    opts = dict(OPTIONS, epsilon=1, mechanism="bd", w=3)
    s = dh.stream_frames(**opts, budget=budgets[0], rng=5)
    for i, batch in enumerate(_batches(spark)):
        s(batch, i)
    s(_batches(spark)[0], 0)  # Spark runs a batch again after a restart: skipped
    assert s.releases == []  # no watermark yet: nothing closes
    s.advance(20)
    assert [r.index for r in s.releases] == [0, 1]
    s.close()
    expected = list(dh.stream(_chunks(), **opts, budget=budgets[1], rng=5))
    _same(s.releases, expected)
    assert len(s.releases) == 6 and s.spent == sum(e.spent for e in s.ledger)
    entries = [[(e.method, e.amount, e.released, e.digest) for e in b.entries()] for b in budgets]
    assert entries[0] == entries[1] and len(entries[0]) >= 6 and all(e[2] for e in entries[0])
    assert budgets[0].spent == budgets[1].spent == s.spent


@pytest.mark.extended
def test_counts_match_the_records_windows_exactly(spark):
    """Without noise in the comparison: identity under a seed on both sides, the
    counts of every window (edges, -0.0, times on window starts, NaN dropped)."""
    from dphist.streams import Windowing

    cut = Windowing(binning=dh.ingest.binning(domain=OPTIONS["domain"]),
                    **{k: v for k, v in OPTIONS.items() if k != "domain"})  # fmt: skip
    truth = [w.counts for w in cut.windows(_chunks())]
    assert sum(c.sum() for c in truth) > 400
    s = dh.stream_frames(**OPTIONS, epsilon=1, rng=1)
    for i, batch in enumerate(_batches(spark, 2)):
        s(batch, i)
    from dphist.ingest.spark import window_counts, window_frame

    df = _batches(spark, 1)[0]
    frame = window_frame(df, time="t", column="v", binning=cut.binning, outside="clip",
                         start=0.0, length=10.0, first=0, limit=6, end=60.0)  # fmt: skip
    got = window_counts(frame, cut.binning.n)
    for i, counts in enumerate(truth):
        assert np.array_equal(got.get(i, np.zeros_like(counts)), counts), i


@pytest.mark.extended
def test_privacy_unit_bound_over_the_whole_window(spark):
    """At most K records per unit per window, over the batches together; missing
    unit ids dropped. One unit that puts all its records of a window in one bin
    makes the count exact."""
    rows = [(1.0, 5.0, 1.0), (2.0, 5.0, 1.0), (3.0, 55.0, 2.0), (4.0, 5.0, float("nan")),
            (12.0, 5.0, 1.0)]  # fmt: skip
    more = [(5.0, 5.0, 1.0), (6.0, 5.0, 1.0), (7.0, 95.0, 3.0), (8.0, 5.0, None)]
    kw = dict(time="t", column="v", window=10, start=0, end=20, domain=(0, 100, 10),
              privacy_unit="p", max_records=2, rng=0)  # fmt: skip
    s = dh.stream_frames(**kw, epsilon=1)
    schema = "t double, v double, p double"
    s(spark.createDataFrame(rows, schema), 0)
    s(spark.createDataFrame(more, schema), 1)
    s.close()
    from dphist.streams import Windowing

    cut = Windowing(binning=dh.ingest.binning(domain=(0, 100, 10)),
                    **{k: v for k, v in kw.items() if k != "domain"})  # fmt: skip
    chunks = [{n: np.array([r[j] for r in part], dtype=float) for j, n in enumerate("tvp")}
              for part in (rows, more)]  # fmt: skip
    truth = [w.counts for w in cut.windows(chunks)]
    assert truth[0][0] == 2 and truth[0].sum() == 4 and truth[1].sum() == 1
    python = list(dh.stream(chunks, **kw, epsilon=1))
    _same(s.releases, python)
    assert s.releases[0].release.privacy_unit == "p" and s.releases[0].release.max_records == 2


def test_schema_is_checked_before_any_batch(spark):
    s = dh.stream_frames(**OPTIONS, epsilon=1)
    with pytest.raises(dh.errors.ValidationError, match="time column 't' has type"):
        s.check(spark.createDataFrame([("5", 1.0)], "t string, v double"))
    with pytest.raises(dh.errors.ValidationError, match="no column 'v'"):
        s.check(spark.createDataFrame([(5.0,)], "t double"))
    with pytest.raises(dh.errors.ValidationError, match="mechanism"):
        dh.stream_frames(**OPTIONS, epsilon=1, mechanism="nope")


@pytest.mark.extended
def test_a_streaming_query_over_a_folder_of_files(spark, tmp_path):
    """A real Structured Streaming query: Parquet files read one per micro-batch with
    trigger(availableNow=True), the function given to foreachBatch, follow() until the
    query ends; the same releases as dh.stream over the same records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "incoming"
    folder.mkdir()
    for i, chunk in enumerate(_chunks(3)):
        pq.write_table(pa.table(chunk), folder / f"part-{i}.parquet")
    opts = dict(OPTIONS, epsilon=1, mechanism="ba", w=2, privacy_unit="p", max_records=3)
    s = dh.stream_frames(**opts, rng=4)
    df = spark.readStream.schema("t double, v double, p double").option(
        "maxFilesPerTrigger", 1).parquet(str(folder))  # fmt: skip
    s.check(df)
    query = (
        df.writeStream.foreachBatch(s).trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    )  # fmt: skip
    s.follow(query, poll=0.2)
    assert [r.index for r in s.releases] == list(range(6))
    python = list(dh.stream(_chunks(3), **opts, rng=4))
    for a, b in zip(s.releases, python, strict=True):
        assert a.entry.charges == b.entry.charges and a.kind == b.kind
        assert a.release.privacy_unit == "p" and a.release.max_records == 3
    s.close()  # closing again does nothing
    assert len(s.releases) == 6


@pytest.mark.extended
def test_the_notes_spark_example_runs(spark, tmp_path, capsys):
    import re
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    doc = Path(__file__).resolve().parents[2] / "docs" / "streams.md"
    code = re.findall(r"```python\n(.+?)\n```", doc.read_text(encoding="utf-8"), flags=re.S)[2]
    for name in ("incoming/", "checkpoint/"):  # the JVM keeps its own working folder
        code = code.replace(f'"{name}"', repr(f"{tmp_path}/{name}"))
    (tmp_path / "incoming").mkdir()
    ts = RNG.uniform(0, 3600, 500)
    pq.write_table(pa.table({"ts": ts, "speed": RNG.uniform(0, 130, 500)}),
                   tmp_path / "incoming" / "a.parquet")  # fmt: skip
    exec(compile(code, "docs/streams.md", "exec"), {"spark": spark})
    assert capsys.readouterr().out.count("\n") == 12  # one line per five-minute window


@pytest.mark.extended
def test_a_clock_closes_windows_and_later_records_are_late(spark, tmp_path):
    """The clock less the lateness closes windows after a batch and at advance();
    records of a closed window are dropped; a counter's horizon charge is recorded in
    the budget store when the stream closes."""
    now = [0.0]
    budget = BudgetStore(tmp_path / "b.db").create("c", epsilon=10)
    kw = dict(time="t", column="v", window=10, start=0, end=40, domain=(0, 100, 10),
              clock=lambda: now[0], lateness=5, mechanism="tree", horizon=4, epsilon=1,
              rng=0)  # fmt: skip
    s = dh.stream_frames(**kw, budget=budget)
    schema = "t double, v double"
    s(spark.createDataFrame([(1.0, 5.0), (12.0, 15.0)], schema), 0)
    assert s.releases == []
    now[0] = 15.0  # watermark 10: window 0 closes
    s.advance()
    assert [r.index for r in s.releases] == [0]
    s(spark.createDataFrame([(2.0, 5.0), (13.0, 15.0)], schema), 1)  # (2, 5) is late
    s.close()
    assert [r.index for r in s.releases] == [0, 1, 2, 3]
    chunks = [{"t": np.array([1.0, 12.0]), "v": np.array([5.0, 15.0])}, None,
              {"t": np.array([13.0]), "v": np.array([15.0])}]  # fmt: skip
    ticks = iter([0.0, 15.0, 15.0])
    python = list(dh.stream(chunks, **{**kw, "clock": lambda: next(ticks)}))
    _same(s.releases, python)
    (entry,) = budget.entries()
    assert entry.released and entry.amount == 1 and budget.spent == 1


@pytest.mark.extended
def test_a_query_restarted_from_its_checkpoint_resumes_the_stream(spark, tmp_path):
    """A real query over three files (one batch each), killed while releasing window 1
    in batch 1 and restarted from its checkpoint with the same state file: Spark runs
    batch 1 again; the stream counts it once, releases windows 0 and 2..5 once each with
    the exact counts of the records that arrived before each closed (epsilon so large the
    noise is zero; window 0 closes before the last batch), and never releases
    window 1, which its ledger closes at the most it could have spent."""
    import csv

    src, checkpoint, state = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "s.npz"
    src.mkdir()
    chunks = _chunks(3)
    for k, chunk in enumerate(chunks):
        with open(src / f"part{k}.csv", "w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["t", "v"])
            for t, v in zip(chunk["t"], chunk["v"], strict=True):
                out.writerow(["" if np.isnan(x) else repr(float(x)) for x in (t, v)])
    now = {"t": -np.inf}
    opts = dict(OPTIONS, epsilon=10**6, clock=lambda: now["t"], rng=0)

    def query(fn):
        frames = spark.readStream.schema("t double, v double").option("maxFilesPerTrigger", 1)
        writer = frames.csv(str(src), header=True).writeStream.foreachBatch(fn)
        return writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)

    delivered = []

    def crash(rel):
        if rel.index == 1:
            raise RuntimeError("the driver dies")
        delivered.append(rel)

    first = dh.stream_frames(**opts, state=state, on_release=crash)

    def batch(stream):
        def run(df, batch_id):
            now["t"] = 20.0 if batch_id >= 1 else -np.inf  # batch 1 closes windows 0 and 1
            stream(df, batch_id)

        return run

    with pytest.raises(Exception, match="driver dies"):
        query(batch(first)).start().awaitTermination()
    second = dh.stream_frames(**opts, state=state)
    query(batch(second)).start().awaitTermination()
    second.close()
    from dphist.streams import Windowing

    cut = Windowing(binning=dh.ingest.binning(domain=OPTIONS["domain"]),
                    **{k: v for k, v in OPTIONS.items() if k != "domain"})  # fmt: skip
    truth = [w.counts for w in cut.windows(chunks)]
    truth[0] = next(iter(cut.windows(chunks[:2]))).counts  # closed before the last batch
    released = delivered + second.releases
    assert [r.index for r in released] == [0, 2, 3, 4, 5]
    for r in released:
        np.testing.assert_array_equal(r.estimate, truth[r.index])
    assert [e.kind for e in second.ledger] == ["interrupted"] + ["published"] * 4
    assert [e.index for e in first.ledger[:1] + second.ledger] == [0, 1, 2, 3, 4, 5]
