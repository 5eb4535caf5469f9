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
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_paths
from .errors import DphistError, ValidationError
from .ingest import Binning
from .release import Release, json_default
from .table import Table, published_table

__all__ = [
    "FORMATS",
    "LEDGER_SUFFIX",
    "OutputError",
    "Pending",
    "bins_frame",
    "check_targets",
    "group_size_files",
    "group_size_targets",
    "histogram_files",
    "histogram_targets",
    "json_default",
    "noise_decimals",
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


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file: the same inode where both exist (hard
    links, case-insensitive names), else the same path once links are resolved."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_targets(outputs: Sequence[str | Path], inputs: Sequence[str | Path] = ()) -> None:
    """Refuse, before any work, an output that is one of the ``inputs`` or that another
    output names too: writing it would destroy the other file."""
    targets = [Path(p) for p in outputs]
    for i, out in enumerate(targets):
        for source in inputs:
            if _same_file(out, Path(source)):
                raise ValidationError(
                    f"the output {str(out)!r} is the input {str(source)!r}; writing it would "
                    "destroy the input: choose another name"
                )
        for other in targets[:i]:
            if _same_file(out, other):
                raise ValidationError(
                    f"{str(other)!r} and {str(out)!r} are one file, named twice among the "
                    "outputs: choose different names"
                )


@dataclass(frozen=True)
class Pending:
    """One file to write: its target and a function that writes it to a given path."""

    path: Path
    writer: Callable[[Path], None]


def write(files: Sequence[Pending], inputs: Sequence[str | Path] = ()) -> list[Path]:
    """Write every pending file, all or none (see the module docs); none may be one of
    ``inputs`` or named twice (:func:`check_targets`)."""
    targets = [f.path for f in files]
    check_targets(targets, inputs)
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


INTERVAL_ALPHA = 0.05  # files carry 95% intervals


def _release_record(release: Release, table: Table) -> dict[str, Any]:
    """The release as written beside its bins (per-bin values are columns of the table)."""
    record = release.to_dict(per_bin=False)
    record["interval_level"] = 1 - INTERVAL_ALPHA
    record["counts"] = table.counts
    record["error_bars"] = table.covers
    return record


def noise_decimals(release: Release, table: Table) -> int:
    """Decimals a printed estimate keeps: one unit of the last digit is at most a tenth
    of the smallest standard error (of the smallest noise scale without error bars), so
    rounding moves a value by at most a twentieth of its noise; never below a whole
    count."""
    se = table.stderr
    positive = se[se > 0] if se is not None else np.zeros(0)
    scales = [float(c.scale) for c in release.ledger if c.scale > 0]
    if positive.size:
        smallest = float(positive.min())
    elif scales:
        smallest = min(scales) ** (0.5 if release.definition == "zcdp" else 1.0)
    else:
        return 2
    return int(min(max(0, math.ceil(1.0 - math.log10(smallest))), 12))


def _significant(x: np.ndarray, digits: int = 3) -> np.ndarray:
    """``x`` (non-negative) rounded to ``digits`` significant digits."""
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log10(np.where(x > 0, x, 1.0))).astype(np.int64) - (digits - 1)
    big = 10.0 ** np.maximum(e, 0)
    small = 10.0 ** np.maximum(-e, 0)
    return np.where(e >= 0, np.round(x / big) * big, np.round(x * small) / small)


