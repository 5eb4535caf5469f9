"""2-D histograms: accuracy against DPBench on the shared 2-D datasets, speed, coverage.

Run: python benchmarks/twod.py [--dpbench DIR] [--trials 5] [--datasets a,b]
         [--epsilons 0.01,0.1,1] [--methods identity,HB2D,...] [--large] [--no-accuracy]
         [--dpbench-cache FILE] [--reference] [--large-trials 3]
         [--dpbench-algos Identity,HB2D,...] [--coverage 500] [--coverage-dataset NAME]
         [--no-intervals]

* **Accuracy.** On each dataset of ``../shared/datasets/2d/`` (256 x 256) and each
  epsilon, the mean squared error over the 2,000 rectangles of
  ``benchmarks/twod_rectangles.txt`` (``dh.workloads.random_rectangles((256, 256), 2000,
  seed=2016)``, saved here, one ``r0 r1 c0 c1`` half-open rectangle per line), median
  over ``--trials`` seeded runs, for every 2-D method, and with ``--dpbench DIR`` the
  same for DPBench's DP-correct 2-D algorithms, measured side by side: ``DIR`` holds a
  build of ``dpcomp_core`` (commit 233cfcc) and its virtual environment (``DIR/venv``,
  ``DIR/dpcomp_core``; ``../shared/specs/dpbench-build.md``), run in its own process
  and alternated with dphist seed by seed. DPBench's UG, AG and mwemND read the true
  total as if it were public (dphist measures it); its MWEM takes the scored workload as
  its candidates, as DPBench's experiments do. Where UG's squares would be single cells
  (``N epsilon / 10 >=`` the number of cells) UG is Identity (one Laplace count per
  cell) and Identity's run stands for it (DPBench's UG takes minutes there: it builds
  its list of cells by repeated concatenation); where AG's coarse grid would be single
  cells AG is not run (the same concatenation; each cell is then measured twice at half
  the budget, twice Identity's variance). The best dphist method is compared with
  the best DPBench algorithm per dataset and epsilon. Without ``--dpbench``,
  ``--reference`` compares with DPBench's medians in ``../shared/specs/reference-figures.md``
  instead (another draw of 2,000 rectangles: a rough yardstick, not a side-by-side run).
* **Coverage.** For the methods with error bars: the share of the 95% intervals holding
  the true total, over the trials x 2,000 rectangles (the rectangles of one release
  share its noise, so this pools few independent draws; ``--no-intervals`` skips it);
  ``--coverage N`` measures it
  properly: ``N`` independent releases per epsilon of ``--coverage-dataset``, each
  scored on 20 fresh random rectangles (binomial band printed beside it).
* **Speed.** CPU time (``time.process_time``) per publication on 256 x 256, median over
  the trials, beside DPBench's counterpart measured in the same run. ``--large`` also
  times identity, the hierarchies, UGrid, AGrid and PrivTree on a 4,096 x 4,096 grid
  (Gowalla's check-ins, each cell spread over 16 x 16 cells by a seeded multinomial):
  ``--large-trials`` runs of each, one fresh subprocess per run so that its peak memory
  (``ru_maxrss``) and its first large allocations are its own, alternated with
  DPBench's counterpart (stopped after ``--timeout`` seconds); the medians and their
  ratio (below 1: dphist is faster).

The machine is shared: quote ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import dphist as dh
from dphist.workloads import random_rectangles, rectangles

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "datasets" / "2d"
WORKLOAD = HERE / "twod_rectangles.txt"
DATASETS = (
    "adult_gain_loss", "beijing_taxi_end", "beijing_taxi_start", "sf_cabs_end", "sf_cabs_start",
    "gowalla_checkins",
)  # fmt: skip
METHODS = ("identity", "uniform", "HB2D", "QuadTree", "Privelet", "UGrid", "AGrid", "PrivTree",
           "DAWA", "MWEM")  # fmt: skip
DPBENCH = ("Identity", "HB2D", "privelet2D", "QuadTree", "UG", "AG", "DPcube", "mwemND")
COUNTERPART = {"identity": "Identity", "HB2D": "HB2D", "Privelet": "privelet2D",
               "QuadTree": "QuadTree", "UGrid": "UG", "AGrid": "AG", "MWEM": "mwemND"}  # fmt: skip
LARGE = ("identity", "HB2D", "QuadTree", "UGrid", "AGrid", "PrivTree")

# The DPBench side, run with DPBench's own interpreter: one JSON request per line on
# stdin ({"data", "rects", "eps", "seed", "algos"}), one JSON reply per line on stdout.
DRIVER = r"""
import json, sys, time
import numpy as np
from dpcomp_core import workload
from dpcomp_core.algorithm import AG, DPcube, HB2D, QuadTree, UG, identity, mwemND, privelet2D
from dpcomp_core.query_nd_union import ndRangeUnion
ENGINES = {"Identity": identity.identity_engine, "HB2D": HB2D.HB2D_engine,
           "privelet2D": privelet2D.privelet2D_engine, "QuadTree": QuadTree.QuadTree_engine,
           "UG": UG.UG_engine, "AG": AG.AG_engine, "DPcube": DPcube.DPcube_engine,
           "mwemND": mwemND.mwemND_engine}
