"""Neighbouring record sets, read through every source: the ingest layer under audit.

The histogram catalogue (:mod:`~dphist.lab.audit.neighbours`) starts from counts. These
pairs start one step earlier, from records: ``x`` and ``x`` with one record more,
written as a CSV or Parquet file, a list, a numpy, pandas, polars or Arrow column, or a
Spark DataFrame, and counted by :func:`dphist.ingest.count`. A record whose value or
unit id one source reads differently (``-0.0`` at an edge, a NaN, NULL or None unit
id, a ragged element) could break the neighbour relation before the kernel sees
anything, by a refusal on one side only or by counts that move more than the record.

:func:`ingest_pair` counts both sides, with several salts of the per-unit bound when
there is a unit, and checks what the privacy argument needs: both sides count, or both
raise the same error; and the counts with the record are those without it plus at most
one in one bin, whatever the salt. :func:`audit_records` then audits a mechanism on the
counts, as :func:`~dphist.lab.audit.audit` does the histogram catalogue; a pair whose
counts are equal (a record every rule drops) gives the mechanism identical inputs and
needs no sampling.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DphistError, ValidationError
from ...ingest import Binning, binning, count
from .audits import PairResult, audit_pair
from .mechanisms import Mechanism, as_seed, children
from .neighbours import Neighbour

__all__ = [
    "FILES",
    "IN_MEMORY",
    "SOURCES",
    "RecordOutcome",
    "RecordPair",
    "RecordResult",
    "as_source",
    "audit_records",
    "ingest_pair",
    "record_catalogue",
]

FILES = ("csv", "parquet")
IN_MEMORY = ("list", "numpy", "pandas", "polars", "arrow")
SOURCES = (*FILES, *IN_MEMORY, "spark")
RAGGED_SOURCES = ("list", "numpy", "pandas")  # columns that can hold a list as an element
UNIT_KINDS = ("nan", "null", "none")
"""Missing unit ids: NaN in a float column, NULL (the source's missing marker) in a
float column, None in a text column."""

_EDGE_BINS = {
    "first": binning(edges=[0, 10, 50, 100]),
    "interior": binning(edges=[-5, 0, 0.5, 10]),
    "last": binning(edges=[-10, -1, 0]),
    "domain": binning(domain="0:100:10"),
}


@dataclass(frozen=True, eq=False)
class RecordPair:
    """Records ``values`` (with ``units``) and the same with ``extra`` more, in one source.

    ``text_units``: the unit ids form a text column (else a float column). Values are
    floats or None (a float column) or any objects (an object column; in-memory only).
    """

    source: str
    values: tuple[Any, ...]
    extra: tuple[Any, Any]  # (value, unit) of the added record
    binning: Binning
    reason: str
    units: tuple[Any, ...] | None = None
    text_units: bool = False
    outside: str = "clip"
    max_records: int | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValidationError(f"unknown source {self.source!r}; one of {SOURCES}")
        if self.units is not None and len(self.units) != len(self.values):
            raise ValidationError("give one unit id per record")

    def side(self, with_extra: bool) -> tuple[list[Any], list[Any] | None]:
        values = list(self.values) + ([self.extra[0]] if with_extra else [])
        if self.units is None:
            return values, None
        return values, list(self.units) + ([self.extra[1]] if with_extra else [])

    def describe(self) -> str:
        return f"{self.source}: {self.reason}"


# --------------------------------------------------------------------------- sources


def _floats(column: Sequence[Any]) -> bool:
    return all(v is None or isinstance(v, float) for v in column)


def _objects(column: Sequence[Any]) -> np.ndarray:
    """An object array, element by element: a ragged element stays one element."""
    return np.fromiter(column, dtype=object, count=len(column))


def _csv_field(v: Any) -> str:
    if v is None:
        return ""
    text = repr(v) if isinstance(v, float) else str(v)
    if any(c in text for c in ',"\r\n'):
        raise ValidationError("CSV pairs hold plain fields only")
    return text


def _column(kind: str, column: Sequence[Any], text: bool) -> Any:
    """One in-memory column of ``kind`` holding ``column``: floats (None as the kind's
    missing value) or text, or an object column for anything else."""
    floats = not text and _floats(column)
    if kind == "list":
        return list(column)
    if kind == "numpy":
        if floats and None not in column:
            return np.array(column, dtype=np.float64)
        return _objects(column)
    if kind == "pandas":
        import pandas as pd

        if floats:
            return pd.Series(column, dtype="Float64" if None in column else "float64")
        return pd.Series(_objects(column), dtype=object)
    if kind == "polars":
        import polars as pl

        return pl.Series("c", column, dtype=pl.Float64 if floats else pl.String, strict=False)
    import pyarrow as pa

    return pa.array(column, type=pa.float64() if floats else pa.string())


def as_source(
    source: str,
    values: Sequence[Any],
    units: Sequence[Any] | None,
    *,
    text_units: bool = False,
    where: Path | None = None,
    spark: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """The records as ``source``: what :func:`dphist.ingest.count` reads and its column
    options. Files are written in ``where``; Spark needs a session."""
    if source in IN_MEMORY:
        options: dict[str, Any] = {}
        if units is not None:
            options["privacy_unit"] = _column(source, units, text_units)
        return _column(source, values, False), options
    options = {"column": "v"} | ({"privacy_unit": "u"} if units is not None else {})
    if source == "csv":
        if where is None:
            raise ValidationError("file sources need a directory")
        path = where / "records.csv"
        rows = zip(values, units or [None] * len(values), strict=True)
        lines = [f"{_csv_field(v)},{_csv_field(u)}" for v, u in rows]
        path.write_text("v,u\n" + "".join(line + "\n" for line in lines))
        return path, options
    table = _arrow_table(values, units, text_units)
    if source == "parquet":
        import pyarrow.parquet as pq

        if where is None:
            raise ValidationError("file sources need a directory")
        path = where / "records.parquet"
        pq.write_table(table, path)
        return path, options
    if spark is None:
        raise ValidationError("Spark pairs need a SparkSession (spark=...)")
    import pyarrow as pa

    schema = ", ".join(
        f"{f.name} {'double' if pa.types.is_floating(f.type) else 'string'}" for f in table.schema
    )
    rows = list(zip(*table.to_pydict().values(), strict=True))
    return spark.createDataFrame(rows, schema), options


def _arrow_table(values: Sequence[Any], units: Sequence[Any] | None, text_units: bool) -> Any:
    import pyarrow as pa

    if not _floats(values):
        raise ValidationError("file and Spark pairs hold float values (or None)")
    columns = {"v": pa.array(values, type=pa.float64())}
    if units is not None:
        columns["u"] = pa.array(units, type=pa.string() if text_units else pa.float64())
    return pa.table(columns)


# --------------------------------------------------------------------------- outcomes


@dataclass(frozen=True, eq=False)
class RecordOutcome:
    """Both sides of a record pair counted: ``counts[s]`` is ``(x, x')`` at salt ``s``
    (None when the sides raised); ``error`` the shared error; ``problem`` what broke the
    neighbour relation (None when nothing did)."""

    pair: RecordPair
    counts: tuple[tuple[np.ndarray, np.ndarray], ...]
    error: str | None = None
    problem: str | None = None

    @property
    def neighbour(self) -> Neighbour | None:
        """The counts at the first salt as a histogram pair, None when they are equal."""
        if self.problem is not None or not self.counts:
            return None
        x, x2 = self.counts[0]
        diff = np.flatnonzero(x2 != x)
        if diff.size == 0:
            return None
        i = int(diff[0])
        return Neighbour(x, x2, i, 1, self.pair.describe())


def _count_side(pair: RecordPair, with_extra: bool, salt: int, where: Path, spark: Any) -> Any:
    values, units = pair.side(with_extra)
    data, options = as_source(
        pair.source, values, units, text_units=pair.text_units, where=where, spark=spark
    )
    unit = {"max_records": pair.max_records, "rng": salt} if units is not None else {}
    return count(data, pair.binning, outside=pair.outside, **options, **unit)


def _raised(pair: RecordPair, *side: Any) -> tuple[Any, str | None]:
    try:
        return _count_side(pair, *side), None
    except DphistError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # an engine's own error (a Py4JJavaError, ...) is a failure too
        return None, f"{type(exc).__name__} (not a dphist error): {str(exc).splitlines()[0][:200]}"


def ingest_pair(pair: RecordPair, *, salts: int = 8, spark: Any = None) -> RecordOutcome:
    """Count both sides of ``pair`` (at ``salts`` salts when it has a unit) and check that
    they release together and stay neighbours: ``x' - x >= 0`` summing to at most 1."""
    with tempfile.TemporaryDirectory(prefix="dphist-records-") as tmp:
        return _checked(pair, range(salts if pair.units is not None else 1), Path(tmp), spark)


def _checked(pair: RecordPair, seeds: range, where: Path, spark: Any) -> RecordOutcome:
    counts: list[tuple[np.ndarray, np.ndarray]] = []
    for salt in seeds:  # one directory for both sides: messages that name a file agree
        a, err_a = _raised(pair, False, salt, where, spark)
        b, err_b = _raised(pair, True, salt, where, spark)
        if err_a is not None or err_b is not None:
            if err_a == err_b and "not a dphist error" not in str(err_a):
                return RecordOutcome(pair, (), error=err_a)
            shown = err_b if err_a is None else err_a
            side = "x'" if err_a is None else ("x" if err_b is None else "both")
            return RecordOutcome(pair, (), problem=f"{side} raised: {shown}")
        diff = b - a
        if np.any(diff < 0) or diff.sum() > 1:
            moved = {int(i): int(diff[i]) for i in np.flatnonzero(diff)}
            return RecordOutcome(
                pair, tuple(counts), problem=f"one record moved the counts by {moved} (salt {salt})"
            )
        counts.append((a, b))
    return RecordOutcome(pair, tuple(counts))


# --------------------------------------------------------------------------- catalogue


def _edge_pairs(source: str) -> list[RecordPair]:
    """``-0.0`` added beside 3.0 and 20.0, at a first, interior and last edge 0 and in
    an equal-width domain from 0, clipped and dropped."""
    pairs = []
    for where, bins in _EDGE_BINS.items():
        for outside in ("clip", "drop"):
            pairs.append(
                RecordPair(
                    source, (3.0, 20.0), (-0.0, None), bins,
                    f"-0.0 at the {where} edge 0 ({outside})", outside=outside,
                )
            )  # fmt: skip
    return pairs


def _unit_pairs(source: str) -> list[RecordPair]:
    """A record with a missing id (NaN, NULL, None) added beside one that has one already,
    K = 1: every rule that makes the missing ids one unit lets the new record displace
    the old one in about half of the salts."""
    pairs = []
    for kind in UNIT_KINDS:
        text = kind == "none"
        missing = math.nan if kind == "nan" else None
        ids: tuple[Any, ...] = ("p1", "p2", "p1") if text else (1.0, 2.0, 1.0)
        pairs.append(
            RecordPair(
                source, (5.0, 15.0, 25.0, 35.0), (95.0, missing), binning(domain="0:100:10"),
                f"a {kind.upper() if kind != 'none' else 'None'} unit id beside another",
                units=(*ids, missing), text_units=text, max_records=1,
            )
        )  # fmt: skip
    return pairs


def _ragged_pairs(source: str) -> list[RecordPair]:
    """A list where a value or a unit id belongs (a ragged column)."""
    bins = binning(domain="0:100:10")
    ragged_unit = RecordPair(
        source, (1.0, 2.0), (3.0, [7.0, 8.0]), bins, "a ragged unit id", units=(1.0, 2.0),
        max_records=1,
    )  # fmt: skip
    return [RecordPair(source, (1.0, 2.0), ([3.0, 4.0], None), bins, "a ragged value"), ragged_unit]


def record_catalogue(sources: Iterable[str] = SOURCES) -> tuple[RecordPair, ...]:
    """The record pairs of every source in ``sources``: ``-0.0`` at an edge, NaN, NULL
    and None unit ids, and (columns that can hold one) a ragged record."""
    out: list[RecordPair] = []
    for source in sources:
        out += _edge_pairs(source) + _unit_pairs(source)
        if source in RAGGED_SOURCES:
            out += _ragged_pairs(source)
    return tuple(out)


# --------------------------------------------------------------------------- audit


@dataclass(frozen=True, eq=False)
class RecordResult:
    """One record pair: its ingest outcome and, when the counts differ, the audit of the
    mechanism on them."""

    outcome: RecordOutcome
    audit: PairResult | None

    @property
    def flagged(self) -> bool:
        return self.outcome.problem is not None or (self.audit is not None and self.audit.flagged)

    @property
    def eps_lb(self) -> float:
        return self.audit.eps_lb if self.audit is not None else -math.inf

    def summary(self) -> str:
        o = self.outcome
        if o.problem is not None:
            return f"{o.pair.describe()}: FLAGGED, {o.problem}"
        if o.error is not None:
            return f"{o.pair.describe()}: both sides raised {o.error}"
        if self.audit is None:
            return f"{o.pair.describe()}: equal counts, nothing to audit"
        verdict = "FLAGGED" if self.audit.flagged else "pass"
        return f"{o.pair.describe()}: eps_lb {self.audit.eps_lb:.3f} ({verdict})"


def audit_records(
    mechanism: Mechanism,
    pairs: Iterable[RecordPair],
    *,
    spark: Any = None,
    salts: int = 8,
    n_search: int = 800,
    n_confirm: int = 3_200,
    seed: object = 0,
) -> tuple[RecordResult, ...]:
    """:func:`ingest_pair` on every pair, then :func:`~dphist.lab.audit.audit_pair` of
    ``mechanism`` on the counts that differ, each pair with its own child of ``seed``."""
    pairs = list(pairs)
    if not pairs:
        raise ValidationError("audit_records needs at least one record pair")
    results = []
    for pair, s in zip(pairs, children(as_seed(seed), len(pairs)), strict=True):
        outcome = ingest_pair(pair, salts=salts, spark=spark)
        neighbour = outcome.neighbour
        audited = None
        if neighbour is not None:
            audited = audit_pair(mechanism, neighbour, n_search=n_search, n_confirm=n_confirm,
                                 seed=s)  # fmt: skip
        results.append(RecordResult(outcome, audited))
    return tuple(results)
