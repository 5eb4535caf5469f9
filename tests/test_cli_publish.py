"""``dphist publish`` end to end, and the counting in :mod:`dphist.ingest` it relies on.

Every run counts a temporary CSV or Parquet file (Parquet written with DuckDB) and is
checked against a numpy oracle. At epsilon = 1e9 the identity method's discrete
Laplace noise has scale 1e-9, so its estimate equals the true counts exactly.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from dphist import cli, export, ingest
from dphist.errors import DataDependentParameterError, ValidationError
from dphist.methods.selector import DEFAULT_SHARE

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HUGE = "1e9"


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def assert_one_line_error(err: str) -> None:
    assert err.strip(), "expected a message on stderr"
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- data


EDGES = [0.0, 2.5, 10.0, 10.5, 33.0, 60.0, 100.0]


def sample_values(seed: int = 0, size: int = 3000) -> np.ndarray:
    """Values around [0, 100] with NaNs, values exactly on every edge and outliers."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 40, size).round(2)
    x[::50] = np.nan
    x[1 : 1 + len(EDGES)] = EDGES
    x[20:25] = [-1e6, 1e6, 100.0, 0.0, 10.0]
    return x


def write_csv(path: Path, columns: dict[str, list]) -> Path:
    names = list(columns)
    lines = [",".join(names)]
    for row in zip(*columns.values(), strict=True):
        cells = ["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in row]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_parquet(path: Path, values: np.ndarray, sql_type: str = "DOUBLE") -> Path:
    con = duckdb.connect()
    data = [None if np.isnan(v) else float(v) for v in values.tolist()]
    con.execute(f"CREATE TABLE t AS SELECT CAST(unnest($1::DOUBLE[]) AS {sql_type}) AS v", [data])
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    con.close()
    return path


def oracle(values: np.ndarray, edges: np.ndarray, outside: str) -> np.ndarray:
    x = values[~np.isnan(values)]
    if outside == "clip":
        x = np.clip(x, edges[0], edges[-1])
    else:
        x = x[(x >= edges[0]) & (x <= edges[-1])]
    counts, _ = np.histogram(x, bins=edges)  # half-open bins, the last one closed
    return counts


def read_json_estimate(path: Path) -> tuple[dict, np.ndarray]:
    payload = json.loads(path.read_text())
    return payload, np.array([b["estimate"] for b in payload["bins"]])


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("outside", ["clip", "drop"])
@pytest.mark.parametrize("kind", ["edges", "domain"])
def test_numeric_counts_match_numpy(capsys, workdir, fmt, outside, kind):
    x = sample_values()
    src = (
        write_csv(workdir / "in.csv", {"v": x.tolist()})
        if fmt == "csv"
        else write_parquet(workdir / "in.parquet", x)
    )
    if kind == "edges":
        option, value = "--edges", ",".join(map(str, EDGES))
        edges = np.array(EDGES)
    else:
        option, value = "--domain", "-10:95:7.5"
        edges = np.append(-10 + 7.5 * np.arange(14), 95.0)
    code, out, err = run(
        capsys, "publish", src, "--column", "v", option, value, "--epsilon", HUGE,
        "--method", "identity", "--seed", "1", "--outside", outside, "--out", "rel.json",
    )  # fmt: skip
    assert code == 0, err
    payload, est = read_json_estimate(workdir / "rel.json")
    assert np.array_equal(np.rint(est), oracle(x, edges, outside))
    assert np.abs(est - np.rint(est)).max() < 1e-3
    left, right = edges[:-1].tolist(), edges[1:].tolist()
    if outside == "clip":  # the end bins hold what lies beyond: open (null in JSON)
        left[0], right[-1] = None, None
    assert [b["left"] for b in payload["bins"]] == left
    assert [b["right"] for b in payload["bins"]] == right
    assert payload["binning"]["kind"] == kind and payload["outside_domain"] == outside
    assert payload["release"]["ledger"][0]["primitive"] == "discrete_laplace"
    assert "timings" not in payload["release"]  # run times depend on the data
    assert f"Written: {workdir / 'rel.json'}" in out


def test_clip_and_drop_by_hand(capsys, workdir):
    write_csv(workdir / "in.csv", {"age": [-5, 0, 5, 10, 15, 20, 25, None, 9.99]})
    expected = {"clip": [4, 4], "drop": [3, 3]}
    for policy, counts in expected.items():
        code, _, err = run(
            capsys, "publish", "in.csv", "-c", "age", "--domain", "0:20:10", "--epsilon", HUGE,
            "--method", "identity", "--seed", "0", "--outside", policy, "--out", f"{policy}.json",
        )  # fmt: skip
        assert code == 0, err
        _, est = read_json_estimate(workdir / f"{policy}.json")
        assert np.rint(est).tolist() == counts


def test_default_policy_is_clip_for_numbers(capsys, workdir):
    write_csv(workdir / "in.csv", {"v": [-1, 1, 3, 99]})
    code, _, _ = run(
        capsys, "publish", "in.csv", "-c", "v", "--edges", "0,2,4", "--epsilon", HUGE,
        "--method", "identity", "--seed", "0", "--out", "r.json",
    )  # fmt: skip
    assert code == 0
    payload, est = read_json_estimate(workdir / "r.json")
    assert np.rint(est).tolist() == [2, 2]
    assert payload["outside_domain"] == "clip"


def test_categories_from_strings_and_numbers(capsys, workdir):
    write_csv(
        workdir / "in.csv",
        {"colour": ["red", "blue", "red", "", "green", "Red", "blue", "red"]},
    )
    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "colour", "--categories", "red,green,blue,grey",
        "--epsilon", HUGE, "--method", "identity", "--seed", "0", "--out", "c.json",
    )  # fmt: skip
    assert code == 0, err
    payload, est = read_json_estimate(workdir / "c.json")
    assert np.rint(est).tolist() == [3, 1, 2, 0]  # "Red" matches no label; "" is missing
    assert [b["label"] for b in payload["bins"]] == ["red", "green", "blue", "grey"]
    assert payload["bins"][0]["left"] is None

    write_parquet(workdir / "n.parquet", np.array([1, 2, 2, 3, 3, 3, 7, np.nan]), "INTEGER")
    code, _, err = run(
        capsys, "publish", "n.parquet", "-c", "v", "--categories", "3,1,2.0",
        "--epsilon", HUGE, "--method", "identity", "--seed", "0", "--out", "n.json",
    )  # fmt: skip
    assert code == 0, err
    _, est = read_json_estimate(workdir / "n.json")
    assert np.rint(est).tolist() == [3, 1, 2]


