"""AHP's claims (Zhang et al., SDM 2014, §6) as data, with the rules that check them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import experiments as ex
from .claims import Claim, Finding
from .metrics import KLD_CONVENTIONS

__all__ = ["PHP_DEMO", "Results", "claims", "kld_reasons"]

KLD = "kld(tau=0.001)"

#: Label of P-HP run with the authors' demo cap of 400 clusters (diagnostics).
PHP_DEMO = "PHP (400 clusters)"


@dataclass(frozen=True)
class Results:
    """What the rules read: data sets, summary table, grid axes, diagnostics, paper values."""

    data: Sequence[Any]
    table: Any
    epsilons: Sequence[float]
    r_values: Sequence[float]
    diag: Mapping[str, Any]
    paper_kld: Mapping[tuple[str, float], Mapping[str, float]]
    methods: Mapping[str, str]
    competitors: Sequence[str]

    def value(self, d: Any, eps: float, metric: str, label: str) -> float:
        return ex.summary_value(self.table, d.spec.label, eps, metric, self.methods[label])

    @property
    def cells(self) -> list[tuple[Any, float]]:
        return [(d, e) for d in self.data for e in self.epsilons]

    def best(self, d: Any, eps: float, metric: str) -> tuple[str | None, float]:
        """The competitor with the smallest finite error in one cell, and that error."""
        vals = {lab: self.value(d, eps, metric, lab) for lab in self.competitors}
        vals = {k: v for k, v in vals.items() if math.isfinite(v)}
        if not vals:
            return None, math.nan
        best = min(vals, key=vals.get)
        return best, vals[best]


def _range(r: float) -> str:
    return ex.metric("range_pct_mse", r=r).label


def fmt_cells(items: Sequence[tuple[str, float, float, float]], n: int = 3) -> str:
    """``data ε: a vs b`` for the ``n`` cells with the smallest ``a / b`` (largest loss)."""
    worst = sorted(items, key=lambda x: x[2] / x[3] if x[3] else math.inf)
    return "; ".join(f"{d} ε={e:g}: {a:.3g} vs {b:.3g}" for d, e, a, b in worst[:n])


def kld_reasons(r: Results) -> dict[str, str]:
    """Evidence shared by the KLD claims (numbers from the grid and the diagnostics)."""
    below = cells = 0
    for d, eps in r.cells:
        ref = r.paper_kld.get((d.paper, eps), {}).get("NF")
        ours = r.value(d, eps, KLD, "identity")
        if ref and math.isfinite(ours):
            cells += 1
            below += ours < ref
    k = r.diag["kld"]
    name = r.diag["kld_data"]
    conv = ", ".join(f"{c} {k['AHP'][c]:.3g}" for c in KLD_CONVENTIONS)
    php = ", ".join(f"{c} {k['PHP'][c]:.3g}" for c in KLD_CONVENTIONS)
    paper = r.paper_kld.get((name, 1.0), {})
    return {
        "noise": f"plain Laplace on every bin (identity) has a lower KLD than the paper's NF "
        f"in {below} of {cells} cells, so the paper's competitor values are not those of "
        "the DP-correct forms run here",
        "ahp": f"one seeded AHP release on {name} at ε=1 gives {conv} (paper "
        f"{paper.get('AHP', math.nan):g})",
        "php": f"P-HP on {name} at ε=1: {php} (paper "
        f"{paper.get('PHP', math.nan):g}); with the authors' "
        f"demo cap of 400 clusters it is {k[PHP_DEMO][KLD_CONVENTIONS[0]]:.3g} (τ=1e-3), "
        "so neither the smoothing nor that default explains the gap; its contiguous "
        "clusters fit the sorted data",
    }


# --------------------------------------------------------------------------- KLD


def _lowest_kld(r: Results) -> Finding:
    wins, beaten = [], []
    for d, eps in r.cells:
        ahp = r.value(d, eps, KLD, "AHP")
        best, val = r.best(d, eps, KLD)
        wins.append(math.isfinite(ahp) and ahp < val)
        if not wins[-1]:
            beaten.append((f"{d.paper} {best}", eps, val, ahp))
    ours = f"lowest in {sum(wins)} of {len(r.cells)} (data, ε) cells"
    if all(wins):
        return Finding(True, ours, f"AHP lowest in {sum(wins)} of {len(r.cells)} cells")
    return Finding(
        False,
        ours,
        "a competitor run in DP-correct form beats AHP (competitor vs AHP: "
        + fmt_cells(beaten)
        + f") and {kld_reasons(r)['noise']}",
    )


def _beats(comp: str):
    def rule(r: Results) -> Finding:
        names = {d.paper for d in r.data}
        paper_wins = sum(v["AHP"] < v[comp] for k, v in r.paper_kld.items() if k[0] in names)
        paper_cells = sum(1 for k in r.paper_kld if k[0] in names)
        lost, ratios = [], []
        for d, eps in r.cells:
            a = r.value(d, eps, KLD, "AHP")
            c = r.value(d, eps, KLD, comp)
            if not a < c:
                lost.append((d.paper, eps, c, a))
            ref = r.paper_kld.get((d.paper, eps), {}).get(comp)
            if ref and math.isfinite(c) and c > 0:
                ratios.append(ref / c)
        med = float(np.median(ratios)) if ratios else math.nan
        scale = f"the paper's {comp} values are a median {med:.3g}x ours"
        ours = f"{len(r.cells) - len(lost)} of {len(r.cells)}"
        paper = f"{paper_wins} of {paper_cells}"
        if not lost:
            return Finding(True, ours, scale, paper=paper)
        detail = f"{comp} is lower in {len(lost)} cells ({comp} vs AHP: {fmt_cells(lost)}); {scale}"
        if comp == "PHP":
            detail += "; " + kld_reasons(r)["php"]
        return Finding(False, ours, detail, paper=paper)

    return rule


def _kld_absolute(r: Results) -> Finding:
    ratios = []
    for d, eps in r.cells:
        ref = r.paper_kld.get((d.paper, eps), {}).get("AHP")
        ours = r.value(d, eps, KLD, "AHP")
        if ref and math.isfinite(ours):
            ratios.append(ours / ref)
    close = sum(1 / 3 <= q <= 3 for q in ratios)
    ok = bool(ratios) and close == len(ratios)
    ours = f"within a factor 3 of the paper in {close} of {len(ratios)} cells; ratios " + ", ".join(
        f"{q:.2g}" for q in ratios
    )
    evidence = kld_reasons(r)["ahp"]
    if ok:
        return Finding(True, ours, evidence)
    return Finding(
        False,
        ours,
        f"the ratios run from {min(ratios):.2g} to {max(ratios):.2g} (no single scale "
        "factor), and no smoothing reading closes the gap: " + evidence,
    )


# --------------------------------------------------------------------------- ranges


def _range_cells(r: Results) -> dict[str, Any]:
    """AHP against the best competitor in every (data, ε, r) cell."""
    out: dict[str, Any] = {"wins": 0, "cells": 0, "factors": {}, "lost": []}
    for d, eps in r.cells:
        for rv in r.r_values:
            ahp = r.value(d, eps, _range(rv), "AHP")
            best, val = r.best(d, eps, _range(rv))
            if math.isfinite(ahp) and math.isfinite(val):
                out["cells"] += 1
                out["wins"] += ahp < val
                out["factors"].setdefault(d.paper, []).append(val / ahp)
                if not ahp < val:
                    out["lost"].append((f"{d.paper} r={rv:g}% {best}", eps, val, ahp))
    return out


def _range_wins(r: Results) -> Finding:
    c = _range_cells(r)
    ok = c["cells"] > 0 and c["wins"] == c["cells"]
    ours = f"lowest range MSE in {c['wins']} of {c['cells']} (data, ε, r) cells"
    if ok:
        return Finding(True, ours, f"AHP lowest in {c['wins']} of {c['cells']} cells")
    corr = "; ".join(
        f"{k} ε=1, ranges of 1% of the domain: AHP's range MSE is {v['inflation']:.3g}x "
        f"what independent bin errors of the same size would give (identity "
        f"{v['identity inflation']:.3g}x)"
        for k, v in r.diag["sorted"].items()
    )
    return Finding(
        False,
        ours,
        "neighbouring bins of similar count share an AHP cluster whose mean is off in the "
        "same direction, so errors add up along a range (best competitor vs AHP: "
        + fmt_cells(c["lost"])
        + "); "
        + corr,
    )


def _unsorted_reason(alt: Mapping[str, float] | None, factors: Sequence[float]) -> str:
    """Why AHP's range gain on an unsorted data set is below 8 (see the diagnostics)."""
    if alt and alt["inflation"] > 2:
        return (
            "ranges over the public order add the correlated errors of AHP's value-sorted clusters"
        )
    return (
        "AHP's bin errors are not correlated along this domain (inflation "
        f"{alt['inflation'] if alt else math.nan:.3g}), so its only gain is the noise "
        f"averaged within clusters: best competitor / AHP median {np.median(factors):.3g} "
        "(the stand-in's non-empty bins sit at random positions)"
    )


