"""What every command shares: the Typer app, option types, usage errors, printing."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import typer
from rich.table import Table as RichTable

from .. import export
from ..definitions import zCDP
from ..errors import DphistError, UnknownMethodError
from ..export import noise_decimals
from ..methods import get_method
from ..release import Release
from ..table import Table, total_interval, typical_half_width
from ..twod import grid_method
from .base import (  # noqa: F401 (what every command shares, re-exported)
    Delta,
    Epsilon,
    OptionalEpsilon,
    Rho,
    Seed,
    UsageError,
    app,
    budget,
    exact,
    new_console,
    parse_delta,
    parse_epsilon,
    parse_rho,
    say,
    usage,
)


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
