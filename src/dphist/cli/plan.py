"""``dphist plan``: the budget each data-independent method needs for a target accuracy."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .._kernel.zcdp import approx_dp_epsilon
from ..accuracy import epsilon_for, linear_methods, resolve_workload
from ..uncertainty import check_alpha
from .common import app, new_console, parse_method, say, usage


def _workload(text: str) -> object:
    text = text.strip()
    return int(text) if text.isdigit() else text


@app.command("plan")
def plan(
    n: Annotated[int, typer.Option("--n", min=1, help="Number of bins.")],
    target: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Largest error wanted: the half-width at 1 - alpha (the RMSE with --rmse).",
        ),
    ],
    workload: Annotated[
        str, typer.Option(metavar="KIND|LENGTH", help="point, ranges, prefix or a range length.")
    ] = "ranges",
    alpha: Annotated[float, typer.Option(help="1 - alpha is the confidence.")] = 0.05,
    rmse: Annotated[bool, typer.Option("--rmse", help="Target the RMSE instead.")] = False,
    delta: Annotated[
        float | None,
        typer.Option(
            help="Also compare zCDP: the rho each method needs and the "
            "(epsilon, delta)-DP it implies."
        ),
    ] = None,
    methods: Annotated[
        str | None, typer.Option(metavar="A,B,...", help="Methods (default: all that apply).")
    ] = None,
) -> None:
    """The privacy budget each data-independent method needs for an accuracy target.

    Nothing is read and nothing is spent: the error of these methods is known before
    release. With --delta, pure epsilon-DP is compared with zCDP at that delta.
    """
    with usage():
        if not target > 0:
            raise typer.BadParameter("--target must be positive")
        check_alpha(alpha)
        if delta is not None and not 0 < delta < 1:
            raise typer.BadParameter("--delta must lie strictly between 0 and 1")
        kind = _workload(workload)
        resolve_workload(kind, n)
        names = linear_methods() if methods is None else [
            parse_method(m) for m in methods.split(",") if m.strip()
        ]  # fmt: skip
        for name in names:
            if name not in linear_methods():
                raise typer.BadParameter(
                    f"{name}'s error depends on the data; plan covers {', '.join(linear_methods())}"
                )
    a = None if rmse else alpha
    what = "RMSE" if rmse else f"{1 - alpha:.0%} half-width"
    table = Table(title=f"Budget for a {what} of {target:g} per query ({workload}, n = {n:,})")
    columns = ["method", "epsilon (pure DP)"]
    if delta is not None:
        columns += ["rho (zCDP)", f"its epsilon at delta={delta:g}", "needs less epsilon"]
    for c in columns:
        table.add_column(c, justify="left" if c in ("method", "needs less epsilon") else "right")
    for name in names:
        eps = epsilon_for(name, n, target, kind, a)
        row = [name, f"{eps:g}"]
        if delta is not None:
            rho = epsilon_for(name, n, target, kind, a, definition="zcdp")
            implied = approx_dp_epsilon(rho, delta)
            row += [f"{rho:g}", f"{implied:.3g}", "zCDP" if implied < eps else "pure DP"]
        table.add_row(*row)
    console = new_console()
    console.print(table)
    say(
        console,
        "Exact for these methods (their error does not depend on the data); the budget is "
        "rounded up to three significant digits. Grouping methods can do better on "
        "suitable data but their error cannot be known before release.",
    )
