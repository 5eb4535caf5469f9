"""``dphist budget`` and ``--budget`` on publish and groupsize, end to end."""

from __future__ import annotations

import json
import re

import pytest

from dphist import cli
from dphist.store import BudgetStore

GROUPS = "gid,state,county\na,S1,C1\nb,S1,C1\nc,S1,C2\nd,S2,C1\n"
ENTITIES = "eid,gid\n1,a\n2,b\n3,b\n4,c\n5,c\n6,c\n7,d\n"


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "visits.csv").write_text("age\n" + "\n".join(str(a % 97) for a in range(500)))
    (tmp_path / "groups.csv").write_text(GROUPS)
    (tmp_path / "entities.csv").write_text(ENTITIES)
    return tmp_path


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


PUBLISH = ("publish", "visits.csv", "-c", "age", "--domain", "0:100:10", "--method", "identity")


def test_init_publish_show_list_check_backup(capsys, tmp_path):
    code, out, _ = run(capsys, "budget", "init", "census", "--epsilon", "1")
    assert code == 0 and "epsilon = 1 (pure epsilon-DP)" in out
    assert str(tmp_path / "default-store.sqlite") in out  # DPHIST_BUDGET_STORE
    code, out, err = run(
        capsys, *PUBLISH, "--epsilon", "0.25", "--out", "a.csv", "--budget", "census"
    )
    assert code == 0, err
    assert (
        "Charged epsilon = 0.25 to budget 'census' before reading the data: 0.25 of 1 spent" in out
    )
    code, out, _ = run(capsys, "budget", "show", "census")
    assert code == 0 and "cap 1, spent 0.25, remaining 0.75" in out
    line = out.splitlines()[-1]
    assert re.search(
        r"^1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+identity\s+0\.25\s+[0-9a-f]{16}\s", line
    )
    assert str(tmp_path / "a.csv") in line and str(tmp_path / "a.csv.ledger.json") in line
    code, out, _ = run(capsys, "budget", "list")
    assert code == 0 and re.search(r"census\s+epsilon\s+1\s+0\.25\s+0\.75\s+1", out)
    code, out, _ = run(capsys, "budget", "check")
    assert code == 0 and "hash chains of 1 budget pass" in out
    code, out, _ = run(capsys, "budget", "backup", "copy.sqlite")
    assert code == 0 and (tmp_path / "copy.sqlite").exists()
    code, out, _ = run(capsys, "budget", "show", "census", "--store", "copy.sqlite", "--json")
    record = json.loads(out)
    assert (record["cap"], record["spent"], record["remaining"]) == ("1", "1/4", "3/4")
    assert record["entries"][0]["release_hash"] and record["entries"][0]["released"]
    code, _, err = run(capsys, "budget", "backup", "copy.sqlite")
    assert code == 1 and "exists" in err


def test_over_budget_is_refused_before_the_input_is_read(capsys):
    run(capsys, "budget", "init", "census", "--epsilon", "0.5")
    args = list(PUBLISH)
    args[1] = "missing.csv"  # reading it would fail with another error
    code, _, err = run(capsys, *args, "--epsilon", "1", "--out", "a.csv", "--budget", "census")
    assert code == 1 and "budget 'census' has epsilon=0.5 left" in err
    assert "missing.csv" not in err
    with BudgetStore(create=False) as store:
        assert store.budget("census").status().charges == 0


def test_a_charge_whose_release_never_arrived_is_shown(capsys):
    run(capsys, "budget", "init", "census", "--epsilon", "1")
    args = list(PUBLISH)
    args[1] = "missing.csv"  # charged, then the read fails
    code, _, err = run(capsys, *args, "--epsilon", "0.5", "--budget", "census")
    assert code == 1 and "missing.csv" in err
    code, out, _ = run(capsys, "budget", "show", "census")
    assert "spent 0.5" in out and "1 without a release" in out
    assert "no release recorded" in out.splitlines()[-1]


def test_bad_budget_options_are_usage_errors_and_charge_nothing(capsys):
    run(capsys, "budget", "init", "census", "--epsilon", "1")
    cases = [
        (("--budget", "cenus"), "Did you mean 'census'"),
        (("--budget-store", "x.sqlite"), "needs --budget NAME"),
        (("--rho", "0.1", "--budget", "census"), "zCDP does not imply pure DP"),
    ]
    for extra, message in cases:
        amount = () if "--rho" in extra else ("--epsilon", "0.5")
        code, _, err = run(capsys, *PUBLISH, *amount, *extra)
        assert code == 2 and message in err, err
    code, _, err = run(capsys, *PUBLISH, "--epsilon", "0.5", "--param", "x=1", "--budget", "census")
    assert code == 2
    with BudgetStore(create=False) as store:
        assert store.budget("census").status().charges == 0
    code, _, err = run(capsys, "budget", "init", "census", "--epsilon", "2")
    assert code == 1 and "never reset or raised" in err
    code, _, err = run(capsys, "budget", "init", "two words", "--epsilon", "2")
    assert code == 2 and "budget's name" in err
    code, _, err = run(capsys, "budget", "show", "nobody", "--store", "none.sqlite")
    assert code == 1 and "no budget store" in err


