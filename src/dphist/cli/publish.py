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
from ..errors import DphistError
from ..methods import get_method
from ..methods.advisor import feature_share, time_budget_seconds, workload_kind
from ..methods.selector import CANDIDATES
from ..release import Release
from ..session import publish
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
from .publish2d import grid_columns, publish_grid_file

PREVIEW_ROWS = 10
PROGRESS_BYTES = 100 * 2**20  # show counting progress for input files above this size


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
        kind: object = workload or (None if binning.numeric else "point")
        if isinstance(kind, str) and isinstance(number(kind), int | float):
            kind = number(kind)
        with usage("'--workload'"):
            workload_kind(binning.n, kind)
        with usage("'--time-budget'"):
            time_budget_seconds(time_budget)
        with usage("'--auto-share'"):
            share = feature_share(auto_share)
        heaviest = max(
            (c.method for c in CANDIDATES), key=lambda m: resources.bytes_per_bin(m, binning.n)
        )
        return {"workload": kind, "time_budget": time_budget, "auto_share": share}, heaviest
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


def _preview(binning: ingest.Binning, release: Release) -> Table:
    table = Table(title="Private histogram")
    bars = release.stderr is not None
    columns = [("bin", "right"), ("label", "left"), ("estimate", "right")]
    for name, justify in columns + ([("95% interval", "right")] if bars else []):
        table.add_column(name, justify=justify)
    n = binning.n
    edge = PREVIEW_ROWS
    shown = range(n) if n <= 2 * edge else [*range(edge), -1, *range(n - edge, n)]
    labels = binning.labels() if n <= 2 * edge else None
    lower, upper = release.intervals() if bars else (None, None)
    for i in shown:
        if i < 0:
            table.add_row(*["…"] * len(table.columns))
            continue
        label = labels[i] if labels is not None else binning.label(i)
        row = [str(i), label, f"{release.estimate[i]:,.2f}"]
        if bars:
            row.append(f"[{lower[i]:,.1f}, {upper[i]:,.1f}]")
        table.add_row(*row)
    return table


def _opt(metavar: str, help: str, **kw: Any) -> Any:
    return typer.Option(metavar=metavar, help=help, **kw)


Input = Annotated[Path, typer.Argument(metavar="INPUT", help="CSV (header row first) or Parquet.")]
Column = Annotated[str, typer.Option("--column", "-c", help="Column to count.")]
Method = Annotated[
    str,
    typer.Option(
        parser=parse_method,
        help="Method name or alias ('dphist methods'), or auto: spends --auto-share of "
        "epsilon (default 1/100) on two noisy counts, then runs the method a selector "
        "trained on public data ranks best for the bins, epsilon and --workload.",
    ),
]
Edges = Annotated[str | None, _opt("E0,E1,...", "Public bin edges: [e_i, e_i+1), last closed.")]
Categories = Annotated[str | None, _opt("A,B,...|@FILE", "Public labels, or @FILE (one per line).")]
Domain = Annotated[str | None, _opt("LO:HI:WIDTH", "Equal-width public bins from LO to HI.")]
Bins = Annotated[str | None, typer.Option(hidden=True, help="Refused: bins must be public.")]
Params = Annotated[
    list[str] | None, typer.Option("--param", metavar="K=V", help="Method setting (repeatable).")
]
Workload = Annotated[
    str | None,
    _opt("KIND|LENGTH", "For auto: point, short, long, all, prefix (or categorical, mixed), "
         "or a typical query length in bins."),
]  # fmt: skip
TimeBudget = Annotated[float | None, _opt("SECONDS", "For auto: time budget.", min=0.0)]
AutoShare = Annotated[
    str | None, _opt("SHARE", "For auto: share of epsilon for the noisy counts (0 to 1/2).")
]
Outside = Annotated[
    str | None,
    _opt("clip|drop", "Values outside the bins: clip into the end bins (default for numbers) "
         "or drop (the only choice for categories)."),
]  # fmt: skip
Unit = Annotated[
    str | None,
    _opt("COLUMN", "Column naming the privacy unit (a person with several records); "
         "needs --max-records."),
]  # fmt: skip
MaxRecords = Annotated[
    int | None, _opt("K", "Most records kept per privacy unit (a random subset).", min=1)
]
Strict = Annotated[
    bool,
    typer.Option("--strict", help="Refuse malformed records instead of dropping them (NOT "
                 "private: the refusal depends on the data)."),
]  # fmt: skip
Out = Annotated[
    Path | None,
    _opt("FILE", "Write .json, .csv or .parquet (ledger in FILE.ledger.json).", dir_okay=False),
]
Plot = Annotated[Path | None, _opt("PNG", "Plot the private estimate.", dir_okay=False)]


@dataclass(frozen=True)
class _Request:
    """The checked options of one ``dphist publish``: everything public, nothing read."""

    binning: ingest.Binning
    policy: str
    params: dict[str, Any]
    unit: dict[str, Any]
    image: str | None
    amount: dict[str, Any]  # {"epsilon": ...} or {"rho": ...}
    delta: float | None


