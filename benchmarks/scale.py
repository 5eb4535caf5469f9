"""Census scale on one machine: time and peak memory per row, each row in its own process.

Run: python benchmarks/scale.py --data DIR [--rows all|identity-1e8,...] [--records 1e9]

(``--rows`` takes any ``METHOD-N`` too, e.g. ``S2+H-3e7``.)

Rows (targets from the scale plan):

* ``<method>-1e8``: ``dh.publish`` of 10**8 bins (piecewise-constant Poisson counts,
  int64, epsilon 0.1, secure noise) with identity (<= 15 s), HB, S2+H and AHP (<= 60 s),
  each at most 4 GB;
* ``<method>-1e7``: S1, S~, S1+H and DAWA on 10**7 bins (<= 20 s, <= 4 GB);
* ``count-parquet``: ``--records`` Parquet records (one INTEGER column, skewed over
  [0, 10**6)) into 10**6 public bins with ``dphist.ingest.count_file`` (10**9 records:
  <= 90 s, <= 4 GB);
* ``census``: household and person tables of ``benchmarks/census_data.py`` (1.3 * 10**8
  households, 52 states, 3,200 counties, 85,000 tracts) read with
  ``read_group_tables`` (DuckDB) and published with ``publish_group_sizes`` (epsilon 1,
  ranked estimates for nation and states, cumulative with K = 20 for counties and
  tracts, top-down consistency): <= 10 min end to end, <= 12 GB;
* ``spark``: the same 1-D histogram of 10**7 records counted by Spark (local mode,
  two cores) and by DuckDB; the counts must be identical.

Time is the wall clock of the measured step inside the row's process (inputs made
before it) and the CPU time that process spent on it (all its threads: on a shared
machine the wall clock also counts other processes' turns); memory is that process's
peak resident set (``ru_maxrss``), inputs and interpreter included, in GiB (2**30
bytes; the targets' GB are read as GiB). Data files are
written to ``--data`` when missing (the 10**9 record file takes about 4 GB and a few
minutes; the census tables 2.4 GB).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPORT = r"""
import json, resource, sys, time


def report(secs, cpu, note):
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": secs, "cpu": cpu, "rss": rss, "note": note}))
"""

CHILD_1D = r"""
import numpy as np
import dphist as dh
from dphist import synthetic
n, name = int(float(sys.argv[1])), sys.argv[2]
x = synthetic.piecewise_constant(n, segments=64, rng=0)[0]
dh.publish(np.arange(64, dtype=np.int64) + 1, epsilon=1, method=name, rng=0)  # compile
t, c = time.perf_counter(), time.process_time()
rel = dh.publish(x, epsilon=0.1, method=name)
secs, cpu = time.perf_counter() - t, time.process_time() - c
report(secs, cpu, f"private={rel.private}")
"""

CHILD_COUNT = r"""
import dphist as dh
path = sys.argv[1]
bins = dh.ingest.binning(domain="0:1000000:1")
t, c = time.perf_counter(), time.process_time()
counts = dh.ingest.count_file(path, "v", bins)
secs, cpu = time.perf_counter() - t, time.process_time() - c
report(secs, cpu, f"{int(counts.sum()):,} records counted")
"""

CHILD_CENSUS = r"""
import dphist as dh
from dphist import groupsize as gs
folder = sys.argv[1]
t, c = time.perf_counter(), time.process_time()
data = dh.ingest.read_group_tables(f"{folder}/households.parquet", ["state", "county", "tract"],
                                   group_column="hid", entities=f"{folder}/persons.parquet")
read = time.perf_counter() - t
rel = gs.publish_group_sizes(data, epsilon=1, method=["ranked", "ranked", "cumulative",
                             "cumulative"], K=20, m0=1)
secs, cpu = time.perf_counter() - t, time.process_time() - c
report(secs, cpu, f"{data.n_groups:,} groups; read {read:.0f} s, publish "
                   f"{secs - read:.0f} s; private={rel.private}")
