"""What every command needs and nothing heavy: the Typer app, option types, usage
errors, printing. The budget commands start from this module alone (no numpy)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from fractions import Fraction
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from .. import __version__
from .._exact import exact_text as exact
from .._exact import validate_epsilon
from ..definitions import PureDP, zCDP
from ..errors import DphistError

__all__ = [
    "Delta",
    "Epsilon",
    "OptionalEpsilon",
    "Rho",
    "Seed",
    "UsageError",
    "app",
    "budget",
    "exact",
    "new_console",
    "parse_delta",
    "parse_epsilon",
    "parse_rho",
    "say",
    "usage",
]

app = typer.Typer(
    name="dphist",
    help="Publish histograms under epsilon-differential privacy.",
    add_completion=False,
    invoke_without_command=True,
    pretty_exceptions_enable=False,
)


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


def say(console: Console, *lines: str) -> None:
    for line in lines:
        console.print(Text(line))


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