def _check(
    method: str, epsilon: Any, rho: Any, delta: float | None, bins: str | None,
    binning_options: dict[str, object], outside: str | None, items: Sequence[str] | None,
    workload: str | None, time_budget: float | None, auto_share: str | None,
    privacy_unit: str | None,
    max_records: int | None, out: Path | None, plot: Path | None,
) -> _Request:  # fmt: skip
    """Every option checked before any data is read (usage errors, exit code 2)."""
    chosen = budget(epsilon, rho)
    if method == "auto" and chosen.definition == "zcdp":
        raise typer.BadParameter(
            "--method auto chooses among pure epsilon-DP methods; with --rho name a method",
            param_hint="'--method'",
        )
    if bins is not None:
        raise typer.BadParameter(
            f"--bins {bins!r} asks for bins derived from the data; {ingest.PUBLIC_BINS_HINT}"
        )
    with usage():
        binning = ingest.binning(**binning_options)
    with usage("'--outside'"):
        policy = ingest.outside_policy(binning, outside)
    params, planned = _method_params(method, items, workload, time_budget, auto_share, binning)
    with usage("'--max-records'"):
        k = ingest.unit_bound(privacy_unit, max_records)
    if out is not None:
        with usage("'--out'"):
            export.output_format(out)
            export.check_writable(out, "output")
    image = plot_target(plot)
    with usage():
        resources.check_bins(binning.n, planned)
    unit = {} if k is None else {"privacy_unit": privacy_unit, "max_records": k}
    return _Request(binning, policy, params, unit, image, {chosen.name: chosen.amount}, delta)


def _outputs(
    req: _Request, release: Release, column: str, strict: bool, out: Path | None,
    plot: Path | None,
) -> list[Path]:  # fmt: skip
    """Write the output file(s) and the plot together, all or none."""
    files: list[export.Pending] = []
    if out is not None:
        files += export.histogram_files(
            out, release, req.binning, column=column, outside_domain=req.policy,
            missing_values="dropped", malformed_records="refused" if strict else "dropped",
            **delta_record(release.epsilon, release.definition, req.delta),
        )  # fmt: skip
    if plot is not None and req.image is not None:
        from ..plot import estimate_writer

        labels = req.binning.labels() if req.binning.n <= 30 else None
        draw = estimate_writer(release, req.image, labels=labels, xlabel=f"bin of {column}")
        files.append(export.Pending(plot, draw))
    return export.write(files)


def _report(
    req: _Request, release: Release, column: str, strict: bool, written: list[Path],
    preview: bool, seed: int | None,
) -> None:  # fmt: skip
    console = new_console()
    say(
        console,
        f"dphist publish: column {column!r}, {req.binning.spec}, method {release.method}",
        *budget_lines(release.epsilon, release.definition, req.delta),
    )
    if "auto" in release.params:
        say(console, f"Chosen by auto: {release.params['auto']['reason']}")
    if preview:
        console.print(_preview(req.binning, release))
    say(console, *error_summary(release))
    console.print(ledger_table(release))
    fate = "clipped into the end bins" if req.policy == "clip" else "dropped"
    say(
        console,
        f"Values outside the bins: {fate}; missing, invalid or malformed records: "
        f"{'refused (--strict)' if strict else 'dropped'} (how many is not private and "
        "is not reported)",
        *status(release, seed),
        *(f"Written: {p.resolve()}" for p in written),
    )


@app.command("publish")
def publish_file(
    source: Input, column: Column, method: Method = "auto", epsilon: OptionalEpsilon = None,
    rho: Rho = None, delta: Delta = None, edges: Edges = None, categories: Categories = None,
    domain: Domain = None,
    bins: Bins = None, param: Params = None, workload: Workload = None,
    time_budget: TimeBudget = None, auto_share: AutoShare = None, outside: Outside = None,
    privacy_unit: Unit = None,
    max_records: MaxRecords = None, strict: Strict = False, out: Out = None, plot: Plot = None,
    seed: Seed = None,
) -> None:  # fmt: skip
    """Count one column (or two: --column A,B, a 2-D histogram) of a file over public bins
    and publish it privately.

    Records are dropped, never reported, when malformed or without a valid value; see
    'Record domain' in docs/privacy.md.
    """
    pair = grid_columns(column)
    if pair is not None:  # two columns: dphist.cli.publish2d
        return publish_grid_file(
            source, pair, method=method, epsilon=epsilon, rho=rho, delta=delta, bins=bins,
            binning_options={"edges": edges, "domain": domain, "categories": categories},
            categories_file=_categories_option, outside=outside, params=param,
            privacy_unit=privacy_unit, max_records=max_records, out=out, plot=plot, seed=seed,
            extra=(workload, time_budget, auto_share, True if strict else None),
        )  # fmt: skip
    cats = None if categories is None else _categories_option(categories)
    binning_options = {"edges": edges, "domain": domain, "categories": cats}
    req = _check(
        method, epsilon, rho, delta, bins, binning_options, outside, param, workload,
        time_budget, auto_share, privacy_unit, max_records, out, plot,
    )  # fmt: skip
    with _counting_progress(source) as progress:
        counts = ingest.count_file(
            source, column, req.binning, outside=req.policy, rng=seed, strict=strict,
            progress=progress, **req.unit,
        )  # fmt: skip
    release = publish(counts, method=method, rng=seed, **req.amount, **req.unit, **req.params)
    written = _outputs(req, release, column, strict, out, plot)
    _report(req, release, column, strict, written, out is None, seed)