def bins_frame(
    release: Release, binning: Binning | None = None, counts: object = "float",
    decimals: int | None = None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """The per-bin columns as numpy arrays: ``bin``, ``left``, ``right`` (the bin's
    edges; ``-inf`` / ``inf`` at open ends, NaN for categories and plain indices),
    ``estimate`` (int64 for ``counts="integer"``), ``stderr``, ``lower`` and ``upper``
    (the 95% interval; NaN without error bars), and ``group`` and ``noise_variance``
    when the release has them. With ``decimals`` the real columns are rounded to that
    many decimals: the estimate to nearest, interval limits and standard errors
    outwards (never narrower), noise variances to 3 significant digits."""
    table = published_table(release, counts, INTERVAL_ALPHA)
    return _frame(release, binning, table, decimals)


def _frame(
    release: Release, binning: Binning | None, table: Table, decimals: int | None
) -> dict[str, np.ndarray]:
    n = release.n
    if binning is not None and binning.n != n:
        raise ValidationError(f"the binning has {binning.n} bins; the release has {n}")
    left = right = np.full(n, np.nan)
    if binning is not None:
        left, right = binning.bounds()
    estimate = table.estimate
    if table.counts == "integer":
        estimate = estimate.astype(np.int64)
    elif decimals is not None:
        estimate = _whole(np.round(estimate, decimals))
    frame = {
        "bin": np.arange(n, dtype=np.int64),
        "left": np.ascontiguousarray(left, dtype=np.float64),
        "right": np.ascontiguousarray(right, dtype=np.float64),
        "estimate": np.ascontiguousarray(estimate),
        **_error_columns(table, decimals),
    }
    if release.groups is not None:
        # int64 in every file whatever the release's label type
        frame["group"] = np.ascontiguousarray(release.groups, dtype=np.int64)
    if release.noise_variance is not None:
        variance = release.noise_variance
        frame["noise_variance"] = np.ascontiguousarray(
            variance if decimals is None else _significant(variance)
        )
    return frame


def _error_columns(table: Table, decimals: int | None) -> dict[str, np.ndarray]:
    """``stderr``, ``lower``, ``upper`` per bin (NaN where the table has none)."""
    if table.stderr is None or table.lower is None or table.upper is None:
        empty = np.full(table.n, np.nan)
        return {"stderr": empty, "lower": empty, "upper": empty}
    se, lower, upper = table.stderr, table.lower, table.upper
    if decimals is not None:  # outwards: a rounded interval still holds what it held
        unit = 10.0**decimals
        se, lower, upper = np.ceil(se * unit) / unit, np.floor(lower * unit) / unit, (
            np.ceil(upper * unit) / unit
        )  # fmt: skip
    if decimals is not None:  # whole numbers print without ".0"
        se, lower, upper = (_whole(v) for v in (se, lower, upper))
    return {
        "stderr": np.ascontiguousarray(se),
        "lower": np.ascontiguousarray(lower),
        "upper": np.ascontiguousarray(upper),
    }


def _whole(values: np.ndarray) -> np.ndarray:
    """``values`` as int64 when every one is a whole number (a CSV then shows no ".0")."""
    if values.size and np.all(values == np.floor(values)) and np.abs(values).max() < 2.0**53:
        return values.astype(np.int64)
    return values


def _number_text(column: str) -> str:
    """SQL: a DOUBLE as its shortest round-trip text without a trailing ``.0``."""
    return f"regexp_replace(CAST({column} AS VARCHAR), '\\.0$', '')"


def _bins_relation(con: Any, frame: dict[str, np.ndarray], binning: Binning | None) -> str:
    """Register the bin table and return SQL selecting its rows in bin order."""
    con.register("dphist_bins", frame)
    n = frame["bin"].size
    if binning is not None and binning.categories is not None:
        names = np.array(binning.categories, dtype=object)
        con.register("dphist_names", {"i": np.arange(n, dtype=np.int64), "name": names})
        label = "n.name"
        source = "dphist_names AS n JOIN dphist_bins AS b ON b.bin = n.i"
    elif binning is not None:  # as Binning.label: open ends (-inf, hi) and [lo, inf)
        lo, hi = _number_text("b.left"), _number_text("b.right")
        label = (
            f"CASE WHEN isinf(b.left) THEN '(-inf' ELSE '[' || {lo} END || ', ' || CASE WHEN "
            f"isinf(b.right) THEN 'inf)' WHEN b.bin = {n - 1} THEN {hi} || ']' ELSE {hi} || ')' END"
        )
        source = "dphist_bins AS b"
    else:
        label, source = "CAST(b.bin AS VARCHAR)", "dphist_bins AS b"

    def nullable(c: str) -> str:
        return f"CASE WHEN isnan(b.{c}) THEN NULL ELSE b.{c} END AS {c}"

    edges = ", ".join(nullable(c) for c in ("left", "right"))
    errors = ", ".join(nullable(c) for c in ("stderr", "lower", "upper"))
    extra = "".join(f", b.{c} AS {c}" for c in ("group", "noise_variance") if c in frame)
    # a scan of the registered arrays keeps their order (DuckDB preserves insertion
    # order): sorting 10**8 rows would hold them all in memory; the join is sorted
    order = " ORDER BY b.bin" if binning is not None and binning.categories is not None else ""
    return (
        f"SELECT b.bin AS bin, {label} AS label, {edges}, b.estimate AS estimate, {errors}"
        f"{extra} FROM {source}{order}"
    )


def _copy_table(tmp: Path, frame: dict[str, np.ndarray], binning: Binning | None, fmt: str) -> None:
    from .ingest.sources import connect

    con = connect()
    try:
        rows = _bins_relation(con, frame, binning)
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
        target = "'" + str(tmp).replace("'", "''") + "'"
        con.execute(f"COPY ({rows}) TO {target} ({options})")
    finally:
        con.close()


def _write_histogram_json(
    tmp: Path, frame: dict[str, np.ndarray], binning: Binning | None, meta: dict[str, Any],
    record: dict[str, Any],
) -> None:  # fmt: skip
    """``{meta..., "bins": [rows], "release": {...}}``; the rows are written by DuckDB
    (a JSON array; an open end's missing bound is ``null``, as strict JSON readers
    need) and copied in, so no Python object is made per bin."""
    import shutil

    from .ingest.sources import connect

    rows_file = tmp.with_name(tmp.name + ".rows")
    con = connect()
    try:
        target = "'" + str(rows_file).replace("'", "''") + "'"
        bounded = ", ".join(
            f'CASE WHEN isinf("{c}") THEN NULL ELSE "{c}" END AS "{c}"' for c in ("left", "right")
        )
        rows = f"SELECT * REPLACE ({bounded}) FROM ({_bins_relation(con, frame, binning)})"
        con.execute(f"COPY ({rows}) TO {target} (FORMAT json, ARRAY true)")
        con.close()
        head = json.dumps(meta, indent=1, default=json_default)[:-2]  # "{ ..." without "\n}"
        text = json.dumps(record, indent=1, default=json_default)
        with tmp.open("w", encoding="utf-8") as f, rows_file.open(encoding="utf-8") as rows:
            f.write(head + ',\n "bins": ')
            shutil.copyfileobj(rows, f, 1 << 20)
            f.write(',\n "release": ' + text.replace("\n", "\n ") + "\n}\n")
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


def histogram_targets(path: str | Path) -> list[Path]:
    """The files a histogram output at ``path`` consists of (a table gets a ledger)."""
    p = Path(path)
    if output_format(p) == "json":
        return [p]
    return [p, p.with_name(p.name + LEDGER_SUFFIX)]


def histogram_files(
    path: str | Path, release: Release, binning: Binning | None = None, *,
    counts: object = "integer", decimals: int | None = None, table: Table | None = None,
    **provenance: Any,
) -> list[Pending]:  # fmt: skip
    """The files :func:`write_histogram` would write, to commit with other files
    (``table``: the release's published table when it is at hand, at 95%)."""
    p = Path(path)
    fmt = output_format(p)
    binning = release.binning if binning is None else binning
    if table is None:
        table = published_table(release, counts, INTERVAL_ALPHA)
    if fmt == "csv" and decimals is None:
        decimals = noise_decimals(release, table)
    elif fmt != "csv":
        decimals = None  # Parquet and JSON keep full precision
    frame = _frame(release, binning, table, decimals)
    meta = histogram_meta(binning, **provenance)
    record = _release_record(release, table)
    if decimals is not None:
        record["decimals"] = decimals
    if fmt == "json":
        return [Pending(p, lambda tmp: _write_histogram_json(tmp, frame, binning, meta, record))]
    sidecar = histogram_targets(p)[1]
    text = json.dumps({**meta, "table": p.name, "release": record}, indent=1, default=json_default)
    return [
        Pending(p, lambda tmp: _copy_table(tmp, frame, binning, fmt)),
        Pending(sidecar, lambda tmp: tmp.write_text(text + "\n", encoding="utf-8")),
    ]


def write_histogram(
    path: str | Path, release: Release, binning: Binning | None = None, *,
    counts: object = "integer", decimals: int | None = None, inputs: Sequence[str | Path] = (),
    **provenance: Any,
) -> list[Path]:  # fmt: skip
    """Write ``release`` to ``path`` (.json, .csv or .parquet) with its ledger.

    ``binning`` gives the bins' labels and bounds (default: the release's own, from
    :func:`dphist.histogram`, else bins 0..n-1). ``counts="integer"`` (the default)
    writes non-negative whole counts with the estimate's total, ``"float"`` the
    estimate itself (:mod:`dphist.table`). A CSV rounds its real columns to
    ``decimals`` (default: what the noise allows, :func:`noise_decimals`); Parquet and
    JSON keep full precision. No file written may be one of ``inputs``.
    ``provenance`` (e.g. ``column="age"``) is recorded in the file as given. Returns
    the paths written.
    """
    files = histogram_files(path, release, binning, counts=counts, decimals=decimals, **provenance)
    return write(files, inputs)


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
    for name in ("privacy_unit", "max_records", "group_counts"):
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


def group_size_targets(path: str | Path) -> list[Path]:
    """The files a group-size output at ``path`` consists of (a CSV gets a ledger)."""
    p = Path(path)
    if output_format(p, GROUP_FORMATS) == "json":
        return [p]
    return [p, p.with_name(p.name + LEDGER_SUFFIX)]


def write_group_sizes(
    path: str | Path, release: Any, *, inputs: Sequence[str | Path] = (), **provenance: Any
) -> list[Path]:
    """Write a group-size release to ``path`` (.json or .csv, ledger beside a CSV); no
    file written may be one of ``inputs``."""
    return write(group_size_files(path, release, **provenance), inputs)
