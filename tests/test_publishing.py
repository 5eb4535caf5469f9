"""From a file to a published table, through the command line and the Python API.

Each property is driven both ways and, where a record could change what is observable,
on both sides of a neighbouring pair: outputs never replace inputs; clipped end bins
are open and say so; a column's type is checked before any value is read or any
budget spent; tables never contradict themselves; what is written is readable.
"""

from __future__ import annotations

import json
import os
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pytest

import dphist as dh
from dphist import cli, export, ingest
from dphist._numeric.isotonic import project_simplex
from dphist._numeric.rounding import nonnegative_integers
from dphist.errors import ValidationError

HUGE = "1e9"  # identity noise of scale 1e-9: the estimate is the count


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    return tmp_path


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def visits(path: Path, ages: list[object], sep: str = ",") -> Path:
    rows = [f"{a}{sep}n{i}" for i, a in enumerate(ages)]
    path.write_text(f"age{sep}name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


AGES = [-3, 0, 1, 5, 5, 12, 19, 19.5, 20, 44, 7]
# neighbouring files: one record more, far outside the domain
NEIGHBOURS = [AGES, [*AGES, 1000]]


def parquet(path: Path, sql: str) -> Path:
    duckdb.sql(f"COPY ({sql}) TO '{path}' (FORMAT parquet)")
    return path


def csv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------- 1. inputs


def test_an_output_never_replaces_an_input(capsys, workdir):
    src = visits(workdir / "visits.csv", AGES)
    before = src.read_bytes()
    (workdir / "link.csv").symlink_to(src)
    os.link(src, workdir / "hard.csv")
    (workdir / "cats.txt").write_text("1\n2\n")
    common = ("-c", "age", "--epsilon", "1", "--method", "identity")
    for out in ("visits.csv", "link.csv", "hard.csv", "./sub/../visits.csv"):
        (workdir / "sub").mkdir(exist_ok=True)
        code, _, err = run(capsys, "publish", "visits.csv", *common, "--domain", "0:20:1",
                           "--out", out)  # fmt: skip
        assert code == 2 and "would destroy the input" in err, (out, err)
    code, _, err = run(capsys, "publish", "visits.csv", *common, "--categories", "@cats.txt",
                       "--out", "cats.txt.json")  # fmt: skip
    assert code == 0, err
    (workdir / "cats.json").symlink_to(workdir / "cats.txt")
    code, _, err = run(capsys, "publish", "visits.csv", *common, "--categories", "@cats.txt",
                       "--out", "cats.json")  # fmt: skip
    assert code == 2 and "would destroy the input" in err
    assert src.read_bytes() == before and (workdir / "cats.txt").read_text() == "1\n2\n"


def test_two_outputs_never_share_a_file(capsys, workdir):
    visits(workdir / "visits.csv", AGES)
    (workdir / "p.png").symlink_to(workdir / "o.json")
    code, _, err = run(capsys, "publish", "visits.csv", "-c", "age", "--domain", "0:20:1",
                       "--epsilon", "1", "--out", "o.json", "--plot", "p.png")  # fmt: skip
    assert code == 2 and "named twice" in err
    assert not (workdir / "o.json").exists()


def test_python_writers_refuse_inputs(workdir):
    rel = dh.publish([1, 2, 3], epsilon=1, method="identity", rng=0)
    (workdir / "in.csv").write_text("keep")
    with pytest.raises(ValidationError, match="would destroy the input"):
        export.write_histogram(workdir / "in.csv", rel, inputs=[workdir / "in.csv"])
    with pytest.raises(ValidationError, match="would destroy the input"):
        export.write_histogram(workdir / "t.csv", rel, inputs=[workdir / "t.csv.ledger.json"])
    assert (workdir / "in.csv").read_text() == "keep"
    assert sorted(os.listdir(workdir)) == ["in.csv"]


def test_groupsize_never_replaces_its_tables(capsys, workdir):
    (workdir / "groups.csv").write_text("gid,state\ng1,a\ng2,b\n")
    (workdir / "people.csv").write_text("gid\ng1\ng1\ng2\n")
    before = (workdir / "people.csv").read_bytes()
    args = ("groupsize", "groups.csv", "--levels", "state", "--group-column", "gid",
            "--entities", "people.csv", "--epsilon", "1", "--K", "4")  # fmt: skip
    for out in ("groups.csv", "people.csv"):
        code, _, err = run(capsys, *args, "--out", out)
        assert code == 2 and "would destroy the input" in err
    assert (workdir / "people.csv").read_bytes() == before


# --------------------------------------------------------------------------- 2. open bins


def test_binning_knows_its_open_ends():
    b = ingest.binning(domain="0:20:1")
    assert not b.open_ends and b.label(-1) == "[19, 20]"
    clipped = b.with_outside()
    assert clipped.open_ends and clipped.outside == "clip"
    assert clipped.label(0) == "(-inf, 1)" and clipped.label(-1) == "[19, inf)"
    left, right = clipped.bounds()
    assert left[0] == -np.inf and right[-1] == np.inf and left[1] == 1.0
    assert clipped.to_dict()["open_ends"] is True
    dropped = b.with_outside("drop")
    assert dropped.labels()[-1] == "[19, 20]" and dropped.bounds()[1][-1] == 20.0
    assert ingest.binning(edges=[0, 5]).with_outside().labels() == ["(-inf, inf)"]
    with pytest.raises(ValidationError, match="settled"):
        ingest.outside_policy(clipped, "drop")


def _refuse(constant: str) -> None:
    raise ValueError(f"not strict JSON: {constant}")


@pytest.mark.parametrize("ages", NEIGHBOURS)
def test_open_end_bins_in_every_output(capsys, workdir, ages):
    visits(workdir / "visits.csv", ages)
    code, out, err = run(capsys, "publish", "visits.csv", "-c", "age", "--domain", "0:20:1",
                         "--epsilon", HUGE, "--method", "identity", "--seed", "1")  # fmt: skip
    assert code == 0, err
    assert "(-inf, 1)" in out and "[19, inf)" in out and "[19, 20]" not in out
    for suffix in ("csv", "parquet", "json"):
        code, _, err = run(capsys, "publish", "visits.csv", "-c", "age", "--domain", "0:20:1",
                           "--epsilon", HUGE, "--method", "identity", "--seed", "1",
                           "--out", f"o.{suffix}")  # fmt: skip
        assert code == 0, err
        if suffix == "json":  # strict JSON: an open end's missing bound is null
            text = (workdir / "o.json").read_text()
            rows = json.loads(text, parse_constant=_refuse)["bins"]
            assert rows[0]["left"] is None and rows[-1]["right"] is None
        else:
            rows = duckdb.sql(f"SELECT * FROM 'o.{suffix}'").df().to_dict("records")
            assert float(rows[0]["left"]) == -np.inf and float(rows[-1]["right"]) == np.inf
        assert rows[0]["label"] == "(-inf, 1)" and rows[-1]["label"] == "[19, inf)"
        assert float(rows[0]["right"]) == 1 and float(rows[-1]["left"]) == 19
        assert [int(r["bin"]) for r in rows] == list(range(20))  # written in bin order
        assert int(rows[-1]["estimate"]) == sum(1 for a in ages if float(a) >= 19)


def test_python_release_carries_its_open_binning(workdir):
    rel = dh.histogram(AGES, domain="0:20:1", epsilon=HUGE, method="identity", rng=0)
    assert rel.binning.open_ends and rel.binning.label(0) == "(-inf, 1)"
    export.write_histogram("h.csv", rel)  # the release's own binning by default
    rows = csv_rows(Path("h.csv"))
    assert rows[0]["label"] == "(-inf, 1)" and rows[0]["left"] == "-inf"
    assert rows[-1]["label"] == "[19, inf)" and rows[-1]["right"] == "inf"
    drop = dh.histogram(AGES, domain="0:20:1", outside="drop", epsilon=1, method="identity")
    assert not drop.binning.open_ends and drop.binning.labels()[-1] == "[19, 20]"


def test_plot_is_in_column_units_with_open_ends_marked():
    pytest.importorskip("matplotlib")
    from dphist.plot import estimate_writer

    rel = dh.histogram(AGES, domain="0:20:2", epsilon=1, method="identity", rng=0)
    ax = estimate_writer(rel, "png", xlabel="age").figure.axes[0]
    assert ax.get_xlim() == (0.0, 20.0) and ax.get_xlabel() == "age"
    assert any("open end bins" in text for text in ax.get_legend_handles_labels()[1])
    cats = dh.histogram(["a", "b", "b"], categories="a,b,c", epsilon=1, method="identity", rng=0)
    ax = estimate_writer(cats, "png").figure.axes[0]
    assert len(ax.patches) == 3  # one bar per category
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]


