"""Exact S2 grouping: PELT (with DP fallback) against the plain O(N^2) DP.

Run: python benchmarks/segment.py [--sizes 4096 32768 100000 1000000] [--repeats 3]
     [--dp-max 32768]

Inputs: ``piecewise`` (levels 0..200, geometric plateau lengths with mean 50) and
``smooth`` (two Gaussian bumps, 100 records per bin on average), each plus Laplace
noise of scale 1/eps1. Budgets: eps = eps1 + eps2 with eps1 = 0.25 eps (the noisy
counts) and eps2 = 0.75 eps (publication). Times are medians of ``--repeats`` runs
after a warm-up call that absorbs JIT compilation. A second table times the
O(N log N) sorted-input solver and PELT on the same values sorted (O+S2).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dphist._numeric.segment import segment_dp, segment_pelt, segment_sorted


def piecewise(rng: np.random.Generator, n: int) -> np.ndarray:
    lengths = rng.geometric(1 / 50, n)
    return np.repeat(rng.integers(0, 201, n), lengths)[:n].astype(np.float64)


def smooth(rng: np.random.Generator, n: int) -> np.ndarray:
    u = (np.arange(n) + 0.5) / n
    density = np.exp(-0.5 * ((u - 0.3) / 0.08) ** 2) + 0.6 * np.exp(-0.5 * ((u - 0.7) / 0.05) ** 2)
    return np.round(100.0 * n * density / density.sum())


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 32768, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dp-max", type=int, default=32768, help="largest N for the plain DP")
    args = parser.parse_args()

    warm = np.random.default_rng(0).normal(size=64)
    for fn in (segment_dp, segment_pelt, segment_sorted):
        fn(np.sort(warm), eps1=0.25, eps2=0.75)  # compile (or load) the kernels

    cases = [(f, n, eps) for f in (piecewise, smooth) for n in args.sizes for eps in (1.0, 0.1)]

    print("Natural bin order (S2)")
    print(
        f"{'data':>9} {'N':>9} {'eps':>4} {'groups':>7} {'evals/N':>8} {'fallback':>8} "
        f"{'PELT (s)':>9} {'DP (s)':>8} {'same':>5}"
    )
    for shape, n, eps in cases:
        y, kw = make_input(shape, n, eps)
        starts, stats = segment_pelt(y, **kw, return_stats=True)
        t_pelt = median_seconds(lambda y=y, kw=kw: segment_pelt(y, **kw), args.repeats)
        if n <= args.dp_max:
            t_dp = median_seconds(lambda y=y, kw=kw: segment_dp(y, **kw), args.repeats)
            same = "yes" if np.array_equal(segment_dp(y, **kw), starts) else "NO"
            dp_col = f"{t_dp:8.3f}"
        else:
            dp_col, same = f"{'-':>8}", "-"
        fallback = "-" if stats.fallback_at is None else str(stats.fallback_at)
        print(
            f"{shape.__name__:>9} {n:>9} {eps:>4} {len(starts):>7} "
            f"{stats.evaluations / n:>8.1f} {fallback:>8} {t_pelt:>9.4f} {dp_col} {same:>5}",
            flush=True,
        )

    print()
    print("Same values sorted descending (O+S2); PELT timed once when N > 10^5")
    print(
        f"{'data':>9} {'N':>9} {'eps':>4} {'groups':>7} {'sorted (s)':>10} "
        f"{'PELT (s)':>9} {'PELT evals/N':>12} {'same':>5}"
    )
    for shape, n, eps in cases:
        y, kw = make_input(shape, n, eps)
        ys = np.sort(y)[::-1]
        fast = segment_sorted(ys, **kw)
        starts, stats = segment_pelt(ys, **kw, return_stats=True)
        t_sorted = median_seconds(lambda ys=ys, kw=kw: segment_sorted(ys, **kw), args.repeats)
        reps = args.repeats if n <= 100_000 else 1
        t_pelt = median_seconds(lambda ys=ys, kw=kw: segment_pelt(ys, **kw), reps)
        same = "yes" if np.array_equal(fast, starts) else "NO"
        print(
            f"{shape.__name__:>9} {n:>9} {eps:>4} {len(fast):>7} {t_sorted:>10.4f} "
            f"{t_pelt:>9.3f} {stats.evaluations / n:>12.0f} {same:>5}",
            flush=True,
        )


def make_input(shape, n: int, eps: float) -> tuple[np.ndarray, dict[str, float]]:
    rng = np.random.default_rng(n)
    eps1, eps2 = 0.25 * eps, 0.75 * eps
    y = shape(rng, n) + rng.laplace(0.0, 1.0 / eps1, n)
    return y, {"eps1": eps1, "eps2": eps2}


if __name__ == "__main__":
    main()