def test_categories_from_a_file(capsys, workdir):
    (workdir / "labels.txt").write_text("a, b\nc\n", encoding="utf-8")
    write_csv(workdir / "in.csv", {"k": ["a, b", "c", "c", "a"]})
    (workdir / "in.csv").write_text('k\n"a, b"\nc\nc\na\n', encoding="utf-8")
    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "k", "--categories", "@labels.txt",
        "--epsilon", HUGE, "--method", "identity", "--seed", "0", "--out", "r.json",
    )  # fmt: skip
    assert code == 0, err
    _, est = read_json_estimate(workdir / "r.json")
    assert np.rint(est).tolist() == [1, 2]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_file_and_array_counts_agree(workdir, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-5, 25, 4000)
    edges = np.unique(np.concatenate(([0.0, 20.0], rng.uniform(0, 20, 30))))
    x[: edges.size] = edges  # every edge value exactly
    x[-5:] = np.nextafter(edges[1:6], -np.inf)  # just below interior edges
    binning = ingest.Binning.from_edges(edges)
    src = write_parquet(workdir / "x.parquet", x)
    for outside in ("clip", "drop"):
        from_file = ingest.count_file(src, "v", binning, outside=outside)
        assert np.array_equal(from_file, ingest.count_values(x, binning, outside=outside))
        assert np.array_equal(from_file, oracle(x, edges, outside))


def test_domain_bins_and_labels():
    b = ingest.parse_domain("0:1:0.3")
    assert b.n == 4  # ceil(1 / 0.3)
    assert b.edges[-1] == 1.0 and b.labels()[-1].endswith("1]")
    assert ingest.parse_domain("0:100:10").n == 10
    assert ingest.parse_domain("0:0.3:0.1").n == 3  # 0.3 / 0.1 rounds above 3


def test_count_values_accepts_lists_and_series_like_objects():
    binning = ingest.Binning.from_categories(["x", "y"])

    class SeriesLike:
        def to_numpy(self):
            return np.array(["x", None, "y", "y", "z"], dtype=object)

    assert ingest.count_values(SeriesLike(), binning).tolist() == [1, 2]
    numeric = ingest.Binning.from_edges([0, 1, 2])
    assert ingest.count_values([0.5, 1.5, None, 2.0], numeric).tolist() == [1, 2]


def test_count_values_with_pandas():
    pd = pytest.importorskip("pandas")
    s = pd.Series([1.0, None, 2.5, 7.0])
    assert ingest.count_values(s, ingest.Binning.from_edges([0, 2, 4])).tolist() == [1, 2]


