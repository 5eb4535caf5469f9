"""Reproduction of Doudalis and Mehrotra, "SORTaki: a framework to integrate sorting
with differential private histogramming algorithms", §VI-§VII (Tables III-IX).

Error measure (§VI, Definition VI.1)
------------------------------------
The scaled average per-query error with squared loss: ``sum_q (y~_q - y_q)^2 / (s q)``
for a workload of ``q`` range queries on a histogram of scale ``s`` (total count),
:func:`dphist.metrics.scaled_mse`. Workloads: *identity* (every bin) for the
categorical tables III-IV, *small ranges* (every range of length 1..10) for V, VI,
VIII, IX and *big ranges* (lengths 100, 200, ..., 1000) for VII.

Identity in closed form
-----------------------
Independent noise of variance ``V`` per bin gives a range of length ``L`` the error
variance ``L V``, so Identity's expected scaled error is exactly
``V * mean_q(|q|) / s`` with ``mean_q(|q|) = sum_L L (n-L+1) / sum_L (n-L+1)``
(:func:`identity_scaled_error`). With the paper's Laplace noise ``V = 2/ε²``; this
library adds discrete Laplace noise, ``V = 2p/(1-p)²`` with ``p = e^-ε``. The first
reproduces every Identity row of Tables III-IX from the domain and scale of
Table I; the second is what our simulated Identity must match.

Data
----
The paper's data sets are larger (48K-500K bins) than ours (1,024-65,536). We keep
the paper's *records per bin* (its scale divided by its domain), drawing that many
records from each shape with DPBench's generator (:func:`dphist.synthetic.resample`),
as the paper does. Per-bin signal to noise, which decides how much grouping and
sorting gain, is then the paper's; the scaled error's ``1/s`` factor is not, so
tables compare errors *relative to Identity in the same column* (scale-free).

* *MD-Sal-Orig*, *MD-Sal*: DPBench's 4,096-bin Maryland salary histogram.
* *IPUMS-Inc*: DPBench's 4,096-bin IPUMS income histogram.
* *Bid-IP*: DPBench's 4,096-bin bids per IP address (unordered); *Bid-Freq*: the
  same shape ordered by decreasing frequency, as the paper defines it.
* *NetTrace*: the first 1,024 bins of DPBench's NetTrace (all of its mass), scale
  100K: the paper's recipe.
* *Amazon* and *Wage-Per-Hour* are not available: seeded stand-ins
  (:func:`amazon_like`, :func:`wage_like`) with the described shapes.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ... import datasets as shared
from ... import synthetic
from ...errors import ValidationError
from ...plot import plot_error_vs_epsilon
from .. import experiments as ex
from .claims import check
from .report import Report
from .sortaki_claims import CLAIMS, Results
from .sortaki_tables import (
    BIG,
    GAMMAS,
    NAMES,
    PAPER_DATA,
    PAPER_TABLES,
    SHAPE_METHODS,
    SMALL,
    WORKLOAD_LENGTHS,
    PaperTable,
    restrict,
)

__all__ = [
    "BIG",
    "CLAIMS",
    "GAMMAS",
    "PAPER_DATA",
    "PAPER_TABLES",
    "SMALL",
    "WORKLOAD_LENGTHS",
    "amazon_like",
    "datasets",
    "identity_scaled_error",
    "mean_query_length",
    "run",
    "wage_like",
]

# --------------------------------------------------------------------------- closed form


def mean_query_length(n: int, lengths: Sequence[int]) -> float:
    """Mean length of the ranges of a workload holding every range of each length, at
    every position, on ``n`` bins (lengths above ``n`` contribute no range)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValidationError(f"n must be a positive int, got {n!r}")
    ls = np.array([x for x in lengths if 1 <= x <= n], dtype=np.float64)
    if ls.size == 0:
        raise ValidationError("the workload has no range of a length between 1 and n")
    count = n - ls + 1
    return float(np.sum(ls * count) / np.sum(count))


