"""``dphist publish``: one column of a CSV or Parquet file to a private histogram."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .. import export, ingest, resources
from ..methods import get_method
from ..methods.advisor import feature_share, time_budget_seconds, workload_kind
from ..methods.selector import DEFAULT_SHARE
from ..release import Release
from ..session import heaviest_candidate, publish
from ..table import COUNTS
from ..table import Table as Published
from .budget import BudgetName, BudgetStoreOption, charge_first
from .common import (
    Delta,
    OptionalEpsilon,
    Rho,
    Seed,
    app,
    budget,
    budget_lines,
    delta_record,
    error_summary,
    ledger_table,
    new_console,
    number,
    parse_method,
    parse_params,
    plot_target,
    say,
    status,
    usage,
)
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
    What,
    check_outputs,
    check_what,
    input_files,
    opt,
    refuse_data_bins,
)
from .publish2d import grid_columns, publish_grid_file

PREVIEW_ROWS = 10
PROGRESS_BYTES = 100 * 2**20  # show counting progress for input files above this size


def _method_params(
    method: str, items: Sequence[str] | None, workload: str | None, time_budget: float | None,
    auto_share: str | None, binning: ingest.Binning,
) -> tuple[dict[str, Any], str]:  # fmt: skip
    """The method's settings, checked; and the method whose memory needs to plan for
    (for auto, the most demanding candidate: its choice depends on the data)."""
    params: dict[str, Any] = parse_params(items)
    if method == "auto":
        if params:
            raise typer.BadParameter("--method auto chooses the parameters; drop --param")
        kind: object = workload  # None: every range, as in Python
        if isinstance(kind, str) and isinstance(number(kind), int | float):
            kind = number(kind)
        with usage("'--workload'"):
            workload_kind(binning.n, kind)
        with usage("'--time-budget'"):
            time_budget_seconds(time_budget)
        with usage("'--auto-share'"):
            share = feature_share(auto_share)
        return {"workload": kind, "time_budget": time_budget, "auto_share": share}, (
            heaviest_candidate(binning.n)
        )
    if workload is not None or time_budget is not None or auto_share is not None:
        raise typer.BadParameter(
            "--workload, --time-budget and --auto-share apply to --method auto only"
        )
    with usage("'--param'"):
        get_method(method).pipeline(**params)
    return params, method


@contextlib.contextmanager
def _counting_progress(source: Path) -> Iterator[Any]:
    """A transient progress bar on the terminal (stderr) while a large file is counted.

    It shows the bytes of the file read so far (the fraction of the scan times the
    file's size): how far the scan is, never a count, a value or how many records
    were dropped. Shown only to the person running the command, never written to an
    output.
    """
    try:
        size = source.stat().st_size
    except OSError:
        size = 0
    if not (size > PROGRESS_BYTES and sys.stderr.isatty()):
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"counting {source.name}", total=size)
        yield lambda done: bar.update(task, completed=done * size)


def _preview(binning: ingest.Binning, table: Published, decimals: int) -> Table:
    preview = Table(title="Private histogram")
    bars = table.lower is not None and table.upper is not None
    columns = [("bin", "right"), ("label", "left"), ("estimate", "right")]
    for name, justify in columns + ([(f"{1 - table.alpha:.0%} interval", "right")] if bars else []):
        preview.add_column(name, justify=justify)
    n = binning.n
    edge = PREVIEW_ROWS
    shown = range(n) if n <= 2 * edge else [*range(edge), -1, *range(n - edge, n)]
    labels = binning.labels() if n <= 2 * edge else None
    d = 0 if table.counts == "integer" else decimals
    for i in shown:
        if i < 0:
            preview.add_row(*["…"] * len(preview.columns))
            continue
        label = labels[i] if labels is not None else binning.label(i)
        row = [str(i), label, f"{table.estimate[i]:,.{d}f}"]
        if bars:
            row.append(f"[{table.lower[i]:,.{decimals}f}, {table.upper[i]:,.{decimals}f}]")
        preview.add_row(*row)
    return preview


Method = Annotated[
    str,
    typer.Option(
        parser=parse_method,
        help="Method name or alias ('dphist methods'), or auto: spends --auto-share of "
        f"epsilon (default {DEFAULT_SHARE}) on two noisy counts, then runs the method a selector "
        "trained on public data ranks best for the bins, epsilon and --workload.",
    ),
]
Params = Annotated[
    list[str] | None, typer.Option("--param", metavar="K=V", help="Method setting (repeatable).")
]
Workload = Annotated[
    str | None,
    opt("KIND|LENGTH", "For auto: point, short, long, all, prefix (or categorical, mixed), "
         "or a typical query length in bins; default all (every range), as in Python."),
]  # fmt: skip
TimeBudget = Annotated[float | None, opt("SECONDS", "For auto: time budget.", min=0.0)]
AutoShare = Annotated[
    str | None, opt("SHARE", "For auto: share of epsilon for the noisy counts (0 to 1/2).")
]
Unit = Annotated[
    str | None,
    opt("COLUMN", "Column naming the privacy unit (a person with several records); "
         "needs --max-records."),
]  # fmt: skip
MaxRecords = Annotated[
    int | None, opt("K", "Most records kept per privacy unit (a random subset).", min=1)
]
Strict = Annotated[
    bool,
    typer.Option("--strict", help="Refuse malformed records instead of dropping them (NOT "
                 "private: the refusal depends on the data)."),
]  # fmt: skip
Out = Annotated[
    Path | None,
    opt("FILE", "Write .json, .csv or .parquet (ledger in FILE.ledger.json); never an input.",
        dir_okay=False),
]  # fmt: skip
Counts = Annotated[
    str,
    opt("integer|float", "Published counts: non-negative integers with the estimate's total "
        "(post-processing; the default), or the estimate itself (unbiased for linear methods)."),
]  # fmt: skip
Decimals = Annotated[
    int | None,
    opt("N", "Decimals of real values in a CSV (default: what the noise allows; Parquet and "
        "JSON keep full precision).", min=0, max=15),
]  # fmt: skip
Plot = Annotated[Path | None, opt("PNG", "Plot the private estimate.", dir_okay=False)]


@dataclass(frozen=True)
class _Request:
    """The checked options of one ``dphist publish``: everything public, nothing read."""

    what: What
    params: dict[str, Any]
    unit: dict[str, Any]
    image: str | None
    amount: dict[str, Any]  # {"epsilon": ...} or {"rho": ...}
    delta: float | None
    counts: str
    decimals: int | None

    @property
    def binning(self) -> ingest.Binning:
        return self.what.binning


def _check(
    source: Path, column: str, method: str, epsilon: Any, rho: Any, delta: float | None,
    bins: str | None, binning_options: dict[str, Any], items: Sequence[str] | None,
    workload: str | None, time_budget: float | None, auto_share: str | None,
    privacy_unit: str | None, max_records: int | None, counts: str, decimals: int | None,
    out: Path | None, plot: Path | None,
) -> _Request:  # fmt: skip
    """Every option checked before any data is read (usage errors, exit code 2)."""
    chosen = budget(epsilon, rho)
    refuse_data_bins(bins)
    if counts not in COUNTS:
        raise typer.BadParameter("must be integer or float", param_hint="'--counts'")
    if out is not None:
        with usage("'--out'"):
            export.output_format(out)
            export.check_writable(out, "output")
    image = plot_target(plot)
    outputs = {"--out": export.histogram_targets(out) if out else [], "--plot": [plot] * bool(plot)}
    check_outputs(outputs, input_files(source, binning_options["categories"]))
    what = check_what(source, column, **binning_options)
    binning = what.binning
    params, planned = _method_params(method, items, workload, time_budget, auto_share, binning)
    with usage("'--max-records'"):
        k = ingest.unit_bound(privacy_unit, max_records)
    with usage():
        resources.check_bins(binning.n, planned, command_line=True, output=out is not None)
    unit = {} if k is None else {"privacy_unit": privacy_unit, "max_records": k}
    amount = {chosen.name: chosen.amount}
    return _Request(what, params, unit, image, amount, delta, counts, decimals)


def _release(req: _Request, counts: Any, method: str, seed: int | None) -> Release:
    """Spend the budget: the one step that releases (a stored budget was charged before)."""
    return publish(counts, method=method, rng=seed, **req.amount, **req.unit, **req.params)


def _outputs(
    req: _Request, release: Release, table: Published, column: str, strict: bool,
    out: Path | None, plot: Path | None,
) -> list[Path]:  # fmt: skip
    """Write the output file(s) and the plot together, all or none."""
    files: list[export.Pending] = []
    if out is not None:
        files += export.histogram_files(
            out, release, req.binning, table=table, decimals=req.decimals, column=column,
            outside_domain=req.what.policy, missing_values="dropped",
            malformed_records="refused" if strict else "dropped",
            **delta_record(release.epsilon, release.definition, req.delta),
        )  # fmt: skip
    if plot is not None and req.image is not None:
        from ..plot import estimate_writer

        draw = estimate_writer(
            release, req.image, binning=req.binning, xlabel=column, counts=req.counts
        )
        files.append(export.Pending(plot, draw))
    return export.write(files, req.what.inputs)


def _bins_line(binning: ingest.Binning) -> str:
    if binning.open_ends:
        return (
            f"Bins: {binning.spec}; the end bins are open, {binning.label(0)} and "
            f"{binning.label(-1)}: values outside are clipped into them"
        )
    fate = "dropped" if binning.numeric else "dropped (no label matches them)"
    return f"Bins: {binning.spec}; values outside are {fate}"


def _report(
    req: _Request, release: Release, table: Published, column: str, strict: bool,
    written: list[Path], preview: bool, seed: int | None,
) -> None:  # fmt: skip
    console = new_console()
    say(
        console,
        f"dphist publish: column {column!r}, method {release.method}",
        _bins_line(req.binning),
        *budget_lines(release.epsilon, release.definition, req.delta),
    )
    if "auto" in release.params:
        say(console, f"Chosen by auto: {release.params['auto']['reason']}")
    if preview:
        console.print(_preview(req.binning, table, export.noise_decimals(release, table)))
    kind = (
        "non-negative integers with the estimate's total (--counts float: the estimate)"
        if req.counts == "integer"
        else "the estimate as released (--counts integer: non-negative integers)"
    )
    say(console, f"Counts: {kind}", *error_summary(release, table))
    console.print(ledger_table(release))
    say(
        console,
        f"Missing, invalid or malformed records: {'refused (--strict)' if strict else 'dropped'} "
        "(how many is not private and is not reported; 'dphist check' shows the data owner)",
        *status(release, seed),
        *(f"Written: {p.resolve()}" for p in written),
    )


@app.command("publish")
def publish_file(
    source: Input, column: Column, method: Method = "auto", epsilon: OptionalEpsilon = None,
    rho: Rho = None, delta: Delta = None, edges: Edges = None, categories: Categories = None,
    domain: Domain = None, bins: Bins = None, param: Params = None, workload: Workload = None,
    time_budget: TimeBudget = None, auto_share: AutoShare = None, outside: Outside = None,
    value_type: ValueType = None, delimiter: Delimiter = None, encoding: Encoding = None,
    privacy_unit: Unit = None, max_records: MaxRecords = None, strict: Strict = False,
    counts: Counts = "integer", decimals: Decimals = None, out: Out = None, plot: Plot = None,
    seed: Seed = None, budget_name: BudgetName = None, budget_store: BudgetStoreOption = None,
) -> None:  # fmt: skip
    """Count one column (or two: --column A,B, a 2-D histogram) of a file over public bins
    and publish it privately.

    Records are dropped, never reported, when malformed or without a valid value; see
    'Record domain' in docs/privacy.md. A column whose type cannot serve the bins
    (Parquet's schema) is refused before any value is read or any budget spent.
    """
    pair = grid_columns(column)
    if pair is not None:  # two columns: dphist.cli.publish2d
        return publish_grid_file(
            source, pair, method=method, epsilon=epsilon, rho=rho, delta=delta, bins=bins,
            binning_options={
                "edges": edges, "domain": domain, "categories": categories, "outside": outside,
                "value_type": value_type, "delimiter": delimiter, "encoding": encoding,
            },
            params=param, privacy_unit=privacy_unit, max_records=max_records, out=out,
            plot=plot, seed=seed, budget_name=budget_name, budget_store=budget_store,
            extra=(workload, time_budget, auto_share, True if strict else None,
                   None if counts == "integer" else counts, decimals),
        )  # fmt: skip
    binning_options = {
        "edges": edges, "domain": domain, "categories": categories, "outside": outside,
        "value_type": value_type, "delimiter": delimiter, "encoding": encoding,
    }  # fmt: skip
    req = _check(
        source, column, method, epsilon, rho, delta, bins, binning_options, param, workload,
        time_budget, auto_share, privacy_unit, max_records, counts, decimals, out, plot,
    )  # fmt: skip
    what = req.what
    grant = charge_first(budget_name, budget_store, req.amount, method)
    with _counting_progress(source) as progress:
        true_counts = ingest.count_file(
            source, column, what.binning, rng=seed, strict=strict, progress=progress,
            value_type=what.value_type, **what.dialect, **req.unit,
        )  # fmt: skip
    release = _release(req, true_counts, method, seed)
    del true_counts
    table = release.table(req.counts)
    written = _outputs(req, release, table, column, strict, out, plot)
    grant.record(release, written)
    _report(req, release, table, column, strict, written, out is None, seed)