def test_bins_are_never_derived_from_data(workdir):
    with pytest.raises(DataDependentParameterError, match="public"):
        ingest.count([1, 2, 3], None)
    with pytest.raises(DataDependentParameterError, match="public"):
        ingest.Binning.from_edges("auto")
    with pytest.raises(ValidationError, match="strictly increasing"):
        ingest.Binning.from_edges([0, 2, 2])
    with pytest.raises(ValidationError, match="clip"):
        ingest.count_values(["a"], ingest.Binning.from_categories(["a"]), outside="clip")


# --------------------------------------------------------------------------- outputs


def test_csv_output_with_ledger_sidecar(capsys, workdir):
    x = sample_values(3)
    write_csv(workdir / "in.csv", {"v": x.tolist(), "other": ["a"] * x.size})
    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:100:20", "--epsilon", "0.5",
        "--method", "S~", "--param", "ratio=0.5", "--seed", "4", "--out", "hist.csv",
    )  # fmt: skip
    assert code == 0, err
    lines = (workdir / "hist.csv").read_text().splitlines()
    assert lines[0] == "bin,label,left,right,estimate,stderr,lower,upper,group,noise_variance"
    assert len(lines) == 6 and lines[1].startswith("0,")
    side = json.loads((workdir / "hist.csv.ledger.json").read_text())
    assert side["release"]["method"] == "S~"
    assert side["release"]["params"]["ratio"] == 0.5
    assert "estimate" not in side["release"] and "timings" not in side["release"]
    spent = sum(float(c["epsilon"]) for c in side["release"]["ledger"])
    assert spent == pytest.approx(0.5)
    assert listing(workdir) == ["hist.csv", "hist.csv.ledger.json", "in.csv"]


def test_parquet_output_matches_json(capsys, workdir):
    x = sample_values(5)
    write_parquet(workdir / "in.parquet", x)
    common = ["-c", "v", "--edges", "0,25,50,75,100", "--epsilon", "1", "--method", "H",
              "--param", "fanout=2", "--seed", "9"]  # fmt: skip
    assert run(capsys, "publish", "in.parquet", *common, "--out", "r.parquet")[0] == 0
    assert run(capsys, "publish", "in.parquet", *common, "--out", "r.json")[0] == 0
    rows = duckdb.sql(f"SELECT bin, label, estimate FROM '{workdir / 'r.parquet'}'").fetchall()
    payload, est = read_json_estimate(workdir / "r.json")
    assert [r[0] for r in rows] == [0, 1, 2, 3]
    assert [r[1] for r in rows] == [b["label"] for b in payload["bins"]]
    assert np.array_equal([r[2] for r in rows], est)
    assert payload["release"]["params"]["fanout"] == 2
    assert (workdir / "r.parquet.ledger.json").exists()


def test_without_out_prints_a_preview_and_no_counts_of_outside_values(capsys, workdir):
    values = [5.0] * 7 + [500.0] * 37  # 37 records outside the domain
    write_csv(workdir / "in.csv", {"v": values})
    code, out, _ = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:10:5", "--epsilon", "1",
        "--method", "identity", "--outside", "drop",
    )  # fmt: skip
    assert code == 0
    assert "Private histogram" in out and "Private: yes" in out
    assert "37" not in out and "44" not in out
    assert "dropped" in out
    assert listing(workdir) == ["in.csv"]


def test_plot_shows_the_estimate(capsys, workdir):
    pytest.importorskip("matplotlib")
    write_csv(workdir / "in.csv", {"v": [1, 2, 3, 4]})
    code, out, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:5:1", "--epsilon", "1",
        "--method", "identity", "--seed", "1", "--plot", "p.png",
    )  # fmt: skip
    assert code == 0, err
    assert (workdir / "p.png").read_bytes().startswith(PNG_SIGNATURE)
    assert f"Written: {workdir / 'p.png'}" in out