def identity_scaled_error(
    n: int, scale: float, epsilon: float, lengths: Sequence[int], *, noise: str = "laplace"
) -> float:
    """Expected scaled average per-query error of Identity (SORTaki Def. VI.1, squared loss).

    Independent per-bin noise of variance ``V`` gives a range of length ``L`` the
    squared error ``L V`` in expectation, hence ``V * mean_q |q| / scale``. ``noise``
    picks ``V``: ``"laplace"`` (the paper's, ``2/ε²``) or ``"discrete"`` (this
    library's discrete Laplace of scale ``1/ε``, ``2p/(1-p)²`` with ``p = e^-ε``).
    """
    eps = float(Fraction(str(epsilon)))
    if not (eps > 0 and math.isfinite(eps)):
        raise ValidationError(f"epsilon must be positive and finite, got {epsilon!r}")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValidationError(f"scale must be positive and finite, got {scale!r}")
    if noise == "laplace":
        var = 2.0 / eps**2
    elif noise == "discrete":
        p = math.exp(-eps)
        var = 2.0 * p / (1.0 - p) ** 2
    else:
        raise ValidationError(f"noise must be 'laplace' or 'discrete', got {noise!r}")
    return var * mean_query_length(n, lengths) / float(scale)


# --------------------------------------------------------------------------- data


def amazon_like(n: int = 16_384, seed: int = 548_552) -> np.ndarray:
    """A stand-in shape for SORTaki's *Amazon* (reviews per product), not available here.

    Heavy-tailed counts (discrete Pareto, tail index 1.1: most products have a few
    reviews, a few have thousands), a third of the products without reviews, in a
    random order (products by identifier), so the shape is "random" in the paper's
    sense. Returned as counts to be resampled to the wanted scale.
    """
    gen = np.random.default_rng(seed)
    counts = np.floor(gen.pareto(1.1, size=n) * 3.0).astype(np.int64)
    counts[gen.random(n) < 1 / 3] = 0
    return np.minimum(counts, 2**30)


def wage_like(n: int = 1024, seed: int = 1994) -> np.ndarray:
    """A stand-in shape for SORTaki's *Wage-Per-Hour* (first 1,024 values), not available.

    Wage per hour in cents: a large mass at 0 (no hourly wage), spikes at round
    amounts (multiples of 100, 50 and 25 cents, in decreasing height) and a sparse
    irregular floor, so neighbouring bins differ a lot ("random" shape, Table I's
    many bins). Returned as weights to be resampled to the wanted scale.
    """
    gen = np.random.default_rng(seed)
    idx = np.arange(n)
    w = np.where(gen.random(n) < 0.3, gen.exponential(1.0, size=n), 0.0)
    w += np.where(idx % 25 == 0, 6.0, 0.0) * gen.uniform(0.5, 1.5, size=n)
    w += np.where(idx % 50 == 0, 12.0, 0.0) * gen.uniform(0.5, 1.5, size=n)
    w += np.where(idx % 100 == 0, 30.0, 0.0) * gen.uniform(0.5, 1.5, size=n)
    w[0] = 0.5 * w.sum()
    return np.rint(w * 1000).astype(np.int64)


@dataclass(frozen=True)
class Data:
    """A data set of the paper, our stand-in spec and a provenance note."""

    paper: str
    spec: ex.Given
    note: str


def _scaled(shape: np.ndarray, paper: str, seed: int) -> tuple[np.ndarray, int]:
    domain, scale = PAPER_DATA[paper]
    records = round(scale * shape.size / domain)
    return synthetic.resample(shape, records, rng=seed), records


