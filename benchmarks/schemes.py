"""Run time of every registered method: on Search Log (32,768 bins) and as N grows.

Run: python benchmarks/schemes.py [--repeats 3] [--sizes 4096,32768,131072,1000000]
         [--max-quadratic 32768] [--skip-log] [--log-quadratic]
Seconds are medians over ``--repeats`` runs after one warm-up run at the smallest
size (JIT compilation excluded); methods whose cost is quadratic in N (S1 and its
variants) are timed once and only up to ``--max-quadratic`` bins. epsilon = 0.1.
"""

from __future__ import annotations

import argparse

import numpy as np

import dphist as dh
from dphist import datasets, synthetic
from dphist.errors import DatasetUnavailableError
from dphist.lab.bench import QUADRATIC, time_method, warm_up


def seconds(method: str, x: np.ndarray, repeats: int) -> tuple[float, str]:
    t = time_method(method, x, epsilon=0.1, repeats=repeats)
    return t.seconds, t.error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="4096,32768,131072,1000000")
    parser.add_argument("--max-quadratic", type=int, default=32768)
    parser.add_argument("--skip-log", action="store_true")
    parser.add_argument(
        "--log-quadratic", action="store_true", help="also time S1 and its variants on Log"
    )
    args = parser.parse_args()
    names = [m.name for m in dh.list_methods()]
    sizes = [int(s) for s in args.sizes.split(",")]

    warm_up(names)

    if not args.skip_log:
        try:
            log = datasets.load("search_logs")
        except DatasetUnavailableError as exc:
            print(f"Search Log not available ({exc}); skipping that table")
        else:
            print(f"Search Log ({log.size:,} bins), epsilon 0.1, median seconds")
            for name in names:
                if name in QUADRATIC and not args.log_quadratic:
                    print(f"  {name:10} {'skipped':>9} (quadratic; --log-quadratic)")
                    continue
                reps = 1 if name in QUADRATIC else args.repeats
                t, err = seconds(name, log, reps)
                print(f"  {name:10} {t:9.3f} {err}", flush=True)

    print("\nGrowth with N (synthetic spiky series), epsilon 0.1, median seconds")
    print("  " + f"{'method':10}" + "".join(f"{n:>12,}" for n in sizes))
    data = {n: synthetic.spiky(n, rng=1) for n in sizes}
    for name in names:
        row = []
        for n in sizes:
            if name in QUADRATIC and n > args.max_quadratic:
                row.append(f"{'-':>12}")
                continue
            reps = 1 if name in QUADRATIC else args.repeats
            t, err = seconds(name, data[n], reps)
            row.append(f"{t:12.3f}" if not err else f"{'(' + err[:9] + ')':>12}")
        print(f"  {name:10}" + "".join(row), flush=True)


if __name__ == "__main__":
    main()
