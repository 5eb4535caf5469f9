"""What every command shares: the Typer app, option types, usage errors, printing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from .. import PureDP, __version__, export, zCDP
from .._kernel import validate_epsilon
from ..errors import DphistError, UnknownMethodError
from ..export import noise_decimals
from ..methods import get_method
from ..release import Release
from ..table import Table, total_interval, typical_half_width
from ..twod import grid_method

app = typer.Typer(
    name="dphist",
    help="Publish histograms under epsilon-differential privacy.",
    add_completion=False,
    invoke_without_command=True,
    pretty_exceptions_enable=False,
)


def exact(value: Fraction) -> str:
    """A rational as a decimal when it has a finite one (0.25), else as p/q (1/3)."""
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def new_console() -> Console:
    return Console(highlight=False, soft_wrap=False)


class UsageError(Exception):
    """A bad command line found while checking options (exit code 2)."""


@contextlib.contextmanager
def usage(option: str | None = None) -> Iterator[None]:
    """Errors raised while checking options are usage errors (exit code 2)."""
    try:
        yield
    except (DphistError, ImportError) as exc:
        if option is None:
            raise UsageError(str(exc)) from None
        raise typer.BadParameter(str(exc), param_hint=option) from None


def parse_epsilon(value: str) -> Fraction:
    try:
        return validate_epsilon(value)
    except DphistError as exc:
        raise typer.BadParameter(str(exc)) from None


def parse_rho(value: str) -> Fraction:
    try:
        return validate_epsilon(value, name="rho")
    except DphistError as exc:
        raise typer.BadParameter(str(exc)) from None


def parse_delta(value: str) -> float:
    try:
        delta = float(value)
    except ValueError:
        raise typer.BadParameter(f"delta must be a number in (0, 1); got {value!r}") from None
    if not 0 < delta < 1:
        raise typer.BadParameter(f"delta must lie in (0, 1); got {value!r}")
    return delta


def budget(
    epsilon: Fraction | None, rho: Fraction | None, default: Fraction | None = None
) -> PureDP | zCDP:
    """The privacy definition from ``--epsilon`` or ``--rho`` (exactly one; ``default``
    is the epsilon when neither is given and the command has one)."""
    if epsilon is not None and rho is not None:
        raise typer.BadParameter("give either --epsilon (pure DP) or --rho (zCDP), not both")
    if rho is not None:
        return zCDP(rho)
    if epsilon is None and default is None:
        raise typer.BadParameter("give --epsilon (pure DP) or --rho (zCDP)")
    return PureDP(default if epsilon is None else epsilon)


def budget_lines(spent: object, definition: str, delta: float | None) -> list[str]:
    """What a release spent, and the (epsilon, delta) it implies when ``--delta`` is given."""
    if definition == "zcdp":
        lines = [f"Budget: rho = {exact(spent)} (zero-concentrated DP)"]
        if delta is not None:
            eps = zCDP(spent).epsilon_at(delta)
            lines.append(f"Implies ({eps:.6g}, {delta:g})-DP (tight conversion of rho)")
        return lines
    lines = [f"Budget: epsilon = {exact(spent)} (pure DP)"]
    if delta is not None:
        lines.append(f"Implies ({float(spent):g}, {delta:g})-DP (pure DP holds for every delta)")
    return lines


def delta_record(spent: object, definition: str, delta: float | None) -> dict[str, Any]:
    """The implied (epsilon, delta) for an output file (nothing without ``--delta``)."""
    if delta is None:
        return {}
    eps = zCDP(spent).epsilon_at(delta) if definition == "zcdp" else float(spent)
    return {"delta": delta, "epsilon_at_delta": eps}


def parse_method(value: str) -> str:
    if value.strip().lower() == "auto":
        return "auto"
    try:
        return get_method(value).name
    except UnknownMethodError as exc:
        try:  # a 2-D method (publish --column A,B)
            return grid_method(value).name
        except DphistError:
            raise typer.BadParameter(str(exc)) from None


def parse_params(items: Sequence[str] | None) -> dict[str, int | float | str]:
    """``k=v`` settings: each value an int, else a float, else the text."""
    params: dict[str, int | float | str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise typer.BadParameter(f"expected k=v, got {item!r}", param_hint="'--param'")
        if key in params:
            raise typer.BadParameter(f"{key!r} given twice", param_hint="'--param'")
        params[key] = number(value.strip())
    return params


def number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def status(release: Any, seed: int | None) -> list[str]:
    mode = (
        "yes (secure noise from the operating system)"
        if release.private
        else f"NO (seeded with --seed {seed}: reproducible, for experiments only)"
    )
    return [f"Private: {mode}", f"Guarantee: {release.guarantee}"]


def say(console: Console, *lines: str) -> None:
    for line in lines:
        console.print(Text(line))


def error_summary(release: Release, table: Table | None = None, alpha: float = 0.05) -> list[str]:
    """What the error bars of ``release`` (as shown in ``table``) look like, in a line or
    two: a bin's typical half-width (before lower limits rise to 0, which would flatter
    it) and the total's interval, which holds the total shown."""
    table = release.table("float", alpha) if table is None else table
    if table.stderr is None:
        reason = release.error_bars.removeprefix("nothing: ")
        return [f"Error bars: none. {reason[:1].upper()}{reason[1:]}."]
    d = noise_decimals(release, table)
    half = typical_half_width(release, alpha)
    lo_all, hi_all = total_interval(release, table)
    return [
        f"Error bars ({1 - alpha:.0%}): a bin's interval is typically ±{half:,.{d}f} (median "
        f"over bins); the total {table.total:,.{d}f} lies in [{lo_all:,.{d}f}, {hi_all:,.{d}f}].",
        f"They cover {table.covers}.",
    ]