cache = {}
for line in sys.stdin:
    req = json.loads(line)
    key = (req["data"], req["rects"])
    if key not in cache:
        x = np.load(req["data"]) if req["data"].endswith(".npy") else np.loadtxt(req["data"])
        r = np.loadtxt(req["rects"], dtype=np.int64, ndmin=2)
        q = [ndRangeUnion().addRange((int(a), int(c)), (int(b) - 1, int(d) - 1), 1.0)
             for a, b, c, d in r]
        cache = {key: (x, r, workload.Workload(q, x.shape))}
    x, r, w = cache[key]
    out = {}
    for algo in req["algos"]:
        side = int(np.sqrt(x.size / (x.sum() * req["eps"] / 10.0)) - 1) + 1  # UG's grid side
        if algo == "UG" and side <= 1 and "Identity" in out:
            out[algo] = dict(out["Identity"], same_as="Identity")  # one-cell squares
            continue
        m1 = max(10, int(np.sqrt(x.sum() * req["eps"] / 10.0) / 4 - 1) + 1)  # AG's grid
        if algo == "AG" and int(np.sqrt(x.size / m1**2) - 1) + 1 <= 1:
            continue  # single-cell coarse grid: each cell measured twice (minutes)
        start = time.process_time()
        est = np.asarray(ENGINES[algo]().Run(w, x, req["eps"], req["seed"]), dtype=np.float64)
        cpu = time.process_time() - start
        p = np.zeros((x.shape[0] + 1, x.shape[1] + 1))
        p[1:, 1:] = (est - x).cumsum(0).cumsum(1)
        a, b, c, d = r.T
        err = p[b, d] - p[a, d] - p[b, c] + p[a, c]
        out[algo] = {"mse": float(np.mean(err ** 2)), "cpu": cpu}
    print(json.dumps(out), flush=True)
