"""Tree layout and weighted least-squares consistency; HB branching choice.

Run: python benchmarks/tree.py [--repeats 3] [--max-n 10000000]
Prints the median seconds of ``tree_layout(n, f)`` followed by ``consistency`` on one
noisy value per node (uniform variance), and of ``hb_branching(10**6)``. The compiled
consistency loops are warmed up (JIT or cache load) before timing.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dphist._numeric.tree import consistency, tree_layout
from dphist._numeric.tree_params import hb_branching


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def layout_and_consistency(n: int, fanout: int, y: np.ndarray, var: float) -> tuple[float, float]:
    start = time.perf_counter()
    layout = tree_layout(n, fanout)
    mid = time.perf_counter()
    consistency(layout, y, var)
    end = time.perf_counter()
    return mid - start, end - mid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-n", type=int, default=10**7)
    args = parser.parse_args()

    consistency(tree_layout(64, 4), np.zeros(85), 1.0)  # warm-up: JIT / cache load
    rng = np.random.default_rng(0)
    print(f"tree_layout + consistency, median of {args.repeats}")
    header = ("n", "f", "nodes", "layout (s)", "consist. (s)", "total (s)")
    print("{:>12} {:>3} {:>12} {:>11} {:>13} {:>10}".format(*header))
    for n in (4_096, 32_768, 10**6, 10**7):
        if n > args.max_n:
            continue
        for fanout in (16, 2):
            nodes = tree_layout(n, fanout).n_nodes
            y = rng.normal(size=nodes)
            runs = [layout_and_consistency(n, fanout, y, 2.0) for _ in range(args.repeats)]
            lay = statistics.median(r[0] for r in runs)
            con = statistics.median(r[1] for r in runs)
            tot = statistics.median(r[0] + r[1] for r in runs)
            print(f"{n:>12,} {fanout:>3} {nodes:>12,} {lay:>11.4f} {con:>13.4f} {tot:>10.4f}")
    hb = median_seconds(lambda: hb_branching(10**6), max(args.repeats, 5))
    print(f"hb_branching(10**6) = {hb_branching(10**6)}: {hb * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
