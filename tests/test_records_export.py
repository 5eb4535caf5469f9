"""``dh.histogram`` (raw records in), the export layer, memory planning, and the command
line on neighbouring files: every case releases on both sides, or fails the same way
on both, before any record is read."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest

import dphist
import dphist as dh
from dphist import _io, cli, export, ingest, resources
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


# --------------------------------------------------------------------------- dh.histogram


def test_histogram_counts_then_publishes():
    rel = dh.histogram([3, 17, 17, 42, None, "x", 99], domain="0:50:10", epsilon=HUGE,
                       method="identity", rng=0)  # fmt: skip
    assert np.rint(rel.estimate).tolist() == [1, 2, 0, 0, 2]  # 99 clipped into the last bin
    cats = dh.histogram(["a", "b", "b", "c"], categories=["a", "b"], epsilon=HUGE,
                        method="identity", rng=0)  # fmt: skip
    assert np.rint(cats.estimate).tolist() == [1, 2]


def test_histogram_checks_everything_before_reading(monkeypatch):
    read = []
    monkeypatch.setattr(ingest, "count_values", lambda *a, **k: read.append(1))
    bad = [
        ({"domain": "0:1:1", "epsilon": 0, "method": "identity"}, "epsilon"),
        ({"domain": "0:1:1", "epsilon": 1, "method": "idntity"}, "Did you mean"),
        ({"domain": "0:1:1", "epsilon": 1, "method": "S~", "ratio": 2}, "ratio"),
        ({"epsilon": 1, "method": "identity"}, "public"),
        ({"domain": "0:1:1", "epsilon": 1, "method": "identity", "max_records": 2}, "unit"),
        ({"domain": "0:1:1", "epsilon": 1, "method": "identity", "rng": "x"}, "rng"),
        ({"domain": "0:1:1", "epsilon": 1, "method": "auto", "ratio": 0.5}, "auto"),
    ]
    for kwargs, message in bad:
        with pytest.raises(dh.DphistError, match=message):
            dh.histogram([0.5], **kwargs)
    assert read == []


def test_histogram_with_a_privacy_unit():
    pytest.importorskip("pandas")
    import pandas as pd

    visits = pd.DataFrame({"patient": ["p1"] * 6 + ["p2"], "age": [30] * 6 + [70]})
    rel = dh.histogram(visits["age"], domain="0:100:50", epsilon=HUGE, method="identity",
                       privacy_unit=visits["patient"], max_records=2, rng=0)  # fmt: skip
    assert np.rint(rel.estimate).tolist() == [2, 1]
    assert rel.max_records == 2 and rel.privacy_unit == "patient"
    assert all(c.sensitivity >= 2 for c in rel.ledger)


# --------------------------------------------------------------------------- export


def _release(n=4):
    return dh.publish(np.arange(n), epsilon=1, method="identity", rng=1)


@pytest.mark.parametrize("suffix", [".json", ".csv", ".parquet"])
def test_write_histogram_round_trip(workdir, suffix):
    rel = _release()
    bins = ingest.binning(edges=[0, 1, 2.5, 4, 10])
    written = export.write_histogram(
        workdir / f"h{suffix}", rel, bins, column="age", counts="float"
    )
    assert written[0] == workdir / f"h{suffix}"
    if suffix == ".json":
        payload = json.loads((workdir / "h.json").read_text())
        assert [b["estimate"] for b in payload["bins"]] == rel.estimate.tolist()
        assert [b["label"] for b in payload["bins"]] == bins.labels()
        assert payload["column"] == "age" and payload["release"]["method"] == "identity"
        assert "timings" not in payload["release"]
    else:
        import duckdb

        rows = duckdb.sql(f"SELECT label, estimate FROM '{workdir / f'h{suffix}'}'").fetchall()
        assert [r[0] for r in rows] == bins.labels()
        side = json.loads((workdir / f"h{suffix}.ledger.json").read_text())
        assert side["table"] == f"h{suffix}" and side["release"]["ledger"]


def test_outputs_are_written_all_or_none(workdir, monkeypatch):
    (workdir / "h.csv").write_text("old table")
    (workdir / "h.csv.ledger.json").write_text("old ledger")
    real = os.replace
    calls = []

    def flaky(src, dst):
        if Path(dst).resolve().parent != workdir.resolve():  # e.g. numba writing its cache
            return real(src, dst)
        calls.append(dst)
        if Path(dst).name == "h.csv.ledger.json" and len(calls) == 4:  # the second target
            raise OSError(errno.EIO, "I/O error")
        return real(src, dst)

    monkeypatch.setattr(_io.os, "replace", flaky)
    with pytest.raises(export.OutputError, match="I/O error"):
        export.write_histogram(workdir / "h.csv", _release())
    monkeypatch.undo()
    assert (workdir / "h.csv").read_text() == "old table"  # rolled back
    assert (workdir / "h.csv.ledger.json").read_text() == "old ledger"
    assert sorted(os.listdir(workdir)) == ["h.csv", "h.csv.ledger.json"]


def test_json_default_is_exact():
    from fractions import Fraction

    assert json.dumps({"e": Fraction(1, 3)}, default=export.json_default) == '{"e": "1/3"}'


# --------------------------------------------------------------------------- memory


def test_memory_check_states_the_estimate():
    need = resources.memory_estimate(10**8, "identity", command_line=True)
    with pytest.raises(ValidationError, match=rf"need about {need / 2**30:.1f} GiB.*has 1\.0 GiB"):
        resources.check_bins(10**8, "identity", command_line=True, available=2**30)
    resources.check_bins(1000, "identity", available=2**30)
    assert resources.bytes_per_bin("S~") > resources.bytes_per_bin("identity")
    assert resources.bytes_per_bin("SF", 10**6) > resources.bytes_per_bin("SF", 10**3)
    for m in dphist.list_methods():  # every method has a figure, the command line's larger
        assert (
            0
            < resources.bytes_per_bin(m.name)
            <= resources.bytes_per_bin(m.name, command_line=True)
        )


def test_a_domain_no_publication_could_hold_is_refused_before_its_edges_are_built(monkeypatch):
    need = resources.memory_estimate(10**8, "identity")  # 25 bytes a bin: 2.3 GiB
    with pytest.raises(ValidationError, match=rf"at least {need / 2**30:.1f} GiB.*has 1\.0 GiB"):
        resources.check_domain(10**8, available=2**30)
    resources.check_domain(10**6, available=2**30)
    monkeypatch.setattr(resources, "available_memory", lambda: 2**20)  # 1 MiB: no edges built
    with pytest.raises(ValidationError, match="Use wider bins"):
        dphist.ingest.binning(domain="0:1e9:1")


# --------------------------------------------------------------------------- CLI


def _publish(capsys, path: str, out: str, *extra: str) -> tuple[int, str, str]:
    return run(
        capsys, "publish", path, "-c", "age", "--domain", "0:100:10", "--epsilon", "1",
        "--method", "identity", "--seed", "5", "--out", out, *extra,
    )  # fmt: skip


NEIGHBOURS = {
    "malformed row": b"42,9,extra\n",
    "unbalanced quote": b'42,"9\n',
    "not a number": b"forty,9\n",
    "missing value": b",9\n",
    "not UTF-8": b"4\xff2,9\n",
    "stray carriage return": b"4\r2\n",
    "infinite": b"inf,9\n",
}


@pytest.mark.parametrize("case", sorted(NEIGHBOURS))
def test_cli_releases_on_both_sides_of_a_bad_record(capsys, workdir, case):
    rows = b"age,id\n" + b"".join(f"{a},{i}\n".encode() for i, a in enumerate(range(5, 95, 7)))
    (workdir / "a.csv").write_bytes(rows)
    lines = rows.splitlines(keepends=True)
    (workdir / "b.csv").write_bytes(b"".join(lines[:3]) + NEIGHBOURS[case] + b"".join(lines[3:]))
    assert _publish(capsys, "a.csv", "a.json")[0] == 0
    code, _, err = _publish(capsys, "b.csv", "b.json")
    assert code == 0, err
    a, b = (json.loads((workdir / f"{s}.json").read_text()) for s in "ab")
    assert a["bins"] == b["bins"]  # same seed, same counts: the same release


def test_cli_empty_column_releases(capsys, workdir):
    (workdir / "a.csv").write_text("age,id\n,1\n")
    (workdir / "b.csv").write_text("age,id\n")
    for name in ("a", "b"):
        code, _, err = _publish(capsys, f"{name}.csv", f"{name}.json")
        assert code == 0, err
    assert (
        json.loads((workdir / "a.json").read_text())["bins"]
        == json.loads((workdir / "b.json").read_text())["bins"]
    )


def test_cli_privacy_unit(capsys, workdir):
    (workdir / "v.csv").write_text("age,pid\n" + "35,p1\n" * 9 + "75,p2\n")
    code, _, err = _publish(
        capsys, "v.csv", "v.json", "--privacy-unit", "pid", "--max-records", "3"
    )
    assert code == 0, err
    payload = json.loads((workdir / "v.json").read_text())
    assert payload["release"]["max_records"] == 3
    assert payload["release"]["privacy_unit"] == "pid"
    assert [c["sensitivity"] for c in payload["release"]["ledger"]] == [3.0]


def test_cli_interrupt_while_counting_writes_nothing(capsys, workdir, monkeypatch):
    (workdir / "v.csv").write_text("age\n5\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest, "count_file", interrupted)
    code, out, err = _publish(capsys, "v.csv", "o.json")
    assert code == 130 and err == "dphist: error: interrupted\n" and out == ""
    assert sorted(os.listdir(workdir)) == ["v.csv"]


def test_cli_progress_on_large_files(capsys, workdir, monkeypatch):
    import dphist.cli.publish as command

    (workdir / "v.csv").write_text("age\n" + "5\n" * 1000)
    monkeypatch.setattr(command, "PROGRESS_BYTES", 10)
    monkeypatch.setattr(command.sys.stderr, "isatty", lambda: True, raising=False)
    seen = []
    real = ingest.count_file

    def spy(*args, progress=None, **kwargs):
        seen.append(progress)
        return real(*args, progress=progress, **kwargs)

    monkeypatch.setattr(ingest, "count_file", spy)
    code, _, err = _publish(capsys, "v.csv", "o.json")
    assert code == 0, err
    assert callable(seen[0])


def test_failing_plot_writes_no_release(capsys, workdir, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    (workdir / "v.csv").write_text("age\n5\n")

    def broken(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    code, _, err = _publish(capsys, "v.csv", "o.json", "--plot", "p.png")
    assert code == 1 and "No space left" in err
    assert sorted(os.listdir(workdir)) == ["v.csv"]  # a retry will not publish twice


def test_no_value_from_the_data_in_messages(capsys, workdir):
    (workdir / "v.csv").write_text("age\nSECRET\n")
    code, out, err = _publish(capsys, "v.csv", "o.json", "--strict")
    assert code == 1 and "SECRET" not in err + out


def test_outputs_do_not_hold_timings(capsys, workdir):
    (workdir / "v.csv").write_text("age\n5\n")
    assert _publish(capsys, "v.csv", "o.csv")[0] == 0
    for name in ("o.csv", "o.csv.ledger.json"):
        assert "timing" not in (workdir / name).read_text()
    assert Path("o.csv").exists()