"""


class DPBench:
    """A DPBench worker process (its own interpreter and numpy); ``cache`` (a JSON file)
    keeps every result so that a later run may reuse them (said in the output)."""

    def __init__(self, root: Path, cache: Path | None = None):
        self.cache_path = cache
        self.cache = json.loads(cache.read_text()) if cache and cache.is_file() else {}
        self.reused = 0
        python = root / "venv" / "bin" / "python"
        core = root / "dpcomp_core"
        if not python.is_file() or not (core / "dpcomp_core").is_dir():
            sys.exit(f"--dpbench {root}: expected venv/bin/python and dpcomp_core/ there")
        (root / "log").mkdir(exist_ok=True)
        env = {**os.environ, "DPCOMP_CORE": str(core), "PYTHONPATH": str(core),
               "DPCOMP_LOG_PATH": str(root / "log")}  # fmt: skip
        self.proc = subprocess.Popen(
            [str(python), "-u", "-c", DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env,
        )  # fmt: skip

    def run(self, data: Path, rects: Path, eps: float, seed: int, algos) -> dict:
        key = f"{data.name}|{eps:g}|{seed}"
        if key in self.cache and seed != 10**6:
            self.reused += 1
            return self.cache[key]
        out = self._run(data, rects, eps, seed, algos)
        if self.cache_path is not None and seed != 10**6:
            self.cache[key] = out
            self.cache_path.write_text(json.dumps(self.cache))
        return out

    def _run(self, data: Path, rects: Path, eps: float, seed: int, algos) -> dict:
        request = {
            "data": str(data),
            "rects": str(rects),
            "eps": eps,
            "seed": seed,
            "algos": list(algos),
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def workload():
    """The saved 2,000 rectangles (written from the seed when absent)."""
    if not WORKLOAD.is_file():
        random_rectangles((256, 256), 2000, seed=2016).save(str(WORKLOAD))
    r = np.loadtxt(WORKLOAD, dtype=np.int64)
    return rectangles((256, 256), *r.T)


def measure(
    x: np.ndarray, w, truth: np.ndarray, method: str, eps: float, seed: int, covered: bool = True
) -> dict:
    start = time.process_time()
    rel = dh.publish(x, epsilon=eps, method=method, rng=seed)
    cpu = time.process_time() - start
    out = {"mse": float(np.mean((rel.answer(w) - truth) ** 2)), "cpu": cpu}
    if covered and rel.uncertainty is not None and rel.uncertainty.withheld is None:
        low, high = rel.intervals(*w.rectangles())
        out["covered"] = float(np.mean((low <= truth) & (truth <= high)))
    return out


def median(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if key in r]
    return float(np.median(values)) if values else float("nan")


def accuracy(args: argparse.Namespace, bench: DPBench | None) -> dict:
    w = workload()
    results: dict = {}
    for name in args.datasets:
        path = DATA / f"{name}_256x256.txt"
        if not path.is_file():
            print(f"skip {name}: {path} is absent")
            continue
        x = np.loadtxt(path, dtype=np.int64)
        p = np.zeros((257, 257))
        p[1:, 1:] = x.cumsum(0).cumsum(1)
        truth = w.answers(p)
        for eps in args.epsilons:
            ours = {m: [] for m in args.methods}
            theirs = {a: [] for a in DPBENCH}
            for m in args.methods:  # warm up: compile, build the noise tables for eps
                dh.publish(x, epsilon=eps, method=m, rng=10**6)
            if bench is not None and not all(
                f"{path.name}|{eps:g}|{s}" in bench.cache for s in range(args.trials)
            ):
                bench.run(path, WORKLOAD, eps, 10**6, args.dpbench_algos)  # warm-up
            for seed in range(args.trials):
                for m in args.methods:
                    ours[m].append(measure(x, w, truth, m, eps, seed, not args.no_intervals))
                if bench is not None:
                    for algo, row in bench.run(
                        path, WORKLOAD, eps, seed, args.dpbench_algos
                    ).items():
                        theirs[algo].append(row)
            if bench is None and args.reference:
                theirs = {**theirs, **reference(name, eps)}
            results[(name, eps)] = (ours, theirs)
            report_cell(name, eps, ours, theirs)
    return results


REFERENCE = HERE.parents[1] / "shared" / "specs" / "reference-figures.md"
REFERENCE_COLUMNS = {"identity": "Identity", "HB2D": "HB2D", "privelet2D": "privelet2D",
                     "QuadTree": "QuadTree", "UG": "UG", "AG": "AG", "DPcube": "DPcube",
                     "MWEM": "mwemND"}  # fmt: skip


def reference(name: str, eps: float) -> dict:
    """DPBench's published medians for ``name`` at ``eps`` (its DP-correct 2-D methods)
    from the shared reference figures: measured on another draw of 2,000 rectangles
    (``../shared/datasets/2d/rectangles_2000.txt``), so a rough yardstick only."""
    if not REFERENCE.is_file():
        return {}
    lines = REFERENCE.read_text(encoding="utf-8").split("## Two-dimensional", 1)[-1]
    head: list[str] = []
    for line in lines.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:2] == ["dataset", "ε"]:
            head = cells
        elif head and len(cells) == len(head) and cells[0] == name and cells[1] == f"{eps:g}":
            pairs = zip(head, cells, strict=True)
            return {REFERENCE_COLUMNS[h]: [{"mse": float(v)}] for h, v in pairs
                    if h in REFERENCE_COLUMNS and v}  # fmt: skip
    return {}


#: DPBench algorithms that read the exact number of records as if it were public, so are
#: not epsilon-DP as implemented (dpcomp_core 233cfcc, ``dpcomp_core/algorithm/``): UG sizes
#: its grid from ``N = x.sum()`` (UG.py:74), AG its coarse grid from ``N = sum(sum(x))``
#: (AG.py:109-111), mwemND starts from the uniform estimate at ``x.sum()`` and picks its
#: rounds from it (mwemND.py:36, 144, 194). The target compares with the others.
TRUE_TOTAL = ("UG", "AG", "mwemND")


def _best(rows_by_algo: dict, keep=lambda a: True) -> tuple[str, float] | None:
    values = {a: median(rows, "mse") for a, rows in rows_by_algo.items() if rows and keep(a)}
    if not values:
        return None
    top = min(values, key=values.get)
    return top, values[top]


def report_cell(name: str, eps: float, ours: dict, theirs: dict) -> None:
    mine = {m: median(rows, "mse") for m, rows in ours.items()}
    best = min(mine, key=mine.get)
    line = f"{name:20s} eps={eps:<5g} best dphist {best} {mine[best]:.3g}"
    correct = _best(theirs, lambda a: a not in TRUE_TOTAL)
    if correct:
        top, value = correct
        verdict = "MEETS" if mine[best] <= value else "MISSES"
        ratio = mine[best] / value
        line += f" | best DP-correct DPBench {top} {value:.3g} | ratio {ratio:.2f} {verdict}"
    anyone = _best(theirs)
    if anyone and anyone != correct:
        top, value = anyone
        line += f" | with the true total: {top} {value:.3g} ratio {mine[best] / value:.2f}"
    print(line, flush=True)
    print("    " + "  ".join(f"{m} {v:.3g}" for m, v in mine.items()), flush=True)
    others = {a: median(rows, "mse") for a, rows in theirs.items() if rows}
    if others:
        print("    " + "  ".join(f"{a} {v:.3g}" for a, v in others.items()), flush=True)


def summary(results: dict) -> None:
    trials = max(len(rows) for ours, _ in results.values() for rows in ours.values())
    print(f"\n## Accuracy: MSE over 2,000 rectangles (median of {trials} trials)\n")
    print("| dataset | ε | best dphist | MSE | best DP-correct DPBench | MSE | ratio "
          "| best DPBench with the true total | MSE | ratio |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (name, eps), (ours, theirs) in results.items():
        mine = {m: median(rows, "mse") for m, rows in ours.items()}
        best = min(mine, key=mine.get)
        cells = []
        for pick in (_best(theirs, lambda a: a not in TRUE_TOTAL), _best(theirs)):
            cells.append(f"{pick[0]} | {pick[1]:.3g} | {mine[best] / pick[1]:.2f}" if pick
                         else "- | - | -")  # fmt: skip
        print(f"| {name} | {eps:g} | {best} | {mine[best]:.3g} | {cells[0]} | {cells[1]} |")
    covered: dict = {}
    for ours, _ in results.values():
        for m, rows in ours.items():
            covered.setdefault(m, []).extend(r["covered"] for r in rows if "covered" in r)
    if any(covered.values()):
        print("\n## Coverage of the 95% intervals on rectangles (all datasets, ε and trials)\n")
    for m, values in covered.items():
        if values:
            print(
                f"- {m}: {np.mean(values):.2%} (lowest cell {min(values):.2%}, {len(values)} runs)"
            )
    print("\n## Speed on 256 x 256: CPU seconds per publication (median)\n")
    print("| method | dphist | DPBench counterpart | DPBench | ratio |")
    print("|---|---|---|---|---|")
    for m in next(iter(results.values()))[0]:
        ours_cpu = np.median([median(o[m], "cpu") for o, _ in results.values()])
        other = COUNTERPART.get(m)
        theirs_cpu = np.median(
            [median(t[other], "cpu") for _, t in results.values() if other and t[other]] or [np.nan]
        )
        ratio = ours_cpu / theirs_cpu if other else float("nan")
        print(f"| {m} | {ours_cpu:.3f} | {other or '-'} | {theirs_cpu:.3f} | {ratio:.2g} |")


LINEAR = ("identity", "HB2D", "QuadTree", "Privelet")
BRACKETING = ("UGrid", "AGrid", "PrivTree")


def coverage(args: argparse.Namespace) -> None:
    """Each method with error bars, ``--coverage`` independent releases of one dataset
    (seeds 0, 1, ...), each scored on its own 20 fresh random rectangles (so the
    rectangles of different releases share no noise): the share of the 95% intervals
    holding the truth, pooled, and its lowest release."""
    name = args.coverage_dataset
    x = np.loadtxt(DATA / f"{name}_256x256.txt", dtype=np.int64)
    p = np.zeros((257, 257))
    p[1:, 1:] = x.cumsum(0).cumsum(1)
    print(f"\n## Coverage of the 95% intervals: {args.coverage} releases of {name} per epsilon, "
          "20 fresh random rectangles each\n")  # fmt: skip
    print("| method | kind | ε | covered | 95% binomial band | lowest release |")
    print("|---|---|---|---|---|---|")
    for m in LINEAR + BRACKETING:
        for eps in args.epsilons:
            hits = []
            for seed in range(args.coverage):
                w = random_rectangles((256, 256), 20, seed=10**5 + seed)
                truth = w.answers(p)
                low, high = dh.publish(x, epsilon=eps, method=m, rng=seed).intervals(
                    *w.rectangles()
                )
                hits.append((low <= truth) & (truth <= high))
            h = np.array(hits)
            band = 1.96 * np.sqrt(0.95 * 0.05 / h.size)
            kind = "linear (exact)" if m in LINEAR else "bracket"
            print(f"| {m} | {kind} | {eps:g} | {h.mean():.2%} | {0.95 - band:.1%} to "
                  f"{0.95 + band:.1%} | {h.mean(axis=1).min():.0%} |", flush=True)  # fmt: skip


def large_grid(path: Path) -> Path:
    """Gowalla's check-ins at 4,096 x 4,096: each cell's count split over its 16 x 16
    cells by a seeded multinomial (written once next to the benchmark's temporary files)."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / "dphist_twod_4096.npy"
    if not out.is_file():
        x = np.loadtxt(path, dtype=np.int64)
        rng = np.random.default_rng(4096)
        big = np.zeros((4096, 4096), dtype=np.int64)
        for (i, j), c in np.ndenumerate(x):
            if c:
                big[16 * i : 16 * i + 16, 16 * j : 16 * j + 16] = rng.multinomial(
                    c, np.full(256, 1 / 256)
                ).reshape(16, 16)
        np.save(out, big)
    return out


CHILD = r"""
import resource, sys, time
import numpy as np
import dphist as dh
x = np.load(sys.argv[1])
dh.publish(np.ones((8, 8), dtype=int), epsilon=1, method=sys.argv[2], rng=0)  # compile first
start = time.process_time()
rel = dh.publish(x, epsilon=float(sys.argv[3]), method=sys.argv[2], rng=1)
cpu = time.process_time() - start
print(cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
"""


def large(args: argparse.Namespace, bench_root: Path | None) -> None:
    """Each method ``--large-trials`` times, alternating with DPBench's counterpart (each
    run a fresh process, so each pays its first large allocations): medians and their
    ratio (below 1: dphist is faster)."""
    path = large_grid(DATA / "gowalla_checkins_256x256.txt")
    print(f"\n## 4,096 x 4,096 (Gowalla check-ins refined), epsilon 0.1: CPU seconds (median of "
          f"{args.large_trials}, alternated), peak GB\n")  # fmt: skip
    print("| method | dphist CPU s | dphist peak GB | DPBench | DPBench CPU s | ratio |")
    print("|---|---|---|---|---|---|")
    for m in LARGE:
        other = COUNTERPART.get(m, "-")
        ours, theirs, stopped = [], [], ""
        for _ in range(args.large_trials):
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), m, "0.1"],
                                 capture_output=True, text=True, check=True)  # fmt: skip
            ours.append([float(v) for v in out.stdout.split()])
            if bench_root is not None and m in COUNTERPART and not stopped:
                cpu = dpbench_large(bench_root, path, other, args.timeout)
                if isinstance(cpu, str):
                    stopped = cpu
                else:
                    theirs.append(cpu)
        cpu, gb = np.median([o[0] for o in ours]), max(o[1] for o in ours)
        their, ratio = stopped or "-", "-"
        if theirs:
            their = f"{np.median(theirs):.2f}" + (f" ({stopped})" if stopped else "")
            ratio = f"{cpu / np.median(theirs):.2f}"
        print(f"| {m} | {cpu:.2f} | {gb:.2f} | {other} | {their} | {ratio} |", flush=True)


