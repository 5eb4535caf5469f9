"""The ``dphist`` command line, driven in-process through ``dphist.cli.main``."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import dphist
from dphist import cli
from dphist._io import atomic_write
from dphist.errors import DphistError, PrivacyError
from dphist.plot import plot_release

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    """Run every command in an empty directory with a fixed, colourless console."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))  # includes hidden temporary files


def table_row(out: str, label: str) -> list[str]:
    """Cells of the table row whose first cell is ``label``."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if cells[0] == label:
            return cells
    raise AssertionError(f"no table row {label!r} in:\n{out}")


def assert_one_line_error(err: str) -> None:
    assert err.strip(), "expected a message on stderr"
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


# --------------------------------------------------------------------------- demo


def test_demo_with_seed_prints_comparison_and_writes_png(capsys, workdir):
    code, out, err = run(capsys, "demo", "--seed", "1", "--plot", "out.png")
    assert code == 0, err
    assert "true" in out and "private" in out and "abs. error" in out
    assert "Private: NO" in out
    assert "discrete_laplace" in out  # the ledger
    assert "Guarantee: none" in out
    png = workdir / "out.png"
    assert f"written to {png.resolve()}" in out
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 10_000
    assert listing(workdir) == ["out.png"]


def test_demo_numbers_are_the_library_release(capsys):
    code, out, _ = run(capsys, "demo", "--seed", "1", "--epsilon", "0.5", "--no-plot")
    assert code == 0
    true = dphist.synthetic.demo_histogram()
    rel = dphist.publish(true, epsilon=0.5, method="identity", rng=1)
    assert table_row(out, "0-11")[:3] == [
        "0-11",
        f"{true[:12].sum():,}",
        f"{rel.range_sum(0, 12):,.1f}",
    ]
    assert table_row(out, "all")[:3] == ["all", "2,000", f"{rel.range_sum(0, 96):,.1f}"]
    assert "epsilon = 0.5" in out


def test_demo_default_plot_path(capsys, workdir):
    code, out, _ = run(capsys, "demo", "--seed", "3")
    assert code == 0
    assert (workdir / "dphist-demo.png").read_bytes().startswith(PNG_SIGNATURE)
    assert "dphist-demo.png" in out


def test_demo_no_plot_writes_nothing(capsys, workdir):
    code, out, _ = run(capsys, "demo", "--seed", "1", "--no-plot")
    assert code == 0
    assert "Plot: skipped (--no-plot)" in out
    assert listing(workdir) == []


def test_demo_seeded_output_is_reproducible(capsys):
    first = run(capsys, "demo", "--seed", "11", "--no-plot")
    second = run(capsys, "demo", "--seed", "11", "--no-plot")
    assert first[0] == second[0] == 0
    assert first[1] == second[1]


def test_demo_without_seed_is_private(capsys):
    code, out, _ = run(capsys, "demo", "--no-plot", "--epsilon", "2")
    assert code == 0
    assert "Private: yes" in out
    assert "epsilon-DP" in out


def test_demo_exact_epsilon_and_alias(capsys):
    code, out, _ = run(
        capsys, "demo", "--seed", "0", "--no-plot", "--epsilon", "1/3", "--method", "LPA"
    )
    assert code == 0
    assert "method identity, epsilon = 1/3" in out
    code, out, _ = run(capsys, "demo", "--seed", "0", "--no-plot", "--method", "uniform")
    assert code == 0
    assert "noisy_total" in out


def test_unknown_method_suggests_a_close_name(capsys, workdir):
    code, out, err = run(capsys, "demo", "--seed", "1", "--method", "idntity")
    assert code == 2
    assert "Did you mean 'identity'" in err
    assert "dphist methods" in err
    assert_one_line_error(err)
    assert out == ""
    assert listing(workdir) == []


@pytest.mark.parametrize("value", ["0", "-1", "nan", "abc", "inf", ""])
def test_bad_epsilon_is_a_usage_error(capsys, workdir, value):
    code, out, err = run(capsys, "demo", "--seed", "1", f"--epsilon={value}")
    assert code == 2
    assert "--epsilon" in err and "epsilon must be" in err
    assert_one_line_error(err)
    assert out == ""
    assert listing(workdir) == []


def test_negative_epsilon_as_separate_argument(capsys, workdir):
    code, _, err = run(capsys, "demo", "--epsilon", "-1")
    assert code == 2
    assert "epsilon must be > 0" in err
    assert listing(workdir) == []


def test_negative_seed_is_refused(capsys):
    code, _, err = run(capsys, "demo", "--seed", "-3", "--no-plot")
    assert code == 2
    assert "--seed" in err


def test_plot_and_no_plot_together_are_refused(capsys, workdir):
    code, _, err = run(capsys, "demo", "--plot", "x.png", "--no-plot")
    assert code == 2
    assert "--no-plot" in err
    assert listing(workdir) == []


def test_plot_into_missing_directory_fails_cleanly(capsys, workdir):
    code, out, err = run(capsys, "demo", "--seed", "1", "--plot", "missing/x.png")
    assert code == 2  # found before anything is published
    assert "cannot write the plot 'missing/x.png': no directory 'missing'" in err
    assert_one_line_error(err)
    assert out == ""
    assert listing(workdir) == []


def _failing_save(monkeypatch, exc: BaseException) -> None:
    """Make every figure save write a partial file and then fail."""
    import matplotlib.figure

    def save(self, fname, *args, **kwargs):
        Path(fname).write_bytes(PNG_SIGNATURE + b"partial")
        raise exc

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", save)


def test_failure_while_saving_leaves_no_file(capsys, monkeypatch, workdir):
    _failing_save(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    code, out, err = run(capsys, "demo", "--seed", "1", "--plot", "demo.png")
    assert code == 1
    assert out == ""
    assert "No space left on device" in err
    assert_one_line_error(err)
    assert listing(workdir) == []


def test_failure_while_saving_keeps_existing_file(monkeypatch, workdir):
    old = workdir / "old.png"
    old.write_bytes(b"previous plot")
    _failing_save(monkeypatch, RuntimeError("renderer crashed"))
    true = dphist.synthetic.demo_histogram()
    rel = dphist.publish(true, epsilon=1, method="identity", rng=1)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        plot_release(true, rel, old)
    assert old.read_bytes() == b"previous plot"
    assert listing(workdir) == ["old.png"]


def test_demo_without_matplotlib_still_succeeds(capsys, monkeypatch, workdir):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    code, out, err = run(capsys, "demo", "--seed", "1")
    assert code == 0, err
    assert 'pip install "dphist[plot]"' in out
    assert listing(workdir) == []


@pytest.mark.parametrize(
    ("exc", "code", "prefix"),
    [
        (PrivacyError("refused: seed reuse"), 1, "dphist: error: refused: seed reuse"),
        (DphistError("something broke"), 1, "dphist: error: something broke"),
        (KeyboardInterrupt(), 130, "dphist: error: interrupted"),
        (MemoryError(), 1, "dphist: error: out of memory"),
        (ZeroDivisionError("secret 42"), 1, "dphist: error: internal error (ZeroDivisionError)"),
    ],
)
def test_library_errors_map_to_exit_codes(capsys, monkeypatch, exc, code, prefix):
    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(cli.info, "publish", fail)
    got, out, err = run(capsys, "demo", "--seed", "1", "--no-plot")
    assert got == code
    assert err.startswith(prefix)
    assert "secret 42" not in err  # an unexpected error's message may hold data
    assert_one_line_error(err)
    assert out == ""


# --------------------------------------------------------------------------- methods, version


def test_methods_table(capsys):
    code, out, _ = run(capsys, "methods", "--long")
    assert code == 0
    for word in ("identity", "uniform", "lpa", "Dwork"):
        assert word in out


def test_methods_json(capsys):
    code, out, _ = run(capsys, "methods", "--json")
    assert code == 0
    payload = json.loads(out)
    assert [m["name"] for m in payload] == [m.name for m in dphist.list_methods()]
    by_name = {m["name"]: m for m in payload}
    assert {"identity", "uniform"} <= set(by_name)
    assert "lpa" in by_name["identity"]["aliases"]
    assert by_name["uniform"]["cite"].startswith("Hay et al.")


def test_methods_table_shows_blocks_budget_and_complexity(capsys):
    code, out, _ = run(capsys, "methods", "--long")
    assert code == 0
    for header in ("paper", "blocks", "budget split", "complexity"):
        assert header in out
    assert table_row(out, "H")[-1] == "O(N)"
    assert table_row(out, "identity")[3] == "noisy_bins 1"
    assert "'auto'" in " ".join(out.split())


def test_methods_json_budget_split_is_exact_and_complete(capsys):
    code, out, _ = run(capsys, "methods", "--json")
    assert code == 0
    payload = json.loads(out)
    for m in payload:
        assert m["complexity"].startswith("O("), m["name"]
        shares = [Fraction(q) for q in m["budget_split"].values()]
        assert sum(shares) == 1, m["name"]  # every method spends its whole epsilon
        assert m["blocks"] == list(m["budget_split"])
        info = dphist.get_method(m["name"])
        assert m["blocks"] == [b.name for b in info.pipeline(**info.example).blocks]
    by_name = {m["name"]: m for m in payload}
    assert by_name["O+S~"]["budget_split"] == {
        "noisy_bins": "13/40",
        "order": "0",
        "l1_grouping": "13/40",
        "group_totals": "7/20",
    }
    assert by_name["H"]["complexity"] == "O(N)"


def test_bench_prints_median_times(capsys):
    code, out, err = run(
        capsys, "bench", "--n", "64", "--methods", "identity,s2+h", "--repeats", "2"
    )
    assert code == 0, err
    assert "Median seconds over 2 run(s)" in out
    identity = table_row(out, "identity")
    assert identity[1] == "O(N)" and float(identity[2]) >= 0
    assert table_row(out, "S2+H")[1] == "O(N log N)"


def test_bench_refuses_unknown_methods_and_bad_sizes(capsys):
    code, _, err = run(capsys, "bench", "--methods", "identity,nope")
    assert code == 2 and "unknown method 'nope'" in err
    assert_one_line_error(err)
    code, _, err = run(capsys, "bench", "--n", "0")
    assert code == 2 and "--n" in err


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"dphist {dphist.__version__}"


def test_no_arguments_shows_help(capsys):
    code, out, _ = run(capsys)
    assert code == 0
    for command in ("demo", "methods", "publish", "bench"):
        assert command in out


def test_unknown_command_is_a_usage_error(capsys):
    code, _, err = run(capsys, "frobnicate")
    assert code == 2
    assert "frobnicate" in err
    assert_one_line_error(err)


# --------------------------------------------------------------------------- atomic writes


def test_atomic_write_returns_writer_result(workdir):
    target = workdir / "table.csv"
    result = atomic_write(target, lambda tmp: tmp.write_text("a,b\n"))
    assert result == 4
    assert target.read_text() == "a,b\n"
    assert listing(workdir) == ["table.csv"]


def test_atomic_write_failure_keeps_old_content(workdir):
    target = workdir / "table.csv"
    target.write_text("old")

    def writer(tmp: Path) -> None:
        assert tmp.parent == workdir and tmp.suffix == ".csv"
        tmp.write_text("half")
        raise ValueError("stop")

    with pytest.raises(ValueError, match="stop"):
        atomic_write(target, writer)
    assert target.read_text() == "old"
    assert listing(workdir) == ["table.csv"]


# --------------------------------------------------------------------------- entry points


def _script() -> Path:
    script = Path(sys.executable).with_name("dphist")
    if not script.exists():
        pytest.skip("the dphist console script is not installed next to this interpreter")
    return script


def test_console_script(workdir):
    proc = subprocess.run(
        [str(_script()), "demo", "--seed", "1", "--no-plot"],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Private: NO" in proc.stdout
    assert "Plot: skipped" in proc.stdout
    assert listing(workdir) == []


def test_python_dash_m_exit_code(workdir):
    proc = subprocess.run(
        [sys.executable, "-m", "dphist", "demo", "--epsilon", "0"],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2
    assert "epsilon must be > 0" in proc.stderr
