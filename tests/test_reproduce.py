"""Tests of the report framework and of the quick Kellaris reproduction."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import pytest

import dphist
from dphist.errors import ValidationError
from dphist.reproduce import PAPERS, Report, kellaris, markdown_table


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
    assert set(kellaris.SCHEMES) <= {m.name for m in dphist.methods()}


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
    rows = dphist.experiments.load_results(tmp_path / "results.csv")
    assert {r["method"] for r in rows} == set(kellaris.SCHEMES)
    assert not [r for r in rows if r["error"]]
