"""``method="auto"`` under zCDP against the better of identity and HB under the same rho.

Run: python benchmarks/auto_zcdp.py [--seeds 4] [--sizes 64,256] [--rhos 0.0025,0.25]
     [--trees pure|zcdp|both]

auto ranks zCDP releases with trees trained on errors measured under zCDP, reading
rho as the epsilon ``2 sqrt(rho)`` (``dphist.methods.advisor.pure_equivalent``). This
compares them with the pure-DP trees read at the same epsilon (the stated mapping
alone). For every training shape (the synthetic ones and the shared datasets found),
each size, 10^3 and 10^5 records, each rho and each workload kind: auto's mean error
over ``--seeds`` seeded releases divided by the lesser of identity's and HB's exact
expected errors under the same rho. Where a release picked a data-independent method
its error is that method's exact expectation at the rho it ran with. The shapes are
training shapes, so this is in-sample for the zCDP trees (``dphist reproduce auto``
scores them held out).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from fractions import Fraction

import numpy as np

import dphist as dh
from dphist.lab.selector.table import Cell, exact_errors, shapes, workload_errors
from dphist.methods.selector import WORKLOADS, Candidate, Model, load_model


def ratios(x: np.ndarray, rho: Fraction, seeds: int, model: Model) -> list[tuple]:
    """Per workload kind: (kind, auto / min(identity, HB), auto's picks)."""
    n = int(x.size)
    base = np.min(
        [exact_errors(Candidate(m), n, float(rho), "zcdp") for m in ("identity", "HB")], 0
    )
    out = []
    for w, kind in enumerate(WORKLOADS):
        err, picks = 0.0, set()
        for s in range(seeds):
            rel = dh.publish(x, rho=rho, method="auto", workload=kind, rng=s, auto_model=model)
            pick = Candidate(rel.method, rel.params["auto"]["params"])
            picks.add(pick.label)
            spent = float(rho * (1 - Fraction(rel.params["auto"]["share"])))
            exact = exact_errors(pick, n, spent, "zcdp")
            err += exact[w] if exact is not None else workload_errors(x, rel.estimate)[w]
        out.append((kind, err / seeds / base[w], ",".join(sorted(picks))))
    return out


def report(name: str, rows: list[tuple], seconds: float) -> None:
    r = np.array([row[5] for row in rows])
    print(
        f"{name}: cells {r.size}; geometric mean of auto / min(identity, HB) "
        f"{np.exp(np.log(r).mean()):.3f}; above 1.2x {np.sum(r > 1.2)} "
        f"({np.mean(r > 1.2):.1%}); above 1.5x {np.sum(r > 1.5)}; worst {r.max():.3g}; "
        f"{seconds:.0f} s"
    )
    print("  worst cells (shape, bins, records, rho, workload, ratio, auto's picks):")
    for row in sorted(rows, key=lambda v: -v[5])[:6]:
        print(f"    {row[0]} {row[1]} {row[2]:g} {row[3]:g} {row[4]} {row[5]:.2f} {row[6]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--sizes", default="64,256")
    ap.add_argument("--rhos", default="0.0025,0.25")
    ap.add_argument("--trees", dest="mapping", choices=("pure", "zcdp", "both"), default="both")
    args = ap.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    rhos = [Fraction(v) for v in args.rhos.split(",")]
    shipped = load_model()
    pure = {k: v for k, v in shipped.trees.items() if not k.startswith("zcdp ")}
    models = {"pure trees at 2 sqrt(rho)": replace(shipped, trees=pure)}
    if pure != shipped.trees:
        models["trees trained under rho (shipped)"] = shipped
    if args.mapping != "both":
        models = {
            k: v for k, v in models.items() if (args.mapping == "pure") == k.startswith("pure")
        }
    all_shapes = shapes(None)
    for label, model in models.items():
        rows = []
        t0 = time.perf_counter()
        for name in sorted(all_shapes):
            for n in sizes:
                for scale in (10**3, 10**5):
                    x = Cell(name, n, scale).counts(all_shapes)
                    for rho in rhos:
                        for kind, r, picks in ratios(x, rho, args.seeds, model):
                            rows.append((name, n, scale, float(rho), kind, r, picks))
        report(label, rows, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