# --------------------------------------------------------------------------- 3. types


def test_typed_columns_are_checked_before_anything_is_read(capsys, workdir, monkeypatch):
    parquet(workdir / "p.parquet", "SELECT 'x' || range AS name, range AS age FROM range(50)")
    read: list[int] = []
    module = sys.modules["dphist.ingest.count"]
    real = module.stream_counts
    monkeypatch.setattr(module, "stream_counts", lambda *a, **k: read.append(1) or real(*a, **k))
    cases = [
        (("-c", "name", "--domain", "0:20:1"), "holds text (VARCHAR) but the bins are numeric"),
        (("-c", "age", "--categories", "a,b"), "holds numbers (BIGINT), but some categories"),
        (("-c", "age", "--categories", "1,2", "--type", "text"), "holds numbers"),
    ]
    for args, message in cases:
        code, _, err = run(capsys, "publish", "p.parquet", *args, "--epsilon", "1",
                           "--out", "o.csv")  # fmt: skip
        assert code == 2 and message in err, err
        assert len(err.strip().splitlines()) == 1
    assert not read and not (workdir / "o.csv").exists()
    code, _, err = run(capsys, "publish", "p.parquet", "-c", "name", "--domain", "0:20:1",
                       "--type", "number", "--epsilon", "1")  # fmt: skip
    assert code == 0, err  # parsing text as numbers, asked for