"""

CHILD_SPARK = r"""
import numpy as np
import dphist as dh
from pyspark.sql import SparkSession
path = sys.argv[1]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "2g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
bins = dh.ingest.binning(domain="0:1000000:1")
df = spark.read.parquet(path)
t, c = time.perf_counter(), time.process_time()
by_spark = dh.ingest.count(df, bins, column="v")
secs, cpu = time.perf_counter() - t, time.process_time() - c
t = time.perf_counter()
by_duckdb = dh.ingest.count_file(path, "v", bins)
duck = time.perf_counter() - t
same = bool(np.array_equal(by_spark, by_duckdb))
report(secs, cpu, f"counts identical: {same}; DuckDB {duck:.1f} s; driver CPU and RSS only")
"""

ROWS_1D = [(m, "1e8") for m in ("identity", "HB", "S2+H", "AHP")]
ROWS_1D += [(m, "1e7") for m in ("S1", "S~", "S1+H", "DAWA")]
TARGETS = {
    "identity-1e8": (15, 4), "HB-1e8": (60, 4), "S2+H-1e8": (60, 4), "AHP-1e8": (60, 4),
    "S1-1e7": (20, 4), "S~-1e7": (20, 4), "S1+H-1e7": (20, 4), "DAWA-1e7": (20, 4),
    "count-parquet": (90, 4), "census": (600, 12), "spark": (None, None),
}  # fmt: skip


def records_file(data: Path, records: int) -> Path:
    """``records`` skewed integers in [0, 10**6) as Parquet, written by DuckDB if missing."""
    import duckdb

    path = data / f"records-{records:.0e}.parquet".replace("+", "")
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        con.execute(
            "COPY (SELECT CAST(floor(1000000 * pow(random(), 2)) AS INTEGER) AS v FROM "
            f"range({records})) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1048576)"
        )
    return path


def census_tables(data: Path) -> Path:
    folder = data / "census"
    if not (folder / "persons.parquet").exists():
        sys.path.insert(0, str(Path(__file__).parent))
        from census_data import generate

        generate(folder, 130_000_000)
    return folder


def run_child(code: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", REPORT + code, *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        note = out.stderr.strip().splitlines()[-1]
        return {"seconds": float("nan"), "cpu": float("nan"), "rss": 0, "note": note}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--rows", default="all")
    parser.add_argument("--records", type=float, default=1e9)
    args = parser.parse_args()
    wanted = None if args.rows == "all" else args.rows.split(",")
    extra = [r.rsplit("-", 1) for r in wanted or () if r.rsplit("-", 1)[-1][:1].isdigit()]
    rows = [(f"{m}-{n}", CHILD_1D, (n, m)) for m, n in [*ROWS_1D, *extra]]
    rows.append(("count-parquet", CHILD_COUNT, None))
    rows.append(("census", CHILD_CENSUS, None))
    rows.append(("spark", CHILD_SPARK, None))
    print(f"{'row':<15} {'seconds':>8} {'cpu s':>7} {'peak GiB':>8} {'target':>13}  note")
    done = set()
    for name, code, child_args in rows:
        if (wanted is not None and name not in wanted) or name in done:
            continue
        done.add(name)
        if name == "count-parquet":
            child_args = (str(records_file(args.data, int(args.records))),)
        elif name == "census":
            child_args = (str(census_tables(args.data)),)
        elif name == "spark":
            child_args = (str(records_file(args.data, 10_000_000)),)
        res = run_child(code, *child_args)
        secs, gb = res["seconds"], res["rss"] / 2**20
        limit_s, limit_gb = TARGETS.get(name, (None, None))
        target = "-" if limit_s is None else f"{limit_s:g} s, {limit_gb:g} GiB"
        note = res.get("note", "")
        if name == "count-parquet":
            note += f" ({int(args.records):.0e} records)"
        cpu = res["cpu"]
        print(f"{name:<15} {secs:8.1f} {cpu:7.1f} {gb:8.2f} {target:>13}  {note}", flush=True)


if __name__ == "__main__":
    main()
