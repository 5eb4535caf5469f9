"""Time and memory of the MM / PMM fixed-queries stage: Gram, GreedyH and the estimator.

Run: python benchmarks/greedyh.py [--n 32768] [--repeats 3] [--groups 1000 4000 16000]
                                  [--dense-up-to 4000]

For each number of groups |G| and each workload ("all" = MM, "prefix" = PMM) it
prints, on a random partition of n bins into |G| contiguous groups, the median
seconds of implicit_gram + greedy_h + (estimate_totals and total_variances), of each
step alone, and the peak extra resident memory of one run of the stage, measured in a
fresh interpreter (the rise of its peak RSS above its RSS before the run, after the
kernels are loaded; Linux only, else "n/a"). For scale, "2 dense" is the size of two
dense |G| x |G| float64 matrices.
With --dense-up-to G it also times greedy_h on the materialised matrix
(reduced_gram) for |G| <= G, checking that both paths give the same strategy.
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dphist._numeric.greedyh import (
    estimate_totals,
    greedy_h,
    implicit_gram,
    reduced_gram,
    strategy_answers,
    total_variances,
)

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def random_sizes(n: int, groups: int, rng: np.random.Generator) -> np.ndarray:
    """Sizes of a uniformly random partition of n bins into `groups` contiguous groups."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=groups - 1, replace=False))
    return np.diff(np.concatenate(([0], cuts, [n])))


def _status_kib(key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    if match is None:
        raise OSError(f"no {key} in {_STATUS}")
    return int(match.group(1))


def peak_extra_mib(run: Callable[[], object]) -> float | None:
    """Peak RSS reached while calling ``run`` minus the RSS before, in MiB."""
    gc.collect()
    try:
        before = _status_kib("VmRSS")
        _CLEAR_REFS.write_text("5")  # reset the peak RSS (VmHWM) to the current RSS
    except OSError:
        run()
        return None
    run()
    return (_status_kib("VmHWM") - before) / 1024.0


def child_peak(n: int, groups: int, workload: str) -> float | None:
    """:func:`peak_extra_mib` of one stage run in a new interpreter."""
    cmd = [sys.executable, __file__, "--n", str(n), "--peak-of", str(groups), workload]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return None if out[-1] == "n/a" else float(out[-1])


def stage(sizes: np.ndarray, workload: str, y: np.ndarray) -> tuple[float, ...]:
    """One run of the stage; returns the seconds of (total, gram, greedy_h, estimate)."""
    t0 = time.perf_counter()
    gram = implicit_gram(sizes, workload)
    t1 = time.perf_counter()
    strategy = greedy_h(gram)
    t2 = time.perf_counter()
    answers = y if y.size == strategy.n_queries else np.ones(strategy.n_queries)
    estimate_totals(strategy, answers)
    total_variances(strategy)
    t3 = time.perf_counter()
    return t3 - t0, t1 - t0, t2 - t1, t3 - t2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=32_768)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", type=int, nargs="+", default=[1_000, 4_000, 16_000])
    parser.add_argument("--dense-up-to", type=int, default=0)
    parser.add_argument("--peak-of", nargs=2, metavar=("GROUPS", "WORKLOAD"), help="internal")
    args = parser.parse_args()
    stage(np.array([1, 2, 3]), "all", np.ones(1))  # compile (or load) the kernels
    if args.peak_of:
        groups, workload = int(args.peak_of[0]), args.peak_of[1]
        sizes = random_sizes(args.n, groups, np.random.default_rng(groups))
        peak = peak_extra_mib(lambda: stage(sizes, workload, np.ones(1)))
        print("n/a" if peak is None else f"{peak:.3f}")
        return

    print(f"N = {args.n:,} bins, median of {args.repeats} runs, seconds; peak extra MiB")
    header = f"{'|G|':>6} {'workload':>8} {'total':>8} {'gram':>8} {'greedy_h':>9} {'estimate':>9}"
    header += f" {'peak MiB':>9} {'2 dense':>8}"
    if args.dense_up_to:
        header += f" {'dense greedy_h':>15}"
    print(header)
    for groups in args.groups:
        rng = np.random.default_rng(groups)
        sizes = random_sizes(args.n, groups, rng)
        for workload in ("all", "prefix"):
            # sanity: noiseless answers give back the totals
            strategy = greedy_h(implicit_gram(sizes, workload))
            totals = rng.integers(0, 1000, groups).astype(np.float64)
            back = estimate_totals(strategy, strategy_answers(strategy, totals))
            assert np.allclose(back, totals, rtol=1e-6, atol=1e-6 * totals.max())
            y = rng.laplace(size=strategy.n_queries)
            runs = [stage(sizes, workload, y) for _ in range(args.repeats)]
            med = [statistics.median(col) for col in zip(*runs, strict=True)]
            peak = child_peak(args.n, groups, workload)
            line = (
                f"{groups:>6} {workload:>8} {med[0]:>8.4f} {med[1]:>8.4f} {med[2]:>9.4f} "
                f"{med[3]:>9.4f} {'n/a' if peak is None else f'{peak:.1f}':>9} "
                f"{16 * groups**2 / 2**20:>8.0f}"
            )
            if args.dense_up_to and groups <= args.dense_up_to:
                dense = reduced_gram(sizes, workload)
                t0 = time.perf_counter()
                other = greedy_h(dense)
                line += f" {time.perf_counter() - t0:>15.3f}"
                assert np.array_equal(other.lo, strategy.lo)
                assert np.array_equal(other.hi, strategy.hi)
                assert np.allclose(other.weight, strategy.weight, rtol=1e-12, atol=0)
                del dense
            print(line, flush=True)


if __name__ == "__main__":
    main()