def test_python_typed_columns_refused_before_any_budget(monkeypatch):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    from dphist import records

    spent: list[int] = []
    monkeypatch.setattr(records, "publish", lambda *a, **k: spent.append(1))
    text = [np.array(["a", "b"]), pd.Series(["a", "b"], dtype="string"), pl.Series(["a", "b"]),
            pa.array(["a", "b"])]  # fmt: skip
    for column in text:
        with pytest.raises(ValidationError, match="holds text"):
            dh.histogram(column, domain="0:10:1", epsilon=1, method="identity")
    with pytest.raises(ValidationError, match="holds numbers"):
        dh.histogram(np.arange(5), categories="a,b", epsilon=1, method="identity")
    assert not spent


@pytest.mark.parametrize("values", [[1, 2, 5], [1, 2, 5, "x"], [1, 2, 5, None], [2, 5, True]])
def test_untyped_lists_never_refuse_on_a_value(values):
    """A list's numpy type would come from its values: it is read as the binning says, so
    one record (a string, a boolean) never turns a release into a refusal."""
    rel = dh.histogram(values, domain="0:10:1", epsilon=HUGE, method="identity", rng=0)
    assert np.rint(rel.estimate)[[2, 5]].tolist() == [1, 1]
    cats = dh.histogram(values, categories="1,x", epsilon=HUGE, method="identity", rng=0)
    booleans = any(isinstance(v, bool) for v in values)  # a boolean is the text "True"
    assert np.rint(cats.estimate)[0] == (0 if booleans else 1)


def test_csv_type_option(capsys, workdir):
    (workdir / "z.csv").write_text("zip\n01\n1\n1.0\n02\n2\n")
    base = ("publish", "z.csv", "-c", "zip", "--categories", "01,2", "--epsilon", HUGE,
            "--method", "identity", "--seed", "0", "--counts", "float", "--out")  # fmt: skip
    assert run(capsys, *base, "n.json")[0] == 0  # numbers: the labels' default
    assert run(capsys, *base, "t.json", "--type", "text")[0] == 0
    as_numbers = [b["estimate"] for b in json.loads(Path("n.json").read_text())["bins"]]
    as_text = [b["estimate"] for b in json.loads(Path("t.json").read_text())["bins"]]
    assert np.rint(as_numbers).tolist() == [3, 2] and np.rint(as_text).tolist() == [1, 1]
    code, _, err = run(capsys, "publish", "z.csv", "-c", "zip", "--domain", "0:5:1",
                       "--type", "text", "--epsilon", "1")  # fmt: skip
    assert code == 2 and "cannot be read as text" in err
    code, _, err = run(capsys, "publish", "z.csv", "-c", "zip", "--categories", "a,b",
                       "--type", "number", "--epsilon", "1")  # fmt: skip
    assert code == 2 and "not numbers" in err


