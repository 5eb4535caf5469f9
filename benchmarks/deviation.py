"""Speed of DAWA's L1-partition numerics: interval deviations plus the partition DP.

Run: python benchmarks/deviation.py [--repeats 3] [--skip-slow] [--split-only]
Prints the median seconds (after a JIT warm-up) of

* S~ (power-of-two candidates): pow2_deviations + l1_partition_pow2;
* S1 (all intervals): streamed all-interval deviations + the O(N^2) DP
  (costs only, no noise);
* the biased split's deviation scores (PrivTree over DAWA's cost, behind S1, S~ and
  DAWA's certified partition): half deviations in lattice units ``2**-8`` of every
  node of a binary tree, in exact integers (as ``_kernel.biased_split`` computes them)
  and by the float64 formula they replaced, interleaved in one run, with the ratio.

Costs are ``dev + 1/eps2`` with ``eps2 = 0.075`` (eps = 0.1, three quarters for
publication); the number of groups found is printed as a sanity check.

Input: synthetic integer counts, a piecewise-constant Poisson histogram with sparse
spikes (repeated values, like real count data), seed 0.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dphist._numeric.deviation import l1_partition_streamed, pow2_deviations
from dphist._numeric.l1_dp import l1_partition_pow2


def synthetic_counts(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n_pieces = max(1, n // 64)
    levels = rng.gamma(0.6, 200.0, size=n_pieces)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n_pieces - 1, n - 1), replace=False))
    rate = np.repeat(levels, np.diff(np.concatenate([[0], cuts, [n]])))
    x = rng.poisson(rate)
    spikes = rng.random(n) < 0.01
    x[spikes] += rng.integers(1000, 100_000, size=int(spikes.sum()))
    return x.astype(np.int64)


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


INV_EPS2 = 1.0 / 0.075


def run_pow2(x: np.ndarray) -> np.ndarray:
    _, dev = pow2_deviations(x)
    dev += INV_EPS2
    return l1_partition_pow2(dev)


def run_full(x: np.ndarray) -> np.ndarray:
    def to_costs(b0: int, rows: np.ndarray) -> np.ndarray:
        rows += INV_EPS2
        return rows

    return l1_partition_streamed(x, to_costs)


SPLIT_SHIFT = 8  # lattice 2**-8: the finest the biased split uses (most bits to get right)
SPLIT_CAP = 1 << 61


def split_scorers(x: np.ndarray):
    """The biased split's deviation scores of every node of a binary tree over ``x``, as
    the split computes them level by level: exact integers (``half_units``, today's) and
    the float64 formula they replaced, ``floor(ldexp(dev / 2, k))``."""
    from dphist._numeric.deviation import DeviationIndex
    from dphist._numeric.tree import tree_layout

    tree = tree_layout(x.shape[0], 2)
    inner = tree.n_children >= 2
    lo, hi = tree.lo[inner], tree.hi[inner] - 1
    index = DeviationIndex(x)

    def exact() -> np.ndarray:
        return index.half_units(lo, hi, SPLIT_SHIFT, SPLIT_CAP)

    def floating() -> np.ndarray:
        units = np.floor(np.ldexp(index(lo, hi) / 2.0, SPLIT_SHIFT))
        return np.minimum(units, float(SPLIT_CAP)).astype(np.int64)

    return exact, floating


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true", help="S1 only for N = 4,096")
    parser.add_argument("--split-only", action="store_true", help="only the split's scores")
    args = parser.parse_args()
    print(f"median of {args.repeats} runs, seconds")
    if not args.split_only:
        partitions(args)
    split_scores(args)


def partitions(args: argparse.Namespace) -> None:
    warm = synthetic_counts(64)  # JIT warm-up (compiles or loads the cache)
    run_pow2(warm)
    run_full(warm)
    print(f"{'candidates':<34} {'N':>10} {'groups':>8} {'seconds':>9}")
    for n in (4_096, 32_768, 65_536, 1_000_000):
        x = synthetic_counts(n)
        groups = len(run_pow2(x))
        secs = median_seconds(lambda x=x: run_pow2(x), args.repeats)
        print(f"{'S~  pow2 deviations + DP':<34} {n:>10,} {groups:>8,} {secs:>9.3f}")
    for n in (4_096,) if args.skip_slow else (4_096, 32_768):
        x = synthetic_counts(n)
        groups = len(run_full(x))
        secs = median_seconds(lambda x=x: run_full(x), args.repeats)
        print(f"{'S1  streamed all intervals + DP':<34} {n:>10,} {groups:>8,} {secs:>9.3f}")


def split_scores(args: argparse.Namespace) -> None:
    for f in split_scorers(synthetic_counts(64)):  # JIT warm-up
        f()
    print(f"{'biased split, every node':<34} {'N':>10} {'nodes':>8} {'exact':>9} "
          f"{'float64':>9} {'ratio':>6}")  # fmt: skip
    for n in (65_536, 1_048_576):
        exact, floating = split_scorers(synthetic_counts(n))
        assert np.array_equal(exact(), floating())  # moderate counts: the same scores
        times = {f: [] for f in (exact, floating)}
        for _ in range(args.repeats):  # interleaved: the same machine load for both
            for f in times:
                times[f].append(median_seconds(f, 1))
        a, b = (statistics.median(times[f]) for f in (exact, floating))
        print(f"{'split deviation scores':<34} {n:>10,} {exact().size:>8,} {a:>9.3f} {b:>9.3f} "
              f"{a / b:>6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
