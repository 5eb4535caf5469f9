"""Time of the MM / PMM fixed-queries stage: reduced Gram, GreedyH and the estimator.

Run: python benchmarks/greedyh.py [--n 32768] [--repeats 3]
For each number of groups |G| and each workload ("all" = MM, "prefix" = PMM) it
prints the median seconds of reduced_gram + greedy_h + estimate_totals, and of each
step alone, on a random partition of n bins into |G| contiguous groups.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dphist._numeric.greedyh import estimate_totals, greedy_h, reduced_gram, strategy_answers


def random_sizes(n: int, groups: int, rng: np.random.Generator) -> np.ndarray:
    """Sizes of a uniformly random partition of n bins into `groups` contiguous groups."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=groups - 1, replace=False))
    return np.diff(np.concatenate(([0], cuts, [n])))


def run_once(sizes: np.ndarray, workload: str, y: np.ndarray | None) -> tuple[float, ...]:
    t0 = time.perf_counter()
    gram = reduced_gram(sizes, workload)
    t1 = time.perf_counter()
    strategy = greedy_h(gram)
    t2 = time.perf_counter()
    answers = y if y is not None and y.size == strategy.n_queries else np.ones(strategy.n_queries)
    estimate_totals(strategy, answers)
    t3 = time.perf_counter()
    return t3 - t0, t1 - t0, t2 - t1, t3 - t2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=32_768)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", type=int, nargs="+", default=[100, 1_000, 4_000])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"N = {args.n:,} bins, median of {args.repeats} runs, seconds")
    print(f"{'|G|':>6} {'workload':>8} {'total':>8} {'gram':>8} {'greedy_h':>9} {'estimate':>9}")
    for groups in args.groups:
        sizes = random_sizes(args.n, groups, rng)
        for workload in ("all", "prefix"):
            # sanity: noiseless answers give back the totals
            strategy = greedy_h(reduced_gram(sizes, workload))
            totals = rng.integers(0, 1000, groups).astype(np.float64)
            back = estimate_totals(strategy, strategy_answers(strategy, totals))
            assert np.allclose(back, totals, rtol=1e-6, atol=1e-6 * totals.max())
            y = rng.laplace(size=strategy.n_queries)
            runs = [run_once(sizes, workload, y) for _ in range(args.repeats)]
            med = [statistics.median(col) for col in zip(*runs, strict=True)]
            print(
                f"{groups:>6} {workload:>8} {med[0]:>8.3f} {med[1]:>8.3f} {med[2]:>9.3f} "
                f"{med[3]:>9.3f}"
            )


if __name__ == "__main__":
    main()