def test_check_is_for_the_owner_only(capsys, workdir):
    (workdir / "s.csv").write_text("age,name\n3,a\n,b\nx,c\n25,d\n-4,e\n1,2,3\n")
    before = sorted(os.listdir(workdir))
    code, out, err = run(capsys, "check", "s.csv", "-c", "age", "--domain", "0:20:1")
    assert code == 0, err
    assert "NOT PRIVATE: for the data owner; do not publish" in out
    figures = {line.split("│")[1].strip(): line.split("│")[2].strip()
               for line in out.splitlines() if line.count("│") >= 3}  # fmt: skip
    assert figures == {"records read": "6", "malformed": "1", "missing value": "1",
                       "invalid value": "1", "outside the bins": "2", "counted": "3"}  # fmt: skip
    assert sorted(os.listdir(workdir)) == before  # nothing written
    code, _, err = run(capsys, "check", "s.csv", "-c", "age", "--domain", "0:20:1", "--out", "x")
    assert code == 2 and "No such option" in err
    result = ingest.check_file("s.csv", "name", ingest.binning(categories="a,b,zz"))
    assert (result.records, result.outside, result.counted) == (6, 3, 2)


# --------------------------------------------------------------------------- 4. tables


def test_nonnegative_integers_by_hand():
    assert nonnegative_integers([-1, 0, 1, 2, 3, -2, 5]).tolist() == [0, 0, 0, 1, 3, 0, 4]
    assert nonnegative_integers([1.0] * 10 + [-3.0]).tolist() == [1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 0]
    assert nonnegative_integers([-1, -2]).tolist() == [0, 0]
    assert nonnegative_integers([0.3, 0.3, 0.4]).tolist() == [0, 0, 1]
    assert nonnegative_integers([2.5, 2.5]).tolist() == [2, 3]  # total 5: a tie, spread


def test_nonnegative_integers_against_the_projection():
    """Brute force: the exact projection onto {x >= 0, sum = T}, rounded within one."""
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(1, 40))
        y = rng.integers(-6, 9, n).astype(float) if trial % 2 else rng.normal(0.5, 4, n)
        counts = nonnegative_integers(y)
        total = max(int(np.floor(y.sum() + 0.5)), 0)
        assert counts.dtype == np.int64 and counts.sum() == total and counts.min() >= 0
        if total:
            assert np.all(np.abs(counts - project_simplex(y, total)) < 1)


@pytest.mark.parametrize("method", ["identity", "HB", "AHP", "S2"])
def test_every_interval_holds_its_estimate(method):
    x = np.zeros(200, dtype=np.int64)
    x[::17] = 3
    rel = dh.publish(x, epsilon=0.2, method=method, rng=4)
    lower, upper = rel.intervals()
    assert np.all((lower <= rel.estimate) & (rel.estimate <= upper))
    lo, hi = rel.interval(0, rel.n)
    assert lo <= rel.range_sum(0, rel.n) <= hi
    for counts in ("integer", "float"):
        t = rel.table(counts)
        assert np.all((t.lower <= t.estimate) & (t.estimate <= t.upper))
    t = rel.table()
    assert t.counts == "integer" and np.all(t.estimate == np.rint(t.estimate))
    assert t.estimate.min() >= 0 and t.lower.min() >= 0
    assert t.total == max(round(float(rel.estimate.sum())), 0)
    assert "integer counts" in t.covers


def test_integer_table_keeps_the_coverage_of_the_estimate():
    """Widened intervals hold the truth at least as often as the estimate's did."""
    x = np.random.default_rng(0).poisson(2.0, 400)
    held = [0, 0]
    for seed in range(20):
        rel = dh.publish(x, epsilon=0.5, method="identity", rng=seed)
        for i, counts in enumerate(("float", "integer")):
            t = rel.table(counts)
            held[i] += int(np.sum((t.lower <= x) & (x <= t.upper)))
    assert held[1] >= held[0] >= 0.94 * 20 * x.size


