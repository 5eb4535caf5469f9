"""``dphist budget``: durable privacy budgets, one per data set (docs/budget.md).

``init`` creates a budget, ``show`` prints one with a line per release, ``list`` all of
them, ``check`` runs the store's integrity check, ``backup`` copies a SQLite store.
``--budget NAME`` on ``publish`` and ``groupsize`` goes through :func:`charge_first`:
the whole charge is committed before the data is read, and the returned grant records
the release once its files are written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import PrivacyError, StoreError, StoreIntegrityError, ValidationError
from ..store import BudgetStore, StoredBudget, checked_name
from .base import OptionalEpsilon, Rho, app, budget, exact
from .budget_show import DEFINITIONS, no_cycles, status_json, write
from .budget_show import lines as show_lines

__all__ = ["BudgetName", "BudgetStoreOption", "charge_first"]

budget_app = typer.Typer(
    name="budget",
    help="Durable privacy budgets per data set: init, show, list, check, backup.",
    invoke_without_command=True,
)
app.add_typer(budget_app, name="budget")


@budget_app.callback()
def _budget_help(ctx: typer.Context) -> None:
    """Durable privacy budgets per data set: init, show, list, check, backup."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


Store = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="PATH|URL",
        help="A SQLite file or a postgresql:// URL (default: $DPHIST_BUDGET_STORE, else "
        "budgets.sqlite in the per-user data folder).",
    ),
]
Name = Annotated[str, typer.Argument(metavar="NAME", help="The data set's budget.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON (exact amounts as text).")]
BudgetName = Annotated[
    str | None,
    typer.Option(
        "--budget",
        metavar="NAME",
        help="Charge the data set's stored budget NAME (dphist budget init) before reading "
        "the data; refused if the release does not fit in what is left.",
    ),
]
BudgetStoreOption = Annotated[
    str | None,
    typer.Option(
        "--budget-store",
        metavar="PATH|URL",
        help="The store of --budget (default: $DPHIST_BUDGET_STORE, else the per-user store).",
    ),
]


def _named(
    store: BudgetStore, name: str, option: str = "'NAME'", check: bool = True
) -> StoredBudget:
    """The budget ``name``; an unknown name is a usage error, a failed check is not."""
    try:
        return store.budget(name, check=check)
    except StoreIntegrityError:
        raise
    except StoreError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


class _Unstored:
    """The grant of a run without ``--budget``: nothing to record."""

    def record(self, release: Any, files: Sequence[Path] = ()) -> None:
        return None


def charge_first(
    name: str | None, store: str | None, amount: dict[str, Fraction], method: str
) -> Any:
    """Commit one release's whole charge to the stored budget ``name`` (call it after
    every other option is checked and before any record is read); the grant's
    ``record(release, files)`` stores the release once its files are written. Without
    ``--budget`` the grant records nothing."""
    if name is None:
        if store is not None:
            raise typer.BadParameter("needs --budget NAME", param_hint="'--budget-store'")
        return _Unstored()
    stored = _named(BudgetStore(store, create=False), name, "'--budget'")
    try:
        stored.cost(**amount)
    except PrivacyError as exc:  # a rho release on a pure budget
        raise typer.BadParameter(str(exc), param_hint="'--budget'") from None
    grant = stored.charge(**amount, method=method)
    unit = stored.unit
    mixed = "" if grant.definition == stored.definition.definition else (
        f" (epsilon = {exact(grant.amount)})"
    )  # fmt: skip
    write(
        [
            f"Charged {unit} = {exact(grant.charged)}{mixed} to budget {name!r} before "
            f"reading the data: {exact(grant.spent)} of {exact(stored.cap)} spent, "
            f"{exact(grant.remaining)} left."
        ]
    )
    return grant


@budget_app.command("init")
def init(name: Name, epsilon: OptionalEpsilon = None, rho: Rho = None, store: Store = None) -> None:
    """Create a data set's budget: its total for good (never reset or raised)."""
    chosen = budget(epsilon, rho)
    try:
        checked_name(name)
    except ValidationError as exc:
        raise typer.BadParameter(str(exc), param_hint="'NAME'") from None
    with BudgetStore(store, create=True) as opened:
        opened.create(name, budget=chosen)
        write(
            [
                f"Created budget {name!r}: {chosen.name} = {exact(chosen.amount)} "
                f"({DEFINITIONS[chosen.definition]}) in {opened.location}",
                f"Charge it with: dphist publish ... --budget {name}",
            ]
        )


def _columns(rows: list[list[str]]) -> list[str]:
    """Left-aligned columns, the last one unpadded."""
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)][:-1]
    line = "  ".join([*(f"{{:<{w}}}" for w in widths), "{}"])
    return [line.format(*r) for r in rows]


@budget_app.command("show")
def show(name: Name, store: Store = None, as_json: Json = False) -> None:
    """A budget's cap, spent and remaining, and one line per release."""
    with no_cycles(), BudgetStore(store, create=False) as opened:
        stored = _named(opened, name, check=False)  # rows() checks the chain
        write(show_lines(opened, stored, as_json))


@budget_app.command("list")
def list_budgets(store: Store = None, as_json: Json = False) -> None:
    """Every budget in the store: cap, spent, remaining."""
    with BudgetStore(store, create=False) as opened:
        statuses = opened.budgets()
        if as_json:
            write([json.dumps([status_json(s) for s in statuses])])
            return
        lines = [f"Budgets in {opened.location}:"]
        rows = [["name", "unit", "cap", "spent", "remaining", "charges"]]
        rows += [
            [s.name, s.unit, exact(s.cap), exact(s.spent), exact(s.remaining), str(s.charges)]
            for s in statuses
        ]
        lines += _columns(rows) if statuses else ["none yet ('dphist budget init' creates one)"]
        write(lines)


@budget_app.command("check")
def check(store: Store = None) -> None:
    """Run the database's own integrity check and every budget's hash chain."""
    with BudgetStore(store, create=False) as opened:
        statuses = opened.check()
        count = f"{len(statuses)} budget{'s' * (len(statuses) != 1)}"
        write([f"{opened.location}: the database's check and the hash chains of {count} pass."])


@budget_app.command("backup")
def backup(
    target: Annotated[Path, typer.Argument(metavar="FILE", help="A new file for the copy.")],
    store: Store = None,
) -> None:
    """Copy a SQLite store while it is in use, then check the copy (PostgreSQL: pg_dump)."""
    with BudgetStore(store, create=False) as opened:
        path = opened.backup(target)
        write([f"Copied {opened.location} to {path.resolve()} (checked)."])
