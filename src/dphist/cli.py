"""The ``dphist`` command line.

Commands stay thin: they read options, call the library and print. Exit codes:
0 success, 2 usage error (unknown option, bad value), 3 privacy error
(:class:`~dphist.errors.PrivacyError`), 1 any other dphist error or an output file
that cannot be written. Errors are reported as one line on stderr.
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

from . import __version__, synthetic
from ._kernel import validate_epsilon
from .errors import DphistError, PrivacyError, UnknownMethodError
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
        payload = [
            {
                "name": m.name,
                "aliases": list(m.aliases),
                "summary": m.summary,
                "cite": m.cite,
                "parameters": dict(m.defaults),
            }
            for m in infos
        ]
        sys.stdout.write(json.dumps(payload, indent=2, default=_json_default) + "\n")
        return
    table = Table(title="Registered methods")
    for name in ("name", "aliases", "summary", "citation"):
        table.add_column(name, overflow="fold")
    for m in infos:
        table.add_row(m.name, ", ".join(m.aliases) or "-", m.summary, m.cite)
    _console().print(table)


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