def test_rho_budget_with_pure_and_rho_releases(capsys):
    run(capsys, "budget", "init", "z", "--rho", "0.5")
    code, out, err = run(capsys, *PUBLISH, "--epsilon", "0.5", "--budget", "z")
    assert code == 0, err
    assert "Charged rho = 0.125 (epsilon = 0.5) to budget 'z'" in out
    code, out, err = run(capsys, *PUBLISH, "--rho", "0.25", "--budget", "z")
    assert code == 0, err
    code, out, _ = run(capsys, "budget", "show", "z")
    assert "cap 0.5, spent 0.375, remaining 0.125 (rho; rho-zCDP)" in out
    assert "0.125 (epsilon 0.5)" in out and "(none written)" in out


def test_groupsize_is_charged_and_recorded(capsys, tmp_path):
    run(capsys, "budget", "init", "housing", "--epsilon", "2")
    args = ["groupsize", "groups.csv", "--levels", "state,county", "--group-column", "gid"]
    args += ["--entities", "entities.csv", "--epsilon", "1", "--out", "sizes.json"]
    code, out, err = run(capsys, *args, "--budget", "housing")
    assert code == 0, err
    assert "Charged epsilon = 1 to budget 'housing'" in out
    code, out, _ = run(capsys, "budget", "show", "housing")
    assert "groupsize -> cumulative" in out and str(tmp_path / "sizes.json") in out
    code, _, err = run(capsys, "groupsize", "--demo", "--budget", "housing")
    assert code == 2 and "--demo reads no data" in err


def test_the_budget_group_alone_prints_its_help(capsys):
    code, out, _ = run(capsys, "budget")
    assert code == 0 and "init" in out and "show" in out


def test_a_team_store_on_postgresql(capsys, pg_location):
    code, out, err = run(
        capsys, "budget", "init", "census", "--epsilon", "1", "--store", pg_location
    )
    assert code == 0, err
    assert "postgres@" not in out  # the store is named without its user
    store = ("--budget-store", pg_location)
    code, out, err = run(capsys, *PUBLISH, "--epsilon", "0.5", "--budget", "census", *store)
    assert code == 0, err
    code, out, _ = run(capsys, "budget", "show", "census", "--store", pg_location)
    assert "spent 0.5" in out and "identity" in out


def test_show_prints_the_same_without_typer(capsys, tmp_path):
    """``budget show`` given plainly skips Typer; its output is the Typer command's."""
    import numpy as np

    import dphist as dh

    rel = dh.publish(np.arange(4), epsilon="0.25", method="identity", rng=0)
    with BudgetStore(create=True) as store:
        z = store.create("z", rho="1/2")
        z.charge(epsilon="0.25", method="identity").record(rel, ['q"uote.csv', "été.csv"])
        z.charge(epsilon="0.25", method="identity").record(rel, ["plain.csv"])
        z.charge(epsilon="0.25", method="H")  # never recorded
    for extra in ((), ("--json",), ("--store", str(tmp_path / "default-store.sqlite"))):
        args = ["budget", "show", "z", *extra]
        assert cli._plain(args)
        plain = capsys.readouterr().out
        assert cli._typer(args) == 0
        assert capsys.readouterr().out == plain
    assert 'q"uote.csv' in plain and "été.csv" in plain and "1 without a release" in plain
    for args in (["show", "z", "z"], ["show", "--store"], ["show", "z", "--x"], ["show"]):
        assert not cli._plain(["budget", *args])
    code, _, err = run(capsys, "budget", "show", "zz")  # an unknown name: Typer says it
    assert code == 2 and "Did you mean 'z'" in err and "--help" in err
    code, out, _ = run(capsys, "budget", "show", "--help")
    assert code == 0 and "--json" in out


def test_show_writes_its_lines_in_batches(capsys):
    from dphist.cli.budget_show import write

    lines = [f"line {i}" for i in range(10_000)]
    write(iter(lines))
    assert capsys.readouterr().out == "\n".join(lines) + "\n"