def datasets(quick: bool, data_dir: str | os.PathLike[str] | None = None) -> dict[str, Data]:
    """Our version of each of the paper's data sets, by the paper's name."""
    if quick:
        base = synthetic.sparse_power_law(128, density=0.3, rng=3)
        rand = amazon_like(128, seed=1)
        out = {}
        for name, shape in (
            ("Amazon", rand),
            ("Bid-IP", rand[::-1].copy()),
            ("Bid-Freq", np.sort(rand)[::-1].copy()),
            ("MD-Sal-Orig", base),
            ("MD-Sal", base),
            ("IPUMS-Inc", base[::-1].copy()),
            ("Wage-Per-Hour", wage_like(128)),
            ("NetTrace", np.sort(base)[::-1].copy()),
        ):
            counts = synthetic.resample(shape, 20 * shape.size, rng=7)
            label = f"{name.lower()}_quick_{shape.size}"
            out[name] = Data(name, ex.Given(label, counts), "quick synthetic stand-in")
        return out

    def real(name: str) -> np.ndarray:
        return shared.load(name, data_dir=data_dir)

    md = real("md_salary_4096")
    ipums = real("ipums_income_4096")
    bid = real("bids_all_4096")
    net = real("nettrace_4096")[:1024]
    shapes = {
        "Amazon": (amazon_like(), "stand-in (not available): random-order heavy-tailed shape"),
        "Bid-IP": (bid, "DPBench bids_all_4096 shape (unordered)"),
        "Bid-Freq": (np.sort(bid)[::-1].copy(), "the same shape, by decreasing frequency"),
        "MD-Sal-Orig": (md, "DPBench md_salary_4096 shape"),
        "MD-Sal": (md, "DPBench md_salary_4096 shape"),
        "IPUMS-Inc": (ipums, "DPBench ipums_income_4096 shape"),
        "Wage-Per-Hour": (wage_like(), "stand-in (not available): spikes at round wages"),
        "NetTrace": (net, "first 1,024 bins of DPBench nettrace_4096 (all its records)"),
    }
    out = {}
    for i, (name, (shape, note)) in enumerate(shapes.items()):
        counts, records = _scaled(shape, name, seed=1000 + i)
        label = f"{name.lower()}_{shape.size}_{records}"
        text = f"{note}; {shape.size:,} bins, {records:,} records drawn"
        out[name] = Data(name, ex.Given(label, counts), text)
    return out


# --------------------------------------------------------------------------- grid


def _method(name: str, gamma: float) -> ex.Method:
    if name == "Identity":
        return ex.Method("identity")
    if name == "DAWA":
        return ex.Method("DAWA")
    return ex.Method(name, {"gamma_in": gamma})


def _metric(workload: str) -> ex.Metric:
    return ex.metric("scaled_mse", workload=workload)


def _plan(tables: Sequence[PaperTable]) -> dict[str, tuple[list, set, set]]:
    """Per data set: the methods, ε values and workloads of every table using it.

    Each data set runs as one rectangular grid (the union of its tables' cells); the
    few extra cells this adds are cheap and keep worker start-up to one per data set.
    """
    plan: dict[str, tuple[dict, set, set]] = {}
    for t in tables:
        for data, eps, gamma in t.columns:
            methods, epsilons, workloads = plan.setdefault(data, ({}, set(), set()))
            epsilons.add(eps)
            workloads.add(t.workload)
            for m in t.rows:
                spec = _method(m, gamma)
                methods[(spec.name, spec.params_text)] = spec
    return {k: (list(m.values()), e, w) for k, (m, e, w) in plan.items()}


def _run(data: Mapping[str, Data], tables, *, trials, workers, seed, out, progress) -> list:
    rows = []
    for name, (methods, epsilons, workloads) in _plan(tables).items():
        rows += ex.run_grid(
            methods=methods,
            datasets=[data[name].spec],
            epsilons=sorted(epsilons, reverse=True),
            metrics=[_metric(w) for w in sorted(workloads)],
            trials=trials,
            seed=seed,
            out=out,
            workers=workers,
            progress=progress,
        )
    return ex.unique_rows(rows)


def _cells(rows) -> dict[tuple[str, str, str, float, str], list[float]]:
    """(dataset label, method, params, ε, metric args) -> values over trials."""
    out: dict[tuple[str, str, str, float, str], list[float]] = {}
    for r in rows:
        if r["error"] or not math.isfinite(r["value"]):
            continue
        key = (r["dataset"], r["method"], r["params"], r["epsilon"], r["metric_args"])
        out.setdefault(key, []).append(r["value"])
    return out


