"""KLD of the sorting-family methods beside the published tables (AHP Tables 2-4,
SReB_GCA Table 2) on Location (seeded stand-in), Social Network, Search Log and NetTrace.

Run: python benchmarks/kld_tables.py [--trials 10] [--workers 2] [--sf]

The data sets, the published values and the grid are those of the AHP reproduction
(:mod:`dphist.lab.reproduce.ahp`; the full report is ``dphist.lab.reproduce.PAPERS["ahp"]``).
KLD convention: :func:`dphist.metrics.kld` with pseudo-count tau = 1e-3, negative
estimates clipped at 0; the papers' convention is not stated, so absolute values are
comparable only roughly (rankings and orders of magnitude are the check). Seeded
trials, mean over trials. SF (O(k N^2), k = N/10) runs only with --sf, on 2 trials.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from dphist.lab.reproduce import ahp, sreb

LABELS = ("AHP", "NF", "PHP", "GS", "SReB_GCA", "identity")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--sf", action="store_true", help="also run StructureFirst (slow)")
    args = parser.parse_args()
    labels = (*LABELS, "SF") if args.sf else LABELS
    data = ahp.datasets(quick=False)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rows = ahp.run_tables(
            data,
            labels=labels,
            epsilons=ahp.EPSILONS,
            metrics=[ahp.ex.metric("kld", tau=1e-3)],
            trials=args.trials,
            slow_trials=min(args.trials, 2),
            workers=args.workers,
            seed=0,
            out=Path(tmp) / "results.csv",
            data_dir=None,
            quick=False,
        )
    summary = ahp.kld_summary(data, rows, labels=labels, extra=sreb.PAPER_TABLE2)
    print(f"mean KLD over {args.trials} seeded trials [paper value] (seconds per release)")
    cells: dict[tuple[str, float], list[str]] = {}
    for s in summary:
        ref = "" if math.isnan(s["paper KLD"]) else f" [{s['paper KLD']:g}]"
        cells.setdefault((s["data"], s["ε"]), []).append(
            f"{s['method']} {s['our KLD']:.4f}{ref} ({s['time (s)']:.2f}s)"
        )
    for (name, eps), parts in cells.items():
        print(f"{name:15} eps={eps:<5g} " + " | ".join(parts), flush=True)
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
