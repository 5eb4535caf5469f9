"""Targets of histograms over time: throughput and memory (Python and Spark), continual
counters' error.

Run: python benchmarks/streams.py [--only throughput,spark,counters] [--windows 100]
     [--bins 1000000] [--records 1000000] [--spark-windows 20]

* **Throughput.** ``dh.stream`` over ``--windows`` windows of ``--bins`` bins, each
  holding ``--records`` timed records (chunks with a time column, counted by the
  stream), published with S2+H and with identity (event-level). Prints windows per
  second after window 10 and the resident set at windows 10 and ``--windows``
  (target: >= 2 windows/s over 100 windows on 2 cores, memory flat from window 10).
* **Spark.** The ``foreachBatch`` function of ``dh.stream_frames`` in local mode
  (``local[2]``), called as Spark calls it with one micro-batch per window of the same
  sizes (records generated in Spark), identity: windows per second after window 3 and
  the driver's and the JVM's resident sets at window 3 and the last.
* **Counters.** The largest expected (root-mean-square) error of a running total over
  ``T``, the square-root factorization against the binary tree (Honaker's estimate),
  ``T = 2**8 .. 2**20``, under zCDP (rho = 1/2) and pure epsilon = 1: exact, from the
  closed forms the tests check against simulation.

BD and BA against uniform and Sample: ``dphist reproduce streams`` (a report).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import dphist as dh
from dphist.streams import largest_error


def _rss_mb(pid: int | None = None) -> float:
    with open(f"/proc/{pid or os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def throughput(windows: int, bins: int, records: int) -> None:
    print(f"\n# Throughput: {windows} windows of {bins:,} bins, {records:,} records each")
    rng = np.random.default_rng(0)
    values = rng.integers(0, bins, records).astype(np.float64)
    offsets = np.sort(rng.random(records))
    for method in ("identity", "S2+H"):

        def chunks():
            for i in range(windows):
                yield {"t": i + offsets, "v": values}

        s = dh.stream(
            chunks(), epsilon=1, method=method, time="t", column="v", window=1, start=0,
            end=windows, domain=(0, bins, 1), rng=1,
        )  # fmt: skip
        stamps, rss = [], {}
        for r in s:
            stamps.append(time.perf_counter())
            if r.index + 1 in (10, windows):
                rss[r.index + 1] = _rss_mb()
        rate = (len(stamps) - 10) / (stamps[-1] - stamps[9])
        print(
            f"{method:9s} {rate:6.2f} windows/s after window 10; resident set "
            f"{rss[10]:,.0f} MB at window 10, {rss[windows]:,.0f} MB at window {windows}"
        )


def counters() -> None:
    print("\n# Continual counts: largest expected error of a running total over T")
    print(f"{'T':>9s} | {'zCDP rho=1/2: factorization':>28s} {'tree':>8s} {'ratio':>6s} | "
          f"{'pure eps=1: factorization':>26s} {'tree':>8s} {'ratio':>6s}")  # fmt: skip
    for e in range(8, 21, 2):
        t = 1 << e
        fz, tz = (largest_error(k, t, 0.5, "zcdp") for k in ("factorization", "tree"))
        fp, tp = (largest_error(k, t, 1, "pure") for k in ("factorization", "tree"))
        print(
            f"{t:9,d} | {fz:28.2f} {tz:8.2f} {fz / tz:6.3f} | {fp:26.2f} {tp:8.2f} {fp / tp:6.3f}"
        )


def spark(windows: int, bins: int, records: int) -> None:
    print(f"\n# Spark local[2]: {windows} batches of {records:,} records, {bins:,} bins, identity")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    session = (
        SparkSession.builder.master("local[2]").appName("dphist-bench")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2").getOrCreate()
    )  # fmt: skip
    jvm = session.sparkContext._gateway.proc.pid
    s = dh.stream_frames(
        time="t", column="v", window=1, start=0, end=windows, domain=(0, bins, 1), epsilon=1,
        rng=1, on_release=lambda release: None,  # releases are not kept
    )  # fmt: skip
    base = session.range(records).select(
        F.rand(1).alias("r"), F.floor(F.rand(2) * bins).cast("double").alias("v")
    )
    stamps, rss = [], {}
    for i in range(windows):
        s(base.select((F.lit(float(i)) + F.col("r") * 0.999).alias("t"), "v"), i)
        s.advance(i + 1)  # window i closes
        stamps.append(time.perf_counter())
        if i + 1 in (3, windows):
            rss[i + 1] = (_rss_mb(), _rss_mb(jvm))
    rate = (len(stamps) - 3) / (stamps[-1] - stamps[2])
    print(
        f"identity  {rate:6.3f} windows/s after window 3; resident set (driver, JVM) "
        f"{rss[3][0]:,.0f} + {rss[3][1]:,.0f} MB at window 3, {rss[windows][0]:,.0f} + "
        f"{rss[windows][1]:,.0f} MB at window {windows}"
    )
    session.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="throughput,spark,counters")
    p.add_argument("--windows", type=int, default=100)
    p.add_argument("--bins", type=int, default=1_000_000)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--spark-windows", type=int, default=20)
    a = p.parse_args()
    parts = set(a.only.split(","))
    print("Machine shared with other work: timings are indicative; ratios come from one run.")
    if "counters" in parts:
        counters()
    if "throughput" in parts:
        throughput(a.windows, a.bins, a.records)
    if "spark" in parts:
        spark(a.spark_windows, a.bins, a.records)


if __name__ == "__main__":
    main()