@pytest.mark.parametrize("ages", NEIGHBOURS)
def test_cli_tables_never_contradict_themselves(capsys, workdir, ages):
    visits(workdir / "visits.csv", ages)
    for counts in ("integer", "float"):
        code, _out, err = run(capsys, "publish", "visits.csv", "-c", "age", "--domain", "0:40:1",
                             "--epsilon", "0.05", "--method", "identity", "--counts", counts,
                             "--out", f"{counts}.csv")  # fmt: skip
        assert code == 0, err
        for row in csv_rows(workdir / f"{counts}.csv"):
            assert float(row["lower"]) <= float(row["estimate"]) <= float(row["upper"])
            if counts == "integer":
                assert row["estimate"].isdigit()
        side = json.loads((workdir / f"{counts}.csv.ledger.json").read_text())
        assert side["release"]["counts"] == counts
        assert ("integer counts" in side["release"]["error_bars"]) == (counts == "integer")


def test_typical_half_width_is_the_noise_not_the_clamped_interval(capsys, workdir):
    from dphist.uncertainty import Tail

    visits(workdir / "visits.csv", [1] * 5)
    code, out, _ = run(capsys, "publish", "visits.csv", "-c", "age", "--domain", "0:200:1",
                       "--epsilon", "0.5", "--method", "identity")  # fmt: skip
    k = Tail("laplace", Fraction(2)).quantile(0.05)
    assert code == 0 and f"typically ±{k:,.0f}" in out


# --------------------------------------------------------------------------- 5. readable


def test_csv_rounds_to_the_noise_parquet_keeps_it_all(capsys, workdir):
    visits(workdir / "visits.csv", AGES * 3)
    args = ("publish", "visits.csv", "-c", "age", "--domain", "0:20:1", "--epsilon", "0.3",
            "--method", "HB", "--counts", "float", "--seed", "2")  # fmt: skip
    assert run(capsys, *args, "--out", "h.csv")[0] == 0
    assert run(capsys, *args, "--out", "h.parquet")[0] == 0
    assert run(capsys, *args, "--out", "d.csv", "--decimals", "4")[0] == 0
    rows = csv_rows(workdir / "h.csv")
    decimals = json.loads((workdir / "h.csv.ledger.json").read_text())["release"]["decimals"]
    full = duckdb.sql("SELECT estimate, stderr, lower, upper FROM 'h.parquet'").fetchnumpy()
    # one unit of the last digit is at most a tenth of the smallest standard error
    assert 10.0**-decimals <= full["stderr"].min() / 10 < 10.0 ** (1 - decimals)
    assert all(len(r["estimate"].partition(".")[2]) <= decimals for r in rows)
    assert all(len(r["estimate"].partition(".")[2]) <= 4 for r in csv_rows(workdir / "d.csv"))
    assert np.any(full["estimate"] != np.rint(full["estimate"]))
    for r, lo, hi in zip(rows, full["lower"], full["upper"], strict=True):
        assert float(r["lower"]) <= lo and float(r["upper"]) >= hi  # rounded outwards
    rel = dh.histogram(AGES * 3, domain="0:20:1", epsilon=0.3, method="HB", rng=2)
    export.write_histogram("py.csv", rel, counts="float", decimals=2)
    assert all(len(r["estimate"].partition(".")[2]) <= 2 for r in csv_rows(workdir / "py.csv"))
    assert any("." in r["estimate"] for r in csv_rows(workdir / "py.csv"))


def test_ledger_prints_decimals(capsys, workdir):
    visits(workdir / "visits.csv", AGES)
    code, out, _ = run(capsys, "publish", "visits.csv", "-c", "age", "--domain", "0:20:1",
                       "--epsilon", "0.3333", "--method", "identity")  # fmt: skip
    ledger = out.split("Ledger")[1].split("Missing")[0]
    assert code == 0 and "3.0003" in ledger and "/" not in ledger


