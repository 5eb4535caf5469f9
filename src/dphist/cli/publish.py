"""``dphist publish``: one column of a CSV or Parquet file to a private histogram."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .. import export, ingest, resources
from ..errors import DphistError
from ..methods import get_method
from ..methods.advisor import choose
from ..release import Release
from ..session import publish
from .common import (
    Epsilon,
    Seed,
    app,
    exact,
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
    binning: ingest.Binning, epsilon: object,
) -> tuple[dict[str, Any], str]:  # fmt: skip
    """The method's settings, checked; and the method whose memory needs to plan for."""
    params: dict[str, Any] = parse_params(items)
    if method == "auto":
        if params:
            raise typer.BadParameter("--method auto chooses the parameters; drop --param")
        kind: object = workload or (None if binning.numeric else "categorical")
        if isinstance(kind, str) and isinstance(number(kind), int | float):
            kind = number(kind)
        with usage("'--workload'"):
            chosen, _, _ = choose(binning.n, epsilon, workload=kind, time_budget=time_budget)
        return {"workload": kind, "time_budget": time_budget}, chosen
    if workload is not None or time_budget is not None:
        raise typer.BadParameter("--workload and --time-budget apply to --method auto only")
    with usage("'--param'"):
        get_method(method).pipeline(**params)
    return params, method


@contextlib.contextmanager
def _counting_progress(source: Path) -> Iterator[Any]:
    """A transient progress bar on the terminal (stderr) while a large file is counted.

    Shown only to the person running the command, never written to an output.
    """
    try:
        big = source.stat().st_size > PROGRESS_BYTES
    except OSError:
        big = False
    if not (big and sys.stderr.isatty()):
        yield None
        return
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"counting {source.name}", total=1.0)
        yield lambda done: bar.update(task, completed=done)


def _preview(binning: ingest.Binning, release: Release) -> Table:
    table = Table(title="Private histogram")
    for name, justify in (("bin", "right"), ("label", "left"), ("estimate", "right")):
        table.add_column(name, justify=justify)
    n = binning.n
    edge = PREVIEW_ROWS
    shown = range(n) if n <= 2 * edge else [*range(edge), -1, *range(n - edge, n)]
    labels = binning.labels() if n <= 2 * edge else None
    for i in shown:
        if i < 0:
            table.add_row("…", "…", "…")
            continue
        label = labels[i] if labels is not None else binning.label(i)
        table.add_row(str(i), label, f"{release.estimate[i]:,.2f}")
    return table


@app.command("publish")
def publish_file(
    source: Annotated[
        Path, typer.Argument(metavar="INPUT", help="CSV (header row first) or Parquet.")
    ],
    column: Annotated[str, typer.Option("--column", "-c", help="Column to count.")],
    epsilon: Epsilon,
    method: Annotated[
        str,
        typer.Option(parser=parse_method, help="Method name or alias ('dphist methods'), or auto."),
    ],
    edges: Annotated[
        str | None,
        typer.Option(metavar="E0,E1,...", help="Public bin edges: [e_i, e_i+1), last closed."),
    ] = None,
    categories: Annotated[
        str | None,
        typer.Option(metavar="A,B,...|@FILE", help="Public labels, or @FILE (one per line)."),
    ] = None,
    domain: Annotated[
        str | None,
        typer.Option(metavar="LO:HI:WIDTH", help="Equal-width public bins from LO to HI."),
    ] = None,
    bins: Annotated[
        str | None, typer.Option(hidden=True, help="Refused: bins must be public.")
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", metavar="K=V", help="Method setting (repeatable)."),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            metavar="KIND|LENGTH",
            help="For auto: point, categorical, short, medium, long, mixed, or a query "
            "length in bins.",
        ),
    ] = None,
    time_budget: Annotated[
        float | None, typer.Option(metavar="SECONDS", min=0.0, help="For auto: time budget.")
    ] = None,
    outside: Annotated[
        str | None,
        typer.Option(
            metavar="clip|drop",
            help="Values outside the bins: clip into the end bins (default for numbers) "
            "or drop (the only choice for categories).",
        ),
    ] = None,
    privacy_unit: Annotated[
        str | None,
        typer.Option(
            metavar="COLUMN",
            help="Column naming the privacy unit (a person with several records); "
            "needs --max-records.",
        ),
    ] = None,
    max_records: Annotated[
        int | None,
        typer.Option(
            metavar="K", min=1, help="Most records kept per privacy unit (a random subset)."
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Refuse malformed records instead of dropping them (NOT private: the "
            "refusal depends on the data).",
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            dir_okay=False,
            help="Write .json, .csv or .parquet (ledger in FILE.ledger.json).",
        ),
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(metavar="PNG", dir_okay=False, help="Plot the private estimate.")
    ] = None,
    seed: Seed = None,
) -> None:
    """Count one column of a file over public bins and publish it privately.

    Records are dropped, never reported, when malformed or without a valid value; see
    'Record domain' in docs/privacy.md.
    """
    if bins is not None:
        raise typer.BadParameter(
            f"--bins {bins!r} asks for bins derived from the data; {ingest.PUBLIC_BINS_HINT}"
        )
    with usage():
        binning = ingest.binning(
            edges=edges,
            domain=domain,
            categories=None if categories is None else _categories_option(categories),
        )
    with usage("'--outside'"):
        policy = ingest.outside_policy(binning, outside)
    params, planned = _method_params(method, param, workload, time_budget, binning, epsilon)
    with usage("'--max-records'"):
        k = ingest.unit_bound(privacy_unit, max_records)
    if out is not None:
        with usage("'--out'"):
            export.output_format(out)
            export.check_writable(out, "output")
    image = plot_target(plot)
    with usage():
        resources.check_bins(binning.n, planned)

    with _counting_progress(source) as progress:
        counts = ingest.count_file(
            source,
            column,
            binning,
            outside=policy,
            privacy_unit=privacy_unit,
            max_records=k,
            rng=seed,
            strict=strict,
            progress=progress,
        )
    unit = {} if k is None else {"privacy_unit": privacy_unit, "max_records": k}
    release = publish(counts, epsilon=epsilon, method=method, rng=seed, **unit, **params)
    del counts
    files: list[export.Pending] = []
    if out is not None:
        files += export.histogram_files(
            out,
            release,
            binning,
            column=column,
            outside_domain=policy,
            missing_values="dropped",
            malformed_records="refused" if strict else "dropped",
        )
    if plot is not None and image is not None:
        from ..plot import estimate_writer

        labels = binning.labels() if binning.n <= 30 else None
        draw = estimate_writer(release, image, labels=labels, xlabel=f"bin of {column}")
        files.append(export.Pending(plot, draw))
    written = export.write(files)

    console = new_console()
    say(
        console,
        f"dphist publish: column {column!r}, {binning.spec}, method {release.method}, "
        f"epsilon = {exact(release.epsilon)}",
    )
    if "auto" in release.params:
        say(console, f"Chosen by auto: {release.params['auto']}")
    if out is None:
        console.print(_preview(binning, release))
    console.print(ledger_table(release))
    fate = "clipped into the end bins" if policy == "clip" else "dropped"
    say(
        console,
        f"Values outside the bins: {fate}; missing, invalid or malformed records: "
        f"{'refused (--strict)' if strict else 'dropped'} (how many is not private and "
        "is not reported)",
        *status(release, seed),
        *(f"Written: {p.resolve()}" for p in written),
    )
