"""How good is ``method="auto"``? Its regret against always using one fixed method.

:func:`dphist.methods.advisor.choose` picks a method from public facts only (N, ε, the
workload, a time budget) by the rules of Kellaris et al. 2017 §7.4 and SORTaki
§VII. This report measures what that choice costs against hindsight.

What is run
-----------
* Every registered method that runs in reasonable time on 65,536 bins
  (:data:`FIXED`, 32 methods) on every data set at ε = 0.01, 0.1 and 1. Left out:
  StructureFirst (it needs a public count bound per data set and takes about ten
  seconds per run on NetTrace) and the three S*+MM schemes (GreedyH over all ranges,
  a second per run on the large domains; Kellaris et al. ran them on small domains
  only and found them on no skyline, Table 2; the S*+PMM schemes stand for the
  fixed-query family).
* Five workloads scored on the same releases (:data:`WORKLOADS`): point queries,
  small ranges (lengths 1-10), big ranges (lengths 100-1000), all ranges and
  prefixes. The error is :func:`dphist.metrics.scaled_mse` (DPBench's scaled
  average per-query squared error; the scale cancels in every ratio below).
* ``auto``'s pick for each (data set, ε, workload) comes from ``choose(n, ε,
  workload)`` with the workload object itself. Its error in a cell is the error of
  the method it picked, measured on the same seeded runs as that method, so auto
  and the fixed methods are compared under common noise.

Regret
------
For a cell (data set, ε, workload) let ``e_m`` be method ``m``'s error averaged
over the trials. The regret of a strategy is ``e_m / min_k e_k``, the minimum
taken over the fixed methods that ran in that cell: 1 for the best fixed method,
and auto's regret is that of the method it picked (:func:`regrets`). A strategy's
summary is the mean, geometric mean, median and maximum of its regret over all
cells, and the share of cells where it is within 1.5 times of the best.

Data
----
Every real histogram of :data:`dphist.datasets.DATASETS` present on this machine
(the eight 4,096-bin DPBench ones, Search Log, NetTrace, Social Network) and two
seeded synthetic shapes (a step function and a seasonal series with spikes).
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import datasets as shared
from ... import workloads
from ..._io import atomic_write
from ...methods.advisor import choose
from .. import experiments as ex
from .claims import Claim, Finding, check
from .report import Report

__all__ = [
    "AUTO",
    "EPSILONS",
    "FAR",
    "FIXED",
    "NEAR",
    "WORKLOADS",
    "regret_summary",
    "regrets",
    "run",
]

EPSILONS = (0.01, 0.1, 1.0)

#: Workload label -> constructor name in :mod:`dphist.workloads` (and metric argument).
WORKLOADS: dict[str, str] = {
    "point": "identity",
    "small ranges": "small_ranges",
    "big ranges": "big_ranges",
    "all ranges": "all_ranges",
    "prefix": "prefix",
}

#: The always-one-method strategies: registered methods with default settings.
FIXED = (
    "identity", "uniform", "S1", "S~", "S2", "O+S1", "O+S~", "O+S2", "S1+PMM", "S~+PMM",
    "S2+PMM", "H", "S1+H", "S2+H", "HB", "Boost", "Privelet", "DAWA", "AHP", "SReB_GCA",
    "GAHP", "sGAHP", "stGAHP", "sDAHP", "sDWF", "DPC", "sDPC", "sDAWA", "NF", "GS", "P-HP",
    "EFPA",
)  # fmt: skip
_QUICK_FIXED = ("identity", "uniform", "S~", "S2", "S1+PMM", "H", "S2+H", "HB", "AHP")

AUTO = "auto"
#: "Near the best": regret at most this (the share of such cells is reported).
NEAR = 1.5
#: "Never far from the best": auto's regret stays at most this in every cell.
FAR = 2.0


# --------------------------------------------------------------------------- grid


def datasets(quick: bool, data_dir: Any = None) -> list[ex.Real | ex.Synthetic]:
    """The data sets to run: the shared ones found on this machine and two synthetic."""
    if quick:
        return [
            ex.Synthetic.make("piecewise_constant", 160, seed=5, segments=5, name="steps_160"),
            ex.Synthetic.make("spiky", 128, seed=3, name="spiky_128"),
        ]
    present = set(shared.available(data_dir))
    real = [ex.Real(name) for name in shared.DATASETS if name in present]
    synthetic = [
        ex.Synthetic.make(
            "piecewise_constant", 1024, seed=11, segments=12, max_level=60.0, name="steps_1024"
        ),
        ex.Synthetic.make(
            "spiky", 2048, seed=7, base=10.0, spikes=0.01, height=8.0, period=96, name="spiky_2048"
        ),
    ]
    return [*real, *synthetic]


def _metric(workload: str) -> ex.Metric:
    return ex.metric("scaled_mse", workload=WORKLOADS[workload])


def _size(spec: ex.Real | ex.Synthetic) -> int:
    if isinstance(spec, ex.Real):
        return shared.DATASETS[spec.name].bins
    return spec.n


def _choices(
    data: Sequence[ex.Real | ex.Synthetic], epsilons: Sequence[float]
) -> dict[tuple[str, float, str], tuple[ex.Method, str]]:
    """(data set, ε, workload) -> (auto's pick, its reason); public facts only."""
    out = {}
    for spec in data:
        n = _size(spec)
        for eps in epsilons:
            for label, name in WORKLOADS.items():
                method, params, reason = choose(n, eps, getattr(workloads, name)(n))
                out[(spec.label, eps, label)] = (ex.Method(method, params), reason)
    return out


# --------------------------------------------------------------------------- regret


def _method_label(method: ex.Method) -> str:
    if not method.params:
        return method.name
    inner = ",".join(f"{k}={v}" for k, v in sorted(method.params.items()))
    return f"{method.name}[{inner}]"


def regrets(
    errors: Mapping[str, float], fixed: Sequence[str], auto: str | None = None
) -> dict[str, float]:
    """Regret of each fixed method (and of auto's pick under ``"auto"``) in one cell.

    ``errors`` maps a method label to its mean error in the cell (NaN when it failed).
    The regret is ``error / best``, ``best`` the least error of the fixed methods that
    ran; a failed method's regret is NaN. With ``best = 0`` a zero error has regret 1
    and any other error infinity.
    """
    ok = [errors[m] for m in fixed if m in errors and math.isfinite(errors[m])]
    if not ok:
        return {}
    best = min(ok)

    def ratio(value: float) -> float:
        if not math.isfinite(value):
            return math.nan
        if best == 0:
            return 1.0 if value == 0 else math.inf
        return value / best

    out = {m: ratio(errors.get(m, math.nan)) for m in fixed}
    if auto is not None:
        out[AUTO] = ratio(errors.get(auto, math.nan))
    return out


def regret_summary(values: Sequence[float], near: float = NEAR) -> dict[str, float]:
    """Mean, geometric mean, median and max regret over cells, and the share within ``near``.

    NaN (failed) cells are left out. The geometric mean is the one average of ratios
    that a few huge outliers do not dominate; the mean is reported as asked of it.
    """
    ok = [v for v in values if not math.isnan(v)]
    if not ok:
        return dict.fromkeys(("mean", "geomean", "median", "max", "within"), math.nan)
    return {
        "mean": statistics.fmean(ok),
        "geomean": math.exp(statistics.fmean(math.log(v) for v in ok)) if min(ok) > 0 else 0.0,
        "median": statistics.median(ok),
        "max": max(ok),
        "within": sum(v <= near for v in ok) / len(ok),
    }


def _cells(
    rows: Sequence[Mapping[str, Any]],
    data: Sequence[ex.Real | ex.Synthetic],
    epsilons: Sequence[float],
    fixed: Sequence[str],
    choices: Mapping[tuple[str, float, str], tuple[ex.Method, str]],
) -> list[dict[str, Any]]:
    """One record per (data set, ε, workload): errors, regrets, auto's pick, the best."""
    means: dict[tuple[str, float, str, str], float] = {}
    for s in ex.summarise(rows, by=("dataset", "epsilon", "label", "method", "params")):
        label = _method_label(ex.Method(s["method"], _params(s["params"])))
        means[(s["dataset"], s["epsilon"], s["label"], label)] = s["value"]
    out = []
    for spec in data:
        for eps in epsilons:
            for wl in WORKLOADS:
                metric = _metric(wl).label
                pick, reason = choices[(spec.label, eps, wl)]
                pick_label = _method_label(pick)
                errors = {
                    m: means.get((spec.label, float(eps), metric, m), math.nan)
                    for m in dict.fromkeys([*fixed, pick_label])
                }
                reg = regrets(errors, fixed, pick_label)
                if not reg:
                    continue
                finite = {m: reg[m] for m in fixed if not math.isnan(reg[m])}
                best = min(finite, key=finite.get)
                out.append(
                    {
                        "dataset": spec.label,
                        "epsilon": float(eps),
                        "workload": wl,
                        "auto": pick_label,
                        "reason": reason,
                        "best": best,
                        "best_error": errors[best],
                        "errors": errors,
                        "regret": reg,
                    }
                )
    return out


def _params(text: str) -> dict[str, Any]:
    return json.loads(text) if text else {}


# --------------------------------------------------------------------------- figure


def _plot_regrets(
    per_strategy: Mapping[str, Sequence[float]], path: Path, title: str
) -> Path | None:
    """Box plot of regret per strategy (log scale), sorted by median; auto in red."""
    try:
        from ...plot import new_figure, save_figure

        fig, canvas = new_figure(size=(max(8.0, 0.32 * len(per_strategy) + 2.0), 5.2), bottom=0.2)
    except ImportError:
        return None
    names = sorted(
        per_strategy,
        key=lambda m: (statistics.median(per_strategy[m]) if per_strategy[m] else math.inf, m),
    )
    data = [np.clip(np.asarray(per_strategy[m], dtype=float), 1.0, 1e6) for m in names]
    ax = fig.add_subplot()
    box = ax.boxplot(data, whis=(0, 100), patch_artist=True, widths=0.6)
    for name, patch in zip(names, box["boxes"], strict=True):
        patch.set_facecolor("tab:red" if name == AUTO else "0.85")
    ax.set_yscale("log")
    ax.axhline(NEAR, color="tab:red", linewidth=0.8, linestyle="--", label=f"{NEAR:g}x the best")
    ax.set_xticks(range(1, len(names) + 1), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("regret: error / best fixed method's error")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", frameon=False)
    ax.set_title(title)
    return save_figure(fig, canvas, path)


# --------------------------------------------------------------------------- report


def _strategy_rows(cells: Sequence[Mapping[str, Any]], fixed: Sequence[str]) -> list[dict]:
    rows = []
    for m in (AUTO, *fixed):
        values = [c["regret"][m] for c in cells]
        s = regret_summary(values)
        rows.append(
            {
                "strategy": m,
                "mean regret": s["mean"],
                "geo-mean": s["geomean"],
                "median": s["median"],
                "max": s["max"],
                f"within {NEAR:g}x": s["within"],
                "best in cells": sum(c["best"] == m for c in cells) if m != AUTO else None,
                "failed cells": sum(math.isnan(v) for v in values),
            }
        )
    head, rest = (
        rows[0],
        sorted(rows[1:], key=lambda r: (_nan_last(r["mean regret"]), r["strategy"])),
    )
    head["best in cells"] = sum(c["regret"][AUTO] == 1.0 for c in cells)
    return [head, *rest]


def _nan_last(value: float) -> float:
    return math.inf if math.isnan(value) else value


def _by_workload(cells: Sequence[Mapping[str, Any]], fixed: Sequence[str]) -> list[dict]:
    rows = []
    for wl in WORKLOADS:
        sub = [c for c in cells if c["workload"] == wl]
        if not sub:
            continue
        means = {m: regret_summary([c["regret"][m] for c in sub])["mean"] for m in fixed}
        means = {m: v for m, v in means.items() if not math.isnan(v)}
        top = min(means, key=means.get)
        auto = regret_summary([c["regret"][AUTO] for c in sub])
        picks = sorted({c["auto"] for c in sub})
        rows.append(
            {
                "workload": wl,
                "cells": len(sub),
                "auto picks": ", ".join(picks),
                "auto mean regret": auto["mean"],
                "auto max": auto["max"],
                f"auto within {NEAR:g}x": auto["within"],
                "best fixed strategy here": top,
                "its mean regret": means[top],
                "most frequent winner": _mode([c["best"] for c in sub]),
            }
        )
    return rows


def _mode(values: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    top = max(counts.values())
    return ", ".join(f"{k} ({v})" for k, v in counts.items() if v == top)


def _cell_rows(cells: Sequence[Mapping[str, Any]], fixed: Sequence[str]) -> list[dict]:
    rows = []
    for c in cells:
        row: dict[str, Any] = {
            "data": c["dataset"],
            "ε": c["epsilon"],
            "workload": c["workload"],
            "auto picks": c["auto"],
            "best": c["best"],
            "best error": c["best_error"],
            "auto": c["regret"][AUTO],
        }
        row.update({m: c["regret"][m] for m in fixed})
        rows.append(row)
    return rows


def _reasons(cells: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c["auto"], c["workload"]), []).append(c)
    return [
        {
            "pick": pick,
            "workload": wl,
            "cells": len(sub),
            "mean regret": statistics.fmean(c["regret"][AUTO] for c in sub),
            "example": f"{sub[0]['dataset']}: {sub[0]['reason']}",
        }
        for (pick, wl), sub in groups.items()
    ]


@dataclass(frozen=True)
class Results:
    """What the claims read: the per-cell regrets and the fixed methods compared."""

    cells: Sequence[Mapping[str, Any]]
    fixed: Sequence[str]


def _never_far(r: Results) -> Finding:
    auto = regret_summary([c["regret"][AUTO] for c in r.cells])
    worst = max(r.cells, key=lambda c: _nan_last(c["regret"][AUTO]))
    ours = (
        f"max regret {auto['max']:.3g} ({worst['dataset']}, ε = {worst['epsilon']:g}, "
        f"{worst['workload']}: picks {worst['auto']}, best {worst['best']}); within "
        f"{NEAR:g}x in {auto['within']:.0%} of {len(r.cells)} cells"
    )
    held = auto["max"] <= FAR
    if held:
        return Finding(True, ours, f"at most {auto['max']:.3g}x")
    return Finding(
        False,
        ours,
        f"in {worst['dataset']} at ε = {worst['epsilon']:g} ({worst['workload']}) the rules "
        f"pick {worst['auto']} from public facts only, at {auto['max']:.3g}x the best",
    )


def _beats_every_fixed(r: Results) -> Finding:
    mean_auto = regret_summary([c["regret"][AUTO] for c in r.cells])["mean"]
    means = {m: regret_summary([c["regret"][m] for c in r.cells])["mean"] for m in r.fixed}
    beaters = sorted(
        (m for m, v in means.items() if not math.isnan(v) and v <= mean_auto),
        key=lambda m: means[m],
    )
    if beaters:
        ours = "; ".join(f"{m}: {means[m]:.3g}" for m in beaters)
        text = f"auto {mean_auto:.3g}; not above it: {ours}"
        return Finding(False, text, _why_beaten(r.cells, beaters[0]))
    runner = min((m for m in means if not math.isnan(means[m])), key=means.get)
    text = f"auto {mean_auto:.3g}; best always-one: {runner} {means[runner]:.3g}"
    return Finding(True, text, "auto lower than every fixed method")


#: The purpose of ``method='auto'`` as claims.
CLAIMS = (
    Claim("auto is never far from the best fixed method",
          "Kellaris et al. 2017 §7.4, SORTaki §VII (rules of choose)",
          f"rule: auto's error is at most {FAR:g} times the best fixed method's in every "
          "(data set, ε, workload) cell (mean error over the trials)", _never_far),
    Claim("auto beats every always-one method on average regret", "purpose of method='auto'",
          "mean over all cells of error / best fixed error", _beats_every_fixed),
)  # fmt: skip


def _why_beaten(cells: Sequence[Mapping[str, Any]], rival: str) -> str:
    """Where ``rival`` gains most on auto: the workload with the largest mean gap."""
    gaps = {}
    for wl in WORKLOADS:
        sub = [
            c
            for c in cells
            if c["workload"] == wl and not math.isnan(c["regret"][rival] + c["regret"][AUTO])
        ]
        if sub:
            gaps[wl] = (
                statistics.fmean(c["regret"][AUTO] - c["regret"][rival] for c in sub),
                sub,
            )
    wl = max(gaps, key=lambda k: gaps[k][0])
    _, sub = gaps[wl]
    picks = ", ".join(sorted({c["auto"] for c in sub}))
    a = statistics.fmean(c["regret"][AUTO] for c in sub)
    r = statistics.fmean(c["regret"][rival] for c in sub)
    return (
        f"{rival} gains most on {wl} queries: auto (picking {picks}) has mean regret {a:.3g} "
        f"there, {rival} {r:.3g}"
    )


# --------------------------------------------------------------------------- entry point


def _regret_sections(rep: Report, cells, fixed, data, missing, figdir: Path) -> None:
    """The setting, the regret per strategy (table and figure) and per workload."""
    about_data = ", ".join(f"`{d.label}` ({_size(d):,} bins)" for d in data)
    rep.section(
        "Setting",
        f"Data: {about_data}."
        + (f" Not found on this machine: {', '.join(missing)}." if missing else "")
        + "\n\nFor every (data set, ε, workload) cell, `choose(n, ε, workload)` names a "
        "method from public facts only; its error there is that method's error on the same "
        "seeded runs. Error: scaled MSE of the workload (DPBench), averaged over the trials. "
        "Regret = error / least error of the fixed methods in the cell. Fixed methods run "
        "with their registry defaults. Releases use seeded noise (not private) so the run "
        "can be repeated; raw rows: `results.csv`, per-cell regrets: `regret.csv`.",
    )
    rep.section(
        "Regret per strategy",
        f"Over {len(cells)} cells. *best in cells*: cells where the strategy is (or, for "
        "auto, picks) the best fixed method.",
    )
    rep.table(_strategy_rows(cells, fixed), floatfmt=".3g")
    per = {m: [c["regret"][m] for c in cells if not math.isnan(c["regret"][m])] for m in fixed}
    per[AUTO] = [c["regret"][AUTO] for c in cells if not math.isnan(c["regret"][AUTO])]
    fig = _plot_regrets(
        per,
        figdir / "regret_box.png",
        f"Regret per strategy over {len(cells)} cells "
        "(box: quartiles, whiskers: range, clipped at 10^6)",
    )
    if fig is None:
        rep.text("_matplotlib is not installed: figure skipped._")
    else:
        rep.figure(fig, "Regret distribution per strategy, sorted by median; auto in red")
    rep.section("Per workload", "Auto's regret and the best always-one method per workload.")
    rep.table(_by_workload(cells, fixed), floatfmt=".3g")


def run(
    out_dir: str | os.PathLike[str],
    *,
    trials: int = 10,
    workers: int = 1,
    quick: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    progress: bool = False,
) -> Path:
    """Run the comparison and write ``report.md``, ``regret.csv`` and a figure to ``out_dir``.

    ``quick=True`` runs nine methods on two tiny synthetic histograms with at most
    two trials (seconds). The full run publishes each of the 32 methods of
    :data:`FIXED` on every data set at three ε: about 60 CPU seconds per trial,
    dominated by NetTrace and Search Log, so 5 trials take about 3.5 minutes on two
    workers and the default 10 about 7. Raw rows go to ``out_dir/results.csv`` and a
    re-run resumes from it. The five workloads are scored on the same release of each
    run.
    """
    folder = Path(out_dir)
    figdir = folder / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    data, present = datasets(quick, data_dir), set(shared.available(data_dir))
    missing = [] if quick else [name for name in shared.DATASETS if name not in present]
    trials = min(trials, 2) if quick else trials
    fixed = _QUICK_FIXED if quick else FIXED
    choices = _choices(data, EPSILONS)
    extra = {_method_label(m): m for m, _ in choices.values() if _method_label(m) not in fixed}
    methods = [*(ex.Method(m) for m in fixed), *(extra[k] for k in sorted(extra))]
    rep = Report(
        "method='auto' against always-one-method",
        settings={
            "mode": "quick (synthetic data)" if quick else "full",
            "trials": trials,
            "epsilons": EPSILONS,
            "workloads": list(WORKLOADS),
            "fixed methods": len(fixed),
            "seed": seed,
            "workers": workers,
        },
    )
    rows = ex.run_grid(
        methods=methods,
        datasets=data,
        epsilons=EPSILONS,
        metrics=[_metric(w) for w in WORKLOADS],
        trials=trials,
        seed=seed,
        out=folder / "results.csv",
        workers=workers,
        progress=progress,
        data_dir=data_dir,
    )
    cells = _cells(rows, data, EPSILONS, fixed, choices)
    _write_csv(folder / "regret.csv", cells, fixed)

    _regret_sections(rep, cells, fixed, data, missing, figdir)
    check(rep, CLAIMS, Results(cells, fixed))
    rep.section(
        "Regret per cell",
        "Each fixed method's regret, and auto's (that of the method it picks).",
    )
    rep.table(_cell_rows(cells, fixed), floatfmt=".3g")
    rep.section("Auto's reasons", "Per pick and workload: how many cells, and one reason as given.")
    rep.table(_reasons(cells), floatfmt=".3g")
    failures = [s for s in ex.summarise(rows, by=("dataset", "method")) if s["failures"]]
    if failures:
        rep.section("Failures")
        rep.table(failures, ["dataset", "method", "failures", "runs"])
    return rep.write(folder)


def _write_csv(path: Path, cells: Sequence[Mapping[str, Any]], fixed: Sequence[str]) -> None:
    columns = ["dataset", "epsilon", "workload", "auto_pick", "best", "best_error", AUTO, *fixed]

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(columns)
            for c in cells:
                out.writerow(
                    [
                        c["dataset"],
                        repr(c["epsilon"]),
                        c["workload"],
                        c["auto"],
                        c["best"],
                        repr(c["best_error"]),
                        *(repr(c["regret"][m]) for m in (AUTO, *fixed)),
                    ]
                )

    atomic_write(path, write)
