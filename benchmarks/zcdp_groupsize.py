"""Group sizes under pure epsilon-DP and rho-zCDP at a matched (epsilon, delta).

Run: python benchmarks/zcdp_groupsize.py [--groups 1000000] [--counties 3200]
     [--epsilon 1] [--deltas 1e-9] [--seeds 3] [--k 10000]

Data: ``dphist.groupsize.housing`` (nation / 52 states / counties, 3 levels),
``m0 = 1``. Pure DP spends epsilon (a third per level, discrete Laplace); zCDP spends
the largest rho with rho-zCDP => (epsilon, delta)-DP (tight conversion, Canonne,
Kamath, Steinke 2020, Cor. 13), a third per level, discrete Gaussian for each level's
L2 sensitivity (1 for the cumulative and ranked measurements), and the consistency
step weighs levels by the Gaussian variances. The table gives the mean EMD per region
of each level (mean over regions, median over ``--seeds`` seeded releases) and the
ratio zCDP / pure: above 1, pure DP is the more accurate at that guarantee. Each
level is one sensitivity-1 measurement, so zCDP gains nothing from L2 here and pays
its conversion to (epsilon, delta); its per-cell noise standard deviation is
``sqrt(3 / (2 rho))`` against Laplace's ``3 sqrt(2) / epsilon`` (printed).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
from scipy.optimize import brentq

from dphist import groupsize as gs
from dphist._kernel.zcdp import approx_dp_epsilon

METHODS = ("cumulative", "ranked")


def matched_rho(epsilon: float, delta: float) -> float:
    return brentq(lambda r: approx_dp_epsilon(r, delta) - epsilon, 1e-8, 10 * epsilon + 10)


def mean_emds(data, seeds: int, **kwargs) -> list[float]:
    """Median over seeds of each level's mean EMD per region."""
    runs = [
        gs.level_emds(data, gs.publish_group_sizes(data, rng=s, **kwargs)) for s in range(seeds)
    ]
    return [statistics.median(r[lev] for r in runs) for lev in range(len(runs[0]))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=1_000_000)
    parser.add_argument("--counties", type=int, default=3_200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--deltas", default="1e-9")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--k", type=int, default=10_000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    data = gs.housing(args.groups, n_counties=args.counties, seed=0)
    regions = np.bincount(data.hierarchy.level).tolist()
    print(f"data: {data.n_groups:,} groups, regions per level {regions}, m0 = 1, K = {args.k}")
    eps = args.epsilon
    common = {"K": args.k, "m0": 1}
    pure = {m: mean_emds(data, args.seeds, epsilon=eps, method=m, **common) for m in METHODS}
    lap_sd = 3 * math.sqrt(2) / eps
    for delta in (float(d) for d in args.deltas.split(",")):
        rho = matched_rho(eps, delta)
        print(
            f"\nepsilon = {eps:g} pure vs rho = {rho:.5f} zCDP (=> ({eps:g}, {delta:g})-DP); "
            f"per-cell noise sd: Laplace {lap_sd:.2f}, Gaussian {math.sqrt(1.5 / rho):.2f}"
        )
        print(f"{'method':<11}{'level':>6}{'pure EMD':>12}{'zCDP EMD':>12}{'ratio':>8}")
        for m in METHODS:
            zc = mean_emds(data, args.seeds, rho=rho, method=m, **common)
            for lev, (p, z) in enumerate(zip(pure[m], zc, strict=True)):
                print(f"{m:<11}{lev:>6}{p:>12,.1f}{z:>12,.1f}{z / p:>8.2f}")
    print(f"\n{args.seeds} seeds per cell; {time.perf_counter() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
