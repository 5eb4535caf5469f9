"""``dphist stream``: a file per window, an append-only ledger, the budget store, and
options refused before anything is read or written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from dphist import cli


def _records(path, n=300):
    rng = np.random.default_rng(0)
    rows = [f"{i * 0.2:.1f},{v}" for i, v in enumerate(rng.integers(0, 10, n))]
    path.write_text("t,v\n" + "\n".join(rows) + "\n")


def _args(src, out, *extra):
    return ["stream", str(src), "--time", "t", "--column", "v", "--window", "10", "--start", "0",
            "--end", "60", "--clock", "input", "--domain", "0:10:1", "--out", str(out),
            "--seed", "3", *extra]  # fmt: skip


def test_stream_writes_each_window_and_its_ledger_line(tmp_path, capsys):
    src, out = tmp_path / "cars.csv", tmp_path / "cars"
    _records(src)
    assert cli.main(_args(src, out, "--epsilon", "1", "--mechanism", "ba", "--w", "3")) == 0
    lines = [json.loads(x) for x in (out / "ledger.jsonl").read_text().splitlines()]
    assert [x["window"] for x in lines] == list(range(6))
    assert all(x["span_total"] <= 1 + 1e-12 for x in lines)
    spent = [x["spent"] for x in lines]
    assert all(abs(sum(spent[max(0, i - 2) : i + 1]) - x["span_total"]) < 1e-12
               for i, x in enumerate(lines))  # fmt: skip
    first = json.loads((out / "window-000000.json").read_text())
    assert first["start"] == 0 and first["end"] == 10 and len(first["release"]["estimate"]) == 10
    assert json.loads((out / "stream.json").read_text())["mechanism"] == "ba"


def test_stream_records_its_charges_in_the_budget_store(tmp_path, capsys):
    src, store = tmp_path / "cars.csv", tmp_path / "b.sqlite"
    _records(src)
    assert cli.main(["budget", "init", "cars", "--epsilon", "10", "--store", str(store)]) == 0
    extra = ["--budget", "cars", "--budget-store", str(store)]
    assert cli.main(_args(src, tmp_path / "a", "--epsilon", "1", *extra)) == 0  # periodic
    tree = ["--rho", "1", "--mechanism", "tree", "--horizon", "8"]
    assert cli.main(_args(src, tmp_path / "b", *tree, *extra)) == 2  # rho on a pure budget
    capsys.readouterr()
    assert cli.main(["budget", "show", "cars", "--store", str(store)]) == 0
    assert "spent 6," in capsys.readouterr().out  # six windows at 1


def test_bad_options_write_nothing(tmp_path, capsys):
    src, out = tmp_path / "cars.csv", tmp_path / "cars"
    _records(src)
    assert cli.main(_args(src, out, "--epsilon", "1", "--mechanism", "bd")) == 2  # no --w
    assert cli.main(_args(src, out, "--epsilon", "1", "--window", "-3")) == 2
    assert not out.exists()
    out.mkdir()
    (out / "x").write_text("keep")
    assert cli.main(_args(src, out, "--epsilon", "1")) == 2  # not a new folder
    assert (out / "x").read_text() == "keep"
    err = capsys.readouterr().err
    assert "Traceback" not in err


@pytest.mark.extended
def test_ctrl_c_leaves_every_finished_window_on_disk(tmp_path):
    """A live stream on the wall clock (1 s windows) interrupted after a few windows:
    exit 130, every ledger line has its complete file, and no file lacks its line."""
    out = tmp_path / "live"
    cmd = [sys.executable, "-m", "dphist", "stream", "-", "--time", "t", "--column", "v",
           "--window", "1", "--start", "now", "--domain", "0:10:1", "--epsilon", "1",
           "--poll", "0.1", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())  # fmt: skip
    proc.stdin.write("t,v\n")
    deadline = time.time() + 60
    while time.time() < deadline and len(list(out.glob("window-*.json"))) < 3:
        proc.stdin.write(f"{time.time()},{int(time.time() * 10) % 10}\n")
        proc.stdin.flush()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [json.loads(x) for x in (out / "ledger.jsonl").read_text().splitlines()]
    files = sorted(p.name for p in out.glob("window-*.json"))
    assert len(lines) >= 3 and files == [x["file"] for x in lines]
    for name in files:
        assert len(json.loads((out / name).read_text())["release"]["estimate"]) == 10
