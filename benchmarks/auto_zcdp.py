"""``method="auto"`` under zCDP against the better of identity and HB under the same rho.

Run: python benchmarks/auto_zcdp.py [--seeds 4] [--sizes 64,256] [--rhos 0.0025,0.25]

auto's model is trained under pure DP and reads rho as the epsilon ``2 sqrt(rho)``
(``dphist.methods.advisor.pure_equivalent``). This checks what that mapping costs the
guard: for every training shape (the synthetic ones and the shared datasets found),
each size, 10^3 and 10^5 records, each rho and each workload kind, auto's mean error
over ``--seeds`` seeded releases divided by the lesser of identity's and HB's mean
errors (seeded releases under the same rho). The shapes are training shapes, so this is
in-sample for the model; identity and HB are sampled, not exact, so ratios near 1.4 on
cells where auto picked identity are the sampling floor at 4 seeds.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

import dphist as dh
from dphist.lab.selector.table import Cell, shapes, workload_errors
from dphist.methods.selector import WORKLOADS


def ratios(x: np.ndarray, rho: Fraction, seeds: int) -> list[tuple[str, float, str]]:
    """Per workload kind: (kind, auto / min(identity, HB), auto's picks)."""
    base = {m: np.zeros(len(WORKLOADS)) for m in ("identity", "HB")}
    for m in base:
        for s in range(seeds):
            base[m] += workload_errors(x, dh.publish(x, rho=rho, method=m, rng=100 + s).estimate)
    out = []
    for w, kind in enumerate(WORKLOADS):
        err, picks = 0.0, set()
        for s in range(seeds):
            rel = dh.publish(x, rho=rho, method="auto", workload=kind, rng=s)
            picks.add(rel.method)
            err += workload_errors(x, rel.estimate)[w]
        out.append((kind, err / min(base["identity"][w], base["HB"][w]), ",".join(sorted(picks))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--sizes", default="64,256")
    ap.add_argument("--rhos", default="0.0025,0.25")
    args = ap.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    rhos = [Fraction(v) for v in args.rhos.split(",")]
    all_shapes = shapes(None)
    rows = []
    t0 = time.perf_counter()
    for name in sorted(all_shapes):
        for n in sizes:
            for scale in (10**3, 10**5):
                x = Cell(name, n, scale).counts(all_shapes)
                for rho in rhos:
                    for kind, r, picks in ratios(x, rho, args.seeds):
                        rows.append((name, n, scale, float(rho), kind, r, picks))
    r = np.array([row[5] for row in rows])
    print(
        f"cells {r.size}; geometric mean of auto / min(identity, HB) "
        f"{np.exp(np.log(r).mean()):.3f}; above 1.2x {np.sum(r > 1.2)} "
        f"({np.mean(r > 1.2):.1%}); above 1.5x {np.sum(r > 1.5)}; worst {r.max():.3g}; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    print("worst cells (shape, bins, records, rho, workload, ratio, auto's picks):")
    for row in sorted(rows, key=lambda v: -v[5])[:8]:
        print(f"  {row[0]} {row[1]} {row[2]:g} {row[3]:g} {row[4]} {row[5]:.2f} {row[6]}")


if __name__ == "__main__":
    main()
