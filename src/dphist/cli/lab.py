"""``dphist bench`` and ``dphist reproduce``: the lab, imported only when used."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..methods import get_method
from .common import Epsilon, app, exact, new_console, say, usage


@app.command("bench")
def bench(
    n: Annotated[int, typer.Option("--n", min=1, help="Number of bins.")] = 4096,
    methods_: Annotated[
        str, typer.Option("--methods", metavar="M1,M2|all", help="Methods to time.")
    ] = "all",
    repeats: Annotated[int, typer.Option(min=1, help="Runs per method (median).")] = 3,
    epsilon: Epsilon = Fraction(1, 10),
) -> None:
    """Median run time of methods on a synthetic histogram (JIT warm-up excluded)."""
    from ..lab.bench import resolve_methods, time_methods

    with usage("'--methods'"):
        names = resolve_methods(methods_)
    results = time_methods(names, n, epsilon=epsilon, repeats=repeats)
    title = f"Median seconds over {repeats} run(s), {n:,} bins (synthetic spiky)"
    table = Table(title=f"{title}, epsilon = {exact(epsilon)}")
    for name in ("method", "complexity", "seconds"):
        table.add_column(name, justify="right" if name == "seconds" else "left")
    for t in results:
        seconds = f"{t.seconds:.4f}" if not t.error else f"({t.error})"
        table.add_row(t.method, get_method(t.method).complexity or "-", seconds)
    new_console().print(table)


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

    from ..lab.reproduce import PAPERS
    from ..lab.reproduce.report import claim_lines

    names = sorted(PAPERS) if paper == "all" else [paper]
    unknown = [name for name in names if name not in PAPERS]
    if unknown:
        raise typer.BadParameter(
            f"unknown paper {unknown[0]!r}; choose from {', '.join(sorted(PAPERS))} or 'all'",
            param_hint="'PAPER'",
        )
    console = new_console()
    for name in names:
        run = PAPERS[name]
        options: dict[str, Any] = {"workers": workers, "quick": quick, "data_dir": data_dir}
        if trials is not None:
            options["trials"] = trials
        if "progress" in inspect.signature(run).parameters:
            options["progress"] = sys.stderr.isatty()
        start = time.perf_counter()
        path = run(out / name, **options)
        say(console, f"{name}: {path} ({time.perf_counter() - start:.1f} s)")
        say(console, *(f"  {line}" for line in claim_lines(path.read_text(encoding="utf-8"))))
