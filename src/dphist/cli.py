"""The ``dphist`` command line.

Commands stay thin: they read options, call the library and print. Exit codes:
0 success, 2 usage error (unknown option, bad value), 3 privacy error
(:class:`~dphist.errors.PrivacyError`), 1 any other dphist error or an output file
that cannot be written. Errors are reported as one line on stderr.

Commands: ``demo`` (built-in example), ``publish`` (a column of a CSV or Parquet file
over public bins to a private histogram file), ``methods`` (the registry) and
``bench`` (run times on synthetic data).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import __version__, ingest, synthetic
from ._io import atomic_path, atomic_write
from ._kernel import validate_epsilon
from .bench import resolve_methods as _resolve_bench_methods
from .bench import time_methods
from .errors import DataDependentParameterError, DphistError, PrivacyError, UnknownMethodError
from .methods import get_method, methods
from .release import Release
from .session import publish

__all__ = ["app", "main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PRIVACY = 0, 1, 2, 3
DEFAULT_PLOT = Path("dphist-demo.png")
DEMO_RANGES = 8

app = typer.Typer(
    name="dphist",
    help="Publish histograms under epsilon-differential privacy.",
    add_completion=False,
    invoke_without_command=True,
    pretty_exceptions_enable=False,
)


# --------------------------------------------------------------------------- formatting


def _exact(value: Fraction) -> str:
    """A rational as a decimal when it has a finite one (0.25), else as p/q (1/3)."""
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


# --------------------------------------------------------------------------- option parsers


def _parse_epsilon(value: str) -> Fraction:
    try:
        return validate_epsilon(value)
    except DphistError as exc:
        raise typer.BadParameter(str(exc)) from None


def _parse_method(value: str) -> str:
    try:
        return get_method(value).name
    except UnknownMethodError as exc:
        raise typer.BadParameter(str(exc)) from None


def _parse_method_or_auto(value: str) -> str:
    return "auto" if value.strip().lower() == "auto" else _parse_method(value)


def _parse_number(text: str) -> int | float | str:
    """``k=v`` values: an int, else a float, else the text itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _parse_params(items: Sequence[str] | None) -> dict[str, int | float | str]:
    params: dict[str, int | float | str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected k=v, got {item!r}", param_hint="'--param'")
        if key.strip() in params:
            raise typer.BadParameter(f"{key.strip()!r} given twice", param_hint="'--param'")
        params[key.strip()] = _parse_number(value.strip())
    return params


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dphist {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    """Publish histograms under epsilon-differential privacy."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


# --------------------------------------------------------------------------- demo


def _range_cells(label: str, true: np.ndarray, release: Release, lo: int, hi: int) -> list[str]:
    exact = int(true[lo:hi].sum())
    private = release.range_sum(lo, hi)
    return [label, f"{exact:,}", f"{private:,.1f}", f"{abs(private - exact):,.1f}"]


def _range_rows(true: np.ndarray, release: Release) -> Table:
    n = true.size
    bounds = np.linspace(0, n, min(DEMO_RANGES, n) + 1).round().astype(int)
    table = Table(title="Counts by range of bins")
    table.add_column("bins")
    table.add_column("true", justify="right")
    table.add_column("private", justify="right")
    table.add_column("abs. error", justify="right")
    for lo, hi in itertools.pairwise(int(b) for b in bounds):
        table.add_row(*_range_cells(f"{lo}-{hi - 1}", true, release, lo, hi))
    table.add_section()
    table.add_row(*_range_cells("all", true, release, 0, n))
    return table


def _ledger_table(release: Release) -> Table:
    table = Table(title="Ledger (every noisy measurement)")
    for name in ("block", "primitive", "values", "epsilon", "noise scale"):
        table.add_column(name, justify="left" if name in ("block", "primitive") else "right")
    for c in release.ledger:
        table.add_row(c.block, c.primitive, f"{c.size:,}", _exact(c.epsilon), _exact(c.scale))
    return table


class OutputError(DphistError):
    """An output file could not be written."""


def _write_plot(true: np.ndarray, release: Release, path: Path) -> str:
    """Write the comparison plot; the one-line outcome for the summary."""
    from .plot import plot_release

    try:
        written = plot_release(true, release, path, title="dphist demo")
    except ImportError as exc:
        return f"not written ({exc})"
    except OSError as exc:
        raise OutputError(f"cannot write the plot to {str(path)!r}: {exc.strerror or exc}") from exc
    return f"written to {written.resolve()}"


@app.command()
def demo(
    epsilon: Annotated[
        Fraction,
        typer.Option(
            parser=_parse_epsilon,
            metavar="EPS",
            help="Privacy budget (> 0), read exactly as typed: 0.1 is 1/10.",
        ),
    ] = Fraction(1),
    method: Annotated[
        str,
        typer.Option(parser=_parse_method, help="Method name or alias (see 'dphist methods')."),
    ] = "identity",
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Seed for reproducible noise. Seeded output is NOT private; "
            "omit it for secure noise.",
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            dir_okay=False,
            help="Where to write the comparison plot.",
            show_default=str(DEFAULT_PLOT),
        ),
    ] = None,
    no_plot: Annotated[bool, typer.Option("--no-plot", help="Do not write a plot.")] = False,
) -> None:
    """Publish a built-in example histogram and compare it with the truth."""
    if plot is not None and no_plot:
        raise typer.BadParameter("give either --plot PATH or --no-plot, not both")
    true = synthetic.demo_histogram()
    release = publish(true, epsilon=epsilon, method=method, rng=seed)
    plot_note = (
        "skipped (--no-plot)" if no_plot else _write_plot(true, release, plot or DEFAULT_PLOT)
    )

    console = _console()
    console.print(
        Text(
            f"dphist demo: {true.size} bins, {int(true.sum()):,} records, "
            f"method {release.method}, epsilon = {_exact(release.epsilon)}"
        )
    )
    console.print(_range_rows(true, release))
    mae = float(np.mean(np.abs(release.estimate - true)))
    console.print(Text(f"Mean absolute error per bin: {mae:.2f}"))
    console.print(_ledger_table(release))
    if release.private:
        mode = "yes (secure noise from the operating system)"
    else:
        mode = f"NO (seeded with --seed {seed}: reproducible, for experiments only)"
    console.print(Text(f"Private: {mode}"))
    console.print(Text(f"Guarantee: {release.guarantee}"))
    console.print(Text(f"Plot: {plot_note}"))


# --------------------------------------------------------------------------- methods


def _json_default(value: Any) -> Any:
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


@app.command("methods")
def list_methods(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the registered methods."""
    infos = methods()
    if as_json:
        payload = []
        for m in infos:
            split = m.budget_split()
            payload.append(
                {
                    "name": m.name,
                    "aliases": list(m.aliases),
                    "summary": m.summary,
                    "cite": m.cite,
                    "parameters": dict(m.defaults),
                    "blocks": [block for block, _ in split],
                    "budget_split": {block: str(q) for block, q in split},
                    "complexity": m.complexity,
                }
            )
        sys.stdout.write(json.dumps(payload, indent=2, default=_json_default) + "\n")
        return
    table = Table(title="Registered methods")
    for name in ("name", "paper", "blocks", "budget split", "complexity"):
        table.add_column(name, overflow="fold")
    for m in infos:
        split = m.budget_split()
        blocks = " → ".join(block for block, _ in split)
        shares = ", ".join(f"{block} {_exact(q)}" for block, q in split if q > 0)
        name = f"{m.name}\n({', '.join(m.aliases)})" if m.aliases else m.name
        table.add_row(name, m.cite, blocks, shares, m.complexity or "-")
    console = _console()
    console.print(table)
    console.print(
        Text(
            "Budget split: share of epsilon per measuring block (the others only "
            "post-process). Method 'auto' picks one of these from public facts: "
            "see 'dphist publish --help'."
        )
    )


# --------------------------------------------------------------------------- publish

OUTPUT_FORMATS = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
LEDGER_SUFFIX = ".ledger.json"
PREVIEW_ROWS = 10


def _output_format(path: Path) -> str:
    fmt = OUTPUT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise typer.BadParameter(
            f"cannot tell the output format of {str(path)!r}; use .json, .csv or .parquet",
            param_hint="'--out'",
        )
    return fmt


def _check_writable(path: Path, option: str) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"cannot write {option} {str(path)!r}: no directory {str(parent)!r}")
    if path.is_dir():
        raise OutputError(f"cannot write {option} {str(path)!r}: it is a directory")


def _binning(
    edges: str | None, categories: str | None, domain: str | None, bins: str | None
) -> ingest.Binning:
    """The one public binning the options name; data-derived requests are refused."""
    if bins is not None:
        raise DataDependentParameterError(
            f"--bins {bins!r} asks for bins derived from the data; {ingest.PUBLIC_BINS_HINT}"
        )
    given = [
        o
        for o, v in (("--edges", edges), ("--categories", categories), ("--domain", domain))
        if v is not None
    ]
    if len(given) > 1:
        raise typer.BadParameter(f"give one binning, not {' and '.join(given)}")
    if not given:
        raise DataDependentParameterError(f"no binning given; {ingest.PUBLIC_BINS_HINT}")
    if edges is not None:
        if edges.strip().lower() == "auto":
            raise DataDependentParameterError(
                f"--edges auto derives bins from the data; {ingest.PUBLIC_BINS_HINT}"
            )
        return ingest.Binning.from_edges(e for e in edges.split(",") if e.strip())
    if domain is not None:
        if domain.strip().lower() == "auto":
            raise DataDependentParameterError(
                f"--domain auto derives bins from the data; {ingest.PUBLIC_BINS_HINT}"
            )
        return ingest.parse_domain(domain)
    assert categories is not None
    if categories.startswith("@"):
        source = Path(categories[1:])
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise DphistError(
                f"cannot read categories from {str(source)!r}: {exc.strerror or exc}"
            ) from None
        return ingest.Binning.from_categories(line for line in text.splitlines() if line)
    return ingest.Binning.from_categories(c.strip() for c in categories.split(","))


def _bin_table(binning: ingest.Binning, release: Release) -> dict[str, list]:
    """Per-bin columns: index, label, lower and upper edge (None for categories), estimate."""
    n = binning.n
    if binning.edges is not None:
        lower, upper = binning.edges[:-1].tolist(), binning.edges[1:].tolist()
    else:
        lower = upper = [None] * n
    return {
        "bin": list(range(n)),
        "label": binning.labels(),
        "lower": lower,
        "upper": upper,
        "estimate": release.estimate.tolist(),
    }


def _provenance(column: str, binning: ingest.Binning, outside: str) -> dict[str, Any]:
    return {
        "format": "dphist-histogram/1",
        "column": column,
        "binning": binning.to_dict(),
        "outside_domain": outside,
        "missing_values": "dropped",
    }


def _release_record(release: Release) -> dict[str, Any]:
    """The release as written to files: everything but the per-block run times, which
    depend on the data and are not covered by the guarantee."""
    return {k: v for k, v in release.to_dict().items() if k != "timings"}


def _write_json(path: Path, meta: dict[str, Any], bins: dict[str, list], release: Release) -> None:
    rows = [dict(zip(bins, values, strict=True)) for values in zip(*bins.values(), strict=True)]
    payload = {**meta, "bins": rows, "release": _release_record(release)}
    text = json.dumps(payload, indent=1, default=_json_default) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _copy_bins(tmp: Path, bins: dict[str, list], fmt: str) -> None:
    """Write the per-bin table with DuckDB (one row per bin)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(
            "CREATE TABLE bins AS SELECT unnest($1::BIGINT[]) AS bin, "
            "unnest($2::VARCHAR[]) AS label, unnest($3::DOUBLE[]) AS lower, "
            "unnest($4::DOUBLE[]) AS upper, unnest($5::DOUBLE[]) AS estimate",
            [bins["bin"], bins["label"], bins["lower"], bins["upper"], bins["estimate"]],
        )
        target = "'" + str(tmp).replace("'", "''") + "'"
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
        con.execute(f"COPY (SELECT * FROM bins ORDER BY bin) TO {target} ({options})")
    except duckdb.Error as exc:
        raise OSError(str(exc).strip().splitlines()[0]) from None
    finally:
        con.close()


def _write_table(
    path: Path, fmt: str, meta: dict[str, Any], bins: dict[str, list], release: Release
) -> Path:
    """Per-bin table at ``path`` and the ledger in ``path + .ledger.json``, both atomic."""
    sidecar = path.with_name(path.name + LEDGER_SUFFIX)
    record = {k: v for k, v in _release_record(release).items() if k != "estimate"}
    text = json.dumps({**meta, "table": path.name, "release": record}, indent=1) + "\n"
    with atomic_path(path) as tmp_table, atomic_path(sidecar) as tmp_ledger:
        _copy_bins(tmp_table, bins, fmt)
        tmp_ledger.write_text(text, encoding="utf-8")
    return sidecar


def _write_estimate_plot(release: Release, labels: list[str], path: Path, column: str) -> str:
    """Plot the private estimate only (the true counts never leave the kernel)."""
    try:
        from .plot import _matplotlib

        figure_cls, canvas_cls = _matplotlib()
    except ImportError as exc:
        return f"not written ({exc})"
    fig = figure_cls(figsize=(10.0, 4.8), dpi=110, layout="constrained")
    canvas = canvas_cls(fig)
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt not in canvas.get_supported_filetypes():
        raise typer.BadParameter(
            f"cannot write a plot as {path.suffix!r}; use .png, .svg or .pdf",
            param_hint="'--plot'",
        )
    ax = fig.add_subplot()
    ax.stairs(release.estimate, np.arange(release.n + 1), color="tab:red", label="estimate")
    ax.axhline(0.0, color="0.25", linewidth=0.8)
    ax.set_xlim(0, release.n)
    if release.n <= 30:
        ax.set_xticks(np.arange(release.n) + 0.5, labels, rotation=45, ha="right")
    ax.set_xlabel(f"bin of {column}")
    ax.set_ylabel("private count")
    mode = "secure noise" if release.private else "seeded, NOT private"
    ax.set_title(f"{column}: {release.method}, ε = {float(release.epsilon):g} ({mode})")
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt))
    except OSError as exc:
        raise OutputError(f"cannot write the plot to {str(path)!r}: {exc.strerror or exc}") from exc
    return f"written to {path.resolve()}"


def _preview(binning: ingest.Binning, release: Release) -> Table:
    table = Table(title="Private histogram")
    table.add_column("bin", justify="right")
    table.add_column("label")
    table.add_column("estimate", justify="right")
    labels = binning.labels()
    n = binning.n
    shown = (
        range(n)
        if n <= 2 * PREVIEW_ROWS
        else [*range(PREVIEW_ROWS), -1, *range(n - PREVIEW_ROWS, n)]
    )
    for i in shown:
        if i < 0:
            table.add_row("…", "…", "…")
        else:
            table.add_row(str(i), labels[i], f"{release.estimate[i]:,.2f}")
    return table


@app.command("publish")
def publish_file(
    source: Annotated[
        Path, typer.Argument(metavar="INPUT", help="CSV (with a header row) or Parquet file.")
    ],
    column: Annotated[str, typer.Option("--column", "-c", help="Column to count.")],
    epsilon: Annotated[
        Fraction,
        typer.Option(
            parser=_parse_epsilon,
            metavar="EPS",
            help="Privacy budget (> 0), read exactly as typed: 0.1 is 1/10.",
        ),
    ],
    method: Annotated[
        str,
        typer.Option(
            parser=_parse_method_or_auto,
            help="Method name or alias (see 'dphist methods'), or 'auto'.",
        ),
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
        str | None,
        typer.Option(hidden=True, help="Refused: bins must be public, not derived from data."),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", metavar="K=V", help="Method parameter (repeatable)."),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            metavar="KIND|LENGTH",
            help="For --method auto: point, categorical, short, medium, long, mixed, or a "
            "typical query length in bins. Default: categorical with --categories, else mixed.",
        ),
    ] = None,
    time_budget: Annotated[
        float | None,
        typer.Option(metavar="SECONDS", min=0.0, help="For --method auto: time budget."),
    ] = None,
    outside: Annotated[
        str | None,
        typer.Option(
            metavar="clip|drop",
            help="Values outside the bins: clip into the end bins (default for edges and "
            "domains) or drop (the only choice for categories). Missing values are dropped.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            dir_okay=False,
            help="Write .json (bins + release), .csv or .parquet (bins; ledger in "
            "FILE.ledger.json).",
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(metavar="PNG", dir_okay=False, help="Plot the private estimate."),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Seed for reproducible noise. Seeded output is NOT private; "
            "omit it for secure noise.",
        ),
    ] = None,
) -> None:
    """Count one column of a file over public bins and publish it privately."""
    binning = _binning(edges, categories, domain, bins)
    if outside is not None and outside not in ingest.OUTSIDE_POLICIES:
        raise typer.BadParameter("must be clip or drop", param_hint="'--outside'")
    policy = outside or ("clip" if binning.numeric else "drop")
    params: dict[str, Any] = _parse_params(param)
    if method == "auto":
        if params:
            raise typer.BadParameter("--method auto chooses the parameters; drop --param")
        kind: object = workload or ("categorical" if not binning.numeric else None)
        if isinstance(kind, str):
            number = _parse_number(kind)
            kind = number if isinstance(number, int | float) else kind
        params = {"workload": kind, "time_budget": time_budget}
    else:
        if workload is not None or time_budget is not None:
            raise typer.BadParameter("--workload and --time-budget apply to --method auto only")
        try:
            get_method(method).pipeline(**params)
        except DphistError as exc:
            raise typer.BadParameter(str(exc), param_hint="'--param'") from None
    fmt = _output_format(out) if out is not None else None
    if out is not None:
        _check_writable(out, "--out")
    if plot is not None:
        _check_writable(plot, "--plot")

    counts = ingest.count_file(source, column, binning, outside=policy)
    release = publish(counts, epsilon=epsilon, method=method, rng=seed, **params)
    del counts
    meta = _provenance(column, binning, policy)
    table = _bin_table(binning, release)
    written = []
    if out is not None:
        try:
            if fmt == "json":
                _write_json(out, meta, table, release)
                written.append(f"release written to {out.resolve()}")
            else:
                sidecar = _write_table(out, fmt, meta, table, release)
                written.append(f"bins written to {out.resolve()}; ledger to {sidecar.resolve()}")
        except OSError as exc:
            raise OutputError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
    plot_note = _write_estimate_plot(release, table["label"], plot, column) if plot else None

    console = _console()
    console.print(
        Text(
            f"dphist publish: column {column!r}, {binning.spec}, method {release.method}, "
            f"epsilon = {_exact(release.epsilon)}"
        )
    )
    if "auto" in release.params:
        console.print(Text(f"Chosen by auto: {release.params['auto']}"))
    if out is None:
        console.print(_preview(binning, release))
    console.print(_ledger_table(release))
    outside_note = "clipped into the end bins" if policy == "clip" else "dropped"
    console.print(
        Text(
            f"Values outside the bins: {outside_note}; missing values: dropped (counts of "
            "either are not private and are not reported)"
        )
    )
    if release.private:
        mode = "yes (secure noise from the operating system)"
    else:
        mode = f"NO (seeded with --seed {seed}: reproducible, for experiments only)"
    console.print(Text(f"Private: {mode}"))
    console.print(Text(f"Guarantee: {release.guarantee}"))
    for line in written:
        console.print(Text(f"Output: {line}"))
    if plot_note is not None:
        console.print(Text(f"Plot: {plot_note}"))


# --------------------------------------------------------------------------- bench


@app.command("bench")
def bench(
    n: Annotated[int, typer.Option("--n", min=1, help="Number of bins.")] = 4096,
    methods_: Annotated[
        str, typer.Option("--methods", metavar="M1,M2|all", help="Methods to time.")
    ] = "all",
    repeats: Annotated[int, typer.Option(min=1, help="Runs per method (median).")] = 3,
    epsilon: Annotated[
        Fraction,
        typer.Option(parser=_parse_epsilon, metavar="EPS", help="Privacy budget of each run."),
    ] = Fraction(1, 10),
) -> None:
    """Median run time of methods on a synthetic histogram (JIT warm-up excluded)."""
    try:
        names = _resolve_bench_methods(methods_)
    except UnknownMethodError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--methods'") from None
    results = time_methods(names, n, epsilon=epsilon, repeats=repeats)
    table = Table(
        title=f"Median seconds over {repeats} run(s), {n:,} bins (synthetic spiky), "
        f"epsilon = {_exact(epsilon)}"
    )
    for name in ("method", "complexity", "seconds"):
        table.add_column(name, justify="right" if name == "seconds" else "left")
    for t in results:
        seconds = f"{t.seconds:.4f}" if not t.error else f"({t.error})"
        table.add_row(t.method, get_method(t.method).complexity or "-", seconds)
    _console().print(table)


# --------------------------------------------------------------------------- reproduce


def _paper_names() -> list[str]:
    from .reproduce import PAPERS

    return sorted(PAPERS)


@app.command("reproduce")
def reproduce(
    paper: Annotated[str, typer.Argument(help="A paper's short name, or 'all'.")],
    out: Annotated[
        Path, typer.Option(metavar="DIR", file_okay=False, help="Folder for the reports.")
    ] = Path("dphist-reports"),
    trials: Annotated[int | None, typer.Option(min=1, help="Trials per cell.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
    quick: Annotated[
        bool, typer.Option("--quick", help="Tiny data and few trials (seconds).")
    ] = False,
    data_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Folder of the research datasets (default: found)."),
    ] = None,
) -> None:
    """Rerun a paper's key experiments and write a Markdown report with figures.

    Each report lists the paper's claims beside ours ("reproduced" / "differs", and
    why). Results are kept in DIR/PAPER/results.csv, so an interrupted run resumes.
    """
    import inspect
    import time

    from .reproduce import PAPERS

    names = sorted(PAPERS) if paper == "all" else [paper]
    for name in names:
        if name not in PAPERS:
            raise typer.BadParameter(
                f"unknown paper {name!r}; choose from {', '.join(_paper_names())} or 'all'",
                param_hint="'PAPER'",
            )
    console = _console()
    for name in names:
        run = PAPERS[name]
        options: dict[str, Any] = {"workers": workers, "quick": quick, "data_dir": data_dir}
        if trials is not None:
            options["trials"] = trials
        if "progress" in inspect.signature(run).parameters:
            options["progress"] = sys.stderr.isatty()
        start = time.perf_counter()
        path = run(out / name, **options)
        console.print(Text(f"{name}: {path} ({time.perf_counter() - start:.1f} s)"))


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


def _write_group_release(path: Path, release: Any) -> None:
    ledger = [c.to_dict() for c in release.ledger]
    meta = {
        "epsilon": str(release.epsilon),
        "methods": list(release.methods),
        "K": release.k,
        "merge": release.merge,
        "private": release.private,
        "guarantee": release.guarantee,
        "ledger": ledger,
    }
    rows = _group_rows(release)
    fmt = path.suffix.lower()
    if fmt == ".json":
        text = json.dumps({**meta, "histograms": rows}, default=_json_default, indent=1)
        atomic_write(path, lambda tmp: tmp.write_text(text + "\n"))
    elif fmt == ".csv":
        lines = ["level,region,size,groups"]
        for r in rows:
            region = r["region"].replace('"', '""')
            lines.append(f'{r["level"]},"{region}",{r["size"]},{r["groups"]}')
        side = path.with_name(path.name + ".ledger.json")
        atomic_write(side, lambda tmp: tmp.write_text(json.dumps(meta, default=_json_default)))
        atomic_write(path, lambda tmp: tmp.write_text("\n".join(lines) + "\n"))
    else:
        raise typer.BadParameter("use a .json or .csv file", param_hint="'--out'")


@app.command("groupsize")
def groupsize(
    groups: Annotated[
        Path | None,
        typer.Argument(help="Groups table (CSV/Parquet): group id and its region per level."),
    ] = None,
    levels: Annotated[
        str | None,
        typer.Option(metavar="COL1,COL2", help="Region columns below the root, coarsest first."),
    ] = None,
    group_column: Annotated[str, typer.Option(help="Group id column.")] = "group_id",
    entities: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Entities table: one row per entity with its group id."),
    ] = None,
    size_column: Annotated[
        str | None, typer.Option(metavar="COL", help="Group sizes given in the groups table.")
    ] = None,
    epsilon: Annotated[
        Fraction,
        typer.Option(parser=_parse_epsilon, metavar="EPS", help="Total privacy budget."),
    ] = Fraction(1),
    method: Annotated[
        str,
        typer.Option(
            metavar="M|M1,M2,...",
            help="cumulative, ranked or naive; or one per level, root first.",
        ),
    ] = "cumulative",
    k: Annotated[
        int, typer.Option("--K", min=1, help="Public cap on group sizes (never from the data).")
    ] = 10_000,
    m0: Annotated[int, typer.Option(min=0, help="Public minimum group size.")] = 0,
    merge: Annotated[str, typer.Option(help="weighted or mean.")] = "weighted",
    seed: Annotated[
        int | None, typer.Option(min=0, help="Seed (reproducible, NOT private).")
    ] = None,
    out: Annotated[Path | None, typer.Option(metavar="FILE", help="Output .csv or .json.")] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="Compare the methods on synthetic housing data.")
    ] = False,
) -> None:
    """Publish group-size histograms over a region hierarchy (Kuo et al., PVLDB 2018).

    Every region's histogram of group sizes is released with integer counts that
    match the public number of groups and add up from counties to states to the
    nation. With --demo, compares the methods on synthetic data instead.
    """
    from . import groupsize as gs

    console = _console()
    if demo:
        if groups is not None:
            raise typer.BadParameter("give either a groups table or --demo, not both")
        rows = gs.run_demo(epsilon=float(epsilon), seed=0 if seed is None else seed)
        table = Table(title=f"Mean EMD per region (synthetic housing, epsilon = {_exact(epsilon)})")
        for name in ("method", "merge", "level", "EMD", "seconds"):
            table.add_column(name, justify="right" if name in ("EMD", "seconds") else "left")
        for r in rows:
            table.add_row(
                r["method"], r["merge"], str(r["level"]), f"{r['emd']:,.1f}", f"{r['seconds']:.2f}"
            )
        console.print(table)
        return
    if groups is None or levels is None:
        raise typer.BadParameter("give a groups table and --levels (or --demo)")
    if (entities is None) == (size_column is None):
        raise typer.BadParameter("give the sizes with either --entities or --size-column")
    if out is not None and out.suffix.lower() not in (".csv", ".json"):
        raise typer.BadParameter("use a .json or .csv file", param_hint="'--out'")
    data = ingest.read_group_tables(
        groups,
        [c.strip() for c in levels.split(",")],
        group_column=group_column,
        entities=entities,
        size_column=size_column,
    )
    methods_ = method.split(",") if "," in method else method
    release = gs.publish_group_sizes(
        data, epsilon=epsilon, method=methods_, K=k, m0=m0, merge=merge, rng=seed
    )
    if out is not None:
        _write_group_release(out, release)
    summary = Table(title="Released group-size histograms (first regions)")
    for name in ("level", "region", "groups", "sizes 0..9"):
        summary.add_column(name)
    labels = release.hierarchy.labels
    for node, hist in list(enumerate(release.histograms))[:12]:
        summary.add_row(
            str(int(release.hierarchy.level[node])),
            str(labels[node]) if labels else str(node),
            f"{int(hist.sum()):,}",
            " ".join(str(int(v)) for v in hist[:10]),
        )
    console.print(summary)
    console.print(Text(f"Private: {'yes' if release.private else 'NO (seeded)'}"))
    console.print(Text(f"Guarantee: {release.guarantee}"))
    if out is not None:
        console.print(Text(f"Written: {out.resolve()}"))


# --------------------------------------------------------------------------- entry point


def _fail(message: str, code: int) -> int:
    print(message, file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = command.main(args=args, prog_name="dphist", standalone_mode=False)
    except typer.TyperException as exc:  # usage errors carry exit code 2
        code = getattr(exc, "exit_code", EXIT_ERROR)
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "dphist"
        hint = f" (see '{where} --help')" if ctx is not None and code == EXIT_USAGE else ""
        return _fail(f"{where}: error: {exc.format_message()}{hint}", code)
    except typer.Abort:
        return _fail("dphist: aborted", EXIT_ERROR)
    except PrivacyError as exc:
        return _fail(f"dphist: privacy error: {exc}", EXIT_PRIVACY)
    except DphistError as exc:
        return _fail(f"dphist: error: {exc}", EXIT_ERROR)
    return result if isinstance(result, int) else EXIT_OK
