"""Reproduction of Zhang, Chen, Xu, Meng, Xie, "Towards accurate histogram publication
under differential privacy" (AHP, SDM 2014), §6.

What is run
-----------
* Tables 2-4: KLD between the true and the published histogram at ε = 1, 0.1 and
  0.01 on the four data sets, for AHP and the competitors the paper lists that are
  registered here: NoiseFirst (``NF``), StructureFirst (``SF``), P-HPartition
  (``P-HP``) and GS, plus ``identity`` (Laplace per bin) as a reference.
* Figs 2-5: MSE of range queries against ε and against the range length (here
  r = 0.1%, 1% and 10% of the domain, every position), per data set.
* The comparative statements of §6 as claims with automatic verdicts; each verdict
  carries its rule and the measured reason it holds or differs (:func:`diagnose`:
  KLD under every plausible smoothing reading, P-HP with the authors' demo cap,
  range error inflation and ranges over the count-sorted histogram).

Data
----
*Search Log*, *NetTrace* and *Social Network* are the paper's histograms.
*Location* is not available: :func:`location_like` draws a seeded stand-in with
the bin count, number of zero bins, total, and maximum of the paper's Table 1 (its
variance and the spatial order of the meshblocks are approximated; the report prints
the achieved statistics beside the paper's).

Conventions that differ from the paper
--------------------------------------
* KLD (:func:`dphist.metrics.kld`): both histograms are normalised with a
  pseudo-count ``tau`` per bin and negative estimates are clipped at 0 (the paper
  writes ``sum H ln(H / H~)`` with ``0 ln 0 = 0`` and does not say how zero or
  negative estimates are handled). We report ``tau = 1e-3`` and ``tau = 1``.
* Noise is exact discrete Laplace (seeded for repeatability), not floating-point
  Laplace. Competitors run in their DP-correct forms (see ``dphist methods``); SF
  uses the public count bound given in :data:`SF_BOUNDS` (the count range of Table 1
  rounded up) and the default ``k = N / 10``; it is run with one trial because of
  its ``O(k N^2)`` cost.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import metrics
from ...errors import ValidationError
from ...plot import plot_error_vs_epsilon, plot_error_vs_range
from ...session import publish
from .. import experiments as ex
from .report import Report

__all__ = [
    "COMPETITORS",
    "LOCATION_TABLE1",
    "METHODS",
    "PAPER_KLD",
    "SF_BOUNDS",
    "diagnose",
    "error_inflation",
    "kld_conventions",
    "kld_summary",
    "location_like",
    "run",
    "sorted_range_mse",
]

EPSILONS = (1.0, 0.1, 0.01)
R_PERCENT = (0.1, 1.0, 10.0)
TAUS = (1e-3, 1.0)

#: Method label in the paper -> registered method name.
METHODS: dict[str, str] = {
    "AHP": "AHP",
    "NF": "NF",
    "SF": "SF",
    "PHP": "P-HP",
    "GS": "GS",
    "identity": "identity",
}
#: The competitors of Tables 2-4 (paper labels).
COMPETITORS = ("NF", "SF", "PHP", "GS")

#: Public count bounds for SF: Table 1's count range, rounded up.
SF_BOUNDS = {
    "Location": 500,
    "Social Network": 1700,
    "Search Log": 500,
    "NetTrace": 1500,
}

#: Other papers' names for the same data (SReB_GCA calls *Location* *Waitakere*).
ALIASES = {"Location": "Waitakere"}

#: Tables 2-4 of the paper: (data set, ε) -> {method: KLD}.
PAPER_KLD: dict[tuple[str, float], dict[str, float]] = {
    ("Location", 1.0): {"AHP": 0.018, "NF": 0.843, "SF": 1.242, "PHP": 0.621, "GS": 1.451},
    ("Social Network", 1.0): {"AHP": 0.071, "NF": 1.001, "SF": 2.051, "PHP": 0.801, "GS": 2.611},
    ("Search Log", 1.0): {"AHP": 0.054, "NF": 1.582, "SF": 2.085, "PHP": 0.132, "GS": 2.115},
    ("NetTrace", 1.0): {"AHP": 0.153, "NF": 2.839, "SF": 3.835, "PHP": 0.904, "GS": 4.816},
    ("Location", 0.1): {"AHP": 0.203, "NF": 1.381, "SF": 2.983, "PHP": 0.805, "GS": 1.539},
    ("Social Network", 0.1): {"AHP": 0.309, "NF": 2.753, "SF": 2.054, "PHP": 0.602, "GS": 3.251},
    ("Search Log", 0.1): {"AHP": 0.103, "NF": 2.467, "SF": 3.457, "PHP": 0.159, "GS": 4.157},
    ("NetTrace", 0.1): {"AHP": 0.572, "NF": 4.726, "SF": 4.359, "PHP": 2.026, "GS": 6.917},
    ("Location", 0.01): {"AHP": 0.467, "NF": 2.588, "SF": 4.948, "PHP": 1.076, "GS": 3.803},
    ("Social Network", 0.01): {"AHP": 0.825, "NF": 3.099, "SF": 6.058, "PHP": 1.019, "GS": 5.112},
    ("Search Log", 0.01): {"AHP": 0.189, "NF": 5.584, "SF": 5.340, "PHP": 0.86, "GS": 7.046},
    ("NetTrace", 0.01): {"AHP": 1.229, "NF": 6.926, "SF": 6.841, "PHP": 2.280, "GS": 8.187},
}

#: Table 1 row of *Location*: bins, zero bins, mean, variance, maximum count.
LOCATION_TABLE1 = {"bins": 7725, "zeros": 4720, "mean": 24.13, "variance": 4764.57, "max": 467}


# --------------------------------------------------------------------------- data


def location_like(seed: int = 7725) -> np.ndarray:
    """A seeded stand-in for AHP's *Location* histogram (Table 1), which is not available.

    7,725 bins of which 4,720 are empty, total 186,471 (Table 1's mean 24.13 times
    the bins) and maximum 467. Non-empty bins are log-normal, scaled to the exact
    total and clipped to ``[1, 467]``; the log-normal width is chosen so that the
    clipped values come closest to Table 1's variance. They sit at random positions,
    so the histogram is not sorted (as the paper says of *Location*).
    """
    n, zeros, top = LOCATION_TABLE1["bins"], LOCATION_TABLE1["zeros"], LOCATION_TABLE1["max"]
    total = 186_471
    k = n - zeros
    mean_nz = total / k
    second = (LOCATION_TABLE1["variance"] + LOCATION_TABLE1["mean"] ** 2) * n / k
    cv2 = max(second / mean_nz**2 - 1.0, 1e-9)
    gen = np.random.default_rng(seed)
    z = gen.standard_normal(k)
    target = second - mean_nz**2
    # Clipping at the maximum removes spread: pick the log-normal sigma (at least the
    # unclipped moment match) whose clipped values come closest to Table 1's variance.
    best = None
    for sigma in math.sqrt(math.log1p(cv2)) * np.linspace(1.0, 2.5, 31):
        cand = _fit_total(np.exp(sigma * z), total, top)
        miss = abs(float(cand.var()) - target)
        if best is None or miss < best[0]:
            best = (miss, cand)
    vals = best[1]
    counts = np.zeros(n, dtype=np.int64)
    counts[gen.choice(n, size=k, replace=False)] = vals
    return counts


def _fit_total(raw: np.ndarray, total: int, top: int) -> np.ndarray:
    """Integers in ``[1, top]`` proportional to ``raw`` (up to clipping) summing to ``total``.

    The multiplier is found by bisection (the clipped, rounded sum grows with it);
    the last few units go to the bins with the largest rounding remainders.
    """
    lo, hi = 0.0, float(total) / float(raw.min())
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.clip(np.floor(mid * raw), 1, top).sum() > total:
            hi = mid
        else:
            lo = mid
    vals = np.clip(np.floor(lo * raw), 1, top).astype(np.int64)
    gap = total - int(vals.sum())
    room = np.flatnonzero(vals < top)
    if gap > 0 and room.size:
        rem = lo * raw[room] - np.floor(lo * raw[room])
        vals[room[np.argsort(-rem, kind="stable")[:gap]]] += 1
    return vals


def describe(counts: np.ndarray) -> dict[str, float]:
    """Table 1's columns for a histogram: bins, zero bins, mean, variance, maximum."""
    x = np.asarray(counts, dtype=np.float64)
    return {
        "bins": int(x.size),
        "zeros": int(np.count_nonzero(x == 0)),
        "mean": float(x.mean()),
        "variance": float(x.var()),
        "max": float(x.max()),
    }


