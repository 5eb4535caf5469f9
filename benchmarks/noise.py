"""Throughput of the exact discrete Laplace and discrete Gaussian samplers (secure and
seeded modes) beside numpy's floating-point ``Generator.laplace``.

Run: python benchmarks/noise.py [--n 10000000] [--repeats 5] [--sweep]

Each figure is the median over ``--repeats`` of CPU nanoseconds per value (noise added
in place to a vector of ``--n`` counts; a sample times enough calls to hold 300,000
values, so the secure pool's refills count at their share), measured in one run;
"x numpy" is the seeded figure over numpy's ``Generator.laplace`` on the same ``--n``,
"secure x" the secure one. ``--sweep`` prints Laplace noise (scale 10) per value from
10**3 to 10**7 values, secure and seeded, and the largest over the smallest figure of
each (no cliff: at most 1.5), with numpy's float Laplace at the same sizes (what the
machine's caches and memory do to any sampler).
Targets: seeded at most 2x numpy, secure at most 1.5x numpy at 10**6 and 10**7.
The CPU time of the reference loop ``sum(range(10**7))`` is printed first and last (about
0.17-0.20 s on an idle machine): figures from a busy machine are not comparable.
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


def median_ns(fn, n: int, repeats: int, warm: bool = True) -> float:
    """Median CPU nanoseconds per value of ``fn`` (``n`` values a call), each sample
    ``max(1, 300_000 // n)`` calls."""
    if warm:
        fn()  # warm-up: JIT compilation, tables and page faults
    calls = max(1, 300_000 // n)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            fn()
        times.append(time.process_time() - start)
    return statistics.median(times) / (n * calls) * 1e9


def reference_loop() -> float:
    """CPU seconds of ``sum(range(10**7))``: the machine's load, printed beside figures."""
    start = time.process_time()
    sum(range(10**7))
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep", action="store_true", help="time per value by request size")
    args = parser.parse_args()
    n, reps = args.n, args.repeats
    print(f"reference loop sum(range(10**7)): {reference_loop():.3f} s CPU")
    out = np.zeros(n, dtype=np.int64)
    gen = np.random.default_rng(0)
    ref = median_ns(lambda: gen.laplace(0.0, 10.0, n), n, reps)
    print(f"{n:,} values, median of {reps}; numpy Generator.laplace: {ref:.1f} ns/value")
    if args.sweep:
        sweep(reps)
    print(f"{'noise':<26} {'seeded ns':>10} {'x numpy':>8} {'secure ns':>10} {'secure x':>9}")
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
        print(f"{label:<26} {seeded:10.1f} {seeded / ref:8.2f} {secure:10.1f} {secure / ref:9.2f}")
    print(f"reference loop sum(range(10**7)): {reference_loop():.3f} s CPU")


def sweep(reps: int) -> None:
    """Nanoseconds per value of Laplace noise (scale 10), secure and seeded, across
    request sizes: each a real call of the sampler entry the kernel uses. The sizes take
    turns within each of ``max(reps, 9)`` rounds, so a change of the machine's load
    over the run reaches all of them alike; medians over the rounds."""
    a, b = rational_scale(Fraction(1), Fraction("0.1"))
    gen = np.random.default_rng(0)
    sizes = (10**3, 3 * 10**3, 10**4, 16_383, 16_384, 10**5, 10**6, 10**7)
    calls: dict[tuple[str, int], object] = {}
    for n in sizes:
        out = np.zeros(n, dtype=np.int64)
        for name, src in (("secure", noise_source(None)), ("seeded", noise_source(0))):
            calls[name, n] = partial(src.add_discrete_laplace, out, a, b)
        calls["numpy", n] = partial(gen.laplace, 0.0, 10.0, n)
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in calls}
    for fn in calls.values():
        fn()  # warm-up: JIT compilation, tables and page faults
    for _ in range(max(reps, 9)):
        for (name, n), fn in calls.items():
            samples[name, n].append(median_ns(fn, n, 1, warm=False))
    figures = {
        k: [statistics.median(samples[k, n]) for n in sizes] for k in ("secure", "seeded", "numpy")
    }
    print("Laplace noise, scale 10, by request size (numpy's Generator.laplace beside it)")
    print(f"  {'values':>12} {'secure ns':>10} {'seeded ns':>10} {'numpy ns':>9}")
    for i, n in enumerate(sizes):
        row = " ".join(f"{figures[k][i]:9.1f}" for k in ("secure", "seeded", "numpy"))
        print(f"  {n:>12,} {row}")
    spread = {k: max(v) / min(v) for k, v in figures.items()}
    print(f"  largest / smallest: secure {spread['secure']:.2f}, seeded {spread['seeded']:.2f} "
          f"(target <= 1.5); numpy's {spread['numpy']:.2f}\n")  # fmt: skip


if __name__ == "__main__":
    main()
