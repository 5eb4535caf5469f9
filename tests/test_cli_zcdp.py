"""``--rho`` and ``--delta`` on ``dphist publish`` and ``dphist groupsize``: checked before
any data is read, one-line errors, and outputs that state the definition and rho."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dphist as dh
from dphist import cli

GROUPS = "gid,state,county,size\na,S1,C1,1\nb,S1,C1,2\nc,S1,C2,3\nd,S2,C1,1\ne,S2,C3,0\n"


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    (tmp_path / "v.csv").write_text("v\n" + "\n".join(str(i % 97) for i in range(300)) + "\n")
    (tmp_path / "groups.csv").write_text(GROUPS)
    return tmp_path


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_publish_with_rho_records_the_definition_and_the_implied_epsilon(capsys):
    code, out, _ = run(
        capsys, "publish", "v.csv", "-c", "v", "--domain", "0:100:10", "--rho", "0.05",
        "--delta", "1e-9", "--method", "OPT-H", "--seed", "1", "--out", "o.json",
    )  # fmt: skip
    assert code == 0
    eps = dh.zCDP("0.05").epsilon_at(1e-9)
    assert "rho = 0.05 (zero-concentrated DP)" in out and f"({eps:.6g}, 1e-09)-DP" in out
    doc = json.loads(Path("o.json").read_text())
    assert doc["delta"] == 1e-9 and doc["epsilon_at_delta"] == pytest.approx(eps)
    rel = doc["release"]
    assert rel["definition"] == "zcdp" and rel["rho"] == 0.05 and rel["spent_exact"] == "1/20"
    assert {c["unit"] for c in rel["ledger"]} == {"rho"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rho", "0.05", "--epsilon", "1", "--method", "HB"], "not both"),
        (["--method", "HB"], "give --epsilon"),
        (["--rho", "0", "--method", "HB"], "rho must be > 0"),
        (["--rho", "0.1", "--delta", "1.5", "--method", "HB"], "delta must lie in (0, 1)"),
    ],
)
def test_publish_budget_errors_are_one_line_and_read_nothing(capsys, extra, message):
    code, out, err = run(capsys, "publish", "missing.csv", "-c", "v", "--domain", "0:10:1", *extra)
    assert code == 2 and out == "" and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_groupsize_with_rho_and_delta(capsys):
    code, out, _ = run(
        capsys, "groupsize", "groups.csv", "--levels", "state,county", "--group-column", "gid",
        "--size-column", "size", "--rho", "0.5", "--delta", "1e-6", "--K", "8", "--seed", "3",
        "--out", "g.json",
    )  # fmt: skip
    assert code == 0 and "rho = 0.5 (zero-concentrated DP)" in out and "1e-06)-DP" in out
    doc = json.loads(Path("g.json").read_text())
    assert doc["definition"] == "zcdp" and doc["rho"] == "1/2" and "epsilon" not in doc
    assert doc["epsilon_at_delta"] == pytest.approx(dh.zCDP("0.5").epsilon_at(1e-6))
    assert [c["primitive"] for c in doc["ledger"]] == ["discrete_gaussian"] * 3


def test_groupsize_budget_errors(capsys):
    base = ["groupsize", "missing.csv", "--levels", "state", "--size-column", "size"]
    code, _, err = run(capsys, *base, "--rho", "1", "--epsilon", "1")
    assert code == 2 and "not both" in err and err.count("\n") == 1
    code, _, err = run(capsys, "groupsize", "--demo", "--rho", "1")
    assert code == 2 and "--demo" in err


def test_publish_auto_under_rho(capsys):
    """auto runs under zCDP: Gaussian features, a zCDP method, one rho ledger."""
    code, _, err = run(
        capsys, "publish", "v.csv", "-c", "v", "--domain", "0:100:1", "--rho", "0.05",
        "--seed", "4", "--out", "z.json",
    )  # fmt: skip
    assert code == 0, err
    rel = json.loads(Path("z.json").read_text())["release"]
    assert rel["definition"] == "zcdp" and rel["spent_exact"] == "1/20"
    assert {c["unit"] for c in rel["ledger"]} == {"rho"}
    assert rel["ledger"][0]["primitive"] == "discrete_gaussian"
    assert "2 sqrt(rho)" in rel["params"]["auto"]["reason"]