def _ours(cells, data: Data, name: str, eps: float, gamma: float, workload: str) -> list[float]:
    m = _method(name, gamma)
    key = (data.spec.label, m.name, m.params_text, float(eps), _metric(workload).args_text)
    return cells.get(key, [])


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


# --------------------------------------------------------------------------- report parts


def _identity_section(rep: Report, data, tables, cells) -> dict[str, Any]:
    rep.section(
        "Identity in closed form",
        "Expected scaled error of Identity = V · mean query length / s. *Paper setting*: "
        "Laplace noise (V = 2/ε²) with the domain and scale of Table I; it should equal "
        "the printed Identity row up to rounding. *Our setting*: discrete Laplace "
        "(V = 2p/(1-p)², p = e^-ε) on our domain and scale, against the mean of our "
        "simulated Identity (± 3 standard errors over the trials). Values in the "
        "table's error scale.",
    )
    rows, paper_ok, sim_ok, sim_total = [], 0, 0, 0
    seen = set()
    for t in tables:
        lengths = WORKLOAD_LENGTHS[t.workload]
        for j, (name, eps, _gamma) in enumerate(t.columns):
            if (t.number, name, eps) in seen:
                continue
            seen.add((t.number, name, eps))
            domain, scale = PAPER_DATA[name]
            closed = identity_scaled_error(domain, scale, eps, lengths) / t.error_scale
            printed = t.rows["Identity"][j]
            match = abs(closed - printed) <= 0.005 + 1e-9
            paper_ok += match
            d = data[name]
            vals = _ours(cells, d, "Identity", eps, 0.9, t.workload)
            s = float(d.spec.counts.sum())
            ours_cf = identity_scaled_error(d.spec.counts.size, s, eps, lengths, noise="discrete")
            mean = _mean(vals)
            se = statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else math.nan
            ok = len(vals) > 1 and abs(mean - ours_cf) <= 3 * se
            sim_ok += ok
            sim_total += 1
            rows.append(
                {
                    "table": t.number,
                    "data": name,
                    "ε": eps,
                    "paper": printed,
                    "closed form (paper setting)": round(closed, 4),
                    "matches": match,
                    "closed form (ours)": ours_cf / t.error_scale,
                    "simulated (ours)": mean / t.error_scale,
                    "3 s.e.": 3 * se / t.error_scale,
                    "within 3 s.e.": ok,
                }
            )
    rep.table(rows, floatfmt=".4g")
    return {"paper_ok": paper_ok, "total": len(rows), "sim_ok": sim_ok, "sim_total": sim_total}


def _relative_tables(rep: Report, data, tables, cells) -> dict[str, dict]:
    """Paper and ours, each relative to Identity in the same column; returns both grids."""
    rep.section(
        "Tables III-IX: paper vs ours",
        "Each cell is a configuration's error divided by Identity's error in the same "
        "column (below 1: better than Identity), paper row then our row; the Identity "
        "rows give the absolute errors in the table's error scale (ours differ by the "
        "scale, see Data). Means over the trials.",
    )
    grids: dict[str, dict] = {}
    for t in tables:
        head = [
            f"{d} ε={e:g}" + (f" γ={g:g}" if t.number in ("III", "V", "VIII") else "")
            for d, e, g in t.columns
        ]
        paper_id = t.rows["Identity"]
        ours_id = [
            _mean(_ours(cells, data[d], "Identity", e, g, t.workload)) for d, e, g in t.columns
        ]
        grid = {"paper": {}, "ours": {}}
        out_rows = []
        for m, vals in t.rows.items():
            ours_abs = [_mean(_ours(cells, data[d], m, e, g, t.workload)) for d, e, g in t.columns]
            if m == "Identity":
                p_row = list(vals)
                o_row = [v / t.error_scale for v in ours_abs]
            else:
                p_row = [v / i for v, i in zip(vals, paper_id, strict=True)]
                o_row = [v / i for v, i in zip(ours_abs, ours_id, strict=True)]
            grid["paper"][m] = dict(zip(t.columns, vals, strict=True))
            grid["ours"][m] = dict(zip(t.columns, ours_abs, strict=True))
            out_rows.append({"method": f"{m} (paper)", **dict(zip(head, p_row, strict=True))})
            out_rows.append({"method": f"{m} (ours)", **dict(zip(head, o_row, strict=True))})
        grids[t.number] = grid
        rep.table(
            out_rows,
            caption=f"Table {t.number}: {t.title}; error scale {t.error_scale:g}",
            floatfmt=".3g",
        )
    return grids


