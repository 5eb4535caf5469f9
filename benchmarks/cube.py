"""DPCube's forms side by side: all-range and point error on the shared datasets.

Run: python benchmarks/cube.py [--datasets a,b] [--epsilons 0.01,0.1,1] [--seeds 8]
         [--methods DPCube,DPCube-LS,DPC] [--dpbench PATH] [--dpbench-python PYTHON]

For each dataset and epsilon, the mean over ``--seeds`` runs (``rng = 0..seeds-1``) of
the all-range MSE (:func:`dphist.metrics.interval_mse`) and the point MSE of each
method: ``DPCube`` (DPBench's 1-D form), ``DPCube-LS`` (the paper's least-squares mix
of the cells and the parts' totals), SORTaki's ``DPC``. With a DPBench checkout
(``--dpbench``, built as ``../shared/specs/dpbench-build.md`` says) DPBench's own
DPcube1D runs on the same data, epsilon and seeds in its own process
(``benchmarks/_dpbench_worker.py``). Means, not medians: one run's all-range error is a
skewed quadratic form of the noise (``benchmarks/partitions.py``), so a few seeds
scatter by tens of percent; the last column is DPCube-LS's all-range MSE over
DPcube1D's (over dphist's DPCube without a checkout).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import dphist as dh
from dphist import datasets
from dphist.metrics import interval_mse, point_mse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dpbench import DPBench

DATASETS = ",".join(
    [
        "nettrace_4096",
        "searchlogs_4096",
        "hepth_citations_4096",
        "adult_capital_loss_4096",
        "search_logs",
        "nettrace",
    ]
)
METHODS = "DPCube,DPCube-LS,DPC"


def errors(method: str, x: np.ndarray, epsilon: float, seeds: int) -> tuple[float, float]:
    """Mean all-range and point MSE of ``method`` over the seeds."""
    runs = [dh.publish(x, epsilon=epsilon, method=method, rng=s).estimate for s in range(seeds)]
    return np.mean([interval_mse(x, e) for e in runs]), np.mean([point_mse(x, e) for e in runs])


def theirs(bench: DPBench, path: str, epsilon: float, seeds: int) -> tuple[float, float]:
    """Mean all-range and point MSE of DPBench's DPcube1D over the same seeds."""
    replies = [bench.run("DPCube", path, epsilon, s) for s in range(seeds)]
    if any("failed" in r for r in replies):
        return float("nan"), float("nan")
    return np.mean([r["error"] for r in replies]), np.mean([r["point"] for r in replies])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--epsilons", default="0.01,0.1,1")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--dpbench", default=os.environ.get("DPBENCH"))
    parser.add_argument("--dpbench-python", default=os.environ.get("DPBENCH_PYTHON"))
    parser.add_argument("--limit", type=float, default=600.0)
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bench = None
    if args.dpbench:
        checkout = Path(args.dpbench).resolve()
        python = args.dpbench_python or str(checkout.parent / "venv" / "bin" / "python")
        bench = DPBench(checkout, python, args.limit)
    folder = tempfile.mkdtemp(prefix="cube-data-")
    cols = methods + (["DPcube1D (DPBench)"] if bench else [])
    print(f"all-range MSE / point MSE, mean of {args.seeds} seeds")
    print(f"{'dataset':26} {'eps':>5} " + " ".join(f"{c:>22}" for c in cols) + f" {'LS/ref':>7}")
    for name in args.datasets.split(","):
        x = datasets.load(name.strip())
        path = os.path.join(folder, f"{name}.npy")
        np.save(path, x.astype(np.int64))
        for eps in (float(e) for e in args.epsilons.split(",")):
            got = {m: errors(m, x, eps, args.seeds) for m in methods}
            if bench is not None:
                got["DPcube1D (DPBench)"] = theirs(bench, path, eps, args.seeds)
            ref = got.get("DPcube1D (DPBench)", got.get("DPCube"))
            ratio = got["DPCube-LS"][0] / ref[0] if "DPCube-LS" in got and ref else float("nan")
            cells = " ".join(f"{f'{a:.3g} / {p:.3g}':>22}" for a, p in (got[c] for c in cols))
            print(f"{name:26} {eps:5g} {cells} {ratio:7.2f}", flush=True)
    if bench is not None:
        bench.close()


if __name__ == "__main__":
    main()