def test_failure_while_writing_leaves_no_partial_file(capsys, monkeypatch, workdir):
    write_csv(workdir / "in.csv", {"v": [1, 2, 3]})
    (workdir / "old.parquet").write_bytes(b"previous")

    def broken(tmp, release, binning, fmt):
        Path(tmp).write_bytes(b"PAR1 partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "_copy_table", broken)
    for target in ("new.parquet", "old.parquet"):
        code, out, err = run(
            capsys, "publish", "in.csv", "-c", "v", "--domain", "0:5:1", "--epsilon", "1",
            "--method", "identity", "--out", target,
        )  # fmt: skip
        assert code == 1
        assert "No space left on device" in err
        assert_one_line_error(err)
        assert out == ""
    assert (workdir / "old.parquet").read_bytes() == b"previous"
    assert listing(workdir) == ["in.csv", "old.parquet"]


def test_json_failure_keeps_existing_file(capsys, monkeypatch, workdir):
    write_csv(workdir / "in.csv", {"v": [1, 2, 3]})
    (workdir / "r.json").write_text("old")

    def explode(tmp, *args, **kwargs):
        tmp.write_bytes(b'{"half')
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(export, "_write_histogram_json", explode)
    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:5:1", "--epsilon", "1",
        "--method", "identity", "--out", "r.json",
    )  # fmt: skip
    monkeypatch.undo()
    assert code == 1 and "I/O error" in err
    assert (workdir / "r.json").read_text() == "old"
    assert listing(workdir) == ["in.csv", "r.json"]


# --------------------------------------------------------------------------- auto


def test_auto_from_the_command_line(capsys, workdir):
    write_csv(workdir / "in.csv", {"v": list(range(100))})
    code, out, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:100:1", "--epsilon", "1",
        "--workload", "long", "--seed", "2", "--out", "a.json",
    )  # fmt: skip
    assert code == 0, err
    payload, _ = read_json_estimate(workdir / "a.json")
    auto = payload["release"]["params"]["auto"]
    assert payload["release"]["method"] == auto["method"]  # auto is the default method
    assert auto["share"] == str(DEFAULT_SHARE) and "long queries over 100 bins" in auto["reason"]
    assert payload["release"]["ledger"][0]["epsilon_exact"] == str(DEFAULT_SHARE)
    assert "Chosen by auto" in out

    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--categories", "1,2,3", "--epsilon", "1",
        "--method", "auto", "--auto-share", "0", "--seed", "2", "--out", "c.json",
    )  # fmt: skip
    assert code == 0, err
    payload, _ = read_json_estimate(workdir / "c.json")
    auto = payload["release"]["params"]["auto"]
    assert "ranges of every length" in auto["reason"]  # one default: as in Python
    assert auto["noisy_total"] is None and auto["share"] == "0"

    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:100:1", "--epsilon", "1",
        "--auto-share", "0.9", "--out", "d.json",
    )  # fmt: skip
    assert code == 2 and "auto_share must lie in [0, 0.5]" in err
    assert not (workdir / "d.json").exists()
    code, _, err = run(
        capsys, "publish", "in.csv", "-c", "v", "--domain", "0:100:1", "--epsilon", "1",
        "--method", "identity", "--auto-share", "0.1", "--out", "d.json",
    )  # fmt: skip
    assert code == 2 and "apply to --method auto only" in err