def test_methods_one_line_each(capsys):
    from dphist.methods.guide import GUIDE

    assert set(GUIDE) == {m.name for m in dh.list_methods()}
    code, out, _ = run(capsys, "methods")
    lines = out.strip().splitlines()
    assert code == 0 and len(GUIDE) + 1 < len(lines) <= len(GUIDE) + 3
    assert lines[1].startswith("identity") and "point queries" in lines[1]
    assert [line.split()[0] for line in lines[1 : 1 + len(GUIDE)]] == list(GUIDE)
    code, out, _ = run(capsys, "methods", "--long")
    assert code == 0 and "budget split" in out and len(out.splitlines()) > 2 * len(GUIDE)


# --------------------------------------------------------------------------- 6. friction


def test_delimiter_and_encoding(capsys, workdir):
    visits(workdir / "semi.csv", AGES, sep=";")
    code, _, err = run(capsys, "publish", "semi.csv", "-c", "age", "--domain", "0:20:1",
                       "--epsilon", "1")  # fmt: skip
    assert code == 1 and "no column 'age'" in err  # never sniffed
    code, _, err = run(capsys, "publish", "semi.csv", "-c", "age", "--domain", "0:20:1",
                       "--epsilon", "1", "--delimiter", ";")  # fmt: skip
    assert code == 0, err
    text = "âge;nom\n3;José\n19;Zoë\n"
    (workdir / "latin.csv").write_bytes(text.encode("latin-1"))
    (workdir / "u16.csv").write_bytes(text.encode("utf-16"))
    bins = ingest.binning(domain="0:20:1")
    for name, encoding in (("latin.csv", "latin-1"), ("u16.csv", "utf-16")):
        counts = ingest.count_file(name, "âge", bins, delimiter=";", encoding=encoding)
        assert counts.sum() == 2 and counts[3] == 1
    code, _, err = run(capsys, "publish", "latin.csv", "-c", "âge", "--domain", "0:20:1",
                       "--epsilon", "1", "--delimiter", ";")  # fmt: skip
    assert code == 1 and "not UTF-8" in err
    bad = [("--encoding", "klingon", "not supported"), ("--delimiter", ";;", "one character")]
    for option, value, message in bad:
        code, _, err = run(capsys, "publish", "latin.csv", "-c", "âge", "--domain", "0:20:1",
                           "--epsilon", "1", option, value)  # fmt: skip
        assert code == 2 and message in err
    parquet(workdir / "p.parquet", "SELECT 1 AS age")
    code, _, err = run(capsys, "publish", "p.parquet", "-c", "age", "--domain", "0:20:1",
                       "--epsilon", "1", "--delimiter", ";")  # fmt: skip
    assert code == 2 and "applies to CSV" in err


@pytest.mark.parametrize("library", ["pandas", "polars", "pyarrow"])
def test_histogram_of_a_dataframe_column(library):
    lib = pytest.importorskip(library)
    data = {"age": [1, 2, 2, 15], "person": ["a", "a", "a", "b"]}
    frame = lib.table(data) if library == "pyarrow" else lib.DataFrame(data)
    rel = dh.histogram(frame, column="age", domain="0:20:5", epsilon=HUGE, method="identity",
                       rng=0, privacy_unit="person", max_records=2)  # fmt: skip
    assert np.rint(rel.estimate).tolist() == [2, 0, 0, 1]
    assert rel.privacy_unit == "person" and rel.max_records == 2
    with pytest.raises(ValidationError, match="no column 'agee'"):
        dh.histogram(frame, column="agee", domain="0:20:5", epsilon=1, method="identity")
    with pytest.raises(ValidationError, match="needs column="):
        dh.histogram(frame, domain="0:20:5", epsilon=1, method="identity")


def test_python_memory_check_before_any_budget(monkeypatch):
    from dphist import resources

    monkeypatch.setattr(resources, "available_memory", lambda: 2**20)
    with dh.Session(np.ones(100_000, dtype=np.int64), epsilon=1, rng=0) as s:
        with pytest.raises(ValidationError, match=r"need about .* of memory"):
            s.publish("identity", epsilon=0.5)
        assert s.spent == 0
    need = resources.memory_estimate(10**8, "identity")
    assert 10**8 * 8 < need < 10**8 * 100  # tens of bytes per bin, not hundreds