@dataclass(frozen=True)
class Data:
    """A data set of the paper: its name there, our spec and a note on provenance."""

    paper: str
    spec: ex.Real | ex.Synthetic | ex.Given
    note: str


def paper_datasets(quick: bool) -> list[Data]:
    """The four data sets (full) or two small seeded stand-ins (quick)."""
    if quick:
        return [
            Data(
                "Search Log",
                ex.Synthetic.make("spiky", 256, seed=7, name="searchlog_like_256"),
                "synthetic stand-in (256 bins)",
            ),
            Data(
                "NetTrace",
                ex.Synthetic.make(
                    "sparse_power_law", 512, seed=5, density=0.05, name="nettrace_like_512"
                ),
                "synthetic stand-in (512 bins)",
            ),
        ]
    return [
        Data(
            "Location",
            ex.Given("location_like_7725", location_like()),
            "not available: seeded stand-in matching Table 1 (see Data)",
        ),
        Data("Social Network", ex.Real("social_network"), "the paper's data, 11,342 bins"),
        Data("Search Log", ex.Real("search_logs"), "the paper's data, 32,768 bins"),
        Data("NetTrace", ex.Real("nettrace"), "the paper's data, 65,536 bins"),
    ]


def _method(label: str, data: Data, quick: bool) -> ex.Method:
    name = METHODS.get(label, label)
    if name == "SF":
        bound = 100 if quick else SF_BOUNDS[data.paper]
        return ex.Method("SF", {"bound": bound})
    return ex.Method(name)


