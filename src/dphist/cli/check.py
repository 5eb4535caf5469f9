"""``dphist check``: what the record domain does to a file, for its owner only."""

from __future__ import annotations

import typer
from rich.table import Table

from ..ingest.check import NOT_PRIVATE, RecordCheck, check_file
from .common import app, new_console, say, usage
from .inputs import (
    Bins,
    Categories,
    Column,
    Delimiter,
    Domain,
    Edges,
    Encoding,
    Input,
    Outside,
    ValueType,
    check_what,
    refuse_data_bins,
)


def _rows(result: RecordCheck) -> list[tuple[str, int, str]]:
    outside = "clipped into the open end bins" if result.policy == "clip" else "dropped"
    invalid = "not a number: dropped" if result.value_type == "number" else "(none: read as text)"
    return [
        ("records read", result.records, ""),
        ("  malformed", result.malformed, "not a record: dropped"),
        ("  missing value", result.missing, "dropped"),
        ("  invalid value", result.invalid, invalid),
        ("  outside the bins", result.outside, outside),
        (
            "counted",
            result.counted,
            f"values read as {result.value_type.replace('number', 'numbers')}",
        ),
    ]


@app.command("check")
def check(
    source: Input, column: Column, edges: Edges = None, categories: Categories = None,
    domain: Domain = None, bins: Bins = None, outside: Outside = None,
    value_type: ValueType = None, delimiter: Delimiter = None, encoding: Encoding = None,
) -> None:  # fmt: skip
    """For the data owner: how many records of a file are read, dropped and counted.

    NOT PRIVATE: exact counts of the data, printed to this terminal only and never
    written to a file or made part of a release. Use it to find a wrong column, type,
    delimiter, encoding or binning before 'dphist publish', which never reports them.
    """
    refuse_data_bins(bins)
    what = check_what(
        source, column, edges=edges, domain=domain, categories=categories, outside=outside,
        value_type=value_type, delimiter=delimiter, encoding=encoding,
    )  # fmt: skip
    with usage():
        if not source.is_file():
            raise typer.BadParameter(f"input file {str(source)!r} does not exist")
    result = check_file(source, column, what.binning, value_type=what.value_type, **what.dialect)
    console = new_console()
    say(console, f"dphist check: {NOT_PRIVATE}")
    table = Table(title=f"Column {column!r} of {str(source)!r}, {what.binning.spec}")
    for name, justify in (("records", "left"), ("count", "right"), ("what happens", "left")):
        table.add_column(name, justify=justify)
    for name, count, note in _rows(result):
        table.add_row(name, f"{count:,}", note)
    console.print(table)
    say(
        console,
        "Exact counts of your data, not a release: keep them to yourself. 'dphist publish' "
        "never computes or reports them.",
    )
