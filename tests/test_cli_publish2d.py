"""``dphist publish INPUT --column A,B``: a 2-D histogram end to end, in process."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

from dphist import cli
from dphist.ingest import binning, count_grid

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    return tmp_path


@pytest.fixture
def visits(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    age = rng.integers(-5, 95, n)
    region = rng.choice(["north", "south", "east", "x"], n)
    patient = rng.integers(0, 900, n)
    path = tmp_path / "visits.csv"
    with open(path, "w") as f:
        f.write("age,region,patient\n")
        for a, r, p in zip(age, region, patient, strict=True):
            f.write(f"{a},{r},{p}\n")
    return path, age, region


def run(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_two_columns_with_their_own_binnings(capsys, visits):
    path, age, region = visits
    code, _out, err = run(
        capsys, "publish", path, "-c", "age,region", "--domain", "0:90:10;",
        "--categories", ";north,south,east,west", "--epsilon", "1e9", "--method", "identity",
        "--seed", "1", "--out", "cells.csv",
    )  # fmt: skip
    assert code == 0, err
    with open("cells.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    regions = binning(categories=["north", "south", "east", "west"])
    expect = count_grid((age, region), (binning(domain="0:90:10"), regions))
    estimate = np.zeros((9, 4))
    for r in rows:
        estimate[int(r["row"]), int(r["col"])] = float(r["estimate"])
    np.testing.assert_allclose(estimate, expect, atol=1e-3)
    assert set(rows[0]) >= {"row_label", "col_label", "stderr", "lower", "upper"}
    assert rows[0]["row_label"] == "(-inf, 10)" and rows[3]["col_label"] == "west"
    ledger = json.loads(Path("cells.csv.ledger.json").read_text())
    assert ledger["columns"] == ["age", "region"] and ledger["release"]["method"] == "identity"
    assert ledger["binnings"][1]["kind"] == "categories"


def test_json_plot_and_privacy_unit(capsys, visits):
    path, _, _ = visits
    code, _out, err = run(
        capsys, "publish", path, "-c", "age,age", "--domain", "0:90:10;0:90:30",
        "--epsilon", "1", "--method", "HB2D", "--privacy-unit", "patient", "--max-records", "2",
        "--out", "grid.json", "--plot", "grid.png",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(Path("grid.json").read_text())
    assert doc["release"]["shape"] == [9, 3] and doc["release"]["max_records"] == 2
    assert doc["release"]["private"] is True
    assert Path("grid.png").read_bytes()[:8] == PNG_SIGNATURE


@pytest.mark.parametrize(
    "args, text",
    [
        (["--domain", "0:90:10"], "one part per column"),
        (["--domain", "0:90:10;", "--categories", ";a,b", "--method", "auto"], "2-D method"),
        (["--domain", "0:90:10;0:5:1", "--method", "HB2D", "--param", "fanout=4"], "no parameter"),
        (["--domain", "0:90:10;0:5:1", "--method", "HB2D", "--workload", "all"], "one column"),
        (["--domain", "0:90:10;0:5:1", "--method", "nope"], "unknown method"),
    ],
)
def test_bad_options_are_refused_before_reading(capsys, tmp_path, args, text):
    given = args if "--method" in args else [*args, "--method", "HB2D"]
    code, _out, err = run(capsys, "publish", tmp_path / "absent.csv", "-c", "a,b", "--epsilon", "1",
                          *given)  # fmt: skip
    assert code == 2 and text in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and os.listdir(tmp_path) == []


def test_methods_lists_the_2d_methods(capsys):
    code, out, _ = run(capsys, "methods", "--2d", "--json")
    names = [m["name"] for m in json.loads(out)]
    assert code == 0 and {"HB2D", "PrivTree", "AGrid", "Privelet"} <= set(names)


def test_no_output_may_be_an_input(capsys, visits):
    path, _, _ = visits
    before = path.read_bytes()
    code, _out, err = run(
        capsys, "publish", path, "-c", "age,region", "--domain", "0:90:10;",
        "--categories", ";north,south", "--epsilon", "1", "--method", "identity", "--out", path,
    )  # fmt: skip
    assert code == 2 and "input" in err and "Traceback" not in err, err
    assert path.read_bytes() == before


def test_parquet_column_type_refused_before_the_stored_charge(capsys, tmp_path, monkeypatch):
    import duckdb

    from dphist.store import BudgetStore

    monkeypatch.setenv("DPHIST_BUDGET_STORE", str(tmp_path / "store.sqlite"))
    duckdb.sql(
        "COPY (SELECT i AS age, 'r' || (i % 3) AS region FROM range(100) AS t(i)) "
        f"TO '{tmp_path / 'v.parquet'}'"
    )
    assert run(capsys, "budget", "init", "census", "--epsilon", "1")[0] == 0
    # numeric bins over a text column: a schema fact, refused before anything is spent
    code, _out, err = run(
        capsys, "publish", tmp_path / "v.parquet", "-c", "region,age", "--domain", "0:3:1;0:100:10",
        "--epsilon", "0.5", "--method", "identity", "--budget", "census",
    )  # fmt: skip
    assert code == 2 and "region" in err and "Traceback" not in err, err
    with BudgetStore(str(tmp_path / "store.sqlite"), create=False) as store:
        assert store.budget("census").remaining == 1
    # a good request is charged before the data is read and recorded with its files
    code, out, err = run(
        capsys, "publish", tmp_path / "v.parquet", "-c", "age,region", "--domain", "0:100:10;",
        "--categories", ";r0,r1,r2", "--epsilon", "0.5", "--method", "identity",
        "--budget", "census", "--out", "cells.csv", "--seed", "1",
    )  # fmt: skip
    assert code == 0, err
    assert "Charged epsilon = 0.5 to budget 'census' before reading the data" in out
    with BudgetStore(str(tmp_path / "store.sqlite"), create=False) as store:
        assert store.budget("census").remaining == 0.5
    code, out, _ = run(capsys, "budget", "show", "census")
    assert code == 0 and "cells.csv" in out and "cells.csv.ledger.json" in out


def test_histogram2d_charges_a_stored_budget_first(tmp_path):
    import dphist as dh

    store = dh.BudgetStore(str(tmp_path / "s.sqlite"), create=True)
    store.create("grid", budget=dh.PureDP(1))
    stored = store.budget("grid")
    with pytest.raises(dh.DphistError):  # text values for numeric bins: no charge
        dh.histogram2d(np.array(["a", "b"]), np.array([1.0, 2.0]), domain=("0:2:1", "0:2:1"),
                       epsilon=0.5, method="identity", budget=stored)  # fmt: skip
    assert stored.remaining == 1
    rel = dh.histogram2d(np.array([0.5, 1.5]), np.array([1.0, 0.2]), domain=("0:2:1", "0:2:1"),
                         epsilon=0.5, method="identity", budget=stored, rng=1)  # fmt: skip
    assert rel.shape == (2, 2) and stored.remaining == 0.5
