"""Targets of histograms over time: throughput and memory, continual counters' error,
w-event mechanisms on shared and synthetic streams.

Run: python benchmarks/streams.py [--only throughput,counters,wevent] [--windows 100]
     [--bins 1000000] [--records 1000000] [--runs 5]

* **Throughput.** ``dh.stream`` over ``--windows`` windows of ``--bins`` bins, each
  holding ``--records`` timed records (chunks with a time column, counted by the
  stream), published with S2+H and with identity (event-level). Prints windows per
  second after window 10 and the resident set at windows 10 and 100 (target: >= 2
  windows/s on 2 cores, memory flat).
* **Counters.** The largest expected (root-mean-square) error of a running total over
  ``T``, the square-root factorization against the binary tree (Honaker's estimate),
  ``T = 2**8 .. 2**20``, under zCDP (rho = 1/2) and pure epsilon = 1: exact, from the
  closed forms the tests check against simulation.
* **w-event.** Mean absolute error per count of uniform, sample, BD and BA at epsilon 1
  (median of ``--runs`` seeded runs) for w = 10 and 40 on: search_logs (4,096 bins of
  searchlogs_4096 as a one-count stream of 4,096 windows), nettrace (16 windows of
  4,096 bins, the 65,536-value trace cut in time) and synthetic streams of the paper's
  shapes (linear, sinusoidal, logistic; 1,000 windows, one count, values in the
  thousands, Gaussian jitter).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import dphist as dh
from dphist.streams import largest_error


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
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


def _synthetic(shape: str, t: int, rng: np.random.Generator) -> np.ndarray:
    x = np.arange(t) / t
    base = {
        "linear": 1000 + 4000 * x,
        "sinusoidal": 3000 + 2000 * np.sin(2 * np.pi * 4 * x),
        "logistic": 1000 + 4000 / (1 + np.exp(-20 * (x - 0.5))),
    }[shape]
    return np.maximum(np.rint(base + rng.normal(0, 50, t)), 0).astype(np.int64)


def _streams(rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    out = {}
    try:
        logs = dh.datasets.load("searchlogs_4096")
        out["search_logs"] = [logs[i : i + 1] for i in range(logs.size)]
        trace = dh.datasets.load("nettrace")
        out["nettrace"] = list(trace.reshape(16, -1))
    except Exception as exc:  # the shared data are optional here
        print(f"(shared data skipped: {exc})")
    for shape in ("linear", "sinusoidal", "logistic"):
        out[shape] = [c[None] for c in _synthetic(shape, 1000, rng)]
    return out


def wevent(runs: int) -> None:
    print(f"\n# w-event: mean absolute error per count at epsilon 1 (median of {runs} runs)")
    data = _streams(np.random.default_rng(7))
    print(f"{'stream':12s} {'w':>3s} " + " ".join(f"{m:>10s}" for m in dh.streams.WEVENT))
    for name, windows in data.items():
        truth = np.array(windows, dtype=np.float64)
        for w in (10, 40):
            row = []
            for mech in dh.streams.WEVENT:
                errs = []
                for seed in range(runs):
                    run = dh.stream(windows, epsilon=1, mechanism=mech, w=w, rng=seed)
                    est = np.array([r.estimate for r in run])
                    errs.append(float(np.mean(np.abs(est - truth))))
                row.append(statistics.median(errs))
            best = dh.streams.WEVENT[int(np.argmin(row))]
            print(f"{name:12s} {w:3d} " + " ".join(f"{v:10.2f}" for v in row) + f"   best: {best}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="throughput,counters,wevent")
    p.add_argument("--windows", type=int, default=100)
    p.add_argument("--bins", type=int, default=1_000_000)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    parts = set(a.only.split(","))
    print("Machine shared with other work: timings are indicative; ratios come from one run.")
    if "counters" in parts:
        counters()
    if "wevent" in parts:
        wevent(a.runs)
    if "throughput" in parts:
        throughput(a.windows, a.bins, a.records)


if __name__ == "__main__":
    main()
