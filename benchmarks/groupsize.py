"""Hierarchical group-size histograms: end-to-end speed and the weighted-merge comparison.

Run: python benchmarks/groupsize.py [--groups 10000000] [--counties 3200] [--repeats 3]
     [--k 10000] [--quality-groups 1000000] [--quality-counties 400] [--trials 5]
     [--isotonic] [--skip-speed]

Data: ``dphist.groupsize.housing`` (nation / 52 states / counties, households of size
1..6 plus a binomial tail and 50 group-quarter outliers per state up to size 10 000),
``m0 = 1``, epsilon = 1 in total (1/3 per level), seeded noise.

Table 1 (speed): seconds per phase (noise and per-region estimation for each level,
top-down consistency) and end to end, the median of ``--repeats`` runs, and the peak
resident memory of the process (``resource.getrusage``). The cumulative method
measures K cells per region whatever the data, so its cost grows with K times the
number of regions; the ranked method measures one value per group and level. Target:
10**7 groups over 3 levels with about 3,000 leaves in under 60 s and 8 GB.

Table 2 (quality): mean EMD per level (mean over regions, then over ``--trials``
seeds, with the standard error) for each method combination, with the inverse-variance
("weighted") merge and with plain averaging ("mean"), before consistency ("initial"),
and the omniscient reference of spec §8.1 (its EMD, and the groups it miscounts:
simulated and by the formula).

``--isotonic`` also runs ``benchmarks/isotonic.py`` at 10**8 entries (the isotonic
regression target, < 10 s), instead of duplicating it here.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from dphist import groupsize as gs


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # kB on Linux


def speed(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    data = gs.housing(args.groups, n_counties=args.counties, seed=0)
    gen = time.perf_counter() - t0
    h = data.hierarchy
    print(
        f"data: {data.n_groups:,} groups, regions per level {np.bincount(h.level).tolist()}, "
        f"generated in {gen:.2f} s"
    )
    # warm-up: loads the compiled kernels
    gs.publish_group_sizes(gs.housing(20_000, n_counties=60), epsilon=1, method="ranked", rng=0)
    gs.publish_group_sizes(gs.housing(20_000, n_counties=60), epsilon=1, K=50, m0=1, rng=0)
    print()
    print(
        f"{'method':<22}{'level 0':>9}{'level 1':>9}{'level 2':>9}{'consist.':>10}"
        f"{'total s':>9}{'runs':>6}"
    )
    for method, k in (("ranked", args.k), ("cumulative", args.k), ("cumulative", 1_000)):
        runs = []
        for rep in range(args.repeats):
            t = time.perf_counter()
            rel = gs.publish_group_sizes(data, epsilon=1, method=method, K=k, m0=1, rng=rep)
            runs.append((time.perf_counter() - t, rel.timings))
        med = statistics.median(r[0] for r in runs)
        phases = [
            statistics.median(r[1][p] for r in runs)
            for p in ("level 0", "level 1", "level 2", "consistency")
        ]
        label = method if method == "ranked" else f"{method} K={k}"
        print(
            f"{label:<22}"
            + "".join(f"{p:>9.2f}" for p in phases[:3])
            + f"{phases[3]:>10.2f}{med:>9.2f}{len(runs):>6}"
        )
    print(f"peak RSS of this process: {peak_rss_gb():.2f} GB")


def quality(args: argparse.Namespace) -> None:
    data = gs.housing(args.quality_groups, n_counties=args.quality_counties, seed=1)
    print()
    print(
        f"quality on {data.n_groups:,} groups, {data.hierarchy.n_leaves} counties, "
        f"eps = 1 (1/3 per level), {args.trials} trials; mean EMD per region (± s.e.)"
    )
    print(f"{'combination':<28}{'merge':<10}{'nation':>18}{'state':>16}{'county':>14}")

    def row(name, merge, values):
        v = np.array(values)
        mean = v.mean(axis=0)
        se = v.std(axis=0, ddof=1) / np.sqrt(v.shape[0]) if v.shape[0] > 1 else 0 * mean
        cells = "".join(
            f"{m:>{w}.1f}±{s:<5.0f}" for m, s, w in zip(mean, se, (11, 9, 7), strict=True)
        )
        print(f"{name:<28}{merge:<10}{cells}")

    ref = gs.omniscient(data, epsilon=1, trials=args.trials, rng=0)
    for label, key in (
        ("omniscient EMD (simulated)", "simulated_emd"),
        ("omniscient miscounted (sim.)", "simulated"),
        ("omniscient miscounted (form.)", "analytic"),
    ):
        print(
            f"{label:<28}{'-':<10}"
            + "".join(f"{x:>{w}.1f}      " for x, w in zip(ref[key], (11, 9, 7), strict=True))
        )
    combos = [
        ("ranked",) * 3,
        ("cumulative",) * 3,
        ("ranked", "ranked", "cumulative"),
        ("ranked", "cumulative", "cumulative"),
    ]
    for combo in combos:
        name = "".join("Hg" if m == "ranked" else "Hc" for m in combo)
        per = {"weighted": [], "mean": [], "initial": []}
        for t in range(args.trials):
            for merge in ("weighted", "mean"):
                rel = gs.publish_group_sizes(
                    data, epsilon=1, method=list(combo), K=args.k, m0=1, merge=merge, rng=t
                )
                per[merge].append(gs.level_emds(data, rel))
                if merge == "weighted":
                    per["initial"].append(gs.level_emds(data, rel, which="initial"))
        for merge in ("weighted", "mean", "initial"):
            row(name, merge, per[merge])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", type=int, default=10_000_000)
    p.add_argument("--counties", type=int, default=3_200)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--k", type=int, default=gs.DEFAULT_K)
    p.add_argument("--quality-groups", type=int, default=1_000_000)
    p.add_argument("--quality-counties", type=int, default=400)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--isotonic", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args()
    if not args.skip_speed:
        speed(args)
    quality(args)
    if args.isotonic:
        script = Path(__file__).with_name("isotonic.py")
        print()
        subprocess.run(
            [sys.executable, str(script), "--sizes", "100000000", "--repeats", "3"], check=True
        )


if __name__ == "__main__":
    main()