def dpbench_large(root: Path, path: Path, algo: str, timeout: float) -> float | str:
    """DPBench's CPU seconds for ``algo`` on the large grid (a fresh worker), or a note
    that it was stopped after ``timeout`` seconds of wall time."""
    bench = DPBench(root)
    rects = Path(os.environ.get("TMPDIR", "/tmp")) / "dphist_twod_4096_rects.txt"
    random_rectangles((4096, 4096), 10, seed=1).save(str(rects))
    try:
        request = {"data": str(path), "rects": str(rects), "eps": 0.1, "seed": 1,
                   "algos": [algo]}  # fmt: skip
        bench.proc.stdin.write(json.dumps(request) + "\n")
        bench.proc.stdin.flush()
        start = time.monotonic()
        import select

        ready, _, _ = select.select([bench.proc.stdout], [], [], timeout)
        if not ready:
            return f"> {timeout:.0f} s wall (stopped after {time.monotonic() - start:.0f} s)"
        return float(json.loads(bench.proc.stdout.readline())[algo]["cpu"])
    finally:
        bench.proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dpbench", type=Path, default=None)
    parser.add_argument("--dpbench-cache", type=Path, default=None)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--epsilons", default="0.01,0.1,1")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--large", action="store_true")
    parser.add_argument("--no-accuracy", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--large-trials", type=int, default=3)
    parser.add_argument("--dpbench-algos", default=",".join(DPBENCH))
    parser.add_argument("--coverage", type=int, default=0)
    parser.add_argument("--no-intervals", action="store_true")
    parser.add_argument("--coverage-dataset", default="sf_cabs_end")
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args()
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.epsilons = [float(e) for e in args.epsilons.split(",")]
    args.methods = args.methods.split(",")
    args.dpbench_algos = [a for a in args.dpbench_algos.split(",") if a]
    if unknown := set(args.dpbench_algos) - set(DPBENCH):
        sys.exit(
            f"--dpbench-algos: unknown {', '.join(sorted(unknown))}; known: {', '.join(DPBENCH)}"
        )
    if not DATA.is_dir():
        sys.exit(f"the 2-D datasets are not at {DATA}")
    bench = DPBench(args.dpbench, args.dpbench_cache) if args.dpbench else None
    if not args.no_accuracy:
        results = accuracy(args, bench)
        if results:
            summary(results)
    if bench is not None:
        if bench.reused:
            print(f"\n(DPBench: {bench.reused} trials read from {args.dpbench_cache}, "
                  "measured by an earlier run of this script)")  # fmt: skip
        bench.close()
    if args.coverage:
        coverage(args)
    if args.large:
        large(args, args.dpbench)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\n(peak memory of this process: {peak:.2f} GB)")


if __name__ == "__main__":
    main()
