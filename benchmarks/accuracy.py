"""Coverage of the error bars: how often the 95% intervals hold the true counts.

Run: python benchmarks/accuracy.py [--seeds 200] [--epsilon 1 | --rho R] [--methods all]
     [--datasets searchlogs_4096,nettrace_4096,hepth_citations_4096] [--synthetic]
     [--timing]

For every method, dataset and seed (seeded noise: measurements, not publications) the
release's intervals at alpha = 0.05 are checked against the true counts on every bin
and on 10,000 random ranges (drawn once per dataset, uniformly from all ranges). The
table gives the fraction covered, the mean interval width over the root-mean-square
error of the estimate (how much wider than the typical error the interval is; a normal
interval is about 3.9), and what the intervals cover. Targets: within [0.94, 0.96]
for the unbiased linear methods, at least 0.90 (or no interval at all) for every other
one. ``--synthetic`` adds three synthetic shapes (``dphist.synthetic``) of 4,096 bins;
``--timing`` times ``range_stderr`` for 10**6 random ranges on 10**6 bins (with
``--seeds 0``, the timing alone).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dphist as dh
from dphist import synthetic, workloads

DATASETS = ("searchlogs_4096", "nettrace_4096", "hepth_citations_4096")
LINEAR = ("identity", "H", "HB", "Boost", "OPT-H", "Privelet")
PARAMS = {"SF": {"bound": 10_000}}
RANGES = 10_000


def shapes() -> dict[str, np.ndarray]:
    """Three synthetic shapes of 4,096 bins: flat pieces, a base with spikes, sparse
    power-law counts."""
    return {
        "piecewise (synthetic)": synthetic.piecewise_constant(4096, segments=20, rng=1)[0],
        "spiky (synthetic)": synthetic.spiky(4096, rng=1),
        "power law (synthetic)": synthetic.sparse_power_law(4096, rng=1),
    }


def coverage(method: str, x: np.ndarray, budget: dict, seeds: int, lo, hi) -> dict:
    """Covered fractions of bins and ranges, mean width / RMSE, what is covered."""
    truth_r = np.concatenate(([0], np.cumsum(x)))
    truth_r = truth_r[hi] - truth_r[lo]
    hit_b = hit_r = 0
    width_b = width_r = sq_b = sq_r = se_b = se_r = 0.0
    covers = ""
    for seed in range(seeds):
        rel = dh.publish(x, method=method, rng=seed, **budget, **PARAMS.get(method, {}))
        covers = rel.error_bars
        if rel.stderr is None:
            return {"covers": covers}
        lb, ub = rel.intervals(alpha=0.05)
        lr, ur = rel.intervals(lo, hi, alpha=0.05)
        hit_b += int(np.sum((lb <= x) & (x <= ub)))
        hit_r += int(np.sum((lr <= truth_r) & (truth_r <= ur)))
        width_b += float(np.sum(ub - lb))
        width_r += float(np.sum(ur - lr))
        sq_b += float(np.sum((rel.estimate - x) ** 2))
        answers, stderr = rel.ranges(lo, hi, stderr=True)
        sq_r += float(np.sum((answers - truth_r) ** 2))
        se_b += float(np.sum(rel.stderr**2))
        se_r += float(np.sum(stderr**2))
    nb, nr = seeds * x.size, seeds * lo.size
    return {
        "bins": hit_b / nb,
        "ranges": hit_r / nr,
        "width_b": width_b / nb / np.sqrt(sq_b / nb),
        "width_r": width_r / nr / np.sqrt(sq_r / nr),
        "calib_b": np.sqrt(sq_b / se_b),
        "calib_r": np.sqrt(sq_r / se_r),
        "covers": covers,
    }


def timing() -> None:
    n = 10**6
    x = np.zeros(n, dtype=np.int64)
    w = workloads.random_ranges(n, 10**6, 0)
    lo, hi = w.lo, w.hi
    print("\nrange_stderr of 10**6 random ranges on 10**6 bins (median of 3, seconds)")
    for method in ("identity", "H", "HB", "Boost", "OPT-H", "Privelet", "uniform"):
        rel = dh.publish(x, epsilon=1.0, method=method, rng=0)
        rel.ranges(lo[:10], hi[:10], stderr=True)  # compile
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            rel.ranges(lo, hi, stderr=True)
            runs.append(time.perf_counter() - t)
        print(f"  {method:10s} {np.median(runs):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--rho", type=float, default=None, help="zCDP instead (discrete Gaussian)")
    parser.add_argument("--methods", default="all")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--timing", action="store_true")
    args = parser.parse_args()
    names = (
        [m.name for m in dh.list_methods()] if args.methods == "all" else args.methods.split(",")
    )
    data = {d: dh.datasets.load(d) for d in args.datasets.split(",") if d}
    if args.seeds < 1:  # --seeds 0: timing only
        names, data = [], {}
    if args.synthetic:
        data.update(shapes())
    budget = {"epsilon": args.epsilon} if args.rho is None else {"rho": args.rho}
    about = ", ".join(f"{k} = {v:g}" for k, v in budget.items())
    print(f"coverage of 95% intervals, {about}, {args.seeds} seeds, "
          f"all bins and {RANGES:,} random ranges per dataset")  # fmt: skip
    print(f"{'method':10s} {'dataset':22s} {'bins':>6s} {'ranges':>6s} {'w/rmse b':>8s} "
          f"{'w/rmse r':>8s} {'rmse/se b':>9s} {'rmse/se r':>9s}  covers")  # fmt: skip
    for method in names:
        for d, x in data.items():
            w = workloads.random_ranges(x.size, RANGES, 1)
            t = time.perf_counter()
            r = coverage(method, np.asarray(x, dtype=np.int64), budget, args.seeds, w.lo, w.hi)
            secs = time.perf_counter() - t
            if "bins" not in r:
                print(f"{method:10s} {d:22s} {'-':>6s} {'-':>6s} {'-':>8s} {'-':>8s}  "
                      f"no interval: {r['covers'][9:]}")  # fmt: skip
                break
            print(f"{method:10s} {d:22s} {r['bins']:6.3f} {r['ranges']:6.3f} "
                  f"{r['width_b']:8.2f} {r['width_r']:8.2f} {r['calib_b']:9.2f} "
                  f"{r['calib_r']:9.2f}  {r['covers'][:40]} ({secs:.0f}s)", flush=True)  # fmt: skip
    if args.timing:
        timing()


if __name__ == "__main__":
    main()
