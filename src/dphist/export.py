"""Writing releases to files: histograms and group sizes, each with its ledger.

* :func:`write_histogram` writes a :class:`~dphist.Release` as ``.json`` (bins and the
  release with its ledger) or ``.csv`` / ``.parquet`` (one row per bin: ``bin, label,
  left, right, estimate, stderr, lower, upper`` (the 95% interval; empty where the
  method states no error bar) and, where the method has them, ``group`` and
  ``noise_variance``; the release and ledger go to ``FILE.ledger.json``, which says
  what the error bars cover).
* :func:`write_group_sizes` writes a group-size release as ``.json`` or ``.csv`` (one
  row per region and size with a non-zero count; ledger sidecar for CSV).

Every file of one output is written atomically and together
(:func:`dphist._io.atomic_paths`): on any error nothing is left behind and existing
files are untouched. The per-bin table is built by DuckDB from numpy arrays, so a
large histogram never becomes a Python list of rows. Exact rationals (budgets) are
written as strings (:func:`json_default`); run times are never written (they depend
on the data).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_paths
from .errors import DphistError, ValidationError
from .ingest import Binning
from .release import Release, json_default

__all__ = [
    "FORMATS",
    "LEDGER_SUFFIX",
    "OutputError",
    "Pending",
    "bins_frame",
    "group_size_files",
    "histogram_files",
    "json_default",
    "output_format",
    "write",
    "write_group_sizes",
    "write_histogram",
]

FORMATS = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
GROUP_FORMATS = {".json": "json", ".csv": "csv"}
LEDGER_SUFFIX = ".ledger.json"


class OutputError(DphistError):
    """An output file could not be written."""


def output_format(path: str | Path, formats: dict[str, str] = FORMATS) -> str:
    """The output format named by ``path``'s suffix, or a clear error."""
    fmt = formats.get(Path(path).suffix.lower())
    if fmt is None:
        names = ", ".join(sorted(set(formats)))
        raise ValidationError(f"cannot tell the output format of {str(path)!r}; use {names}")
    return fmt


