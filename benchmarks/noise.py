"""Throughput of the exact discrete Laplace and discrete Gaussian samplers (secure and
seeded modes).

Run: python benchmarks/noise.py [--n 1000000] [--repeats 5]
Prints the median seconds per call for several noise scales.
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction
from functools import partial

from dphist._kernel.gaussian import gaussian_parameters
from dphist._kernel.noise import noise_source, rational_scale


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up: JIT compilation and page faults
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"discrete Laplace, {args.n:,} draws, median of {args.repeats}")
    print(f"{'epsilon':>8} {'scale':>10} {'secure (s)':>11} {'seeded (s)':>11} {'ratio':>6}")
    for eps in ("10", "1", "0.1", "0.01"):
        t, s = rational_scale(Fraction(1), Fraction(eps))
        ts, tg = (
            median_seconds(partial(src.discrete_laplace, t, s, args.n), args.repeats)
            for src in (noise_source(None), noise_source(0))
        )
        print(f"{eps:>8} {t / s:>10.4g} {ts:>11.3f} {tg:>11.3f} {ts / tg:>6.2f}")
    print(f"\ndiscrete Gaussian, {args.n:,} draws, median of {args.repeats}")
    print(f"{'sigma^2':>8} {'secure (s)':>11} {'seeded (s)':>11} {'ratio':>6}")
    for var in ("0.5", "10", "1000", "1000000"):
        a, b = gaussian_parameters(Fraction(var))
        ts, tg = (
            median_seconds(partial(src.discrete_gaussian, a, b, args.n), args.repeats)
            for src in (noise_source(None), noise_source(0))
        )
        print(f"{var:>8} {ts:>11.3f} {tg:>11.3f} {ts / tg:>6.2f}")


if __name__ == "__main__":
    main()
