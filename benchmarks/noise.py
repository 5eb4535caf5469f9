"""Throughput of the exact discrete Laplace and discrete Gaussian samplers (secure and
seeded modes) beside numpy's floating-point ``Generator.laplace``.

Run: python benchmarks/noise.py [--n 10000000] [--repeats 5]

Each figure is the median over ``--repeats`` of nanoseconds per value (noise added in
place to a vector of ``--n`` counts), measured in one run; "x numpy" is the seeded
figure over numpy's ``Generator.laplace`` on the same ``--n``. Targets: seeded at most
2x numpy, secure at least 10**7 values per second.
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction
from functools import partial

import numpy as np

from dphist._kernel.gaussian import gaussian_parameters
from dphist._kernel.noise import noise_source, rational_scale


def median_ns(fn, n: int, repeats: int) -> float:
    fn()  # warm-up: JIT compilation, tables and page faults
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / n * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, reps = args.n, args.repeats
    out = np.zeros(n, dtype=np.int64)
    gen = np.random.default_rng(0)
    ref = median_ns(lambda: gen.laplace(0.0, 10.0, n), n, reps)
    print(f"{n:,} values, median of {reps}; numpy Generator.laplace: {ref:.1f} ns/value")
    print(f"{'noise':<26} {'seeded ns':>10} {'x numpy':>8} {'secure ns':>10} {'secure/s':>10}")
    cases = [(f"Laplace scale {1 / float(e):g}", "L", rational_scale(Fraction(1), Fraction(e)))
             for e in ("10", "1", "0.1", "0.01", "0.001", "1e-6")]  # fmt: skip
    cases += [(f"Gaussian sigma^2 {v}", "G", gaussian_parameters(Fraction(v)))
              for v in ("0.5", "10", "1000", "1000000")]  # fmt: skip
    for label, kind, (a, b) in cases:
        row = []
        for rng in (0, None):
            src = noise_source(rng)
            add = src.add_discrete_laplace if kind == "L" else src.add_discrete_gaussian
            row.append(median_ns(partial(add, out, a, b), n, reps))
        seeded, secure = row
        print(f"{label:<26} {seeded:10.1f} {seeded / ref:8.2f} {secure:10.1f} {1e9 / secure:10.3g}")


if __name__ == "__main__":
    main()