def _figures(rep: Report, data, rows, figdir: Path) -> None:
    rep.section("Figures", "Scaled error vs ε at γ_in = 0.9 (Tables IV, VI, VII, IX data).")
    try:
        for t in (PAPER_TABLES["IV"], PAPER_TABLES["VI"], PAPER_TABLES["VII"], PAPER_TABLES["IX"]):
            args = _metric(t.workload).args_text
            for name in dict.fromkeys(c[0] for c in t.columns):
                sel = [
                    r
                    for r in rows
                    if r["metric_args"] == args
                    and r["dataset"] == data[name].spec.label
                    and r["method"] in {NAMES.get(m, m) for m in SHAPE_METHODS}
                    and (r["params"] in ("{}", '{"gamma_in":0.9}'))
                ]
                if not sel:
                    continue
                path = plot_error_vs_epsilon(
                    sel,
                    figdir / f"table{t.number}_{name.lower()}.png",
                    metric="scaled_mse",
                    title=f"Table {t.number}: {name}, {t.workload.replace('_', ' ')}",
                )
                rep.figure(path, f"Table {t.number}, {name}: scaled error vs ε (γ_in = 0.9)")
    except ImportError:
        rep.text("_matplotlib is not installed: figures skipped._")


# --------------------------------------------------------------------------- entry point


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
    """Run the SORTaki reproduction and write ``report.md`` with figures to ``out_dir``.

    Full: every column of Tables III-IX on our versions of the data sets,
    ``trials`` trials. ``quick=True``: 128-bin stand-ins, γ_in in {0.5, 0.9}, 2 trials.
    """
    folder = Path(out_dir)
    figdir = folder / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    trials = min(trials, 2) if quick else trials
    data = datasets(quick, data_dir)
    tables = list(PAPER_TABLES.values())
    if quick:
        # 128-bin stand-ins: no big-range workload, two γ_in values
        tables = [restrict(t, (0.5, 0.9)) for t in tables if t.workload != "big_ranges"]
    rep = Report(
        "SORTaki (Doudalis and Mehrotra): sorting vs not, Tables III-IX (§VI-§VII)",
        settings={
            "mode": "quick (synthetic stand-ins)" if quick else "full",
            "trials": trials,
            "γ_in grid": GAMMAS,
            "error": "scaled average per-query squared error (Def. VI.1)",
            "seed": seed,
            "workers": workers,
        },
    )
    rows = _run(
        data,
        tables,
        trials=trials,
        workers=workers,
        seed=seed,
        out=folder / "results.csv",
        progress=progress,
    )
    cells = _cells(rows)
    rep.section(
        "Data",
        "\n".join(
            f"- **{d.paper}** (paper: {PAPER_DATA[d.paper][0]:,} bins, scale "
            f"{PAPER_DATA[d.paper][1]:,}): `{d.spec.label}`, {d.note}."
            for d in data.values()
        )
        + "\n\nRecords per bin follow the paper (scale / domain). DAWA runs with its "
        "registry defaults (ratio 0.25, prefix workload for its second stage); the SORTaki "
        "configurations take `gamma_in`. Releases use seeded noise (not private); raw "
        "rows: `results.csv`.",
    )
    ident = _identity_section(rep, data, tables, cells)
    grids = _relative_tables(rep, data, tables, cells)
    _figures(rep, data, rows, figdir)
    rep.section("Run time per release", "Mean seconds per release over every setting.")
    rep.table(
        ex.summarise(rows, by=("dataset", "method")),
        ["dataset", "method", "seconds", "runs", "failures"],
        floatfmt=".3g",
    )
    check(rep, CLAIMS, Results(grids, ident))
    return rep.write(folder)
