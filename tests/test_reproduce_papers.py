"""Tests of the AHP, SReB_GCA and SORTaki reproductions: quick runs end to end, the
Identity closed form against a brute-force expectation, the data stand-ins."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from dphist import datasets
from dphist._kernel import noise_variance
from dphist.errors import ValidationError
from dphist.lab.reproduce import PAPERS, ahp, sortaki, sreb
from dphist.lab.reproduce import metrics as rmetrics


def claim_rows(text: str) -> list[list[str]]:
    """Body rows of the claims table of a report."""
    part = text.split("## Claims\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in part.splitlines() if ln.startswith("|")]
    head, rule, *body = lines
    assert head == "| claim | paper | ours | verdict | why |"
    assert re.fullmatch(r"\|(---\|)+", rule)
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in body]


def check_report(path, n_claims_min: int) -> str:
    text = path.read_text(encoding="utf-8")
    rows = claim_rows(text)
    assert len(rows) >= n_claims_min
    assert all(len(r) == 5 and r[3] in ("reproduced", "differs") for r in rows)
    held = sum(r[3] == "reproduced" for r in rows)
    assert f"{held} of {len(rows)} claims reproduced." in text
    assert (path.parent / "results.csv").stat().st_size > 0
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert figures
    for link in figures:
        png = path.parent / link
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return text


def test_registered():
    assert {"ahp", "sreb", "sortaki"} <= set(PAPERS)
    assert PAPERS["ahp"] is ahp.run
    assert PAPERS["sreb"] is sreb.run
    assert PAPERS["sortaki"] is sortaki.run


# --------------------------------------------------------------------------- quick runs


def test_quick_ahp_end_to_end(tmp_path):
    path = PAPERS["ahp"](tmp_path, trials=3, workers=1, quick=True)
    text = check_report(path, 8)
    _assert_reasons(text)
    assert "KLD (Tables 2-4)" in text
    # paper values sit beside ours
    assert "| Search Log | AHP | 0.054 |" in text
    # resuming from results.csv reruns nothing and gives the same tables
    again = PAPERS["ahp"](tmp_path, trials=3, workers=1, quick=True).read_text(encoding="utf-8")
    strip = re.compile(r"\| (written \(UTC\)|run time \(s\)) \|.*\n")
    assert strip.sub("", again) == strip.sub("", text)


def test_quick_sreb_end_to_end(tmp_path):
    text = check_report(PAPERS["sreb"](tmp_path, trials=1, workers=1, quick=True), 6)
    _assert_reasons(text)
    assert "Fit of each KLD reading to Table 2" in text
    assert "Table 2" in text and "Fig. 4" in text
    assert "| Search Log | 1 | 0.0001 |" in text


def test_quick_sortaki_end_to_end(tmp_path):
    text = check_report(PAPERS["sortaki"](tmp_path, trials=2, workers=1, quick=True), 10)
    rows = claim_rows(text)
    first = rows[0]
    # the closed form reproduces every printed Identity cell, also on quick data
    assert first[0].startswith("Identity's error is exactly predictable")
    assert first[3] == "reproduced"


# --------------------------------------------------------------------------- closed form


def _discrete_laplace_pmf(eps: float, k: np.ndarray) -> np.ndarray:
    p = math.exp(-eps)
    return (1 - p) / (1 + p) * p ** np.abs(k)


@pytest.mark.parametrize("eps", [1.0, 0.7])
def test_identity_closed_form_equals_brute_force_expectation(eps):
    """Exact expectation over every noise vector of 3 bins (support truncated far out)."""
    n, lengths, scale = 3, (1, 2), 17.0
    support = np.arange(-60, 61)
    pmf = _discrete_laplace_pmf(eps, support)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
    # every noise vector (z0, z1, z2) on the truncated support, by broadcasting
    z = [
        support.astype(np.float64).reshape([-1 if a == i else 1 for a in range(n)])
        for i in range(n)
    ]
    w = pmf.reshape(-1, 1, 1) * pmf.reshape(1, -1, 1) * pmf.reshape(1, 1, -1)
    ranges = [(lo, lo + L) for L in lengths for lo in range(n - L + 1)]
    sq = sum(sum(z[lo:hi]) ** 2 for lo, hi in ranges)
    brute = float(np.sum(w * sq)) / (scale * len(ranges))
    closed = sortaki.identity_scaled_error(n, scale, eps, lengths, noise="discrete")
    assert math.isclose(brute, closed, rel_tol=1e-9)


def test_discrete_variance_is_the_libraries_noise_variance():
    from fractions import Fraction

    for eps in ("1", "0.5", "0.1"):
        ours = sortaki.identity_scaled_error(1, 1, float(eps), (1,), noise="discrete")
        assert math.isclose(ours, noise_variance(Fraction(1), Fraction(eps)), rel_tol=1e-12)


def test_identity_closed_form_by_hand_and_against_the_paper():
    # n = 4, lengths 1 and 2: 4 + 3 ranges, total length 4 + 6 = 10 -> mean 10/7
    assert math.isclose(sortaki.mean_query_length(4, (1, 2)), 10 / 7)
    assert math.isclose(sortaki.identity_scaled_error(4, 10, 1.0, (1, 2)), 2 * (10 / 7) / 10)
    # Table III (Amazon, identity workload): 2 / (ε² 7.5M)
    assert round(sortaki.identity_scaled_error(500_000, 7.5e6, 0.1, (1,)) / 1e-6, 2) == 26.67
    # Table VII (big ranges, 48K bins, 1M records, ε = 0.1): printed 10.97 (x 1e-2)
    big = sortaki.identity_scaled_error(48_000, 1e6, 0.1, sortaki.BIG) / 1e-2
    assert round(big, 2) == 10.97
    # mean length by enumerating every range of the small-range workload
    every = [L for L in sortaki.SMALL for _ in range(1024 - L + 1)]
    assert math.isclose(sortaki.mean_query_length(1024, sortaki.SMALL), np.mean(every))


def test_every_printed_identity_cell_matches_the_closed_form():
    for t in sortaki.PAPER_TABLES.values():
        lengths = sortaki.WORKLOAD_LENGTHS[t.workload]
        for (name, eps, _), printed in zip(t.columns, t.rows["Identity"], strict=True):
            domain, scale = sortaki.PAPER_DATA[name]
            value = sortaki.identity_scaled_error(domain, scale, eps, lengths) / t.error_scale
            assert abs(value - printed) <= 0.005 + 1e-9, (t.number, name, eps)


def test_closed_form_rejects_bad_input():
    with pytest.raises(ValidationError):
        sortaki.identity_scaled_error(10, 0, 1.0, (1,))
    with pytest.raises(ValidationError):
        sortaki.identity_scaled_error(10, 5, 1.0, (1,), noise="gauss")
    with pytest.raises(ValidationError):
        sortaki.mean_query_length(5, (6, 7))


def test_paper_tables_are_rectangular():
    for t in sortaki.PAPER_TABLES.values():
        assert all(len(v) == len(t.columns) for v in t.rows.values()), t.number
        assert "Identity" in t.rows


# --------------------------------------------------------------------------- stand-ins


def test_location_stand_in_matches_table1():
    x = ahp.location_like()
    stats = ahp.describe(x)
    assert stats["bins"] == 7725 and stats["zeros"] == 4720
    assert int(x.sum()) == 186_471 and stats["max"] == 467
    assert abs(stats["variance"] - 4764.57) / 4764.57 < 0.05
    assert np.array_equal(x, ahp.location_like())  # seeded


def test_sortaki_stand_ins_have_the_described_shape():
    amazon = sortaki.amazon_like(4096, seed=2)
    assert amazon.min() >= 0 and 0.25 < np.mean(amazon == 0) < 0.6
    assert np.mean(np.diff(amazon) <= 0) < 0.9  # not sorted
    wage = sortaki.wage_like()
    assert wage.size == 1024 and wage[0] == wage.max()
    assert wage[100] > np.median(wage)


@pytest.mark.needs_data
def test_full_datasets_keep_the_papers_records_per_bin():
    try:
        datasets.data_dir()
    except Exception as exc:
        pytest.skip(f"real datasets unavailable: {exc}")
    data = sortaki.datasets(False)
    for name, d in data.items():
        domain, scale = sortaki.PAPER_DATA[name]
        assert int(d.spec.counts.sum()) == round(scale * d.spec.counts.size / domain)
    net = datasets.load("nettrace_4096")
    assert net[:1024].sum() == net.sum()  # the first 1,024 bins hold every record


# --------------------------------------------------------------------------- reasons


def _assert_reasons(text: str) -> None:
    """Every claim keeps its rule and then says why, with a number."""
    for row in claim_rows(text):
        why, verdict = row[4], row[3]
        marker = "reproduced" if verdict == "reproduced" else "differs because"
        assert marker in why, row
        rule, _, reason = why.partition(marker)
        assert rule.strip(), row  # the rule text comes first
        assert re.search(r"\d", reason), row  # backed by a number
    assert "## Why our results differ" in text


def test_kld_conventions_by_hand():
    true = np.array([2.0, 2.0, 0.0])
    est = np.array([1.0, 3.0, -5.0])  # the negative bin is clipped to 0
    got = rmetrics.kld_conventions(true, est)
    # zero bins dropped: p = (1/2, 1/2), q = (1/4, 3/4)
    by_hand = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert math.isclose(got["zero bins dropped"], by_hand, rel_tol=1e-12)
    # τ = 1: p = (3, 3, 1)/7, q = (2, 4, 1)/7
    p, q = np.array([3, 3, 1]) / 7, np.array([2, 4, 1]) / 7
    assert math.isclose(got["τ=1"], float(np.sum(p * np.log(p / q))), rel_tol=1e-12)
    assert math.isclose(got["log2, τ=1e-3"], got["τ=1e-3"] / math.log(2))
    assert set(got) == set(rmetrics.KLD_CONVENTIONS)
    perfect = rmetrics.kld_conventions(true, true)
    assert all(v == 0 for v in perfect.values())


def test_error_inflation_by_hand():
    true = np.zeros(6)
    # the same error on every bin: a range of L bins errs by L, so the factor is L
    assert math.isclose(rmetrics.error_inflation(true, np.ones(6), 3), 3.0)
    # alternating errors cancel: ranges of 2 bins are exact
    assert rmetrics.error_inflation(true, np.array([1.0, -1, 1, -1, 1, -1]), 2) == 0.0
    # independent noise: close to 1
    noise = np.random.default_rng(3).laplace(size=200_000)
    assert abs(rmetrics.error_inflation(np.zeros(noise.size), noise, 50) - 1) < 0.05
    with pytest.raises(ValidationError):
        rmetrics.error_inflation(true, true, 7)


def test_sorted_range_mse_orders_by_true_count():
    true = np.array([5.0, 1.0, 3.0, 0.0])
    est = true + np.array([0.0, 1.0, 0.0, -1.0])
    # sorted by true count: errors (-1, +1, 0, 0); ranges of 1 bin (25% of 4 bins)
    assert math.isclose(rmetrics.sorted_range_mse(true, est, 25.0), 0.5)
    # ranges of 2 bins over the sorted order: (-1+1, 1+0, 0+0) -> MSE 1/3
    assert math.isclose(rmetrics.sorted_range_mse(true, est, 50.0), 1 / 3)


def test_convention_fit_is_scale_free():
    paper = [1e-4, 1e-2, 1.0]
    fit = rmetrics.convention_fit([3e-4, 3e-2, 3.0], paper)
    assert math.isclose(fit["median ratio"], 3.0) and math.isclose(fit["spread"], 1.0)
    assert fit["within 3x"] == 3
    bad = rmetrics.convention_fit([1.0, 1.0, 1.0], paper)
    assert math.isclose(bad["spread"], 1e4) and bad["within 3x"] == 1
    assert rmetrics.convention_fit([math.nan], [1.0])["within 3x"] == 0
