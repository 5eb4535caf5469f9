"""Tests for dphist.datasets: locating, listing and parsing the real histograms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dphist import datasets
from dphist.errors import DatasetUnavailableError, InputTypeError, ValidationError
from dphist.synthetic import reduce_domain

# Published totals and zero counts of the local files (shared/datasets/README.md,
# methods-framework C.6). Bin counts come from datasets.DATASETS.
EXPECTED_TOTALS = {
    "search_logs": 335_889,
    "nettrace": 25_714,
    "social_network": 674_708,
    "searchlogs_4096": 335_889,
    "nettrace_4096": 25_714,
    "hepth_citations_4096": 347_414,
    "ipums_income_4096": 20_787_122,
    "adult_capital_loss_4096": 17_665,
    "md_salary_4096": 135_727,
    "bids_all_4096": 7_655_502,
    "lc_requested_4096": 3_999_425,
}


def _shared_folder() -> tuple[Path | None, str]:
    try:
        folder = datasets.data_dir()
    except DatasetUnavailableError as exc:
        return None, str(exc)
    if not datasets.available(folder):
        return None, f"{folder} holds none of the listed dataset files"
    return folder, ""


@pytest.fixture
def shared_data() -> Path:
    """The real data folder; skips the test when it is not on this machine."""
    folder, why = _shared_folder()
    if folder is None:
        pytest.skip(f"real datasets unavailable: {why}")
    return folder


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from an empty working directory with DPHIST_DATA unset."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    return tmp_path


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.txt"
    path.write_bytes(text.encode("ascii"))
    return path


def _valid_text(name: str, value: int = 1) -> str:
    return f"{value}\n" * datasets.DATASETS[name].bins


# --------------------------------------------------------------------------- catalogue


def test_catalogue_lists_the_documented_files():
    assert set(datasets.DATASETS) == set(EXPECTED_TOTALS)
    assert datasets.DATASETS["search_logs"].bins == 32_768
    assert datasets.DATASETS["nettrace"].bins == 65_536
    assert datasets.DATASETS["social_network"].bins == 11_342
    for name, info in datasets.DATASETS.items():
        assert info.name == name
        assert info.filename == f"{name}.txt"
        assert info.description
        if name.endswith("_4096"):
            assert info.bins == 4_096


def test_catalogue_is_read_only():
    with pytest.raises(TypeError):
        datasets.DATASETS["mine"] = datasets.DATASETS["nettrace"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        datasets.DATASETS["nettrace"].bins = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- real data


@pytest.mark.needs_data
def test_every_dataset_loads_with_documented_bins_and_total(shared_data: Path):
    assert datasets.available(shared_data) == list(datasets.DATASETS)
    for name, info in datasets.DATASETS.items():
        counts = datasets.load(name, data_dir=shared_data)
        assert counts.dtype == np.int64
        assert counts.shape == (info.bins,)
        assert counts.min() >= 0
        assert int(counts.sum()) == EXPECTED_TOTALS[name], name


@pytest.mark.needs_data
def test_search_logs_statistics(shared_data: Path):
    counts = datasets.load("search_logs", data_dir=shared_data)
    assert int(counts.sum()) == 335_889
    assert int(np.count_nonzero(counts == 0)) == 17_082
    assert round(float(np.mean(counts == 0)), 2) == 0.52
    assert int(counts.max()) == 496


@pytest.mark.needs_data
def test_dpbench_cuts_are_block_sums(shared_data: Path):
    log = datasets.load("search_logs", data_dir=shared_data)
    net = datasets.load("nettrace", data_dir=shared_data)
    assert np.array_equal(
        reduce_domain(log, 4096), datasets.load("searchlogs_4096", data_dir=shared_data)
    )
    assert np.array_equal(
        reduce_domain(net, 4096), datasets.load("nettrace_4096", data_dir=shared_data)
    )


@pytest.mark.needs_data
def test_load_returns_a_fresh_writable_array(shared_data: Path):
    first = datasets.load("nettrace_4096", data_dir=shared_data)
    first[:] = 0
    second = datasets.load("nettrace_4096", data_dir=shared_data)
    assert int(second.sum()) == EXPECTED_TOTALS["nettrace_4096"]


# --------------------------------------------------------------------------- locating


def test_env_var_pointing_at_parent_of_1d(isolated: Path, monkeypatch: pytest.MonkeyPatch):
    root = isolated / "data"
    _write(root / "1d", "nettrace_4096", _valid_text("nettrace_4096", 3))
    monkeypatch.setenv(datasets.ENV_VAR, str(root))
    assert datasets.data_dir() == root / "1d"
    assert datasets.available() == ["nettrace_4096"]
    counts = datasets.load("nettrace_4096")
    assert counts.shape == (4096,)
    assert int(counts.sum()) == 3 * 4096


def test_env_var_pointing_at_1d_itself(isolated: Path, monkeypatch: pytest.MonkeyPatch):
    folder = isolated / "data" / "1d"
    _write(folder, "md_salary_4096", _valid_text("md_salary_4096", 2))
    monkeypatch.setenv(datasets.ENV_VAR, str(folder))
    assert datasets.data_dir() == folder
    assert int(datasets.load("md_salary_4096").sum()) == 2 * 4096


def test_explicit_argument_beats_env_var(isolated: Path, monkeypatch: pytest.MonkeyPatch):
    env_root = isolated / "env"
    arg_root = isolated / "arg"
    _write(env_root / "1d", "nettrace_4096", _valid_text("nettrace_4096", 1))
    _write(arg_root / "1d", "nettrace_4096", _valid_text("nettrace_4096", 5))
    monkeypatch.setenv(datasets.ENV_VAR, str(env_root))
    assert datasets.data_dir(arg_root) == arg_root / "1d"
    assert int(datasets.load("nettrace_4096", data_dir=arg_root).sum()) == 5 * 4096
    assert int(datasets.load("nettrace_4096").sum()) == 4096


def test_upward_search_finds_shared_beside_checkout(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
):
    shared_1d = isolated / "shared" / "datasets" / "1d"
    _write(shared_1d, "bids_all_4096", _valid_text("bids_all_4096"))
    deep = isolated / "main" / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert datasets.data_dir().resolve() == shared_1d.resolve()
    assert datasets.available() == ["bids_all_4096"]


def test_env_var_to_empty_folder_is_unavailable(isolated: Path, monkeypatch: pytest.MonkeyPatch):
    empty = isolated / "empty"
    empty.mkdir()
    monkeypatch.setenv(datasets.ENV_VAR, str(empty))
    with pytest.raises(DatasetUnavailableError, match="DPHIST_DATA") as info:
        datasets.data_dir()
    assert str(empty) in str(info.value)
    with pytest.raises(DatasetUnavailableError):
        datasets.load("search_logs")
    assert datasets.available() == []


def test_missing_explicit_folder_is_unavailable(isolated: Path):
    missing = isolated / "nowhere"
    with pytest.raises(DatasetUnavailableError, match="does not exist") as info:
        datasets.load("nettrace", data_dir=missing)
    assert "data_dir=" in str(info.value)
    assert isinstance(info.value, FileNotFoundError)


def test_nothing_found_message_says_where_and_how(isolated: Path, monkeypatch: pytest.MonkeyPatch):
    # Restrict the search to the temporary tree and find nothing, whatever folders
    # the machine's /tmp ancestors happen to hold.
    monkeypatch.setattr(datasets, "_search_roots", lambda: [Path.cwd().resolve()])
    monkeypatch.setattr(datasets, "_search_upward", lambda roots: None)
    with pytest.raises(DatasetUnavailableError) as info:
        datasets.data_dir()
    message = str(info.value)
    assert "shared/datasets/1d" in message
    assert str(Path.cwd().resolve()) in message
    assert "data_dir=" in message
    assert "DPHIST_DATA" in message
    assert datasets.available() == []


def test_missing_file_in_existing_folder(isolated: Path):
    folder = isolated / "data" / "1d"
    _write(folder, "nettrace_4096", _valid_text("nettrace_4096"))
    with pytest.raises(DatasetUnavailableError, match="search_logs") as info:
        datasets.load("search_logs", data_dir=folder)
    assert "nettrace_4096" in str(info.value)  # lists what is present


def test_data_dir_rejects_non_path(isolated: Path):
    with pytest.raises(InputTypeError, match="data_dir"):
        datasets.data_dir(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- names


def test_unknown_name_suggests_close_matches():
    with pytest.raises(ValidationError, match="unknown dataset") as info:
        datasets.load("serch_logs")
    assert "'search_logs'" in str(info.value)
    with pytest.raises(ValidationError, match="'nettrace'"):
        datasets.load("NetTrace")


def test_name_must_be_a_string():
    with pytest.raises(InputTypeError, match="name"):
        datasets.load(3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "line", "secret"),
    [
        ("1\n2\n-98765\n4\n", 3, "98765"),
        ("1\n12345.5\n3\n", 2, "12345.5"),
        ("7\n8\n9\nsecretword\n", 4, "secretword"),
        ("1\nnan\n", 2, "nan"),
        ("5\n\n6\n", 2, None),
        ("", 1, None),
        ("\n\n", 1, None),
        ("1\n31 41\n", 2, "31 41"),
        ("+54321\n", 1, "54321"),
        ("1\n2\n1_000\n", 3, "1_000"),
        ("1\n99999999999999999999999\n", 2, "99999999999999999999999"),
    ],
    ids=[
        "negative",
        "float",
        "text",
        "nan",
        "blank-line",
        "empty",
        "only-blank",
        "two-values",
        "plus-sign",
        "underscore",
        "overflow",
    ],
)
def test_malformed_file_names_line_not_value(isolated: Path, text: str, line: int, secret):
    folder = isolated / "bad" / "1d"
    path = _write(folder, "search_logs", text)
    with pytest.raises(ValidationError) as info:
        datasets.load("search_logs", data_dir=folder)
    message = str(info.value)
    assert f"line {line}" in message
    assert str(path) in message
    if secret is not None:
        assert secret not in message.replace(str(path), "")


def test_wrong_bin_count_is_rejected(isolated: Path):
    folder = isolated / "short" / "1d"
    _write(folder, "nettrace_4096", "1\n" * 4095)
    with pytest.raises(ValidationError, match="expected 4096 bins") as info:
        datasets.load("nettrace_4096", data_dir=folder)
    assert "4095" in str(info.value)


def test_crlf_and_trailing_blank_lines_are_accepted(isolated: Path):
    folder = isolated / "crlf" / "1d"
    body = "".join(f" {i % 7}\t\r\n" for i in range(4096)) + "\r\n\n"
    _write(folder, "hepth_citations_4096", body)
    counts = datasets.load("hepth_citations_4096", data_dir=folder)
    assert np.array_equal(counts, np.arange(4096) % 7)
    assert counts.dtype == np.int64