def _metrics(r_values: Sequence[float]) -> list[ex.Metric]:
    return [
        *(ex.metric("kld", tau=t) for t in TAUS),
        *(ex.metric("range_pct_mse", r=r) for r in r_values),
    ]


# --------------------------------------------------------------------------- diagnostics

#: Label of P-HP run with the authors' demo cap of 400 clusters (diagnostics).
PHP_DEMO = "PHP (400 clusters)"

#: KLD conventions tried against the papers' magnitudes (labels of :func:`kld_conventions`).
KLD_CONVENTIONS = ("τ=1e-3", "τ=1", "τ=1e-6", "zero bins dropped", "log2, τ=1e-3")


def kld_conventions(true: np.ndarray, estimate: np.ndarray) -> dict[str, float]:
    """KLD of ``estimate`` against ``true`` under the plausible readings of AHP §3.3.

    The papers write ``sum H ln(H / H~)`` with ``0 ln 0 = 0`` and leave zero and
    negative estimates open. Readings: normalised with a pseudo-count ``τ`` per bin
    (1e-3, 1, 1e-6; :func:`dphist.metrics.kld`); only the bins where both the truth
    and the clipped estimate are positive, renormalised over them; and base-2
    logarithms with ``τ = 1e-3``.
    """
    h = np.asarray(true, dtype=np.float64)
    g = np.maximum(np.asarray(estimate, dtype=np.float64), 0.0)
    taus = (1e-3, 1.0, 1e-6)
    out = {lab: metrics.kld(h, g, t) for lab, t in zip(KLD_CONVENTIONS, taus, strict=False)}
    both = (h > 0) & (g > 0)
    if np.any(both):
        p, q = h[both] / h[both].sum(), g[both] / g[both].sum()
        out["zero bins dropped"] = max(float(np.dot(p, np.log(p / q))), 0.0)
    else:
        out["zero bins dropped"] = math.nan
    out["log2, τ=1e-3"] = out["τ=1e-3"] / math.log(2)
    return out


def sorted_range_mse(true: np.ndarray, estimate: np.ndarray, r: float) -> float:
    """Range MSE (ranges of ``r``% of the domain) after ordering bins by true count.

    The alternative reading of AHP's Figs 2 and 4: ranges taken over the sorted
    histogram (where AHP's clusters are contiguous) instead of the public bin order.
    """
    h = np.asarray(true, dtype=np.float64)
    order = np.argsort(h, kind="stable")
    est = np.asarray(estimate, dtype=np.float64)[order]
    return ex.metric("range_pct_mse", r=r)(h[order], est)