def decimal(value: Fraction) -> str:
    """An exact rational as a short decimal for printing (the files keep it exact)."""
    text = exact(value)
    return text if "/" not in text and len(text) <= 10 else f"{float(value):.6g}"


def ledger_table(release: Release) -> RichTable:
    unit = "rho" if getattr(release, "definition", "pure") == "zcdp" else "epsilon"
    scale = "noise variance / scale" if unit == "rho" else "noise scale"
    table = RichTable(title="Ledger (every noisy measurement; exact values in the files)")
    for name in ("block", "primitive", "values", unit, scale):
        table.add_column(name, justify="left" if name in ("block", "primitive") else "right")
    for c in release.ledger:
        table.add_row(c.block, c.primitive, f"{c.size:,}", decimal(c.epsilon), decimal(c.scale))
    return table


def plot_target(path: Path | None, option: str = "--plot") -> str | None:
    """Check a plot path before any work; its image format."""
    if path is None:
        return None
    from ..plot import plot_format

    with usage(f"'{option}'"):
        export.check_writable(path, "plot")
        return plot_format(path)


Seed = Annotated[
    int | None,
    typer.Option(min=0, help="Seed for reproducible noise. Seeded output is NOT private; omit it."),
]
Epsilon = Annotated[
    Fraction,
    typer.Option(
        parser=parse_epsilon,
        metavar="EPS",
        help="Privacy budget (> 0), read exactly as typed: 0.1 is 1/10.",
    ),
]
OptionalEpsilon = Annotated[
    Fraction | None,
    typer.Option(
        "--epsilon",
        parser=parse_epsilon,
        metavar="EPS",
        help="Pure DP budget (> 0), read exactly as typed: 0.1 is 1/10.",
    ),
]
Rho = Annotated[
    Fraction | None,
    typer.Option(
        parser=parse_rho,
        metavar="RHO",
        help="Zero-concentrated DP budget instead of --epsilon (discrete Gaussian noise).",
    ),
]
Delta = Annotated[
    float | None,
    typer.Option(
        parser=parse_delta,
        metavar="D",
        help="Also print and record the (epsilon, delta)-DP the release implies at delta D.",
    ),
]


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Publish histograms under epsilon-differential privacy."""
    if version:
        typer.echo(f"dphist {__version__}")
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()
