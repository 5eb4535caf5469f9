"""Named real histograms, read from disk at run time.

The real data sets are research data whose publishers ask that they not be
redistributed, so they are not part of dphist. They live in a folder laid out as::

    shared/datasets/
        1d/
            search_logs.txt
            nettrace.txt
            ...

Each file holds one histogram: one non-negative integer count per line, bins in
their natural order. :func:`data_dir` finds the ``1d/`` folder (see there for the
search order); :func:`load` reads one histogram by name; :func:`available` lists
the names present on this machine.

Bin counts (domain sizes) are public and fixed in :data:`DATASETS`; nothing here
derives a domain from the data. Error messages name files and line numbers but
never a count read from a file.
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .errors import DatasetUnavailableError, InputTypeError, ValidationError

__all__ = ["DATASETS", "ENV_VAR", "DatasetInfo", "available", "data_dir", "load"]

#: Environment variable naming the data folder (the one holding ``1d/``, or ``1d/`` itself).
ENV_VAR = "DPHIST_DATA"

_SUBDIR = "1d"
_SUFFIX = ".txt"
_ALLOWED_BYTES = b"0123456789 \t\r\n"
_INT64_MAX = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class DatasetInfo:
    """Public facts about one named histogram: its name, bin count and a description."""

    name: str
    bins: int
    description: str

    @property
    def filename(self) -> str:
        """The file name inside the ``1d/`` folder."""
        return self.name + _SUFFIX


def _table(*entries: tuple[str, int, str]) -> Mapping[str, DatasetInfo]:
    return MappingProxyType({name: DatasetInfo(name, bins, desc) for name, bins, desc in entries})


#: Read-only mapping from dataset name (the file stem) to its :class:`DatasetInfo`.
DATASETS: Mapping[str, DatasetInfo] = _table(
    (
        "search_logs",
        32_768,
        'Search Log: searches for "obama" per 90-minute slot, 2004-2009.',
    ),
    (
        "nettrace",
        65_536,
        "NetTrace: external hosts contacted by each internal host of a university network.",
    ),
    (
        "social_network",
        11_342,
        "Social Network: degree of each user of a social network, one bin per user.",
    ),
    ("searchlogs_4096", 4_096, "DPBench 4096-bin version of Search Log (blocks of 8 summed)."),
    ("nettrace_4096", 4_096, "DPBench 4096-bin version of NetTrace (blocks of 16 summed)."),
    ("hepth_citations_4096", 4_096, "DPBench: arXiv HEP-TH papers by number of citations."),
    ("ipums_income_4096", 4_096, "DPBench: persons by personal income (IPUMS)."),
    ("adult_capital_loss_4096", 4_096, "DPBench: persons by capital loss (UCI Adult)."),
    ("md_salary_4096", 4_096, "DPBench: Maryland state employees by gross compensation."),
    ("bids_all_4096", 4_096, "DPBench: bids per IP address in online auctions."),
    ("lc_requested_4096", 4_096, "DPBench: rejected loan applications by amount requested."),
)


# --------------------------------------------------------------------------- locating


def _as_path(value: object, what: str) -> Path:
    if isinstance(value, (str, os.PathLike)):
        return Path(value).expanduser()
    raise InputTypeError(f"{what} must be a path (str or os.PathLike), got {type(value).__name__}")


def _resolve_given(path: Path, source: str) -> Path:
    """Accept either the folder holding ``1d/`` or the ``1d/`` folder itself."""
    if (path / _SUBDIR).is_dir():
        return path / _SUBDIR
    if path.is_dir() and (
        path.name == _SUBDIR or any((path / info.filename).is_file() for info in DATASETS.values())
    ):
        return path
    if not path.exists():
        problem = "does not exist"
    elif not path.is_dir():
        problem = "is not a directory"
    else:
        problem = f"has no '{_SUBDIR}/' subfolder and holds no dataset files"
    raise DatasetUnavailableError(
        f"the data folder given by {source} ({path}) {problem}. Point it at the folder that "
        f"holds '{_SUBDIR}/' (e.g. .../shared/datasets) or at '{_SUBDIR}/' itself."
    )


def _search_roots() -> list[Path]:
    starts: list[Path] = []
    with contextlib.suppress(OSError):  # the working directory may have been removed
        starts.append(Path.cwd())
    starts.append(Path(__file__).parent)
    roots: list[Path] = []
    for start in starts:
        start = start.resolve()
        if start not in roots:
            roots.append(start)
    return roots


def _search_upward(roots: list[Path]) -> Path | None:
    # Every parent of a start folder is visited, so "<ancestor>/../shared/datasets"
    # is covered by checking "<ancestor>/shared/datasets" at each level.
    for root in roots:
        for ancestor in (root, *root.parents):
            candidate = ancestor / "shared" / "datasets" / _SUBDIR
            if candidate.is_dir():
                return candidate
    return None


def _resolve(explicit: str | os.PathLike[str] | None) -> Path:
    if explicit is not None:
        return _resolve_given(_as_path(explicit, "data_dir"), "data_dir=")
    env = os.environ.get(ENV_VAR, "")
    if env.strip():
        return _resolve_given(Path(env).expanduser(), f"the environment variable {ENV_VAR}")
    roots = _search_roots()
    found = _search_upward(roots)
    if found is not None:
        return found
    looked = " and ".join(str(r) for r in roots)
    raise DatasetUnavailableError(
        f"cannot find the real datasets: no 'shared/datasets/{_SUBDIR}/' folder in {looked} "
        f"or any of their parents, and {ENV_VAR} is not set. Pass data_dir=... or set "
        f"{ENV_VAR} to the folder that holds '{_SUBDIR}/'. The synthetic generators in "
        "dphist.synthetic need no data files."
    )


def _present(folder: Path) -> list[str]:
    return [name for name, info in DATASETS.items() if (folder / info.filename).is_file()]


def data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the ``1d/`` folder holding the real histograms.

    Resolution order:

    1. the ``data_dir`` argument, if given;
    2. the environment variable ``DPHIST_DATA``, if set and non-empty;
    3. a folder ``shared/datasets/1d`` in the current working directory or any of
       its parents, then in the folder of this module or any of its parents (so a
       ``shared/`` folder beside the project checkout is found).

    Steps 1 and 2 accept the folder that holds ``1d/`` or ``1d/`` itself; when one of
    them is given it is authoritative, and an unusable path is an error rather than a
    reason to keep searching.

    Raises:
        DatasetUnavailableError: no data folder was found; the message says where
            dphist looked and how to point it at the data.
    """
    return _resolve(data_dir)


