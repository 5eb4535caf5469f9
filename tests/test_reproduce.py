"""Tests of the report framework and of the quick Kellaris reproduction."""

from __future__ import annotations

import inspect
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import dphist
from dphist.errors import ValidationError
from dphist.lab.reproduce import (
    PAPERS,
    Claim,
    Finding,
    Paper,
    Report,
    check,
    kellaris,
    markdown_table,
)
from dphist.lab.reproduce import kellaris_tables as kt


def tables(markdown: str) -> list[list[list[str]]]:
    """Every Markdown table as a list of rows of cells; checks the table shape."""
    found, current = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            assert line.endswith("|"), line
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            current.append(cells)
        elif current:
            head, rule, *body = current
            assert all(re.fullmatch(r"-{3,}", c) for c in rule), rule
            assert all(len(r) == len(head) for r in [rule, *body]), current
            found.append([head, *body])
            current = []
    return found


def test_markdown_table_by_hand():
    text = markdown_table(
        [{"a": 1, "b": 0.123456, "c": "x|y"}, {"a": 2, "b": math.nan, "c": None}],
        floatfmt=".3f",
    )
    assert text == "| a | b | c |\n|---|---|---|\n| 1 | 0.123 | x\\|y |\n| 2 | – |  |\n"
    assert markdown_table([]) == "_(no rows)_\n"


def test_report_writes_markdown_with_claims_tables_and_figures(tmp_path):
    fig = tmp_path / "out" / "figures" / "a.png"
    fig.parent.mkdir(parents=True)
    fig.write_bytes(b"png")
    rep = Report("Paper X", settings={"trials": 3, "epsilons": [0.1, 1.0], "seed": 7})
    rep.section("Setup", "Some *text*.")
    rep.table([{"method": "a", "mse": 1.5}], caption="Errors")
    rep.figure(fig, "A figure")
    rep.claim("a beats b", "Fig. 2", "1.5 vs 3", True, "lower MSE")
    rep.claim("b is fast", "§4", "2 s", "differs", "slower here")
    path = rep.write(tmp_path / "out")
    assert path == tmp_path / "out" / "report.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Paper X\n")
    assert "![A figure](figures/a.png)" in text
    assert "1 of 2 claims reproduced." in text
    found = tables(text)
    settings = {row[0]: row[1] for row in found[0][1:]}
    assert (
        settings["trials"] == "3" and settings["epsilons"] == "0.1, 1" and settings["seed"] == "7"
    )
    assert settings["dphist version"] == dphist.__version__
    assert float(settings["run time (s)"]) >= 0
    claims = found[1]
    assert claims[0] == ["claim", "paper", "ours", "verdict", "why"]
    assert claims[1] == ["a beats b", "Fig. 2", "1.5 vs 3", "reproduced", "lower MSE"]
    assert claims[2][3] == "differs"
    assert found[2] == [["method", "mse"], ["a", "1.5"]]
    assert list((tmp_path / "out").iterdir()) != []
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]


def test_claim_verdicts_are_checked():
    rep = Report("x")
    with pytest.raises(ValidationError, match="verdict"):
        rep.claim("c", "p", "o", "maybe", "w")


def test_registry_entries_have_the_documented_signature():
    assert "kellaris" in PAPERS
    for run in PAPERS.values():
        params = inspect.signature(run).parameters
        assert next(iter(params)) == "out_dir"
        for name in ("trials", "workers", "quick", "data_dir"):
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY


def test_every_reproduction_follows_the_paper_protocol():
    for name, run in PAPERS.items():
        module = sys.modules[run.__module__]
        assert isinstance(module, Paper), name
        assert module.CLAIMS and all(isinstance(c, Claim) for c in module.CLAIMS), name
        assert len({c.statement for c in module.CLAIMS}) == len(module.CLAIMS), name
        assert module.datasets(True), name


def test_a_claim_renders_its_rule_and_its_finding():
    rep = Report("x")
    held = Claim("s", "Fig. 1", "how", lambda r: Finding(True, f"{r}", "detail", paper="2 of 3"))
    lost = Claim("t", "Fig. 2", "how", lambda r: Finding(False, "ours", "cause", "ctx"))
    absent = Claim("u", "Fig. 3", "how", lambda r: None)
    check(rep, (held, lost, absent), 7)
    assert [tuple(v.__dict__.values()) for v in rep.claims] == [
        ("s", "Fig. 1 (2 of 3)", "7", "reproduced", "how; reproduced; detail"),
        ("t", "Fig. 2", "ours", "differs", "how; ctx; differs because cause"),
    ]


