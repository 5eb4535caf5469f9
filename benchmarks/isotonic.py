"""Isotonic regression at scale: L2 through scipy, L2 in place, L1 (lower-median PAV).

Run: python benchmarks/isotonic.py [--sizes 1000000 10000000 100000000] [--repeats 3]
     [--l1-max 10000000]

Inputs (float64), as the ranked method sees them (Kuo et al. 2018, §4.2):
``ranked`` is sorted group sizes (a geometric body plus a sparse heavy tail, like
households plus group quarters) with Laplace noise of scale 1 (eps = 1); ``noise`` is
i.i.d. standard normal values, which PAV pools into few long blocks.

Columns: seconds (median of ``--repeats`` runs after a warm-up that loads the compiled
kernels; one run at 10**8), and peak extra memory during the call, measured in a
separate run with ``tracemalloc`` (numpy and scipy allocate through the traced
allocator; the numba kernels allocate nothing themselves), in MB and bytes per entry.
The input array is not counted; the in-place fit is given a fresh copy outside the
measurement. Sizes whose estimated need exceeds the available memory are skipped.
Target: an isotonic regression of 10**8 entries in under 10 s.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

import numpy as np

from dphist._numeric.isotonic import isotonic_l1, isotonic_l2, isotonic_l2_inplace

# Peak extra bytes per entry, for the memory check before a run (measured, rounded up).
NEED = {"l2 scipy": 25, "l2 in-place": 1, "l1": 17}


def ranked(rng: np.random.Generator, n: int) -> np.ndarray:
    body = np.bincount(rng.geometric(0.35, n - n // 1000), minlength=1)
    sizes = np.repeat(np.arange(body.shape[0]), body).astype(np.float64)
    tail = np.sort(rng.integers(1, 10_000, n // 1000)).astype(np.float64)
    y = np.concatenate((sizes, tail))
    y += rng.laplace(0.0, 1.0, n)
    return y


def noise(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal(n)


def available_bytes() -> int:
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run(method: str, y: np.ndarray) -> None:
    if method == "l2 scipy":
        isotonic_l2(y)
    elif method == "l1":
        isotonic_l1(y)
    else:
        raise ValueError(method)


def timed(method: str, y: np.ndarray, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        work = y.copy() if method == "l2 in-place" else y
        gc.collect()
        start = time.perf_counter()
        if method == "l2 in-place":
            isotonic_l2_inplace(work)
        else:
            run(method, work)
        times.append(time.perf_counter() - start)
        del work
    return statistics.median(times)


def peak_extra(method: str, y: np.ndarray) -> int:
    work = y.copy() if method == "l2 in-place" else y
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    if method == "l2 in-place":
        isotonic_l2_inplace(work)
    else:
        run(method, work)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7, 10**8])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--l1-max", type=int, default=10**7, help="largest n for isotonic_l1")
    parser.add_argument("--inputs", nargs="+", default=["ranked", "noise"])
    args = parser.parse_args()

    warm = np.random.default_rng(0).normal(size=64)
    isotonic_l2(warm), isotonic_l2_inplace(warm.copy()), isotonic_l1(warm)

    makers = {"ranked": ranked, "noise": noise}
    print(
        f"{'input':>7} {'n':>11} {'method':>12} {'seconds':>8} {'ns/entry':>8} "
        f"{'peak MB':>9} {'B/entry':>8} {'blocks':>10}"
    )
    for n in args.sizes:
        for name in args.inputs:
            methods = ["l2 scipy", "l2 in-place"] + (["l1"] if n <= args.l1_max else [])
            # input + one spare copy for the in-place run + the largest method's need
            if available_bytes() < n * (8 + 8 + max(NEED[m] for m in methods)) * 1.1:
                print(f"{name:>7} {n:>11} {'-':>12} skipped: not enough memory", flush=True)
                continue
            y = makers[name](np.random.default_rng(n), n)
            reps = args.repeats if n < 10**8 else 1
            blocks = int(np.count_nonzero(np.diff(isotonic_l2_inplace(y.copy()))) + 1)
            for method in methods:
                seconds = timed(method, y, reps)
                extra = peak_extra(method, y)
                print(
                    f"{name:>7} {n:>11} {method:>12} {seconds:>8.3f} {1e9 * seconds / n:>8.1f} "
                    f"{extra / 2**20:>9.1f} {extra / n:>8.2f} {blocks:>10}",
                    flush=True,
                )
            del y
            gc.collect()


if __name__ == "__main__":
    main()
