"""Reproduction of Kellaris, Papadopoulos, Xiao, Papadias, *Differentially Private Event
Sequences over Infinite Streams* (PVLDB 7(12) 2014), its experiments, and of the continual
counters' error claim (Henzinger, Upadhyay, Upadhyay, SODA 2023; Fichtenberger,
Henzinger, Upadhyay, ICML 2023).

What is run
-----------
* **w-event.** Uniform, Sample, Budget Distribution (BD) and Budget Absorption (BA)
  (:mod:`dphist.streams.wevent`) at ``epsilon = 1`` for ``w`` in :data:`W_GRID` on:
  search_logs (``searchlogs_4096`` as a stream of 4,096 windows of one count),
  nettrace (the 65,536-value trace cut in time into 16 windows of 4,096 bins) and
  synthetic one-count streams of the paper's three shapes (linear, sinusoidal,
  logistic; 1,000 windows, values in the thousands) with Gaussian jitter of standard
  deviation 50 (rough) and 5 (smooth). Error: mean absolute error per count over the
  whole stream, mean over trials. Each stream is described by what decides the
  ordering: its mean change per count from one window to the next against the error
  ``w/epsilon`` of a uniform publication and the scale ``2w/(epsilon d)`` of BD/BA's
  private test over ``d`` bins.
* **Counters.** The largest expected (root-mean-square) error of a running total over
  ``T = 2**8 .. 2**20`` windows, square-root factorization against the binary tree
  (Honaker's estimate), under rho-zCDP (rho = 1/2) and pure epsilon = 1: exact, from
  the closed forms :mod:`dphist.streams.counters` derives (no data, no noise).

Noise is seeded for repeatability (these releases are not private). Raw rows go to
``results.csv``; an existing file with the same settings is reused.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import datasets as ds
from ..._io import atomic_write
from ...plot import new_figure, save_figure
from ...streams import WEVENT, largest_error, stream
from .claims import check
from .report import Report
from .streams_claims import CLAIMS, Results

__all__ = ["EPSILON", "SHAPES", "W_GRID", "Stream", "datasets", "run", "synthetic"]

EPSILON = 1
W_GRID = (10, 40)
SHAPES = ("linear", "sinusoidal", "logistic")
JITTER = {"rough": 50.0, "smooth": 5.0}
_COLUMNS = ("stream", "w", "mechanism", "trial", "mae", "published")


@dataclass(frozen=True, eq=False)
class Stream:
    """A stream of windows: ``counts`` has one row per window, one column per bin."""

    name: str
    counts: np.ndarray
    source: str

    @property
    def drift(self) -> float:
        """Mean absolute change per count from one window to the next."""
        c = self.counts.astype(np.float64)
        return float(np.mean(np.abs(np.diff(c, axis=0)))) if len(c) > 1 else 0.0


def synthetic(shape: str, windows: int, jitter: float, seed: int) -> np.ndarray:
    """A one-count stream of the paper's ``shape`` (linear, sinusoidal, logistic) with
    Gaussian jitter of standard deviation ``jitter``; shape ``(windows, 1)``."""
    x = np.arange(windows) / windows
    base = {
        "linear": 1000 + 4000 * x,
        "sinusoidal": 3000 + 2000 * np.sin(2 * np.pi * 4 * x),
        "logistic": 1000 + 4000 / (1 + np.exp(-20 * (x - 0.5))),
    }[shape]
    noise = np.random.default_rng(seed).normal(0, jitter, windows)
    return np.maximum(np.rint(base + noise), 0).astype(np.int64)[:, None]


def datasets(quick: bool, data_dir: Any = None, seed: int = 7) -> list[Stream]:
    """The streams (tiny when ``quick``); the shared ones only where the data are found."""
    out = []
    have = set(ds.available(data_dir))
    if "searchlogs_4096" in have:
        logs = ds.load("searchlogs_4096", data_dir=data_dir)
        logs = logs[2048:2080] if quick else logs
        out.append(Stream("search_logs", logs[:, None], f"searchlogs_4096, {logs.size} windows"))
    if "nettrace" in have:
        trace = ds.load("nettrace", data_dir=data_dir)
        cut = trace[: 4 * 256].reshape(4, 256) if quick else trace.reshape(16, -1)
        out.append(Stream("nettrace", cut, f"nettrace cut into {len(cut)} windows"))
    jitters = {"rough": JITTER["rough"]} if quick else JITTER
    for shape in SHAPES:
        for label, sd in jitters.items():
            counts = synthetic(shape, 40 if quick else 1000, sd, seed)
            out.append(Stream(f"{shape} ({label})", counts, f"synthetic, jitter sd {sd:g}"))
    return out


def _cell(task: tuple[Stream, int, str, int]) -> dict[str, Any]:
    """One run of one mechanism on one stream; pure in its arguments."""
    data, w, mechanism, trial = task
    run = stream(list(data.counts), epsilon=EPSILON, mechanism=mechanism, w=w, rng=trial)
    out = list(run)
    est = np.array([r.estimate for r in out], dtype=np.float64)
    published = sum(r.kind == "published" for r in out) / len(out)
    if any(e.span > EPSILON for e in run.ledger):  # the ledger's cap makes this impossible
        raise AssertionError(f"{mechanism} spent more than epsilon over {w} windows")
    mae = float(np.mean(np.abs(est - data.counts)))
    return {
        "stream": data.name,
        "w": w,
        "mechanism": mechanism,
        "trial": trial,
        "mae": mae,
        "published": published,
    }


def _grid(streams, trials: int, workers: int) -> list[dict[str, Any]]:
    tasks = [(s, w, m, t) for s in streams for w in W_GRID for m in WEVENT for t in range(trials)]
    if workers <= 1:
        return [_cell(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_cell, tasks, chunksize=4))


def _cached(path: Path, streams, trials: int) -> list[dict[str, Any]] | None:
    """Rows of an earlier run with the same streams and trials, else None."""
    if not path.exists():
        return None
    with open(path, encoding="utf-8", newline="") as fh:
        rows = [
            {
                **r,
                "w": int(r["w"]),
                "trial": int(r["trial"]),
                "mae": float(r["mae"]),
                "published": float(r["published"]),
            }
            for r in csv.DictReader(fh)
        ]
    want = {
        (s.name, w, m, t) for s in streams for w in W_GRID for m in WEVENT for t in range(trials)
    }
    got = {(r["stream"], r["w"], r["mechanism"], r["trial"]) for r in rows}
    return rows if got == want else None


def _write(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)

    atomic_write(path, write)


def counter_errors(powers: Sequence[int]) -> list[dict[str, Any]]:
    """Largest expected error of a running total, factorization and tree, per horizon."""
    rows = []
    for p in powers:
        t = 1 << p
        row: dict[str, Any] = {"T": f"2^{p}"}
        for definition, amount in (("zcdp", 0.5), ("pure", 1)):
            f, b = (largest_error(k, t, amount, definition) for k in ("factorization", "tree"))
            row |= {
                f"{definition} factorization": f,
                f"{definition} tree": b,
                f"{definition} ratio": f / b,
            }
        rows.append(row)
    return rows


def _figure(rep: Report, res: Results, figdir: Path) -> None:
    fig, canvas = new_figure((8.0, 4.8), bottom=0.3)
    ax = fig.add_subplot(1, 1, 1)
    names = list(res.streams)
    w = max(W_GRID)
    for k, mech in enumerate(WEVENT):
        ratios = [res.mae(s, w, mech) / res.mae(s, w, "uniform") for s in names]
        ax.bar(np.arange(len(names)) + (k - 1.5) * 0.2, ratios, width=0.2, label=mech)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel(f"MAE / uniform's (w = {w})")
    ax.set_title(f"w-event mechanisms at epsilon {EPSILON}, w = {w}: error relative to uniform")
    ax.legend()
    path = save_figure(fig, canvas, figdir / "wevent_vs_uniform.png")
    rep.figure(path, f"Mean absolute error per count relative to uniform's, w = {w}")


def _tables(rep: Report, res: Results) -> None:
    rows = []
    for s in res.streams.values():
        for w in W_GRID:
            row = {"stream": s.name, "w": w}
            row |= {m: res.mae(s.name, w, m) for m in WEVENT}
            row["best"] = res.best(s.name, w)
            row |= {f"{m} published": f"{res.published(s.name, w, m):.0%}" for m in ("bd", "ba")}
            rows.append(row)
    rep.table(
        rows,
        caption=f"Mean absolute error per count at epsilon {EPSILON} (mean over "
        f"{res.trials} trials) and the share of windows BD and BA published",
    )
    zeros = [
        f"{m.upper()} on {s.name} (w={w})"
        for s in res.streams.values()
        for w in W_GRID
        for m in ("bd", "ba")
        if res.published(s.name, w, m) == 0
    ]
    if zeros:
        rep.text(
            "Published no window: " + ", ".join(zeros) + ". Such a run releases the all-zero "
            "prior throughout (no window's change beat the error of its publication budget): "
            "its error is the stream's mean count, which wins where counts are mostly zero."
        )
    rep.table(
        [
            {
                "stream": s.name,
                "source": s.source,
                "windows": len(s.counts),
                "bins d": s.counts.shape[1],
                "mean count": float(s.counts.mean()),
                "mean change per count": s.drift,
                **{f"w/eps (w={w})": w / EPSILON for w in W_GRID},
                **{f"2w/(eps d) (w={w})": 2 * w / (EPSILON * s.counts.shape[1]) for w in W_GRID},
            }
            for s in res.streams.values()
        ],
        caption="What decides the ordering: each stream's change per window against the "
        "error of a uniform publication (w/eps) and the noise scale of the private test",
    )


def run(
    out_dir: Any,
    *,
    trials: int = 5,
    workers: int = 2,
    quick: bool = False,
    data_dir: Any = None,
    seed: int = 7,
) -> Path:
    """Run the streams, check the claims, write ``out_dir/report.md``; its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trials = min(trials, 2) if quick else trials
    streams = datasets(quick, data_dir, seed)
    csv_path = out / "results.csv"
    rows = _cached(csv_path, streams, trials)
    if rows is None:
        rows = _grid(streams, trials, workers)
        _write(rows, csv_path)
    powers = (8, 10) if quick else tuple(range(8, 21, 2))
    res = Results(rows, {s.name: s for s in streams}, trials, counter_errors(powers), EPSILON)
    rep = Report(
        "Kellaris, Papadopoulos, Xiao, Papadias (PVLDB 2014): w-event privacy; continual counts",
        settings={
            "epsilon": EPSILON,
            "w": list(W_GRID),
            "trials": trials,
            "seed": seed,
            "quick": quick,
            "streams": [s.name for s in streams],
        },
    )
    check(rep, CLAIMS, res)
    rep.section(
        "w-event mechanisms",
        "Uniform spends epsilon/w on every window; Sample spends epsilon on every w-th and "
        "repeats it; BD and BA spend half of epsilon on a private test of the change since "
        "the last release and publish (with the rest, distributed or absorbed) only when the "
        "change exceeds the error of publishing. Where a stream moves by more than w/epsilon "
        "per count from one window to the next, a repeated release is further from the truth "
        "than a fresh uniform publication; where it moves by less than the test's noise "
        "2w/(epsilon d), the test cannot see the change. Raw rows: `results.csv`.",
    )
    _tables(rep, res)
    _figure(rep, res, out)
    rep.section(
        "Continual counts",
        "Largest expected error of a running total over the horizon T (root mean square, "
        "exact closed forms): the square-root factorization against the binary tree with "
        "Honaker's estimate, at rho = 1/2 (zCDP, discrete Gaussian) and epsilon = 1 (pure, "
        "discrete Laplace). Under zCDP the factorization's noise is set by its largest column's "
        "squared L2 norm, which grows like ln(T)/pi; under pure epsilon by its L1 norm, which "
        "grows like 2 sqrt(T/pi); the tree's sensitivity is log2(T) + 1 in both.",
    )
    rep.table(res.counters, floatfmt=".4g")
    return rep.write(out)
