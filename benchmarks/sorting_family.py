"""Run time of the sorting and grouping family and of the older competitors.

Run: python benchmarks/sorting_family.py [--repeats 3] [--eps 0.1] [--datasets ...]
         [--skip-sf-all] [--skip-large]

Table 1: every method of the family on 4,096 bins (target: under 1 s each), on the
synthetic spiky series and on DPBench's 4,096-bin cuts of Search Log and NetTrace
(when the datasets are present). Table 2: SF alone on every 4,096-bin dataset (its
cost depends most on the data). Table 3: the large targets, AHP (greedy) and
SReB_GCA on NetTrace (65,536 bins, target 0.5 s); AHP (optimal clustering) and sDAHP
on Search Log (32,768 bins, target 5 s). Seconds are medians of ``--repeats``
``publish`` calls after one warm-up call per method (JIT compilation excluded); the
last column flags a miss. SF runs with ``bound=1000`` and its default k = ceil(N/10).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dphist as dh
from dphist import datasets, synthetic
from dphist.errors import DatasetUnavailableError

FAMILY = (
    "AHP",
    "GAHP",
    "sGAHP",
    "stGAHP",
    "sDAHP",
    "sDWF",
    "DPC",
    "sDPC",
    "sDAWA",
    "SReB_GCA",
    "NF",
    "SF",
    "P-HP",
    "EFPA",
    "GS",
)
EXTRA = {"SF": {"bound": 1000}}
LARGE = (
    ("AHP", {"clustering": "greedy"}, "nettrace", 0.5),
    ("SReB_GCA", {}, "nettrace", 0.5),
    ("AHP", {"clustering": "optimal"}, "search_logs", 5.0),
    ("sDAHP", {}, "search_logs", 5.0),
)


def seconds(method: str, x: np.ndarray, eps: float, repeats: int, **kw: object) -> float:
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        dh.publish(x, epsilon=eps, method=method, rng=r, **EXTRA.get(method, {}), **kw)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def load(name: str) -> np.ndarray | None:
    try:
        return datasets.load(name)
    except DatasetUnavailableError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--datasets", nargs="*", default=["searchlogs_4096", "nettrace_4096"])
    parser.add_argument("--skip-sf-all", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()

    inputs = {"spiky": synthetic.spiky(4096, rng=1)}
    for name in args.datasets:
        x = load(name)
        if x is None:
            print(f"{name} not available; column skipped")
        else:
            inputs[name] = x

    warm = synthetic.spiky(512, rng=0)
    for name in FAMILY:
        dh.publish(warm, epsilon=args.eps, method=name, rng=0, **EXTRA.get(name, {}))
    dh.publish(warm, epsilon=args.eps, method="AHP", rng=0, clustering="optimal")

    print(f"4,096 bins, epsilon {args.eps}, median seconds of {args.repeats} (target < 1 s)")
    print("  " + f"{'method':10}" + "".join(f"{c:>17}" for c in inputs) + "  miss")
    for name in FAMILY:
        ts = [seconds(name, x, args.eps, args.repeats) for x in inputs.values()]
        flag = "  MISS" if max(ts) >= 1.0 else ""
        print(f"  {name:10}" + "".join(f"{t:17.3f}" for t in ts) + flag, flush=True)

    if not args.skip_sf_all:
        print("\nSF (bound=1000, k=ceil(N/10)) on every 4,096-bin dataset, median seconds")
        for name, info in datasets.DATASETS.items():
            x = load(name) if info.bins == 4096 else None
            if x is not None:
                t = seconds("SF", x, args.eps, args.repeats)
                flag = "  MISS" if t >= 1.0 else ""
                print(f"  {name:26} {t:9.3f}{flag}", flush=True)

    if args.skip_large:
        return
    print("\nLarge inputs, median seconds")
    for name, kw, data, target in LARGE:
        x = load(data)
        label = name + "".join(f" {k}={v}" for k, v in kw.items())
        if x is None:
            print(f"  {label:28} {data:12} not available")
            continue
        t = seconds(name, x, args.eps, args.repeats, **kw)
        flag = "  MISS" if t >= target else ""
        print(f"  {label:28} {data:12} {x.size:>7,} {t:9.3f}  (< {target} s){flag}", flush=True)


if __name__ == "__main__":
    main()
