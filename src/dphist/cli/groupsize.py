"""``dphist groupsize``: group-size histograms over a region hierarchy."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .. import export, ingest
from .._kernel import as_share
from ..errors import DphistError
from .budget import BudgetName, BudgetStoreOption, charge_first
from .common import (
    Delta,
    OptionalEpsilon,
    Rho,
    Seed,
    app,
    budget,
    budget_lines,
    delta_record,
    exact,
    new_console,
    number,
    say,
    status,
    usage,
)

GROUP_METHODS = ("cumulative", "ranked", "naive")


def _opt(metavar: str, help: str, **kw: Any) -> Any:
    return typer.Option(metavar=metavar, help=help, **kw)


Groups = Annotated[
    Path | None,
    typer.Argument(help="Groups table (CSV/Parquet): group id and its region per level."),
]
Levels = Annotated[str | None, _opt("COL1,COL2", "Region columns below the root, coarsest first.")]
GroupColumn = Annotated[str, typer.Option(help="Group id column.")]
Entities = Annotated[
    Path | None, _opt("FILE", "Entities table: one record per entity with its group id.")
]
SizeColumn = Annotated[str | None, _opt("COL", "Group sizes given in the groups table.")]
Unit = Annotated[
    str | None,
    _opt("COLUMN", "Entities column naming the privacy unit (a person); needs --max-records."),
]
MaxRecords = Annotated[int | None, _opt("K", "Most entity records kept per privacy unit.", min=1)]
Methods = Annotated[
    str, _opt("M|M1,M2,...", "cumulative, ranked or naive; or one per level, root first.")
]
SizeCap = Annotated[
    int,
    typer.Option(
        "--K", min=1,
        help="Public cap on group sizes: sizes of K or more are released as K ('K or more'); "
        "the cumulative and naive methods measure K cells per region, so time and noise grow "
        "with it. Default 10,000: above any household and most group quarters. Choose it from "
        "public knowledge, never from the data.",
    ),
]  # fmt: skip
MinSize = Annotated[
    int, typer.Option(min=0, help="Public minimum group size (smaller groups count at m0).")
]
Merge = Annotated[str, typer.Option(help="weighted or mean.")]
CountsShare = Annotated[
    str | None,
    _opt("SHARE", "Treat the number of groups per region as private too: spend this share of "
         "the budget (0 to 1) on noisy group counts, made whole and consistent (cumulative "
         "method only; the regions themselves stay public)."),
]  # fmt: skip
Out = Annotated[
    Path | None, _opt("FILE", "Output .csv (ledger in FILE.ledger.json) or .json; never an input.")
]
Demo = Annotated[
    bool, typer.Option("--demo", help="Compare the methods on synthetic housing data.")
]


def _methods(method: str, levels: int) -> str | list[str]:
    """The estimator, or one per level (root first), checked."""
    chosen = [m.strip() for m in method.split(",")]
    if any(m not in GROUP_METHODS for m in chosen) or len(chosen) not in (1, levels + 1):
        raise typer.BadParameter(
            f"give one of {', '.join(GROUP_METHODS)}, or one per level ({levels + 1}, root first)",
            param_hint="'--method'",
        )
    return chosen if len(chosen) > 1 else chosen[0]


def _check(
    groups: Path | None, levels: str | None, entities: Path | None, size_column: str | None,
    merge: str, k: int, m0: int, out: Path | None,
) -> list[str]:  # fmt: skip
    """Every option checked before a table is read; the region columns."""
    if groups is None or levels is None:
        raise typer.BadParameter("give a groups table and --levels (or --demo)")
    if (entities is None) == (size_column is None):
        raise typer.BadParameter("give the sizes with either --entities or --size-column")
    if merge not in ("weighted", "mean"):
        raise typer.BadParameter("must be weighted or mean", param_hint="'--merge'")
    if k <= m0:
        raise typer.BadParameter(f"--K must exceed --m0; got K={k}, m0={m0}", param_hint="'--K'")
    if out is not None:
        with usage("'--out'"):
            export.output_format(out, export.GROUP_FORMATS)
            export.check_writable(out, "output")
            export.check_targets(export.group_size_targets(out), _inputs(groups, entities))
    return [c.strip() for c in levels.split(",")]


def _inputs(groups: Path, entities: Path | None) -> list[Path]:
    return [groups] if entities is None else [groups, entities]


def _summary(release: Any) -> Table:
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
    return summary


@app.command("groupsize")
def groupsize(
    groups: Groups = None, levels: Levels = None, group_column: GroupColumn = "group_id",
    entities: Entities = None, size_column: SizeColumn = None, privacy_unit: Unit = None,
    max_records: MaxRecords = None, epsilon: OptionalEpsilon = None, rho: Rho = None,
    delta: Delta = None, method: Methods = "cumulative", k: SizeCap = 10_000, m0: MinSize = 0,
    merge: Merge = "weighted", private_group_counts: CountsShare = None, seed: Seed = None,
    out: Out = None, demo: Demo = False, budget_name: BudgetName = None,
    budget_store: BudgetStoreOption = None,
) -> None:  # fmt: skip
    """Publish group-size histograms over a region hierarchy (Kuo et al., PVLDB 2018).

    Every region's histogram of group sizes is released with integer counts that
    match the public number of groups and add up from counties to states to the
    nation. With --demo, compares the methods on synthetic data instead. The budget is
    --epsilon (pure DP) or --rho (zero-concentrated DP), always given (the demo, on
    synthetic data, defaults to epsilon = 1).
    """
    from .. import groupsize as gs

    console = new_console()
    if not demo and (groups is None or levels is None):
        raise typer.BadParameter("give a groups table and --levels (or --demo)")
    chosen_budget = budget(epsilon, rho, default=Fraction(1) if demo else None)
    if demo:
        if groups is not None:
            raise typer.BadParameter("give either a groups table or --demo, not both")
        if chosen_budget.definition == "zcdp":
            raise typer.BadParameter("--demo compares the methods under --epsilon only")
        if budget_name is not None:
            raise typer.BadParameter("--demo reads no data: drop --budget")
        _groupsize_demo(console, gs, chosen_budget.amount, seed)
        return
    level_names = _check(groups, levels, entities, size_column, merge, k, m0, out)
    chosen = _methods(method, len(level_names))
    counts_share = _counts_share(private_group_counts, chosen)
    with usage("'--max-records'"):
        bound = ingest.unit_bound(privacy_unit, max_records)
    unit = {} if bound is None else {"privacy_unit": privacy_unit, "max_records": bound}
    amount = {chosen_budget.name: chosen_budget.amount}
    grant = charge_first(budget_name, budget_store, amount, "groupsize")
    data = ingest.read_group_tables(
        groups, level_names, group_column=group_column, entities=entities,
        size_column=size_column, rng=seed, **unit,
    )  # fmt: skip
    release = _release(
        gs, data, method=chosen, K=k, m0=m0, merge=merge, rng=seed,
        group_counts_share=counts_share, **amount, **unit,
    )  # fmt: skip
    implied = delta_record(release.epsilon, release.definition, delta)
    inputs = _inputs(groups, entities)
    written = export.write_group_sizes(out, release, inputs=inputs, **implied) if out else []
    grant.record(release, written)
    console.print(_summary(release))
    say(
        console,
        *budget_lines(release.epsilon, release.definition, delta),
        *status(release, seed),
        *(f"Written: {p.resolve()}" for p in written),
    )


def _counts_share(text: str | None, method: str | list[str]) -> object:
    """``--private-group-counts``, checked before any table is read."""
    if text is None:
        return None
    with usage("'--private-group-counts'"):
        share = as_share(number(text), name="the share")
        if not 0 < share < 1:
            raise DphistError("the share must lie strictly between 0 and 1")
    if method != "cumulative":
        raise typer.BadParameter(
            "private group counts need the cumulative method", param_hint="'--method'"
        )
    return share


def _release(gs: Any, data: Any, **options: Any) -> Any:
    """Spend the budget: the one step that releases (a stored budget was charged before)."""
    return gs.publish_group_sizes(data, **options)


def _groupsize_demo(console: Console, gs: Any, epsilon: Fraction, seed: int | None) -> None:
    rows = gs.run_demo(epsilon=float(epsilon), seed=0 if seed is None else seed)
    table = Table(title=f"Mean EMD per region (synthetic housing, epsilon = {exact(epsilon)})")
    for name in ("method", "merge", "level", "EMD", "seconds"):
        table.add_column(name, justify="right" if name in ("EMD", "seconds") else "left")
    for r in rows:
        table.add_row(
            r["method"], r["merge"], str(r["level"]), f"{r['emd']:,.1f}", f"{r['seconds']:.2f}"
        )
    console.print(table)