def test_publish_help_says_what_auto_does_and_costs(capsys):
    code, out, _ = run(capsys, "publish", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "two noisy counts" in flat and f"(default {DEFAULT_SHARE})" in flat
    assert "trained on public data" in flat


# --------------------------------------------------------------------------- bad input


def _bad_cases(tmp: Path) -> list[tuple[list[str], int, str]]:
    write_csv(tmp / "in.csv", {"v": [1, 2, 3], "name": ["a", "b", "abc"]})
    ok = ["--epsilon", "1", "--method", "identity", "--out", "o.json"]
    dom = ["--domain", "0:5:1"]
    return [
        (["missing.csv", "-c", "v", *dom, *ok], 1, "does not exist"),
        (["in.txt", "-c", "v", *dom, *ok], 1, "does not exist"),
        (["in.csv", "-c", "w", *dom, *ok], 1, "no column 'w'"),
        (["in.csv", "-c", "v", "--domain", "5:5:1", *ok], 2, "lo < hi"),
        (["in.csv", "-c", "v", "--domain", "0:5:0", *ok], 2, "width must be > 0"),
        (["in.csv", "-c", "v", "--domain", "0:5", *ok], 2, "lo:hi:width"),
        (["in.csv", "-c", "v", "--domain", "a:5:1", *ok], 2, "must be a number"),
        (["in.csv", "-c", "v", "--edges", "0,2,1", *ok], 2, "strictly increasing"),
        (["in.csv", "-c", "v", "--edges", "0,nan", *ok], 2, "finite"),
        (["in.csv", "-c", "v", "--categories", "", *ok], 2, "non-empty"),
        (["in.csv", "-c", "v", "--categories", "a,,b", *ok], 2, "non-empty"),
        (["in.csv", "-c", "v", *dom, "--edges", "0,1", *ok], 2, "one binning"),
        (["in.csv", "-c", "v", *ok], 2, "bins must be public"),
        (["in.csv", "-c", "v", "--bins", "auto", *ok], 2, "bins must be public"),
        (["in.csv", "-c", "v", "--edges", "auto", *ok], 2, "bins must be public"),
        (["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "idntity"], 2, "Did you mean"),
        (["in.csv", "-c", "v", *dom, "--epsilon", "0", "--method", "identity"], 2, "epsilon"),
        (["in.csv", "-c", "v", *dom, "--epsilon", "x", "--method", "identity"], 2, "epsilon"),
        (["in.csv", "-c", "v", *dom, *ok, "--param", "bogus=1"], 2, "no parameter(s) 'bogus'"),
        (["in.csv", "-c", "v", *dom, *ok, "--param", "bogus"], 2, "k=v"),
        (["in.csv", "-c", "v", *dom, *ok, "--outside", "wrap"], 2, "clip' or 'drop"),
        (["in.csv", "-c", "name", "--categories", "a", "--outside", "clip", *ok], 2, "clip"),
        (["in.csv", "-c", "v", *dom, *ok, "--privacy-unit", "name"], 2, "--max-records"),
        (["in.csv", "-c", "v", *dom, *ok, "--max-records", "2"], 2, "--privacy-unit"),
        (
            ["in.csv", "-c", "v", *dom, *ok, "--max-records", "0", "--privacy-unit", "v"],
            2,
            "than or equal to 1",
        ),
        (["in.csv", "-c", "v", "--domain", "0:2e9:1", *ok], 2, "of memory"),
        (["in.csv", "-c", "v", "--domain", "0:1e12:1", *ok], 2, "at most 2,147,483,648"),
        (["in.csv", "-c", "v", *dom, *ok, "--plot", "p.xyz"], 2, "cannot write a plot"),
        (["in.csv", "-c", "v", *dom, *ok, "--plot", "no/p.png"], 2, "no directory"),
        (
            ["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "S~", "--param", "ratio=2"],
            2,
            "ratio must lie in",
        ),
        (
            ["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "S~", "--out", "o.txt"],
            2,
            "output format",
        ),
        (
            ["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "S~", "--out", "no/o.json"],
            2,
            "no directory",
        ),
        (
            ["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "S~", "--workload", "long"],
            2,
            "--method auto only",
        ),
        (
            ["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "auto", "--param", "ratio=1"],
            2,
            "drop --param",
        ),
        (
            ["in.csv", "-c", "v", *dom, "--epsilon", "1", "--method", "auto", "--workload", "huge"],
            2,
            "unknown workload",
        ),
        ([], 2, "Missing argument"),
        (["in.csv", "-c", "v", *dom, *ok, "--nonsense"], 2, "No such option"),
    ]


def test_every_bad_input_fails_cleanly(capsys, monkeypatch, workdir):
    """One line on stderr with the one prefix, exit 2 for every bad option (found before
    any record is read: counting is a spy), 1 for a fault in the input file; nothing
    written."""
    counted = []
    real = ingest.count_file
    monkeypatch.setattr(ingest, "count_file", lambda *a, **k: counted.append(1) or real(*a, **k))
    for args, code, message in _bad_cases(workdir):
        before = listing(workdir)
        counted.clear()
        got, out, err = run(capsys, "publish", *args)
        assert got == code, (args, err)
        assert message in err, (args, err)
        assert err.startswith("dphist: error: ")
        assert_one_line_error(err)
        assert out == "", args
        assert listing(workdir) == before, args
        if code == 2:
            assert not counted, args


def test_installed_entry_point_on_parquet(workdir):
    script = Path(sys.executable).with_name("dphist")
    if not script.exists():
        pytest.skip("the dphist console script is not installed next to this interpreter")
    x = sample_values(7)
    write_parquet(workdir / "in.parquet", x)
    edges = ",".join(map(str, EDGES))
    proc = subprocess.run(
        [str(script), "publish", "in.parquet", "--column", "v", "--edges", edges,
         "--epsilon", HUGE, "--method", "identity", "--seed", "3", "--out", "out.csv"],
        capture_output=True, text=True, cwd=workdir, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = duckdb.sql(f"SELECT estimate FROM read_csv('{workdir / 'out.csv'}')").fetchall()
    assert np.array_equal(np.rint([r[0] for r in rows]), oracle(x, np.array(EDGES), "clip"))
    bad = subprocess.run(
        [str(script), "publish", "in.parquet", "--column", "v", "--epsilon", "1",
         "--method", "identity"],
        capture_output=True, text=True, cwd=workdir, timeout=300, check=False,
    )  # fmt: skip
    assert bad.returncode == 2
    assert_one_line_error(bad.stderr)