def check_writable(path: str | Path, what: str = "output") -> None:
    """Refuse, before any work, a target in a missing directory or that is a directory."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"cannot write the {what} {str(p)!r}: no directory {str(parent)!r}")
    if p.is_dir():
        raise OutputError(f"cannot write the {what} {str(p)!r}: it is a directory")


@dataclass(frozen=True)
class Pending:
    """One file to write: its target and a function that writes it to a given path."""

    path: Path
    writer: Callable[[Path], None]


def write(files: Sequence[Pending]) -> list[Path]:
    """Write every pending file, all or none (see the module docs)."""
    targets = [f.path for f in files]
    try:
        with atomic_paths(*targets) as temps:
            for f, tmp in zip(files, temps, strict=True):
                f.writer(tmp)
    except OSError as exc:
        raise OutputError(f"cannot write {', '.join(map(str, targets))}: {_reason(exc)}") from None
    return targets


def _reason(exc: OSError) -> str:
    return str(exc.strerror or exc)


# --------------------------------------------------------------------------- histograms


_PER_BIN = ("estimate", "noise_variance", "stderr", "groups", "timings")
INTERVAL_ALPHA = 0.05  # files carry 95% intervals


def _release_record(release: Release) -> dict[str, Any]:
    """The release as written beside its bins (per-bin values are columns of the table)."""
    record = {k: v for k, v in release.to_dict().items() if k not in _PER_BIN}
    record["interval_level"] = 1 - INTERVAL_ALPHA
    return record


def bins_frame(release: Release, binning: Binning | None = None) -> dict[str, np.ndarray]:
    """The per-bin columns as numpy arrays: ``bin``, ``left``, ``right`` (the bin's
    edges; NaN for categories and plain indices), ``estimate``, ``stderr``, ``lower``
    and ``upper`` (the 95% interval; NaN without error bars), and ``group`` and
    ``noise_variance`` when the release has them."""
    n = release.n
    if binning is not None and binning.n != n:
        raise ValidationError(f"the binning has {binning.n} bins; the release has {n}")
    left = right = np.full(n, np.nan)
    if binning is not None and binning.edges is not None:
        left, right = binning.edges[:-1], binning.edges[1:]
    frame = {
        "bin": np.arange(n, dtype=np.int64),
        "left": np.ascontiguousarray(left, dtype=np.float64),
        "right": np.ascontiguousarray(right, dtype=np.float64),
        "estimate": np.ascontiguousarray(release.estimate),
        **_error_columns(release),
    }
    if release.groups is not None:
        # int64 in every file whatever the release's label type
        frame["group"] = np.ascontiguousarray(release.groups, dtype=np.int64)
    if release.noise_variance is not None:
        frame["noise_variance"] = np.ascontiguousarray(release.noise_variance)
    return frame


def _error_columns(release: Release) -> dict[str, np.ndarray]:
    """``stderr``, ``lower``, ``upper`` per bin (NaN where the release has none)."""
    if release.stderr is None:
        empty = np.full(release.n, np.nan)
        return {"stderr": empty, "lower": empty, "upper": empty}
    lower, upper = release.intervals(alpha=INTERVAL_ALPHA)
    return {
        "stderr": np.ascontiguousarray(release.stderr),
        "lower": np.ascontiguousarray(lower),
        "upper": np.ascontiguousarray(upper),
    }


def _number_text(column: str) -> str:
    """SQL: a DOUBLE as its shortest round-trip text without a trailing ``.0``."""
    return f"regexp_replace(CAST({column} AS VARCHAR), '\\.0$', '')"


def _bins_relation(con: Any, release: Release, binning: Binning | None) -> str:
    """Register the bin table and return SQL selecting its rows in bin order."""
    frame = bins_frame(release, binning)
    con.register("dphist_bins", frame)
    n = release.n
    if binning is not None and binning.categories is not None:
        names = np.array(binning.categories, dtype=object)
        con.register("dphist_names", {"i": np.arange(n, dtype=np.int64), "name": names})
        label = "n.name"
        source = "dphist_names AS n JOIN dphist_bins AS b ON b.bin = n.i"
    elif binning is not None:
        lo, hi = _number_text("b.left"), _number_text("b.right")
        label = f"'[' || {lo} || ', ' || {hi} || CASE WHEN b.bin = {n - 1} THEN ']' ELSE ')' END"
        source = "dphist_bins AS b"
    else:
        label, source = "CAST(b.bin AS VARCHAR)", "dphist_bins AS b"

    def nullable(c: str) -> str:
        return f"CASE WHEN isnan(b.{c}) THEN NULL ELSE b.{c} END AS {c}"

    edges = ", ".join(nullable(c) for c in ("left", "right"))
    errors = ", ".join(nullable(c) for c in ("stderr", "lower", "upper"))
    extra = "".join(f", b.{c} AS {c}" for c in ("group", "noise_variance") if c in frame)
    return (
        f"SELECT b.bin AS bin, {label} AS label, {edges}, b.estimate AS estimate, {errors}"
        f"{extra} FROM {source} ORDER BY b.bin"
    )


def _copy_table(tmp: Path, release: Release, binning: Binning | None, fmt: str) -> None:
    from .ingest.sources import connect

    con = connect()
    try:
        rows = _bins_relation(con, release, binning)
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
        target = "'" + str(tmp).replace("'", "''") + "'"
        con.execute(f"COPY ({rows}) TO {target} ({options})")
    finally:
        con.close()


def _write_histogram_json(
    tmp: Path, release: Release, binning: Binning | None, meta: dict[str, Any]
) -> None:
    """``{meta..., "bins": [rows], "release": {...}}``; the rows are written by DuckDB
    (a JSON array) and copied in, so no Python object is made per bin."""
    import shutil

    from .ingest.sources import connect

    rows_file = tmp.with_name(tmp.name + ".rows")
    con = connect()
    try:
        target = "'" + str(rows_file).replace("'", "''") + "'"
        con.execute(
            f"COPY ({_bins_relation(con, release, binning)}) TO {target} (FORMAT json, ARRAY true)"
        )
        con.close()
        head = json.dumps(meta, indent=1, default=json_default)[:-2]  # "{ ..." without "\n}"
        record = json.dumps(_release_record(release), indent=1, default=json_default)
        with tmp.open("w", encoding="utf-8") as f, rows_file.open(encoding="utf-8") as rows:
            f.write(head + ',\n "bins": ')
            shutil.copyfileobj(rows, f, 1 << 20)
            f.write(',\n "release": ' + record.replace("\n", "\n ") + "\n}\n")
    finally:
        con.close()
        rows_file.unlink(missing_ok=True)


def histogram_meta(binning: Binning | None, **provenance: Any) -> dict[str, Any]:
    """What a histogram file says about itself: format, binning and how it was counted."""
    meta: dict[str, Any] = {"format": "dphist-histogram/1"}
    if binning is not None:
        meta["binning"] = binning.to_dict()
    meta.update({k: v for k, v in provenance.items() if v is not None})
    return meta


def histogram_files(
    path: str | Path, release: Release, binning: Binning | None = None, **provenance: Any
) -> list[Pending]:
    """The files :func:`write_histogram` would write, to commit with other files."""
    p = Path(path)
    fmt = output_format(p)
    meta = histogram_meta(binning, **provenance)
    if fmt == "json":
        return [Pending(p, lambda tmp: _write_histogram_json(tmp, release, binning, meta))]
    sidecar = p.with_name(p.name + LEDGER_SUFFIX)
    text = json.dumps(
        {**meta, "table": p.name, "release": _release_record(release)},
        indent=1,
        default=json_default,
    )
    return [
        Pending(p, lambda tmp: _copy_table(tmp, release, binning, fmt)),
        Pending(sidecar, lambda tmp: tmp.write_text(text + "\n", encoding="utf-8")),
    ]


def write_histogram(
    path: str | Path, release: Release, binning: Binning | None = None, **provenance: Any
) -> list[Path]:
    """Write ``release`` to ``path`` (.json, .csv or .parquet) with its ledger.

    ``binning`` gives the bins' labels and bounds (default: bins 0..n-1);
    ``provenance`` (e.g. ``column="age"``) is recorded in the file as given. Returns
    the paths written.
    """
    return write(histogram_files(path, release, binning, **provenance))


# --------------------------------------------------------------------------- group sizes


def _group_rows(release: Any) -> list[dict[str, Any]]:
    """One row per (region, size) with a non-zero released count."""
    labels = release.hierarchy.labels
    levels = release.hierarchy.level
    rows = []
    for node, hist in enumerate(release.histograms):
        for size in np.flatnonzero(hist):
            rows.append(
                {
                    "level": int(levels[node]),
                    "region": str(labels[node]) if labels else str(node),
                    "size": int(size),
                    "groups": int(hist[size]),
                }
            )
    return rows


def _group_meta(release: Any) -> dict[str, Any]:
    definition = getattr(release, "definition", "pure")
    meta = {
        "format": "dphist-group-sizes/1",
        "definition": definition,
        "rho" if definition == "zcdp" else "epsilon": str(release.epsilon),
        "methods": list(release.methods),
        "K": release.k,
        "merge": release.merge,
        "private": release.private,
        "guarantee": release.guarantee,
    }
    for name in ("privacy_unit", "max_records"):
        if hasattr(release, name):
            meta[name] = getattr(release, name)
    meta["ledger"] = [c.to_dict() for c in release.ledger]
    return meta


def _write_group_csv(tmp: Path, rows: list[dict[str, Any]]) -> None:
    import csv

    with tmp.open("w", encoding="utf-8", newline="") as f:
        out = csv.DictWriter(f, fieldnames=["level", "region", "size", "groups"])
        out.writeheader()
        out.writerows(rows)


def group_size_files(path: str | Path, release: Any, **provenance: Any) -> list[Pending]:
    """The files :func:`write_group_sizes` would write (``provenance`` recorded as given)."""
    p = Path(path)
    fmt = output_format(p, GROUP_FORMATS)
    meta = {**_group_meta(release), **provenance}
    rows = _group_rows(release)
    if fmt == "json":
        text = json.dumps({**meta, "histograms": rows}, indent=1, default=json_default)
        return [Pending(p, lambda tmp: tmp.write_text(text + "\n", encoding="utf-8"))]
    side = json.dumps({**meta, "table": p.name}, indent=1, default=json_default)
    return [
        Pending(p, lambda tmp: _write_group_csv(tmp, rows)),
        Pending(p.with_name(p.name + LEDGER_SUFFIX), lambda tmp: tmp.write_text(side + "\n")),
    ]


def write_group_sizes(path: str | Path, release: Any, **provenance: Any) -> list[Path]:
    """Write a group-size release to ``path`` (.json or .csv, ledger beside a CSV)."""
    return write(group_size_files(path, release, **provenance))
