"""``dphist demo`` and ``dphist methods``: the built-in example and the registry."""

from __future__ import annotations

import itertools
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from .. import export, synthetic
from ..methods import list_methods
from ..methods.guide import when_to_use
from ..release import Release
from ..session import publish
from ..twod import list_grid_methods
from .common import (
    Epsilon,
    Seed,
    app,
    error_summary,
    exact,
    ledger_table,
    new_console,
    parse_method,
    say,
    status,
    usage,
)

DEFAULT_PLOT = Path("dphist-demo.png")


def _range_table(true: np.ndarray, release: Release) -> Table:
    n = true.size
    bars = release.stderr is not None
    table = Table(title="Counts by range of bins")
    names = ["bins", "true", "private", "abs. error"]
    names += ["stderr", "95% interval", "holds"] if bars else []
    for name in names:
        table.add_column(name, justify="left" if name == "bins" else "right")
    bounds = np.linspace(0, n, min(8, n) + 1).round().astype(int)
    spans = [(f"{lo}-{hi - 1}", lo, hi) for lo, hi in itertools.pairwise(bounds.tolist())]
    for label, lo, hi in [*spans, ("all", 0, n)]:
        exact, private = int(true[lo:hi].sum()), release.range_sum(lo, hi)
        row = [label, f"{exact:,}", f"{private:,.1f}", f"{abs(private - exact):,.1f}"]
        if bars:
            low, high = release.interval(lo, hi)
            row += [
                f"±{release.range_stderr(lo, hi):,.1f}",
                f"{low:,.0f} to {high:,.0f}",
                "yes" if low <= exact <= high else "no",
            ]
        if label == "all":
            table.add_section()
        table.add_row(*row)
    return table


@app.command()
def demo(
    epsilon: Epsilon = Fraction(1),
    method: Annotated[
        str, typer.Option(parser=parse_method, help="Method name or alias ('dphist methods').")
    ] = "identity",
    seed: Seed = None,
    plot: Annotated[
        Path | None,
        typer.Option(metavar="PATH", dir_okay=False, help="Where to write the comparison plot."),
    ] = None,
    no_plot: Annotated[bool, typer.Option("--no-plot", help="Do not write a plot.")] = False,
) -> None:
    """Publish a built-in example histogram and compare it with the truth."""
    if plot is not None and no_plot:
        raise typer.BadParameter("give either --plot PATH or --no-plot, not both")
    target = None if no_plot else (plot or DEFAULT_PLOT)
    note = "skipped (--no-plot)"
    if target is not None:
        try:
            from ..plot import plot_format

            plot_format(target)
            note = f"written to {target.resolve()}"
        except ImportError as exc:
            note, target = f"not written ({exc})", None
        with usage("'--plot'"):
            if target is not None:
                export.check_writable(target, "plot")
    true = synthetic.demo_histogram()
    release = publish(true, epsilon=epsilon, method=method, rng=seed)
    if target is not None:
        from ..plot import plot_release

        try:
            plot_release(true, release, target, title="dphist demo")
        except OSError as exc:
            raise export.OutputError(
                f"cannot write the plot to {str(target)!r}: {exc.strerror or exc}"
            ) from None
    console = new_console()
    say(
        console,
        f"dphist demo: {true.size} bins, {int(true.sum()):,} records, method "
        f"{release.method}, epsilon = {exact(release.epsilon)}",
    )
    console.print(_range_table(true, release))
    mae = float(np.mean(np.abs(release.estimate - true)))
    say(console, f"Mean absolute error per bin: {mae:.2f}", *error_summary(release))
    if release.stderr is not None:
        lower, upper = release.intervals()
        held = float(np.mean((lower <= true) & (true <= upper)))
        say(console, f"The 95% intervals hold the true count of {held:.0%} of the bins.")
    console.print(ledger_table(release))
    say(console, *status(release, seed), f"Plot: {note}")


@app.command("methods")
def methods_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    grid: Annotated[bool, typer.Option("--2d", help="List the 2-D methods.")] = False,
    long: Annotated[
        bool, typer.Option("--long", help="Paper, blocks, budget split and complexity.")
    ] = False,
) -> None:
    """List the registered methods: one line each, what it does and when to use it."""
    rows = []
    for m in list_grid_methods() if grid else list_methods():
        split = m.budget_split()
        rows.append((m, split))
    if as_json:
        payload = [
            {
                "name": m.name,
                "aliases": list(m.aliases),
                "summary": m.summary,
                "use": None if grid else when_to_use(m.name)[1],
                "cite": m.cite,
                "parameters": dict(m.defaults),
                "blocks": [block for block, _ in split],
                "budget_split": {block: str(q) for block, q in split},
                "complexity": m.complexity,
            }
            for m, split in rows
        ]
        sys.stdout.write(json.dumps(payload, indent=2, default=export.json_default) + "\n")
        return
    console = new_console()
    if grid and not long:
        width = max(len(m.name) for m, _ in rows)
        for m, _ in rows:
            say(console, f"{m.name:<{width}} {m.summary}")
        say(
            console,
            "Any 1-D method runs along the Hilbert curve as 'hilbert:NAME'; --long: papers.",
        )
        return
    if not long:
        width = max(len(m.name) for m, _ in rows)
        say(console, f"{'method':<{width}} {'what it does':<28} use it for")
        for m, _ in rows:
            what, use = when_to_use(m.name)
            say(console, f"{m.name:<{width}} {what:<28} {use}")
        say(
            console,
            "Method 'auto' (the default of 'dphist publish') chooses among these; 'dphist plan' "
            "gives the epsilon a target accuracy needs; --long for papers, blocks and budgets.",
        )
        return
    table = Table(title="Registered methods")
    for name in ("name", "paper", "blocks", "budget split", "complexity"):
        table.add_column(name, overflow="fold")
    for m, split in rows:
        blocks = " → ".join(block for block, _ in split)
        shares = ", ".join(f"{block} {exact(q)}" for block, q in split if q > 0)
        name = f"{m.name}\n({', '.join(m.aliases)})" if m.aliases else m.name
        table.add_row(name, m.cite, blocks, shares, m.complexity or "-")
    console.print(table)
    say(
        console,
        "Budget split: share of epsilon per measuring block (the others only post-process). "
        "Method 'auto' picks one of these from public facts: see 'dphist publish --help'.",
    )
