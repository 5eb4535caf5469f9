"""Clustering of sorted noisy counts: AHP greedy / optimal / empirical and SReB_GCA's GGS.

Run: python benchmarks/clustering.py [--sizes 4096 32768 65536] [--repeats 3]
     [--eps 1.0 0.1] [--scan-max 65536] [--empirical-max 65536]

Input: ``sparse_power_law(N)`` counts (density 0.03, seeded by N) plus Laplace noise of
scale 1/eps1, thresholded as AHP does (values below ``0.35 ln(N)/eps1`` set to 0) and
sorted ascending; eps1 = 0.85 eps, eps2 = 0.15 eps (DPBench's AHP split). Every
function gets the same sorted vector. Times are medians of ``--repeats`` runs after a
warm-up call that absorbs JIT compilation. Columns: cluster counts of greedy /
optimal; greedy with the O(log) err* search and with the paper's early-stopped scan;
optimal by the O(N**2) DP and by the O(N log N) monotone-queue solver (``same`` = the
two partitions agree); empirical (all four rules, at most k clusters); GGS.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from dphist._numeric.clustering import (
    ahp_empirical,
    ahp_greedy,
    ahp_optimal,
    ahp_total_error,
    greedy_group_relative,
)
from dphist.synthetic import sparse_power_law

ETA = 0.35
RATIO = 0.85


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_input(n: int, eps: float) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(n)
    eps1, eps2 = RATIO * eps, (1 - RATIO) * eps
    noisy = sparse_power_law(n, rng=rng) + rng.laplace(0.0, 1.0 / eps1, n)
    noisy[noisy < ETA * math.log(n) / eps1] = 0.0
    return np.sort(noisy, kind="stable"), eps2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 32768, 65536])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 0.1])
    parser.add_argument("--scan-max", type=int, default=65536, help="largest N for the scan")
    parser.add_argument("--empirical-max", type=int, default=65536)
    args = parser.parse_args()

    warm = np.sort(np.random.default_rng(0).normal(size=64))
    ahp_greedy(warm, eps2=0.5)
    ahp_greedy(warm, eps2=0.5, err_star="scan")
    ahp_optimal(warm, eps2=0.5)
    ahp_optimal(warm, eps2=0.5, method="monotone")
    ahp_empirical(warm, eps2=0.5)
    greedy_group_relative(warm, eps2=0.5)

    print(
        f"{'N':>6} {'eps':>4} {'zeros':>6} {'k_gr':>5} {'k_opt':>5} {'err_gr/opt':>10} "
        f"{'greedy':>8} {'scan':>8} {'opt DP':>8} {'opt mono':>8} {'same':>4} "
        f"{'empir.':>8} {'GGS':>8} {'k_ggs':>5}"
    )
    for n in args.sizes:
        for eps in args.eps:
            y, eps2 = make_input(n, eps)
            r = args.repeats
            greedy = ahp_greedy(y, eps2=eps2)
            dp = ahp_optimal(y, eps2=eps2)
            mono = ahp_optimal(y, eps2=eps2, method="monotone")
            ggs = greedy_group_relative(y, eps2=eps2)
            ratio = ahp_total_error(y, greedy, eps2=eps2) / ahp_total_error(y, dp, eps2=eps2)
            t_gr = median_seconds(lambda y=y, e=eps2: ahp_greedy(y, eps2=e), r)
            t_scan = math.nan
            if n <= args.scan_max:
                t_scan = median_seconds(
                    lambda y=y, e=eps2: ahp_greedy(y, eps2=e, err_star="scan"), r
                )
            t_dp = median_seconds(lambda y=y, e=eps2: ahp_optimal(y, eps2=e), r)
            t_mono = median_seconds(
                lambda y=y, e=eps2: ahp_optimal(y, eps2=e, method="monotone"), r
            )
            t_emp = math.nan
            if n <= args.empirical_max:
                t_emp = median_seconds(lambda y=y, e=eps2: ahp_empirical(y, eps2=e), r)
            t_ggs = median_seconds(lambda y=y, e=eps2: greedy_group_relative(y, eps2=e), r)
            same = "yes" if np.array_equal(dp, mono) else "NO"
            print(
                f"{n:>6} {eps:>4} {int(np.sum(y == 0)):>6} {len(greedy):>5} {len(dp):>5} "
                f"{ratio:>10.4f} {t_gr:>8.4f} {t_scan:>8.3f} {t_dp:>8.3f} {t_mono:>8.4f} "
                f"{same:>4} {t_emp:>8.3f} {t_ggs:>8.4f} {len(ggs):>5}",
                flush=True,
            )


if __name__ == "__main__":
    main()
