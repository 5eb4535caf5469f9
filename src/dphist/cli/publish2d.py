"""``dphist publish INPUT --column A,B``: two columns of a file to a private 2-D histogram.

Each column gets its own public binning: ``--edges``, ``--domain`` and ``--categories``
take one part per column separated by ``;`` (empty where the column uses another kind),
e.g. ``--domain "0:90:10;" --categories ";north,south"``; ``--outside`` and ``--type``
one value for both or one per column (``clip;drop``). The method is a 2-D one
(``dphist methods --2d``). Every option is checked before the file is read, with the
same checks as for one column: no output is an input, each column's type against its
bins (a Parquet schema), a stored budget (``--budget``) charged before counting. The
output files and the plot are written together and atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from .. import export, ingest
from ..twod import Release2D, grid_method
from ..twod.files import grid_record, json_writer, table_writer
from ..twod.plot import heatmap_writer
from .budget import charge_first
from .common import (
    budget,
    budget_lines,
    ledger_table,
    new_console,
    parse_params,
    plot_target,
    say,
    status,
    usage,
)
from .inputs import What, check_outputs, check_what, input_files, refuse_data_bins

__all__ = ["grid_columns", "publish_grid_file"]


def grid_columns(column: str) -> tuple[str, str] | None:
    """``(a, b)`` for ``--column a,b``; None for one column."""
    if "," not in column:
        return None
    parts = [p.strip() for p in column.split(",")]
    if len(parts) != 2 or not all(parts):
        raise typer.BadParameter(
            "a 2-D histogram counts two columns: --column A,B", param_hint="'--column'"
        )
    return parts[0], parts[1]


def _split(text: str | None, option: str, shared: bool = False) -> tuple[str | None, str | None]:
    """One part per column of ``text`` (``A;B``); ``shared`` options may give one for both."""
    if text is None:
        return None, None
    if ";" not in text:
        if shared:
            return text, text
        raise typer.BadParameter(
            f"with two columns give one part per column, separated by ';' (e.g. '0:90:10;' when "
            f"the second column uses another kind of binning); got {text!r}",
            param_hint=f"'{option}'",
        )
    first, second = text.split(";", 1)
    return (first or None), (second or None)


def _whats(source: Path, columns: tuple[str, str], options: dict[str, Any]) -> tuple[What, What]:
    """Each column's binning, value type and dialect, checked as for one column
    (:func:`~dphist.cli.inputs.check_what`: a Parquet column's type from the schema)."""
    shared = {"outside", "value_type"}
    parts = {k: _split(v, f"--{k.replace('_', '-')}", k in shared) for k, v in options.items()
             if k not in ("delimiter", "encoding")}  # fmt: skip
    dialect = {"delimiter": options["delimiter"], "encoding": options["encoding"]}
    whats = [
        check_what(source, columns[k], **{n: v[k] for n, v in parts.items()}, **dialect)
        for k in range(2)
    ]
    return whats[0], whats[1]


def _check(method: str, items, privacy_unit, max_records, extra):
    if method == "auto":
        raise typer.BadParameter(
            "--method auto chooses among 1-D methods; for two columns name a 2-D method "
            "(PrivTree, AGrid, HB2D, ...: dphist methods --2d)", param_hint="'--method'",
        )  # fmt: skip
    if any(v is not None for v in extra):
        raise typer.BadParameter(
            "--workload, --time-budget, --auto-share, --strict, --counts and --decimals "
            "apply to one column"
        )
    params = parse_params(items)
    with usage("'--param'"):
        grid_method(method).pipeline(**params)
    with usage("'--max-records'"):
        k = ingest.unit_bound(privacy_unit, max_records)
    return params, k


def _targets(out: Path | None) -> list[Path]:
    """The files ``--out`` writes: a JSON document, or a table and its ledger beside it."""
    if out is None:
        return []
    if export.output_format(out) == "json":
        return [out]
    return [out, out.with_name(out.name + export.LEDGER_SUFFIX)]


def _files(release: Release2D, binnings, columns, out, plot, image, inputs):
    labels = (binnings[0].labels(), binnings[1].labels())
    meta = {
        "format": "dphist-histogram2d/1",
        "columns": list(columns),
        "binnings": [b.to_dict() for b in binnings],
    }
    files: list[export.Pending] = []
    if out is not None:
        fmt = export.output_format(out)
        if fmt == "json":
            files.append(export.Pending(out, json_writer(release, meta)))
        else:
            sidecar = out.with_name(out.name + export.LEDGER_SUFFIX)
            record = grid_record(release, {**meta, "table": out.name})
            import json

            from ..release import json_default

            text = json.dumps(record, indent=1, default=json_default) + "\n"
            files += [
                export.Pending(out, table_writer(release, labels, fmt)),
                export.Pending(sidecar, lambda tmp: tmp.write_text(text, encoding="utf-8")),
            ]
    if plot is not None and image is not None:
        short = tuple(lab if len(lab) <= 12 else None for lab in labels)
        files.append(export.Pending(plot, heatmap_writer(release, image, short, columns)))
    return export.write(files, inputs)


def _preview(release: Release2D, binnings, columns) -> Table:
    table = Table(title="Private marginals (summed over the other column)")
    for name in ("column", "bin", "estimate", "± (stderr)"):
        table.add_column(name, justify="left" if name in ("column", "bin") else "right")
    for axis, name, binning in ((1, columns[0], binnings[0]), (0, columns[1], binnings[1])):
        values = release.marginal(axis, stderr=release.stderr is not None)
        est, se = values if isinstance(values, tuple) else (values, None)
        for i in range(min(binning.n, 6)):
            table.add_row(
                name, binning.label(i), f"{est[i]:,.1f}", "-" if se is None else f"{se[i]:,.1f}"
            )
        if binning.n > 6:
            table.add_row(name, "…", "…", "…")
    return table


def publish_grid_file(
    source: Path, columns: tuple[str, str], *, method: str, epsilon, rho, delta, bins,
    binning_options: dict[str, Any], params, privacy_unit, max_records, out, plot, seed,
    budget_name, budget_store, extra,
) -> None:  # fmt: skip
    """Count two columns of ``source`` into a 2-D histogram over public bins and publish it.
    ``extra`` holds the 1-D-only options (each None when not given).

    As for one column: every option is checked, the outputs are checked against the
    inputs and each column's type against its bins (a Parquet schema) before anything
    is read, and a stored budget (``--budget``) is charged before any record is counted.
    """
    chosen = budget(epsilon, rho)
    refuse_data_bins(bins)
    params, k = _check(method, params, privacy_unit, max_records, extra)
    if out is not None:
        with usage("'--out'"):
            export.output_format(out)
            export.check_writable(out, "output")
    image = plot_target(plot)
    cats = _split(binning_options["categories"], "--categories")
    inputs = tuple(dict.fromkeys(p for c in cats for p in input_files(source, c)))
    check_outputs({"--out": _targets(out), "--plot": [plot] * bool(plot)}, inputs)
    whats = _whats(source, columns, binning_options)
    binnings = (whats[0].binning, whats[1].binning)
    amount = {chosen.name: chosen.amount}
    grant = charge_first(budget_name, budget_store, amount, method)
    counts = ingest.count_grid(
        source, binnings, columns=columns, outside=(whats[0].policy, whats[1].policy),
        privacy_unit=privacy_unit, max_records=k, rng=seed,
        value_type=(whats[0].value_type, whats[1].value_type), **whats[0].dialect,
    )  # fmt: skip
    from ..session import publish

    unit = {} if k is None else {"privacy_unit": privacy_unit, "max_records": k}
    release = publish(counts, method=method, rng=seed, **amount, **unit, **params)
    del counts
    written = _files(release, binnings, columns, out, plot, image, inputs)
    grant.record(release, written)
    console = new_console()
    say(console, f"dphist publish: columns {columns[0]!r} x {columns[1]!r}, "
                 f"{binnings[0].n} x {binnings[1].n} cells, method {release.method}",
        *budget_lines(release.epsilon, release.definition, delta))  # fmt: skip
    if out is None:
        console.print(_preview(release, binnings, columns))
    se = release.stderr
    if se is not None:
        say(console, f"Error bars: a cell's standard error is typically {float(se.mean()):,.2f}; "
                     f"they cover {release.error_bars}.")  # fmt: skip
    else:
        say(console, f"Error bars: none. {release.error_bars.removeprefix('nothing: ')}.")
    console.print(ledger_table(release))
    say(console, "Records outside a column's bins or without a valid value are clipped or "
                 "dropped by public rules (how many is not private and is not reported)",
        *status(release, seed), *(f"Written: {p.resolve()}" for p in written))  # fmt: skip
