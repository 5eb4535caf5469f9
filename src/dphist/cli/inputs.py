"""The options that say what to count, shared by ``publish`` and ``check``: the input
file and its CSV dialect, the column, the public binning and how values are read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import export, ingest
from ..errors import DphistError
from .common import usage


def opt(metavar: str, help: str, **kw: Any) -> Any:
    return typer.Option(metavar=metavar, help=help, **kw)


Input = Annotated[Path, typer.Argument(metavar="INPUT", help="CSV (header row first) or Parquet.")]
Column = Annotated[str, typer.Option("--column", "-c", help="Column to count.")]
Edges = Annotated[str | None, opt("E0,E1,...", "Public bin edges: [e_i, e_i+1), last closed.")]
Categories = Annotated[str | None, opt("A,B,...|@FILE", "Public labels, or @FILE (one per line).")]
Domain = Annotated[str | None, opt("LO:HI:WIDTH", "Equal-width public bins from LO to HI.")]
Bins = Annotated[str | None, typer.Option(hidden=True, help="Refused: bins must be public.")]
Outside = Annotated[
    str | None,
    opt("clip|drop", "Values outside the bins: clip into the end bins, which are then open, "
        "(-inf, e1) and [e_n-1, inf) (default for numbers); or drop (the only choice for "
        "categories)."),
]  # fmt: skip
ValueType = Annotated[
    str | None,
    typer.Option(
        "--type", metavar="number|text",
        help="Read the column's values as numbers or as text (default: a Parquet column's "
        "type; for CSV what the bins imply: numbers for numeric bins and for categories "
        "that are all numbers).",
    ),
]  # fmt: skip
Delimiter = Annotated[
    str | None,
    opt("CHAR", "CSV field delimiter (default ',' or a tab for .tsv; 'tab' for a tab). "
        "Never sniffed from the data."),
]  # fmt: skip
Encoding = Annotated[
    str | None, opt("NAME", "CSV text encoding: utf-8 (default), utf-16 or latin-1.")
]


@dataclass(frozen=True)
class What:
    """What to count, checked: the binning (outside settled), the value type asked for,
    the CSV dialect, and the input files (for the output checks)."""

    binning: ingest.Binning
    value_type: str | None
    dialect: dict[str, object]
    inputs: tuple[Path, ...]

    @property
    def policy(self) -> str:
        return self.binning.outside or "drop"


def _categories_option(text: str) -> object:
    if not text.startswith("@"):
        return text
    source = Path(text[1:])
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DphistError(
            f"cannot read categories from {str(source)!r}: {exc.strerror or exc}"
        ) from None
    return [line for line in lines if line]


def input_files(source: Path, categories: str | None) -> tuple[Path, ...]:
    """The files a command reads: the input and a ``--categories @FILE``."""
    if categories is not None and categories.startswith("@"):
        return source, Path(categories[1:])
    return (source,)


def refuse_data_bins(bins: str | None) -> None:
    if bins is not None:
        raise typer.BadParameter(
            f"--bins {bins!r} asks for bins derived from the data; {ingest.PUBLIC_BINS_HINT}"
        )


def check_what(
    source: Path, column: str, edges: str | None, domain: str | None, categories: str | None,
    outside: str | None, value_type: str | None, delimiter: str | None, encoding: str | None,
) -> What:  # fmt: skip
    """Every option about the input, checked before any record is read (a Parquet
    column's type from the file's schema)."""
    dialect = {"delimiter": delimiter, "encoding": encoding}
    with usage():
        csv = ingest.file_format(source) == "csv"
    for name, value in dialect.items():
        if value is not None and not csv:
            raise typer.BadParameter(f"--{name} applies to CSV files", param_hint=f"'--{name}'")
    with usage("'--delimiter'"):
        ingest.sources.csv_delimiter(source, delimiter)
    with usage("'--encoding'"):
        ingest.sources.csv_encoding(encoding)
    cats = None if categories is None else _categories_option(categories)
    with usage():
        binning = ingest.binning(edges=edges, domain=domain, categories=cats)
    with usage("'--outside'"):
        binning = binning.with_outside(outside)
    with usage("'--type'"):
        ingest.types.check_value_type(value_type)
        if csv:  # untyped: the type asked for (or implied) must serve the bins now
            ingest.types.value_type(
                binning, "VARCHAR", typed=False, declared=value_type, label="the column"
            )
    if not csv and source.is_file():  # the schema, public: no value is read
        with usage():
            ingest.file_value_type(source, column, binning, value_type)
    return What(binning, value_type, dialect, input_files(source, categories))


def check_outputs(outputs: dict[str, list[Path]], inputs: Sequence[Path]) -> None:
    """No output file may be an input, or another output (checked before anything is
    read); ``outputs`` maps each option to the files it writes."""
    seen: list[Path] = []
    for option, files in outputs.items():
        with usage(f"'{option}'"):
            export.check_targets([*seen, *files], inputs)
        seen += files