def _unsorted_gain(name: str):
    def rule(r: Results) -> Finding | None:
        f = _range_cells(r)["factors"].get(name)
        if f is None:
            return None
        ok = float(np.median(f)) > 8
        d = next(x for x in r.data if x.paper == name)
        best, val = r.best(d, 1.0, _range(1.0))
        alt = r.diag["sorted"].get(name)
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
        ours = f"best competitor / AHP: median {np.median(f):.3g}, min {min(f):.3g}"
        detail = f"median {np.median(f):.3g}" if ok else _unsorted_reason(alt, f)
        return Finding(ok, ours, detail + alt_txt)

    return rule


def _close_to_php(name: str):
    def rule(r: Results) -> Finding | None:
        d = next((x for x in r.data if x.paper == name), None)
        if d is None:
            return None
        qs = [
            r.value(d, eps, _range(rv), "PHP") / r.value(d, eps, _range(rv), "AHP")
            for eps in r.epsilons
            if eps >= 0.1
            for rv in r.r_values
        ]
        ok = bool(qs) and all(0.5 <= q <= 3 for q in qs)
        ours = "PHP / AHP: " + ", ".join(f"{q:.2g}" for q in qs)
        if ok:
            return Finding(True, ours, f"PHP / AHP from {min(qs):.2g} to {max(qs):.2g}")
        return Finding(
            False,
            ours,
            "PHP is better, not close: its contiguous clusters fit the sorted data, PHP / AHP "
            f"as low as {min(qs):.2g}",
        )

    return rule


