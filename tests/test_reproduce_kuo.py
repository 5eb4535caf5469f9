"""The Kuo et al. reproduction (quick run end to end) and the omniscient reference (§8.1)."""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest

from dphist import groupsize as gs
from dphist.errors import ValidationError
from dphist.lab.reproduce import PAPERS, kuo

# --------------------------------------------------------------------------- report


def test_registered():
    assert PAPERS["kuo"] is kuo.run
    assert len(kuo.COMBINATIONS) == 8 and kuo.name(("ranked", "cumulative", "ranked")) == "HgHcHg"


def test_quick_report_end_to_end(tmp_path):
    path = PAPERS["kuo"](tmp_path, trials=3, workers=1, quick=True)
    text = path.read_text(encoding="utf-8")
    part = text.split("## Claims\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in part.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert len(rows) >= 9
    verdicts = [re.split(r"(?<!\\)\|", ln)[4].strip() for ln in rows]
    assert set(verdicts) <= {"reproduced", "differs"}
    assert f"{verdicts.count('reproduced')} of {len(rows)} claims reproduced." in text
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (path.parent / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(path.parent / "results.csv", encoding="utf-8") as fh:
        results = list(csv.DictReader(fh))
    kinds = {r["kind"] for r in results}
    assert kinds == {"method", "naive", "omniscient", "oracle", "selection"}
    # quick mode: one trial, two budgets, three combinations x (weighted, mean, initial)
    method_rows = [r for r in results if r["kind"] == "method"]
    assert len(method_rows) == 2 * 3 * (3 * 3 + 1)
    # the oracle is the best weighted combination of its own trial
    for e in ("0.5", "1.0"):
        total = {}
        for r in method_rows:
            if r["eps_level"] == e and r["merge"] == "weighted":
                total.setdefault(r["combination"], []).append(float(r["emd"]))
        oracle = {
            r["combination"] for r in results if r["kind"] == "oracle" and r["eps_level"] == e
        }
        assert len(oracle) == 1 and oracle <= set(total)
    assert "charged ε" in text and "3 × 1.5 + 0.15 = 4.65" in text


# --------------------------------------------------------------------------- omniscient


def one_node(sizes) -> gs.GroupSizeData:
    return gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy(np.array([-1])), [sizes])


def brute_force_reference(true: np.ndarray, scale: float, trials: int, gen) -> tuple[float, float]:
    """Independent oracle: bisection for the simplex shift, LRR by a loop, EMD by sorting."""
    occ = np.flatnonzero(true)
    g = int(true.sum())
    count_err = emd_err = 0.0
    for _ in range(trials):
        y = true[occ] + gen.laplace(0.0, scale, occ.size)
        lo, hi = y.min() - g - 1.0, y.max()
        for _ in range(200):
            mid = (lo + hi) / 2
            if np.maximum(y - mid, 0).sum() > g:
                lo = mid
            else:
                hi = mid
        x = np.maximum(y - (lo + hi) / 2, 0)
        fl = np.floor(x + 1e-9).astype(int)
        order = sorted(range(x.size), key=lambda j: (-(x[j] - fl[j]), j))
        for j in order[: g - int(fl.sum())]:
            fl[j] += 1
        count_err += np.abs(fl - true[occ]).sum()
        a = np.repeat(occ, true[occ])
        b = np.repeat(occ, fl)
        emd_err += np.abs(np.sort(a) - np.sort(b)).sum()
    return count_err / trials, emd_err / trials


def test_omniscient_matches_brute_force():
    sizes = [1] * 30 + [2] * 7 + [5] * 3 + [9] + [40] * 2
    data = one_node(sizes)
    ref = gs.omniscient(data, epsilon=1, trials=25, rng=7)
    count, emd = brute_force_reference(data.histograms()[0], 1.0, 25, np.random.default_rng(7))
    assert ref["simulated"][0] == pytest.approx(count)
    assert ref["simulated_emd"][0] == pytest.approx(emd)
    assert ref["analytic"][0] == pytest.approx(5 * math.sqrt(2))


def test_omniscient_single_size_is_exact():
    """One occupied size: the projection puts all G groups back on it whatever the noise."""
    ref = gs.omniscient(one_node([3] * 7), epsilon=0.5, trials=10, rng=1)
    assert ref["simulated"].tolist() == [0.0] and ref["simulated_emd"].tolist() == [0.0]
    assert ref["analytic"][0] == pytest.approx(math.sqrt(2) / 0.5)


def test_omniscient_emd_pays_the_gap_between_sizes():
    """Sizes {1, 11}, one group each: any misplaced count is one group moved by 10 sizes,
    so EMD = 10 |c - 1| while the count error is 2 |c - 1| (hand-worked, every draw)."""
    ref = gs.omniscient(one_node([1, 11]), epsilon=0.2, trials=200, rng=3)
    assert ref["simulated"][0] > 0
    assert ref["simulated_emd"][0] == pytest.approx(5 * ref["simulated"][0])


def test_omniscient_per_level_budget_and_means():
    h = gs.Hierarchy.from_fanouts([[2]])
    data = gs.GroupSizeData.from_leaf_sizes(h, [[1, 1, 2], [5, 5]])
    ref = gs.omniscient(data, epsilon=2, trials=3, rng=0)  # eps/2 = 1 per level
    assert ref["analytic"].tolist() == pytest.approx([3 * math.sqrt(2), 1.5 * math.sqrt(2)])
    explicit = gs.omniscient(data, epsilon=2, level_epsilon=[1, 1], trials=3, rng=0)
    for key in ("analytic", "simulated", "simulated_emd"):
        assert explicit[key].tolist() == ref[key].tolist()
    with pytest.raises(ValidationError):
        gs.omniscient(data, epsilon=2, level_epsilon=[1], trials=3)
    with pytest.raises(ValidationError):
        gs.omniscient(data, epsilon=2, trials=0)
