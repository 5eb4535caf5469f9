"""Peak memory of publishing, per method: bytes per bin at N bins.

Each method runs in its own subprocess (so peaks do not mix) on a synthetic spiky
histogram with seeded noise; the figure is the peak resident set size of that
process minus the peak of the same process that stops just before publishing
(Python, numpy, numba and the input). Prints one row per method and the value the
command line's memory check uses for it (``dphist.resources.bytes_per_bin``).

    python benchmarks/memory.py --n 1000000 [--methods identity,HB,S2+H]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys
import numpy as np
import dphist as dh
from dphist import synthetic
n, name, run = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
x = synthetic.spiky(n, rng=0)
info = dh.get_method(name)
dh.publish(np.arange(4, dtype=np.int64) + 1, epsilon=1, method=name, rng=0, **info.example)
if run:
    dh.publish(x, epsilon=0.1, method=name, rng=0, **info.example)
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
"""


def peak(n: int, name: str, run: bool) -> int:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), name, "1" if run else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    import dphist as dh
    from dphist.resources import bytes_per_bin

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--methods", default="all")
    args = parser.parse_args()
    names = (
        [m.name for m in dh.list_methods()] if args.methods == "all" else args.methods.split(",")
    )
    print(f"{'method':<12} {'peak MB':>9} {'bytes/bin':>10} {'check uses':>11}")
    for name in names:
        try:
            base = peak(args.n, name, False)
            top = peak(args.n, name, True)
        except subprocess.CalledProcessError as exc:
            print(f"{name:<12} failed: {exc.stderr.strip().splitlines()[-1]}")
            continue
        per_bin = max(top - base, 0) / args.n
        used = bytes_per_bin(name, args.n)
        print(f"{name:<12} {top / 2**20:9.0f} {per_bin:10.0f} {used:11.0f}")


if __name__ == "__main__":
    main()