def error_inflation(true: np.ndarray, estimate: np.ndarray, length: int) -> float:
    """Mean squared error of all ranges of ``length`` bins over ``length`` x the bin MSE.

    About 1 when the bin errors are independent and zero-mean (Laplace per bin); far
    above 1 when neighbouring bins err in the same direction, as when they share a
    cluster whose mean is off, so the range error grows like ``length**2``.
    """
    err = np.asarray(estimate, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    if not 1 <= length <= err.size:
        raise ValidationError(f"length must be in [1, {err.size}], got {length}")
    per_bin = float(np.mean(err**2))
    if per_bin == 0:
        return math.nan
    csum = np.concatenate(([0.0], np.cumsum(err)))
    ranges = csum[length:] - csum[:-length]
    return float(np.mean(ranges**2)) / (length * per_bin)


def _release(counts: np.ndarray, method: ex.Method, eps: float, seed: int) -> np.ndarray:
    """One seeded release (diagnostics only; the tables come from the grid)."""
    rng = np.random.default_rng([seed, 2014])
    return publish(counts, epsilon=eps, method=method.name, rng=rng, **dict(method.params)).estimate


def diagnose(data: Sequence[Data], *, seed: int, data_dir: Any, quick: bool) -> dict[str, Any]:
    """Evidence for the reasons of the claim verdicts, from one seeded release per cell.

    * ``kld``: :func:`kld_conventions` for AHP, P-HP (also with the 400-cluster cap
      of the authors' demo) and identity on the last data set (NetTrace) at ε = 1;
    * ``sorted``: for each unsorted data set (Search Log, Location) at ε = 1,
      AHP's range MSE (r = 1%) in the public order and over the sorted histogram,
      and :func:`error_inflation` of AHP and identity for ranges of 1% of the domain.
    """
    out: dict[str, Any] = {"kld": {}, "sorted": {}, "kld_data": data[-1].paper}
    eps = 1.0
    last = data[-1]
    counts = np.asarray(last.spec.load(data_dir))
    for lab in ("AHP", "PHP", "identity"):
        est = _release(counts, _method(lab, last, quick), eps, seed)
        out["kld"][lab] = kld_conventions(counts, est)
    # the cap of the authors' demo (400 clusters) instead of 2,000
    est = _release(counts, ex.Method("P-HP", {"max_clusters": 400}), eps, seed)
    out["kld"][PHP_DEMO] = kld_conventions(counts, est)
    for d in data:
        if d.paper not in ("Search Log", "Location"):
            continue
        counts = np.asarray(d.spec.load(data_dir))
        est = _release(counts, _method("AHP", d, quick), eps, seed)
        base = _release(counts, _method("identity", d, quick), eps, seed)
        length = max(1, counts.size // 100)
        out["sorted"][d.paper] = {
            "public order": ex.metric("range_pct_mse", r=1.0)(counts.astype(np.float64), est),
            "sorted": sorted_range_mse(counts, est, 1.0),
            "inflation": error_inflation(counts, est, length),
            "identity inflation": error_inflation(counts, base, length),
        }
    return out


# --------------------------------------------------------------------------- running


def run_tables(
    data: Sequence[Data],
    *,
    labels: Sequence[str],
    epsilons: Sequence[float],
    metrics: Sequence[ex.Metric],
    trials: int,
    slow_trials: int,
    workers: int,
    seed: int,
    out: Path | None,
    data_dir: Any,
    quick: bool,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Run every method on every data set; SF gets ``slow_trials`` trials."""
    rows: list[dict[str, Any]] = []
    for d in data:
        fast = [_method(lab, d, quick) for lab in labels if lab != "SF"]
        slow = [_method(lab, d, quick) for lab in labels if lab == "SF"]
        for methods, n_trials in ((fast, trials), (slow, slow_trials)):
            if not methods:
                continue
            rows += ex.run_grid(
                methods=methods,
                datasets=[d.spec],
                epsilons=epsilons,
                metrics=metrics,
                trials=n_trials,
                seed=seed,
                out=out,
                workers=workers,
                progress=progress,
                data_dir=data_dir,
            )
    return ex.unique_rows(rows)


def kld_summary(
    data: Sequence[Data],
    rows: Sequence[Mapping[str, Any]],
    *,
    epsilons: Sequence[float] = EPSILONS,
    labels: Sequence[str] = tuple(METHODS),
    tau: float = 1e-3,
    extra: Mapping[tuple[str, float], Mapping[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """One row per (data set, ε, method): our mean KLD, time, and the paper's value.

    ``extra`` adds published values for further methods (e.g. SReB_GCA's Table 2).
    """
    table = ex.summary_index(rows)
    metric = ex.metric("kld", tau=tau).label
    out = []
    for d in data:
        for eps in epsilons:
            more = (extra or {}).get((d.paper, eps)) or (extra or {}).get(
                (ALIASES.get(d.paper, d.paper), eps), {}
            )
            paper = {**PAPER_KLD.get((d.paper, eps), {}), **more}
            for lab in labels:
                s = table.get((d.spec.label, eps, metric, METHODS.get(lab, lab)))
                ours = s["value"] if s and s["runs"] else math.nan
                ref = paper.get(lab, math.nan)
                out.append(
                    {
                        "data": d.paper,
                        "ε": eps,
                        "method": lab,
                        "paper KLD": ref,
                        "our KLD": ours,
                        "ours / paper": ours / ref if ref else math.nan,
                        "time (s)": s["seconds"] if s else math.nan,
                        "runs": s["runs"] if s else 0,
                    }
                )
    return out


# --------------------------------------------------------------------------- report parts


def _kld_tables(rep: Report, data, table, epsilons) -> None:
    rep.section(
        "KLD (Tables 2-4)",
        "Mean KLD over the trials (τ = 1e-3; the τ = 1 column shows how much the "
        "smoothing convention matters). Paper values beside ours; `–` where the paper "
        "has no value.",
    )
    for eps in epsilons:
        rows = []
        for d in data:
            paper = PAPER_KLD.get((d.paper, eps), {})
            for lab in METHODS:
                ours = ex.summary_value(table, d.spec.label, eps, "kld(tau=0.001)", METHODS[lab])
                ours1 = ex.summary_value(table, d.spec.label, eps, "kld(tau=1.0)", METHODS[lab])
                rows.append(
                    {
                        "data": d.paper,
                        "method": lab,
                        "paper": paper.get(lab, math.nan),
                        "ours (τ=1e-3)": ours,
                        "ours (τ=1)": ours1,
                    }
                )
        number = {1.0: 2, 0.1: 3, 0.01: 4}.get(eps)
        caption = f"ε = {eps:g}" + (f" (Table {number})" if number else "")
        rep.table(rows, caption=caption)


def _range_tables(rep: Report, data, table, epsilons, r_values) -> None:
    rep.section(
        "Range queries (Figs 2-5)",
        "Mean squared error of all ranges covering r% of the domain, mean over trials.",
    )
    for d in data:
        rows = []
        for lab in METHODS:
            row: dict[str, Any] = {"method": lab}
            for eps in epsilons:
                for r in r_values:
                    label = ex.metric("range_pct_mse", r=r).label
                    row[f"ε={eps:g}, r={r:g}%"] = ex.summary_value(
                        table, d.spec.label, eps, label, METHODS[lab]
                    )
            rows.append(row)
        rep.table(rows, caption=f"{d.paper} ({d.spec.label})", floatfmt=".3g")


def _figures(rep: Report, data, rows, figdir: Path, epsilons) -> None:
    rep.section("Figures")
    try:
        for d in data:
            path = plot_error_vs_epsilon(
                [x for x in rows if x["metric"] == "kld" and '"tau":0.001' in x["metric_args"]],
                figdir / f"kld_{_slug(d.paper)}.png",
                metric="kld",
                dataset=d.spec.label,
                title=f"KLD vs ε, {d.paper} ({d.spec.label})",
            )
            rep.figure(path, f"KLD (τ = 1e-3) vs ε, {d.paper}")
            for eps in epsilons:
                path = plot_error_vs_range(
                    rows,
                    figdir / f"range_{_slug(d.paper)}_{_slug(eps)}.png",
                    dataset=d.spec.label,
                    epsilon=eps,
                    title=f"Range MSE vs r, {d.paper}, ε = {eps:g}",
                )
                rep.figure(path, f"Range MSE vs range length, {d.paper}, ε = {eps:g}")
    except ImportError:
        rep.text("_matplotlib is not installed: figures skipped._")


def _slug(value: object) -> str:
    return str(value).replace(".", "p").replace(" ", "_").lower()


def _best(table, label, eps, metric, labels) -> tuple[str | None, float]:
    vals = {lab: ex.summary_value(table, label, eps, metric, METHODS[lab]) for lab in labels}
    vals = {k: v for k, v in vals.items() if math.isfinite(v)}
    if not vals:
        return None, math.nan
    best = min(vals, key=vals.get)
    return best, vals[best]


def _fmt_cells(items: Sequence[tuple[str, float, float, float]], n: int = 3) -> str:
    """``data ε: a vs b`` for the ``n`` cells with the smallest ``a / b`` (largest loss)."""
    worst = sorted(items, key=lambda x: x[2] / x[3] if x[3] else math.inf)
    return "; ".join(f"{d} ε={e:g}: {a:.3g} vs {b:.3g}" for d, e, a, b in worst[:n])


def _unsorted_reason(alt: Mapping[str, float] | None, factors: Sequence[float]) -> str:
    """Why AHP's range gain on an unsorted data set is below 8 (see :func:`diagnose`)."""
    if alt and alt["inflation"] > 2:
        return (
            "differs because ranges over the public order add the correlated errors of "
            "AHP's value-sorted clusters"
        )
    return (
        "differs because AHP's bin errors are not correlated along this domain (inflation "
        f"{alt['inflation'] if alt else math.nan:.3g}), so its only gain is the noise "
        f"averaged within clusters: best competitor / AHP median {np.median(factors):.3g} "
        "(the stand-in's non-empty bins sit at random positions)"
    )


def _kld_reasons(data, table, epsilons, diag) -> dict[str, str]:
    """Evidence shared by the KLD claims (numbers from the grid and :func:`diagnose`)."""
    kld = "kld(tau=0.001)"
    below = cells = 0
    for d in data:
        for eps in epsilons:
            ref = PAPER_KLD.get((d.paper, eps), {}).get("NF")
            ours = ex.summary_value(table, d.spec.label, eps, kld, "identity")
            if ref and math.isfinite(ours):
                cells += 1
                below += ours < ref
    k = diag["kld"]
    name = diag["kld_data"]
    conv = ", ".join(f"{c} {k['AHP'][c]:.3g}" for c in KLD_CONVENTIONS)
    php = ", ".join(f"{c} {k['PHP'][c]:.3g}" for c in KLD_CONVENTIONS)
    return {
        "noise": f"plain Laplace on every bin (identity) has a lower KLD than the paper's NF "
        f"in {below} of {cells} cells, so the paper's competitor values are not those of "
        "the DP-correct forms run here",
        "ahp": f"one seeded AHP release on {name} at ε=1 gives {conv} (paper "
        f"{PAPER_KLD.get((name, 1.0), {}).get('AHP', math.nan):g})",
        "php": f"P-HP on {name} at ε=1: {php} (paper "
        f"{PAPER_KLD.get((name, 1.0), {}).get('PHP', math.nan):g}); with the authors' "
        f"demo cap of 400 clusters it is {k[PHP_DEMO][KLD_CONVENTIONS[0]]:.3g} (τ=1e-3), "
        "so neither the smoothing nor that default explains the gap; its contiguous "
        "clusters fit the sorted data",
    }


def _claims(rep: Report, data, table, epsilons, r_values, diag) -> None:
    kld = "kld(tau=0.001)"
    reasons = _kld_reasons(data, table, epsilons, diag)
    competitors = [c for c in COMPETITORS if c in METHODS]
    cells = [(d, eps) for d in data for eps in epsilons]
    wins, beaten = [], []
    for d, eps in cells:
        ahp = ex.summary_value(table, d.spec.label, eps, kld, "AHP")
        best, val = _best(table, d.spec.label, eps, kld, competitors)
        wins.append(math.isfinite(ahp) and ahp < val)
        if not wins[-1]:
            beaten.append((f"{d.paper} {best}", eps, val, ahp))
    why = "mean KLD (τ = 1e-3) over the trials, every data set and ε; " + (
        f"reproduced; AHP lowest in {sum(wins)} of {len(cells)} cells"
        if all(wins)
        else "differs because a competitor run in DP-correct form beats AHP (competitor vs "
        "AHP: " + _fmt_cells(beaten) + f") and {reasons['noise']}"
    )
    rep.claim(
        "AHP has the lowest KLD of AHP, NF, SF, PHP, GS in all cases",
        "Tables 2-4 (12 of 12)",
        f"lowest in {sum(wins)} of {len(cells)} (data, ε) cells",
        all(wins),
        why,
    )

    for comp in competitors:
        paper_wins = sum(
            v["AHP"] < v[comp] for k, v in PAPER_KLD.items() if k[0] in {d.paper for d in data}
        )
        paper_cells = sum(1 for k in PAPER_KLD if k[0] in {d.paper for d in data})
        lost, ratios = [], []
        for d, eps in cells:
            a = ex.summary_value(table, d.spec.label, eps, kld, "AHP")
            c = ex.summary_value(table, d.spec.label, eps, kld, METHODS[comp])
            if not a < c:
                lost.append((d.paper, eps, c, a))
            ref = PAPER_KLD.get((d.paper, eps), {}).get(comp)
            if ref and math.isfinite(c) and c > 0:
                ratios.append(ref / c)
        ours = len(cells) - len(lost)
        med = float(np.median(ratios)) if ratios else math.nan
        why = "every (data, ε) cell; " + (
            f"reproduced; the paper's {comp} values are a median {med:.3g}x ours"
            if not lost
            else f"differs because {comp} is lower in {len(lost)} cells ({comp} vs AHP: "
            + _fmt_cells(lost)
            + f"); the paper's {comp} values are a median {med:.3g}x ours"
        )
        if comp == "PHP" and lost:
            why += "; " + reasons["php"]
        rep.claim(
            f"AHP has lower KLD than {comp}",
            f"Tables 2-4 ({paper_wins} of {paper_cells})",
            f"{ours} of {len(cells)}",
            ours == len(cells),
            why,
        )

    ratios = []
    for d, eps in cells:
        ref = PAPER_KLD.get((d.paper, eps), {}).get("AHP")
        ours = ex.summary_value(table, d.spec.label, eps, kld, "AHP")
        if ref and math.isfinite(ours):
            ratios.append(ours / ref)
    close = sum(1 / 3 <= q <= 3 for q in ratios)
    ok = bool(ratios) and close == len(ratios)
    rep.claim(
        "AHP's KLD values (absolute)",
        "Tables 2-4",
        f"within a factor 3 of the paper in {close} of {len(ratios)} cells; ratios "
        + ", ".join(f"{q:.2g}" for q in ratios),
        ok,
        "absolute KLD depends on the unstated smoothing of zero estimates and on the "
        "noise mode; a factor 3 is the tolerance; "
        + (
            "reproduced; "
            if ok
            else f"differs because the ratios run from {min(ratios):.2g} to "
            f"{max(ratios):.2g} (no single scale factor), and no smoothing reading closes "
            "the gap: "
        )
        + reasons["ahp"],
    )

    range_wins, range_cells, factors, lost = 0, 0, {}, []
    for d, eps in cells:
        for r in r_values:
            label = ex.metric("range_pct_mse", r=r).label
            ahp = ex.summary_value(table, d.spec.label, eps, label, "AHP")
            best, val = _best(table, d.spec.label, eps, label, competitors)
            if math.isfinite(ahp) and math.isfinite(val):
                range_cells += 1
                range_wins += ahp < val
                factors.setdefault(d.paper, []).append(val / ahp)
                if not ahp < val:
                    lost.append((f"{d.paper} r={r:g}% {best}", eps, val, ahp))
    srt = diag["sorted"]
    corr_note = "; ".join(
        f"{k} ε=1, ranges of 1% of the domain: AHP's range MSE is {v['inflation']:.3g}x "
        f"what independent bin errors of the same size would give (identity "
        f"{v['identity inflation']:.3g}x)"
        for k, v in srt.items()
    )
    ok = range_cells > 0 and range_wins == range_cells
    rep.claim(
        "AHP outperforms all competitors on range queries in all cases",
        "§6, Figs 2-5",
        f"lowest range MSE in {range_wins} of {range_cells} (data, ε, r) cells",
        ok,
        "mean MSE over all ranges of r% of the domain; "
        + (
            f"reproduced; AHP lowest in {range_wins} of {range_cells} cells"
            if ok
            else "differs because neighbouring bins of similar count share an AHP cluster "
            "whose mean is off in the same direction, so errors add up along a range "
            "(best competitor vs AHP: " + _fmt_cells(lost) + "); " + corr_note
        ),
    )
    for name in ("Search Log", "Location"):
        if name not in factors:
            continue
        f = factors[name]
        ok = float(np.median(f)) > 8
        d = next(x for x in data if x.paper == name)
        best, val = _best(
            table, d.spec.label, 1.0, ex.metric("range_pct_mse", r=1.0).label, competitors
        )
        alt = srt.get(name)
        alt_txt = (
            f"; AHP's ε=1 r=1% range MSE is {alt['inflation']:.3g}x that of independent bin "
            "errors; the alternative reading (ranges over the histogram sorted by true "
            f"count, where AHP's clusters are contiguous) gives AHP {alt['sorted']:.3g} "
            f"against {alt['public order']:.3g} in the public order, so best competitor "
            f"({best}) / AHP would be {val / alt['sorted']:.3g}"
            f"{'' if val / alt['sorted'] > 8 else ', not above 8'}; normalising "
            "the error per data set cannot change a ratio between methods"
            if alt and best
            else ""
        )
        rep.claim(
            f"on the unsorted {name}, AHP's range MSE improves more than 8 times",
            "§6, Figs 2 and 4",
            f"best competitor / AHP: median {np.median(f):.3g}, min {min(f):.3g}",
            ok,
            "median over (ε, r) of best-competitor MSE / AHP MSE; "
            + (f"reproduced; median {np.median(f):.3g}" if ok else _unsorted_reason(alt, f))
            + alt_txt,
        )
    for name in ("Social Network", "NetTrace"):
        d = next((x for x in data if x.paper == name), None)
        if d is None:
            continue
        qs = []
        for eps in [e for e in epsilons if e >= 0.1]:
            for r in r_values:
                label = ex.metric("range_pct_mse", r=r).label
                php = ex.summary_value(table, d.spec.label, eps, label, "P-HP")
                ahp = ex.summary_value(table, d.spec.label, eps, label, "AHP")
                qs.append(php / ahp)
        ok = bool(qs) and all(0.5 <= q <= 3 for q in qs)
        rep.claim(
            f"on the sorted {name}, AHP's range MSE is close to PHP's at ε = 0.1 and 1",
            "§6, Figs 3 and 5",
            "PHP / AHP: " + ", ".join(f"{q:.2g}" for q in qs),
            ok,
            "'close': PHP within a factor 0.5-3 of AHP in every (ε, r) cell; "
            + (
                f"reproduced; PHP / AHP from {min(qs):.2g} to {max(qs):.2g}"
                if ok
                else f"differs because PHP is better, not close: its "
                f"contiguous clusters fit the sorted data, PHP / AHP as low as {min(qs):.2g}"
            ),
        )

    trend_eps = trend_r = total = 0
    bad: list[str] = []
    for d in data:
        for lab in METHODS:
            for r in r_values:
                label = ex.metric("range_pct_mse", r=r).label
                ys = [
                    ex.summary_value(table, d.spec.label, e, label, METHODS[lab]) for e in epsilons
                ]
                total += 1
                mono = all(a <= b for a, b in itertools.pairwise(ys))
                trend_eps += mono
                if not mono:
                    bad.append(
                        (lab, f"{d.paper} {lab} r={r:g}%: " + ", ".join(f"{y:.3g}" for y in ys))
                    )
    for d in data:
        for lab in METHODS:
            for eps in epsilons:
                ys = [
                    ex.summary_value(
                        table,
                        d.spec.label,
                        eps,
                        ex.metric("range_pct_mse", r=r).label,
                        METHODS[lab],
                    )
                    for r in r_values
                ]
                trend_r += all(a <= b for a, b in itertools.pairwise(ys))
    n_r = len(data) * len(METHODS) * len(epsilons)
    ok = trend_eps == total and trend_r >= 0.9 * n_r
    rep.claim(
        "MSE increases when ε decreases and when the range grows",
        "§6, Figs 2-5",
        f"non-increasing in ε: {trend_eps} of {total} curves; non-decreasing in r: "
        f"{trend_r} of {n_r} curves",
        ok,
        "monotone in ε for every (data, method, r); in r for at least 90% of (data, "
        "method, ε) (a method that fits a range exactly can dip); "
        + (
            f"reproduced; {trend_eps} of {total} in ε, {trend_r} of {n_r} in r"
            if ok
            else _trend_reason(bad)
        ),
    )


def _within(ours: float, paper: float, factor: float = 3.0) -> bool:
    return bool(paper) and math.isfinite(ours) and 1 / factor <= ours / paper <= factor


def _trend_reason(bad: Sequence[tuple[str, str]]) -> str:
    """Which curves break the monotone trend, and whose they are."""
    if not bad:
        return "differs because fewer than 90% of the curves are non-decreasing in r"
    methods = sorted({m for m, _ in bad})
    only_sf = methods == ["SF"]
    return (
        f"differs because {len(bad)} curves are not monotone in ε, from "
        + ", ".join(methods)
        + " (ε = 1, 0.1, 0.01: "
        + "; ".join(t for _, t in bad[:3])
        + ")"
        + (
            ": SF runs one trial per ε, so each point is a single private choice of buckets"
            if only_sf
            else ""
        )
    )


def _why_section(rep: Report, data, table, diag) -> None:
    """The "Why our results differ" section: the evidence behind the claim reasons."""
    reasons = _kld_reasons(data, table, EPSILONS, diag)
    name = diag["kld_data"]
    paper = PAPER_KLD.get((name, 1.0), {})
    rows = [
        {
            "method": lab,
            **{c: diag["kld"][lab][c] for c in KLD_CONVENTIONS},
            "paper": paper.get(lab.split()[0], math.nan),
        }
        for lab in diag["kld"]
    ]
    fits = [
        c
        for c in KLD_CONVENTIONS
        if all(_within(diag["kld"][lab][c], paper.get(lab, 0.0)) for lab in ("AHP", "PHP"))
    ]
    fit_text = (
        "no reading puts both AHP and P-HP within a factor 3 of the paper"
        if not fits
        else "AHP and P-HP are both within a factor 3 of the paper under: " + ", ".join(fits)
    )
    comp = [v[c] for v in PAPER_KLD.values() for c in COMPETITORS if c in v]
    lo, hi = min(comp), max(comp)
    srt = diag["sorted"]
    range_text = "; ".join(
        f"{k}: inflation {v['inflation']:.3g} (identity {v['identity inflation']:.3g}), "
        f"AHP's r=1% MSE {v['public order']:.3g} in the public order and "
        f"{v['sorted']:.3g} over the sorted histogram"
        for k, v in srt.items()
    )
    rep.section(
        "Why our results differ",
        "1. **Competitors.** NF, SF, P-HP and GS run here in their DP-correct forms "
        "(`dphist methods`; P-HP as in the authors' code with up to 2,000 clusters; SF "
        f"with a public count bound). The paper prints KLD {lo:g}-{hi:g} for them; "
        + reasons["noise"]
        + ". The comparative KLD claims therefore rest on competitor numbers we cannot "
        "obtain.\n"
        f"2. **KLD convention.** The table below scores one seeded release per method on "
        f"{name} at ε = 1 under the readings of §3.3's formula: {fit_text}. P-HP with "
        "the authors' demo cap of 400 clusters (instead of 2,000) is shown too.\n"
        "3. **Range queries.** AHP clusters bins by noisy count; neighbouring bins of "
        "similar count share a cluster, so their errors have the same sign and add up "
        "along a range. The inflation below is the range MSE over what independent "
        "bin errors of the same size give (ranges of 1% of the domain, ε = 1; about 1 "
        "for Laplace per bin): "
        + (range_text or "no unsorted data set in this run")
        + ". Ranges over the histogram sorted by true count (the only alternative "
        "reading of Figs 2 and 4 we found) are shown too; a per-data-set normalisation of "
        "the error would not change the ratio between methods.\n"
        "4. **Data.** *Location* is a stand-in (Table 1 shape only).",
    )
    rep.table(rows, caption=f"KLD conventions, one release each, {name}, ε = 1", floatfmt=".3g")


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
    """Run the AHP reproduction and write ``report.md`` with figures to ``out_dir``.

    Full: four data sets, ε in {1, 0.1, 0.01}, ``trials`` trials (SF: one).
    ``quick=True``: two small synthetic stand-ins, one trial, seconds. Results go to
    ``out_dir/results.csv``; a re-run resumes from it.
    """
    folder = Path(out_dir)
    figdir = folder / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    data = paper_datasets(quick)
    trials = min(trials, 1) if quick else trials
    slow_trials = 1
    rep = Report(
        "AHP (Zhang et al., SDM 2014): KLD tables and range queries (§6)",
        settings={
            "mode": "quick (synthetic stand-ins)" if quick else "full",
            "trials": trials,
            "SF trials": slow_trials,
            "epsilons": EPSILONS,
            "range lengths r (%)": R_PERCENT,
            "KLD pseudo-count τ": TAUS,
            "seed": seed,
            "workers": workers,
        },
    )
    rows = run_tables(
        data,
        labels=tuple(METHODS),
        epsilons=EPSILONS,
        metrics=_metrics(R_PERCENT),
        trials=trials,
        slow_trials=slow_trials,
        workers=workers,
        seed=seed,
        out=folder / "results.csv",
        data_dir=data_dir,
        quick=quick,
        progress=progress,
    )
    table = ex.summary_index(rows)
    notes = [f"- **{d.paper}**: `{d.spec.label}`, {d.note}." for d in data]
    rep.section(
        "Data",
        "\n".join(notes) + "\n\nReleases use seeded noise (not private) so the run can be "
        "repeated; errors are against the true counts. Raw rows: `results.csv`.",
    )
    stats = []
    for d in data:
        if isinstance(d.spec, ex.Given):
            stats.append({"histogram": f"{d.paper} (paper, Table 1)", **LOCATION_TABLE1})
            stats.append({"histogram": f"{d.spec.label} (ours)", **describe(d.spec.counts)})
    if stats:
        rep.table(stats, caption="The Location stand-in against Table 1", floatfmt=".6g")
    _kld_tables(rep, data, table, EPSILONS)
    _range_tables(rep, data, table, EPSILONS, R_PERCENT)
    _figures(rep, data, rows, figdir, EPSILONS)
    times = ex.summarise(rows, by=("dataset", "method"))
    rep.section("Run time per release", "Mean seconds per release over every ε and trial.")
    rep.table(times, ["dataset", "method", "seconds", "runs", "failures"], floatfmt=".3g")
    diag = diagnose(data, seed=seed, data_dir=data_dir, quick=quick)
    _claims(rep, data, table, EPSILONS, R_PERCENT, diag)
    _why_section(rep, data, table, diag)
    return rep.write(folder)