def test_paper_table2_totals_follow_from_the_stated_skylines():
    # Table 2's "Total" column of the paper.
    assert kellaris.PAPER_TABLE2 == {
        "S1": 2,
        "S~": 8,
        "S2": 1,
        "O+S1": 0,
        "O+S~": 4,
        "O+S2": 0,
        "S1+MM": 0,
        "S~+MM": 0,
        "S2+MM": 0,
        "S1+PMM": 2,
        "S~+PMM": 2,
        "S2+PMM": 0,
        "H": 1,
        "S1+H": 6,
        "S2+H": 15,
    }
    assert set(kellaris.SCHEMES) <= {m.name for m in dphist.list_methods()}


def test_quick_kellaris_run_end_to_end(tmp_path):
    pytest.importorskip("matplotlib")
    path = PAPERS["kellaris"](tmp_path, trials=1, workers=1, quick=True)
    assert path == tmp_path / "report.md"
    text = path.read_text(encoding="utf-8")
    found = tables(text)
    claims = next(t for t in found if t[0] == ["claim", "paper", "ours", "verdict", "why"])
    assert len(claims) - 1 >= 8
    assert all(row[3] in ("reproduced", "differs") for row in claims[1:])
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links and all((tmp_path / link).is_file() for link in links)
    assert all(Path(link).parts[0] == "figures" for link in links)
    rows = dphist.lab.experiments.load_results(tmp_path / "results.csv")
    assert {r["method"] for r in rows} == set(kellaris.SCHEMES)
    assert not [r for r in rows if r["error"]]
    # Reference-noise runs exist for exactly the listed schemes (MM only where run) ...
    ref = {r["method"] for r in rows if json.loads(r["params"]) == kellaris.REFERENCE}
    assert ref == set(kellaris.REF_SCHEMES)
    # ... and are marked in the report as the paper's (not private) noise.
    results = [t for t in found if t[0][0] == "scheme" and "runs" in t[0]]
    tagged = {row[0] for t in results for row in t[1:] if row[0].endswith("[ref]")}
    assert tagged == {m + kellaris.REF_TAG for m in kellaris.REF_SCHEMES}
    assert "not ε-differentially private" in text and "## Why our results differ" in text
    # Every claim's why keeps the rule and says why it differs (or that it holds).
    for row in claims[1:]:
        assert ("; reproduced; " if row[3] == "reproduced" else "; differs because ") in row[4]
    verdicts = next(t for t in found if t[0][:2] == ["claim", "ours (certified)"])
    assert len(verdicts) - 1 == len(claims)  # one row per claim and a total
    table2 = next(t for t in found if t[0][0] == "scheme" and "paper (of 16)" in t[0])
    assert "paper's noise (not private)" in table2[0]


def test_reference_noise_releases_are_not_private():
    x = np.arange(64, dtype=np.int64) % 7
    for name in kellaris.REF_SCHEMES:
        assert dphist.get_method(name).defaults.get("noise") == "certified"
        rel = dphist.publish(x, epsilon=1, method=name, rng=0, **kellaris.REFERENCE)
        assert rel.private is False
        assert any(not c.certified for c in rel.ledger)


def _fake_table(values: dict[str, tuple[float, float]], n: int = 100) -> dict:
    """One (data, ε, point) setting: method -> (seconds, error)."""
    return {
        ("d", 1.0, "point_mse", m): {"method": m, "value": v, "seconds": t, "runs": 1, "n": n}
        for m, (t, v) in values.items()
    }


def test_paper_noise_table_swaps_in_reference_runs_and_time_classes_by_hand():
    table = _fake_table({"S~": (1.0, 9.0), "S~ [ref]": (1.0, 2.0), "H": (0.5, 5.0)})
    assert set(kt.certified_table(table)) == {("d", 1.0, "point_mse", m) for m in ("S~", "H")}
    swapped = kt.paper_noise_table(table)
    assert swapped[("d", 1.0, "point_mse", "S~")]["value"] == 2.0
    assert kt.skyline_front(kt.certified_table(table), "d", 1.0, "point_mse")[0] == {"H"}
    assert kt.skyline_front(swapped, "d", 1.0, "point_mse")[0] == {"S~", "H"}
    # Table 1 classes at N = 100: S2 is O(N^2) = 1e4 steps, H is O(N) = 100 steps.
    timed = kt.complexity_time_table(_fake_table({"S2": (0.001, 1.0), "H": (1.0, 3.0)}), {"d": 100})
    assert timed[("d", 1.0, "point_mse", "S2")]["seconds"] == pytest.approx(1e4 * 1e-9)
    assert timed[("d", 1.0, "point_mse", "H")]["seconds"] == pytest.approx(100 * 1e-9)
    assert kellaris._fmt_class(kellaris.PAPER_COMPLEXITY["S~"]) == "O(N log^2 N)"
