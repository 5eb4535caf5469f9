"""SORTaki partitioners on sorted noisy counts: DPP (O(N^2) and Monge), DPP-pow2, GP.

Run: python benchmarks/sortaki.py [--sizes 4096 32768] [--repeats 3] [--eps 1.0]
     [--gamma-in 0.9]

Input: ``dphist.synthetic.sparse_power_law`` counts plus Laplace noise of budget
``eps_in = gamma_in * eps`` (the initializer), sorted descending (the sorter); the
finalizer's budget is ``eps_f = (1 - gamma_in) * eps`` (Tables IV, VI, VII, IX of the
paper use ``gamma_in = 0.9``). ``var_in = 2/eps_in**2``, ``var_f = 2/eps_f**2``.
Rows: the error formula (``ahp`` as in sDAHP, ``uee`` as in sDWF) and the partitioner.
Times are medians of ``--repeats`` runs after a warm-up call that absorbs JIT
compilation. ``objective`` is the partition's summed bucket error; ``gap`` its excess
over the exact DP optimum, relative to the optimum's magnitude. A last row per size
times the DPCube partitioner with SORTaki's ``xi = var_in``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dphist._numeric.bucketing import (
    dp_partition,
    dpcube_partition,
    greedy_partition,
    laplace_variance,
    partition_error,
)
from dphist.synthetic import sparse_power_law


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_input(n: int, eps_in: float) -> np.ndarray:
    rng = np.random.default_rng(n)
    h = sparse_power_law(n, rng=rng).astype(np.float64)
    return np.sort(h + rng.laplace(0.0, 1.0 / eps_in, n))[::-1].copy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 32768])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--gamma-in", type=float, default=0.9)
    args = parser.parse_args()

    eps_in, eps_f = args.gamma_in * args.eps, (1.0 - args.gamma_in) * args.eps
    kw = {"var_in": laplace_variance(eps_in), "var_f": laplace_variance(eps_f)}
    methods = {
        "DPP (O(N^2) DP)": lambda y, e: dp_partition(y, e, **kw, solver="dp"),
        "DPP (Monge)": lambda y, e: dp_partition(y, e, **kw, solver="monge"),
        "DPP-pow2": lambda y, e: dp_partition(y, e, **kw, lengths="pow2"),
        "GP": lambda y, e: greedy_partition(y, e, **kw),
    }

    warm = np.sort(np.random.default_rng(0).normal(size=64))
    for fn in methods.values():
        for error in ("ahp", "uee"):
            fn(warm, error)  # compile (or load) the kernels
    dpcube_partition(warm, xi=kw["var_in"])

    print(f"eps = {args.eps}, gamma_in = {args.gamma_in}: eps_in = {eps_in:g}, eps_f = {eps_f:g}")
    print(
        f"{'N':>7} {'error':>5} {'partitioner':>16} {'buckets':>8} "
        f"{'objective':>14} {'gap':>9} {'time (s)':>9}"
    )
    for n in args.sizes:
        y = make_input(n, eps_in)
        for error in ("ahp", "uee"):
            best = None
            for name, fn in methods.items():
                starts = fn(y, error)
                obj = partition_error(y, starts, error, **kw)
                if best is None:
                    best = obj
                gap = (obj - best) / max(abs(best), 1e-300)
                secs = median_seconds(lambda fn=fn, y=y, error=error: fn(y, error), args.repeats)
                print(
                    f"{n:>7} {error:>5} {name:>16} {len(starts):>8} "
                    f"{obj:>14.6g} {gap:>9.2e} {secs:>9.4f}",
                    flush=True,
                )
        starts = dpcube_partition(y, xi=kw["var_in"])
        secs = median_seconds(lambda y=y: dpcube_partition(y, xi=kw["var_in"]), args.repeats)
        print(f"{n:>7} {'-':>5} {'DPCube':>16} {len(starts):>8} {'':>14} {'':>9} {secs:>9.4f}")


if __name__ == "__main__":
    main()
