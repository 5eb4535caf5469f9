"""The data owner's check of a file: what the record domain does to one column.

:func:`check_file` counts a column's records read, malformed, missing, invalid,
outside the bins and counted, by the rules of :mod:`dphist.ingest.count`. These are
exact counts of the private data, **not private**: ``dphist check`` prints them to the
owner's terminal, marked :data:`NOT_PRIVATE`; nothing here is written to a file or
reaches a release (``count_file`` and ``dh.histogram`` never compute them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ValidationError
from .binning import Binning, outside_policy
from .count import column_type, double_sql, number_sql, numeric_labels, register_arrays
from .sources import connect, first_line, open_file

__all__ = ["NOT_PRIVATE", "RecordCheck", "check_file"]

NOT_PRIVATE = "NOT PRIVATE: for the data owner; do not publish"


@dataclass(frozen=True)
class RecordCheck:
    """Exact counts of one column's records (not private: see the module doc)."""

    records: int
    malformed: int
    missing: int
    invalid: int
    outside: int
    policy: str
    value_type: str

    @property
    def counted(self) -> int:
        """Records that reach a bin (outside values too when they are clipped in)."""
        dropped = self.malformed + self.missing + self.invalid
        return self.records - dropped - (self.outside if self.policy == "drop" else 0)


def check_file(
    path: str | Path, column: str, binning: Binning, *, outside: object = None,
    value_type: object = None, delimiter: object = None, encoding: object = None,
) -> RecordCheck:  # fmt: skip
    """Count what the record domain does to ``column`` of a file (module doc; arguments
    as for :func:`dphist.ingest.count_file`). Not private."""
    import duckdb

    policy = outside_policy(binning, outside)
    con = connect()
    try:
        table = open_file(con, path, delimiter=delimiter, encoding=encoding)
        table.require(column)
        vtype = column_type(table, column, binning, value_type)
        rec = table.records([column])
        present = "c0 IS NOT NULL AND trim(CAST(c0 AS VARCHAR)) <> ''"
        keys = numeric_labels(binning) if vtype == "number" and not binning.numeric else None
        if binning.numeric or keys is not None:
            key = number_sql("c0", table.columns[column], repr(column))
        else:
            key = f"CASE WHEN {present} THEN CAST(c0 AS VARCHAR) END"
        if binning.numeric:
            edges = binning.edges
            assert edges is not None
            lo, hi = double_sql(float(edges[0])), double_sql(float(edges[-1]))
            join, inside = "", f"v.key >= {lo} AND v.key <= {hi}"
        else:
            labels = list(binning.categories or ()) if keys is None else keys
            register_arrays(con, "dphist_check_labels", {"key": np.asarray(labels)})
            join = "LEFT JOIN (SELECT DISTINCT key AS label FROM dphist_check_labels) AS l "
            join += "ON l.label = v.key"
            inside = "l.label IS NOT NULL"
        values = f"SELECT ok, {present} AS present, {key} AS key FROM ({rec})"
        row = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE NOT ok), "
            "count(*) FILTER (WHERE ok AND NOT present), "
            "count(*) FILTER (WHERE ok AND present AND key IS NULL), "
            f"count(*) FILTER (WHERE ok AND key IS NOT NULL AND NOT ({inside})) "
            f"FROM ({values}) AS v {join}"
        ).fetchall()[0]
    except duckdb.Error as exc:
        raise ValidationError(f"cannot read {str(path)!r}: {first_line(exc)}") from None
    finally:
        con.close()
    counts: list[Any] = [int(v) for v in row]
    return RecordCheck(*counts, policy=policy, value_type=vtype)