def _curve(r: Results, d: Any, lab: str, eps: Sequence[float], rs: Sequence[float]) -> list:
    return [r.value(d, e, _range(rv), lab) for e in eps for rv in rs]


def _trend_reason(bad: Sequence[tuple[str, str]]) -> str:
    """Which curves break the monotone trend, and whose they are."""
    if not bad:
        return "fewer than 90% of the curves are non-decreasing in r"
    methods = sorted({m for m, _ in bad})
    return (
        f"{len(bad)} curves are not monotone in ε, from "
        + ", ".join(methods)
        + " (ε = 1, 0.1, 0.01: "
        + "; ".join(t for _, t in bad[:3])
        + ")"
        + (
            ": SF runs one trial per ε, so each point is a single private choice of buckets"
            if methods == ["SF"]
            else ""
        )
    )


def _trend(r: Results) -> Finding:
    trend_eps = trend_r = total = 0
    bad: list[tuple[str, str]] = []
    for d in r.data:
        for lab in r.methods:
            for rv in r.r_values:
                ys = _curve(r, d, lab, r.epsilons, [rv])
                total += 1
                mono = all(a <= b for a, b in itertools.pairwise(ys))
                trend_eps += mono
                if not mono:
                    bad.append(
                        (lab, f"{d.paper} {lab} r={rv:g}%: " + ", ".join(f"{y:.3g}" for y in ys))
                    )
            for eps in r.epsilons:
                ys = _curve(r, d, lab, [eps], r.r_values)
                trend_r += all(a <= b for a, b in itertools.pairwise(ys))
    n_r = len(r.data) * len(r.methods) * len(r.epsilons)
    ok = trend_eps == total and trend_r >= 0.9 * n_r
    ours = (
        f"non-increasing in ε: {trend_eps} of {total} curves; non-decreasing in r: "
        f"{trend_r} of {n_r} curves"
    )
    if ok:
        return Finding(True, ours, f"{trend_eps} of {total} in ε, {trend_r} of {n_r} in r")
    return Finding(False, ours, _trend_reason(bad))


def claims(competitors: Sequence[str]) -> tuple[Claim, ...]:
    """§6's statements, with one claim per competitor of Tables 2-4."""
    return (
        Claim("AHP has the lowest KLD of AHP, NF, SF, PHP, GS in all cases",
              "Tables 2-4 (12 of 12)",
              "mean KLD (τ = 1e-3) over the trials, every data set and ε", _lowest_kld),
        *(Claim(f"AHP has lower KLD than {c}", "Tables 2-4", "every (data, ε) cell", _beats(c))
          for c in competitors),
        Claim("AHP's KLD values (absolute)", "Tables 2-4",
              "absolute KLD depends on the unstated smoothing of zero estimates and on the "
              "noise mode; a factor 3 is the tolerance", _kld_absolute),
        Claim("AHP outperforms all competitors on range queries in all cases", "§6, Figs 2-5",
              "mean MSE over all ranges of r% of the domain", _range_wins),
        *(Claim(f"on the unsorted {name}, AHP's range MSE improves more than 8 times",
                "§6, Figs 2 and 4", "median over (ε, r) of best-competitor MSE / AHP MSE",
                _unsorted_gain(name))
          for name in ("Search Log", "Location")),
        *(Claim(f"on the sorted {name}, AHP's range MSE is close to PHP's at ε = 0.1 and 1",
                "§6, Figs 3 and 5",
                "'close': PHP within a factor 0.5-3 of AHP in every (ε, r) cell",
                _close_to_php(name))
          for name in ("Social Network", "NetTrace")),
        Claim("MSE increases when ε decreases and when the range grows", "§6, Figs 2-5",
              "monotone in ε for every (data, method, r); in r for at least 90% of (data, "
              "method, ε) (a method that fits a range exactly can dip)", _trend),
    )  # fmt: skip
