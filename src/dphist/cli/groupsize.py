"""``dphist groupsize``: group-size histograms over a region hierarchy."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .. import export, ingest
from .common import Epsilon, Seed, app, exact, new_console, say, status, usage

GROUP_METHODS = ("cumulative", "ranked", "naive")


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
        typer.Option(
            metavar="FILE", help="Entities table: one record per entity with its group id."
        ),
    ] = None,
    size_column: Annotated[
        str | None, typer.Option(metavar="COL", help="Group sizes given in the groups table.")
    ] = None,
    privacy_unit: Annotated[
        str | None,
        typer.Option(
            metavar="COLUMN",
            help="Entities column naming the privacy unit (a person); needs --max-records.",
        ),
    ] = None,
    max_records: Annotated[
        int | None,
        typer.Option(metavar="K", min=1, help="Most entity records kept per privacy unit."),
    ] = None,
    epsilon: Epsilon = Fraction(1),
    method: Annotated[
        str,
        typer.Option(
            metavar="M|M1,M2,...", help="cumulative, ranked or naive; or one per level, root first."
        ),
    ] = "cumulative",
    k: Annotated[
        int, typer.Option("--K", min=1, help="Public cap on group sizes (never from the data).")
    ] = 10_000,
    m0: Annotated[
        int, typer.Option(min=0, help="Public minimum group size (smaller groups count at m0).")
    ] = 0,
    merge: Annotated[str, typer.Option(help="weighted or mean.")] = "weighted",
    seed: Seed = None,
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
    from .. import groupsize as gs

    console = new_console()
    if demo:
        if groups is not None:
            raise typer.BadParameter("give either a groups table or --demo, not both")
        _groupsize_demo(console, gs, epsilon, seed)
        return
    if groups is None or levels is None:
        raise typer.BadParameter("give a groups table and --levels (or --demo)")
    if (entities is None) == (size_column is None):
        raise typer.BadParameter("give the sizes with either --entities or --size-column")
    level_names = [c.strip() for c in levels.split(",")]
    chosen = [m.strip() for m in method.split(",")]
    if any(m not in GROUP_METHODS for m in chosen) or len(chosen) not in (1, len(level_names) + 1):
        raise typer.BadParameter(
            f"give one of {', '.join(GROUP_METHODS)}, or one per level ({len(level_names) + 1}, "
            "root first)",
            param_hint="'--method'",
        )
    if merge not in ("weighted", "mean"):
        raise typer.BadParameter("must be weighted or mean", param_hint="'--merge'")
    if k <= m0:
        raise typer.BadParameter(f"--K must exceed --m0; got K={k}, m0={m0}", param_hint="'--K'")
    with usage("'--max-records'"):
        bound = ingest.unit_bound(privacy_unit, max_records)
    if out is not None:
        with usage("'--out'"):
            export.output_format(out, export.GROUP_FORMATS)
            export.check_writable(out, "output")
    data = ingest.read_group_tables(
        groups,
        level_names,
        group_column=group_column,
        entities=entities,
        size_column=size_column,
        privacy_unit=privacy_unit,
        max_records=bound,
        rng=seed,
    )
    unit = {} if bound is None else {"privacy_unit": privacy_unit, "max_records": bound}
    release = gs.publish_group_sizes(
        data,
        epsilon=epsilon,
        method=chosen if len(chosen) > 1 else chosen[0],
        K=k,
        m0=m0,
        merge=merge,
        rng=seed,
        **unit,
    )
    written = export.write_group_sizes(out, release) if out is not None else []
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
    say(console, *status(release, seed), *(f"Written: {p.resolve()}" for p in written))


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
