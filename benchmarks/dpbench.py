"""CPU time of dphist's methods beside DPBench's counterparts, measured in one run.

Run: python benchmarks/dpbench.py [--dpbench PATH] [--dpbench-python PYTHON]
         [--methods identity,uniform,...] [--data nettrace_4096,search_logs,nettrace]
         [--epsilon 0.1] [--repeats 5] [--limit 60] [--secure] [--param METHOD:KEY=VALUE]
         [--calls 1] [--cpu K | --any-cpu]

``PATH`` (or the environment variable ``DPBENCH``) is a DPBench checkout, the folder
holding ``dpcomp_core/``, built as ``../shared/specs/dpbench-build.md`` says; its
interpreter is ``--dpbench-python`` (or ``DPBENCH_PYTHON``; default ``PATH/../venv/bin/
python``). Without a checkout only dphist's column is printed.

Both sides run on the same histogram, epsilon and seeds, interleaved (dphist, then
DPBench, per repeat) after one warm-up each: DPBench in its own process (its numpy,
through ``benchmarks/_dpbench_worker.py``), dphist in this one, each timed with
``time.process_time`` around the release alone. Figures are medians over
``--repeats``; ``speed`` is DPBench's time over dphist's. A repeat times one call on
each side, after the other side's (caches cold, as for a program that publishes
once); ``--calls K`` times K calls back to back per repeat on each side and gives the
time per call (a warm loop, as for a program publishing many histograms). Both sides
run on one CPU (``--cpu K``; default the first this process may use), so each side's
call always follows the other's on the same core: calls of a fraction of a millisecond
then give the same ratio run after run. ``--any-cpu`` leaves the placement to the
scheduler, which moves either side's time of such a call by up to 2x from run to run
(uniform at 4,096 bins: 0.96x to 2.10x in five runs, 1.69x to 1.90x pinned). dphist
uses seeded noise
like DPBench (``--secure``: the operating system's CSPRNG). A DPBench call over
``--limit`` seconds is stopped and shown as ``>limit``. The last columns give both
all-range mean squared errors as median [min-max] over the warm-up's and the repeats'
seeds: one run's error is a skewed quadratic form of the noise (DAWA at 4,096 bins,
epsilon 0.1: interquartile range 600-2,000 over 200 seeds), so one seed cannot rank
two methods. dphist's DAWA uses its certified partition; DPBench's (like dphist's
``noise="reference"``) is not epsilon-DP: ``--param DAWA:noise=reference`` compares
the published design on both sides (``--param`` sets one of dphist's method options,
repeatable; DPBench's side is unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dphist as dh
from dphist import datasets
from dphist.metrics import interval_mse

#: dphist methods with a DPBench counterpart (``_dpbench_worker.engine``).
COUNTERPARTS = ["HB", "AHP", "DAWA", "P-HP", "MWEM", "DPC", "DPCube", "DPCube-LS", "identity",
                "Privelet", "uniform", "Boost", "EFPA", "SF"]  # fmt: skip
DATA = ["nettrace_4096", "search_logs", "nettrace"]
WORKER = Path(__file__).with_name("_dpbench_worker.py")


class DPBench:
    """DPBench's algorithms in a worker process (restarted after a call over the limit)."""

    def __init__(self, checkout: Path, python: str, limit: float):
        self.checkout, self.python, self.limit = checkout, python, limit
        self.log = tempfile.mkdtemp(prefix="dpbench-log-")
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(self.checkout), "DPCOMP_CORE": str(self.checkout),
               "DPCOMP_LOG_PATH": self.log}  # fmt: skip
        return subprocess.Popen([self.python, str(WORKER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip

    def run(self, method: str, data: str, epsilon: float, seed: int, calls: int = 1) -> dict:
        if self.proc is None:
            self.proc = self._start()
        req = {"method": method, "data": data, "epsilon": epsilon, "seed": seed, "calls": calls}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=self.limit * calls):
            self.close()
            return {"failed": f">{self.limit:g} s"}
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            return {"failed": "DPBench's worker exited"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def spread(errors: list) -> str:
    """Median [min-max] of the finite errors, or ``-`` when there are none."""
    v = sorted(e for e in errors if np.isfinite(e))
    if not v:
        return f"{'-':>25}"
    return f"{statistics.median(v):9.4g} [{v[0]:.2g}-{v[-1]:.2g}]".rjust(25)


def parse_params(items: list[str]) -> dict[str, dict]:
    """``METHOD:KEY=VALUE`` options -> {method name: {key: value}}; numbers become numbers."""
    out: dict[str, dict] = {}
    for item in items:
        method, sep, setting = item.partition(":")
        key, eq, value = setting.partition("=")
        if not (sep and eq and method and key):
            raise SystemExit(f"--param wants METHOD:KEY=VALUE, got {item!r}")
        for cast in (int, float, str):
            try:
                parsed = cast(value)
                break
            except ValueError:
                continue
        try:
            name = dh.get_method(method).name
        except dh.errors.UnknownMethodError as exc:
            raise SystemExit(f"--param: {exc}") from None
        out.setdefault(name, {})[key] = parsed
    return out


PARAMS: dict[str, dict] = {}


def dphist_seconds(
    method: str, x: np.ndarray, epsilon: float, seed: int | None, calls: int = 1
) -> tuple:
    """CPU seconds per call of ``calls`` releases back to back (seeds ``seed``, then
    ``seed * calls + k``), and the first release's estimate."""
    info = dh.get_method(method)
    params = {**info.example, **PARAMS.get(info.name, {})}
    start = time.process_time()
    rel = dh.publish(x, epsilon=epsilon, method=info.name, rng=seed, **params)
    for k in range(1, calls):
        more = None if seed is None else seed * calls + k
        dh.publish(x, epsilon=epsilon, method=info.name, rng=more, **params)
    return (time.process_time() - start) / calls, rel.estimate


def fmt_seconds(s: float) -> str:
    return f"{s * 1e3:9.2f} ms" if s < 1 else f"{s:9.2f} s "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpbench", default=os.environ.get("DPBENCH"))
    parser.add_argument("--dpbench-python", default=os.environ.get("DPBENCH_PYTHON"))
    parser.add_argument("--methods", default=",".join(COUNTERPARTS))
    parser.add_argument("--data", default=",".join(DATA))
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--secure", action="store_true", help="dphist with secure noise")
    parser.add_argument("--calls", type=int, default=1, help="calls back to back per repeat")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--cpu", type=int, help="the CPU both sides run on (default: the first)")
    where.add_argument("--any-cpu", action="store_true", help="let the scheduler place them")
    parser.add_argument("--param", action="append", default=[], metavar="METHOD:KEY=VALUE",
                        help="a dphist method option (repeatable)")  # fmt: skip
    args = parser.parse_args()
    PARAMS.update(parse_params(args.param))
    if args.any_cpu or not hasattr(os, "sched_setaffinity"):  # pinning is Linux's
        args.cpu = None
    else:
        args.cpu = min(os.sched_getaffinity(0)) if args.cpu is None else args.cpu
        os.sched_setaffinity(0, {args.cpu})  # DPBench's worker, started below, inherits it

    bench = None
    if args.dpbench:
        checkout = Path(args.dpbench).resolve()
        python = args.dpbench_python or str(checkout.parent / "venv" / "bin" / "python")
        bench = DPBench(checkout, python, args.limit)
    else:
        print("no DPBench checkout given (--dpbench or DPBENCH): dphist's column only\n")
    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    folder = tempfile.mkdtemp(prefix="dpbench-data-")
    tables = []
    for name in args.data.split(","):
        x = datasets.load(name.strip())
        path = os.path.join(folder, f"{name}.npy")
        np.save(path, x.astype(np.int64))
        tables.append((name, x, path))

    mode = "secure" if args.secure else "seeded"
    loop = "one call" if args.calls == 1 else f"per call of {args.calls} back to back"
    pinned = "" if args.cpu is None else f"; both on CPU {args.cpu}"
    print(f"CPU seconds ({loop}), epsilon {args.epsilon:g}, median of {args.repeats} after a "
          f"warm-up; dphist {mode}; speed = DPBench / dphist; all-range MSE median [min-max] over "
          f"seeds 0-{args.repeats}{pinned}")  # fmt: skip
    speeds: list[tuple[str, str, float | None]] = []
    for name, x, path in tables:
        print(f"\n{name} ({x.size:,} bins)")
        print(f"  {'method':10} {'dphist':>12} {'DPBench':>12} {'speed':>9}   "
              f"{'MSE dphist':>25} {'MSE DPBench':>25}")  # fmt: skip
        for method in names:
            row, speed = measure(method, x, path, args, bench)
            speeds.append((method, name, speed))
            print("  " + row, flush=True)
    if bench is not None:
        bench.close()
        print(target_summary(speeds))


def target_summary(speeds: list[tuple[str, str, float | None]]) -> str:
    """The target (every method at least as fast as DPBench's counterpart, speed >= 1)
    checked on this run's medians: the rows below it, or that all meet it."""
    below = [f"{m} on {d} ({s:.2f}x)" for m, d, s in speeds if s is not None and s < 1]
    unknown = [f"{m} on {d}" for m, d, s in speeds if s is None]
    done = len(speeds) - len(unknown)
    text = f"\ntarget speed >= 1.00x: met by {done - len(below)} of {done} rows"
    if below:
        text += "; below: " + ", ".join(below)
    if unknown:
        text += "; no figure for DPBench: " + ", ".join(unknown)
    return text


def measure(
    method: str, x: np.ndarray, path: str, args, bench: DPBench | None
) -> tuple[str, float | None]:
    """One row of the table and its speed (None without DPBench's time; a DPBench call
    stopped at the limit counts as the limit)."""
    seed = lambda r: None if args.secure else r  # noqa: E731
    _, est = dphist_seconds(method, x, args.epsilon, seed(0))  # warm-up, and the error
    ours_err, theirs_err, their_times, failed = [interval_mse(x, est)], [], [], ""
    if bench is not None:
        warm = bench.run(method, path, args.epsilon, 0)
        failed = warm.get("failed", "")
        theirs_err.append(warm.get("error", float("nan")))
    ours = []
    for r in range(args.repeats):
        seconds, est = dphist_seconds(method, x, args.epsilon, seed(r + 1), args.calls)
        ours.append(seconds)
        ours_err.append(interval_mse(x, est))
        if bench is not None and not failed:
            reply = bench.run(method, path, args.epsilon, r + 1, args.calls)
            failed = reply.get("failed", "")
            their_times.append(reply.get("seconds", float("nan")))
            theirs_err.append(reply.get("error", float("nan")))
    mine = statistics.median(ours)
    ratio = None
    if bench is None:
        theirs, speed = f"{'-':>12}", f"{'-':>9}"
    elif failed:
        theirs, speed = f"{failed[:12]:>12}", f"{'-':>9}"
        if failed.startswith(">"):
            ratio = args.limit / mine
            speed = f"{'>' + format(ratio, '.0f') + 'x':>9}"
    else:
        t = statistics.median(their_times)
        ratio = t / mine
        theirs, speed = fmt_seconds(t), f"{ratio:8.2f}x"
    errors = f"{spread(ours_err)} {spread(theirs_err)}"
    return f"{method:10} {fmt_seconds(mine)} {theirs} {speed}   {errors}", ratio


if __name__ == "__main__":
    sys.exit(main())