def available(data_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Names from :data:`DATASETS` whose file is present, in :data:`DATASETS` order.

    Returns an empty list when no data folder can be found (call :func:`data_dir`
    to see why).
    """
    try:
        folder = _resolve(data_dir)
    except DatasetUnavailableError:
        return []
    return _present(folder)


# --------------------------------------------------------------------------- parsing


def _unknown_name(name: str) -> ValidationError:
    known = list(DATASETS)
    close = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return ValidationError(
        f"unknown dataset name {name!r}.{hint} Known datasets: {', '.join(known)}."
    )


def _locate_error(path: Path, raw: bytes) -> ValidationError:
    """Find the first malformed line; the message names the line, never its content."""
    lines = raw.splitlines()
    last = len(lines)
    while last and not lines[last - 1].strip():
        last -= 1  # trailing blank lines are tolerated
    if last == 0:
        return ValidationError(f"{path}: line 1: the file is empty; expected one count per line")
    for number, line in enumerate(lines[:last], start=1):
        token = line.strip()
        if not token:
            problem = "is empty"
        elif token.isdigit():
            if int(token) <= _INT64_MAX:
                continue
            problem = "holds a count too large for a 64-bit integer"
        elif token.startswith(b"-") and token[1:].isdigit():
            problem = "holds a negative number; counts must be non-negative"
        elif len(token.split()) > 1:
            problem = "holds more than one value; expected one count per line"
        else:
            problem = "is not a non-negative integer"
        return ValidationError(f"{path}: line {number} {problem}.")
    return ValidationError(f"{path}: the file could not be parsed as one count per line.")


def _parse(path: Path, raw: bytes) -> np.ndarray:
    # Fast path: only digits and whitespace, one integer per line. Anything else
    # (signs, dots, letters, blank or multi-value lines, overflow) is located by
    # the slow path so the error can name the line.
    if not raw.translate(None, _ALLOWED_BYTES):
        lines = raw.rstrip().splitlines()
        if lines:
            try:
                return np.array(lines, dtype=np.int64)
            except (ValueError, OverflowError):
                pass
    raise _locate_error(path, raw)


def load(name: str, *, data_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
    """Read the named real histogram.

    Args:
        name: a key of :data:`DATASETS` (the file stem, e.g. ``"search_logs"``).
        data_dir: where to look; see :func:`data_dir` for the default search.

    Returns:
        A fresh, writable 1-D ``int64`` array with ``DATASETS[name].bins`` counts.
        Every call reads the file again, so callers may modify the result freely.

    Raises:
        InputTypeError: ``name`` is not a string.
        ValidationError: ``name`` is unknown (the message suggests close matches),
            or the file is malformed or has the wrong number of bins (the message
            names the file and line, not the offending value).
        DatasetUnavailableError: the data folder or the file is missing.
    """
    if not isinstance(name, str):
        raise InputTypeError(f"name must be a dataset name (str), got {type(name).__name__}")
    info = DATASETS.get(name)
    if info is None:
        raise _unknown_name(name)
    folder = _resolve(data_dir)
    path = folder / info.filename
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        present = _present(folder)
        listing = ", ".join(present) if present else "none"
        raise DatasetUnavailableError(
            f"dataset {name!r} is not available: {path} does not exist. "
            f"Datasets present in {folder}: {listing}."
        ) from None
    except IsADirectoryError:
        raise DatasetUnavailableError(f"dataset {name!r}: {path} is not a file.") from None
    counts = _parse(path, raw)
    if counts.shape[0] != info.bins:
        raise ValidationError(
            f"{path}: expected {info.bins} bins (one count per line) for dataset {name!r}, "
            f"found {counts.shape[0]} lines. The file may be truncated or a different version."
        )
    return counts
