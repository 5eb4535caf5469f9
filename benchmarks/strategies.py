"""Data-independent range strategies: HB and OPT-H in closed form and measured, beside
DPBench's HB and GreedyH.

Run: python benchmarks/strategies.py [--seeds 25] [--reference PATH]

HB and OPT-H are data-independent, so their error does not depend on the histogram: for
each size N of the reference tables and each epsilon the script prints the exact
expected all-range MSE (:func:`dphist._numeric.strategy.design_error`, Laplace noise)
and the median over ``--seeds`` runs on N empty bins, beside DPBench's HB and GreedyH
(median of 5 trials on the data, from ``reference-figures.md``). The all-range MSE of
one run is a quadratic form of the noise dominated by a few low-frequency directions,
so medians of 5 scatter by tens of percent: compare expected values where you can.
DPBench's HB uses the same tree and the same uniform budget as ours, so its expected
error is HB's expected column.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from partitions import REFERENCE, reference_figures

import dphist as dh
from dphist import metrics
from dphist._numeric.strategy import design_error, optimal_design
from dphist._numeric.tree_params import hb_branching

SIZES = {
    "nettrace": 65_536,
    "search_logs": 32_768,
    "social_network": 11_342,
    "adult_capital_loss_4096": 4096,
    "hepth_citations_4096": 4096,
}
EPSILONS = (0.01, 0.1, 1.0)


def measured(method: str, n: int, epsilon: float, seeds: int) -> float:
    x = np.zeros(n, dtype=np.int64)
    runs = [dh.publish(x, method=method, epsilon=epsilon, rng=r).estimate for r in range(seeds)]
    return float(np.median([metrics.interval_mse(x, est) for est in runs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    args = parser.parse_args()
    ref = reference_figures(args.reference)
    head = ("data (N)", "eps", "DPB HB", "DPB GreedyH", "HB exp", "HB med", "OPT-H exp")
    head += ("OPT-H med", "exp ratio", "med/DPB HB")
    print(" | ".join(head))
    for name, n in SIZES.items():
        b, h = hb_branching(n)
        hb = design_error(b, [1 / (h + 1)] * (h + 1), n, "all")
        opt = optimal_design(n, "all")
        for eps in EPSILONS:
            row = ref.get((name, eps), {})
            opt_med = measured("OPT-H", n, eps, args.seeds)
            cells = (
                f"{name} ({n:,})",
                f"{eps:g}",
                f"{row.get('HB', float('nan')):.3g}",
                f"{row.get('GreedyH', float('nan')):.3g}",
                f"{hb / eps**2:.3g}",
                f"{measured('HB', n, eps, args.seeds):.3g}",
                f"{opt.error / eps**2:.3g}",
                f"{opt_med:.3g}",
                f"{opt.error / hb:.2f}",
                f"{opt_med / row.get('HB', float('nan')):.2f}",
            )
            print(" | ".join(cells))
        shares = ", ".join(f"{w:.3f}" for w in opt.shares)
        print(f"  OPT-H design for N = {n:,}: fan-out {opt.fanout}, level shares {shares}")


if __name__ == "__main__":
    main()
