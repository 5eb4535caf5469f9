"""``dphist groupsize`` and ``dphist reproduce`` end to end, and the group-table reader.

The group tables are temporary CSV and Parquet files; the reader is checked against
hand-counted histograms, the command's output against the release invariants
(integers, public group counts, parents equal the sum of their children).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

from dphist import cli, ingest
from dphist.errors import ValidationError

GROUPS = """gid,state,county,size
a,S1,C1,1
b,S1,C1,2
c,S1,C2,3
d,S2,C1,1
e,S2,C3,0
"""
ENTITIES = "eid,gid\n1,a\n2,b\n3,b\n4,c\n5,c\n6,c\n7,d\n"
# level order: all; S1, S2; S1/C1, S1/C2, S2/C1, S2/C3 (sizes 0..3)
TRUE = [[1, 2, 1, 1], [0, 1, 1, 1], [1, 1], [0, 1, 1], [0, 0, 0, 1], [0, 1], [1]]


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    (tmp_path / "groups.csv").write_text(GROUPS)
    (tmp_path / "entities.csv").write_text(ENTITIES)
    return tmp_path


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _histograms(data) -> list[list[int]]:
    return [[int(v) for v in np.trim_zeros(h, "b")] for h in data.histograms()]


def test_reader_counts_entities_and_size_columns_alike():
    by_entities = ingest.read_group_tables(
        "groups.csv", ["state", "county"], group_column="gid", entities="entities.csv"
    )
    by_column = ingest.read_group_tables(
        "groups.csv", ["state", "county"], group_column="gid", size_column="size"
    )
    assert _histograms(by_entities) == _histograms(by_column) == TRUE
    assert by_entities.hierarchy.labels[3:] == ("S1/C1", "S1/C2", "S2/C1", "S2/C3")


def test_reader_reads_parquet(workdir):
    duckdb.sql("COPY (SELECT * FROM read_csv('groups.csv')) TO 'groups.parquet' (FORMAT parquet)")
    data = ingest.read_group_tables(
        "groups.parquet", ["state", "county"], group_column="gid", size_column="size"
    )
    assert _histograms(data) == TRUE


def test_equal_county_names_in_different_states_are_different_regions():
    data = ingest.read_group_tables(
        "groups.csv", ["state", "county"], group_column="gid", size_column="size"
    )
    assert data.hierarchy.n_leaves == 4  # S1/C1 and S2/C1 are not merged


@pytest.mark.parametrize(
    ("groups", "entities", "message"),
    [
        ("gid,state,county\na,S1,C1\na,S1,C2\n", ENTITIES, "unique"),
        ("gid,state,county\n", ENTITIES, "no rows"),
    ],
)
def test_reader_refuses_bad_tables(workdir, groups, entities, message):
    (workdir / "g.csv").write_text(groups)
    (workdir / "e.csv").write_text(entities)
    with pytest.raises(ValidationError, match=message):
        ingest.read_group_tables("g.csv", ["state", "county"], group_column="gid", entities="e.csv")


def test_private_sizes_never_refuse(workdir):
    """Sizes are private: an invalid size counts as 0 and an entity of an unknown group
    is dropped, so neighbouring tables both release (the groups table is public)."""
    (workdir / "g.csv").write_text("gid,state,size\na,S1,-1\nb,S1,x\nc,S1,2.5\nd,S1,\ne,S1,3\n")
    data = ingest.read_group_tables("g.csv", ["state"], group_column="gid", size_column="size")
    assert _histograms(data)[0] == [4, 0, 0, 1]
    (workdir / "g.csv").write_text("gid,state\na,S1\nb,S1\n")
    for entities in ("eid,gid\n1,a\n", "eid,gid\n1,a\n2,zz\n3,\n4,a,extra\n"):
        (workdir / "e.csv").write_text(entities)
        data = ingest.read_group_tables("g.csv", ["state"], group_column="gid", entities="e.csv")
        assert _histograms(data)[0] == [1, 1]


def _read_rows(path: Path) -> dict[tuple[int, str], dict[int, int]]:
    out: dict[tuple[int, str], dict[int, int]] = {}
    with path.open() as f:
        for r in csv.DictReader(f):
            key = (int(r["level"]), r["region"])
            out.setdefault(key, {})[int(r["size"])] = int(r["groups"])
    return out


@pytest.mark.parametrize("method", ["cumulative", "ranked", "naive", "ranked,ranked,cumulative"])
def test_groupsize_command_writes_a_consistent_release(capsys, workdir, method):
    code, out, err = run(
        capsys,
        *("groupsize", "groups.csv", "--levels", "state,county", "--group-column", "gid"),
        *("--entities", "entities.csv", "--epsilon", "0.5", "--K", "8", "--method", method),
        *("--seed", "3", "--out", "rel.csv"),
    )
    assert code == 0, err
    rows = _read_rows(workdir / "rel.csv")
    totals = {key: sum(h.values()) for key, h in rows.items()}
    assert totals[(0, "all")] == 5
    assert totals[(1, "S1")] == 3 and totals[(1, "S2")] == 2
    assert totals[(2, "S2/C3")] == 1
    for state in ("S1", "S2"):
        summed: dict[int, int] = {}
        for (level, region), h in rows.items():
            if level == 2 and region.startswith(state + "/"):
                for size, g in h.items():
                    summed[size] = summed.get(size, 0) + g
        assert summed == rows[(1, state)]
    ledger = json.loads((workdir / "rel.csv.ledger.json").read_text())
    assert sum(float(c["epsilon"]) for c in ledger["ledger"]) == pytest.approx(0.5)
    assert ledger["private"] is False
    assert "Private: NO" in out


def test_groupsize_json_output_is_private_without_a_seed(capsys, workdir):
    code, _, err = run(
        capsys,
        *("groupsize", "groups.csv", "--levels", "state,county", "--group-column", "gid"),
        *("--size-column", "size", "--method", "ranked", "--out", "rel.json", "--epsilon", "1"),
    )
    assert code == 0, err
    doc = json.loads((workdir / "rel.json").read_text())
    assert doc["private"] is True and doc["methods"] == ["ranked"] * 3
    assert {r["region"] for r in doc["histograms"]} <= {
        "all", "S1", "S2", "S1/C1", "S1/C2", "S2/C1", "S2/C3"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("--levels", "state,county", "--group-column", "gid"), 2, "either --entities"),
        (
            ("--levels", "state,cnty", "--group-column", "gid", "--size-column", "size"),
            1,
            "Did you mean 'county'",
        ),
        (
            ("--levels", "state", "--group-column", "gid", "--size-column", "size", "--K", "0"),
            2,
            "--K",
        ),
        (
            (
                "--levels",
                "state",
                "--group-column",
                "gid",
                "--size-column",
                "size",
                "--out",
                "x.txt",
            ),
            2,
            ".csv, .json",
        ),
        (
            (
                "--levels",
                "state",
                "--group-column",
                "gid",
                "--size-column",
                "size",
                "--method",
                "x",
            ),
            2,
            "--method",
        ),
        (
            ("--levels", "state", "--group-column", "gid", "--size-column", "size", "--demo"),
            2,
            "not both",
        ),
    ],
)
def test_groupsize_bad_input_is_one_line_and_writes_nothing(capsys, workdir, args, code, needle):
    args = (*args, "--epsilon", "1")
    got, _, err = (
        run(capsys, "groupsize", "groups.csv", *args, "--out", "o.csv")
        if ("--out" not in args)
        else run(capsys, "groupsize", "groups.csv", *args)
    )
    assert got == code
    assert needle in err and len(err.strip().splitlines()) == 1
    assert not (workdir / "o.csv").exists() and not (workdir / "x.txt").exists()


def test_groupsize_needs_a_table_or_demo(capsys):
    code, _, err = run(capsys, "groupsize")
    assert code == 2 and "--demo" in err


def test_reproduce_runs_the_registered_paper(capsys, workdir, monkeypatch):
    from dphist.lab import reproduce

    calls = []

    def fake(out_dir, *, trials=3, workers=1, quick=False, data_dir=None):
        calls.append((Path(out_dir), trials, workers, quick))
        Path(out_dir).mkdir(parents=True)
        (Path(out_dir) / "report.md").write_text("# report\n")
        return Path(out_dir) / "report.md"

    monkeypatch.setitem(reproduce.PAPERS, "fake", fake)
    code, out, err = run(capsys, "reproduce", "fake", "--out", "reps", "--quick", "--trials", "2")
    assert code == 0, err
    assert calls == [(Path("reps") / "fake", 2, 2, True)]
    assert "report.md" in out


def test_reproduce_refuses_an_unknown_paper(capsys):
    code, _, err = run(capsys, "reproduce", "nosuchpaper")
    assert code == 2 and "kellaris" in err
