"""``dphist stream``: timed records to one private release per window (docs/streams.md)."""

from __future__ import annotations

import sys
import time as _time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import ingest, streams
from ..store import BudgetStore
from ..streams.sink import FolderSink, check_folder, estimate_summary
from ..streams.sources import folder_chunks, stdin_chunks
from .budget import BudgetName, BudgetStoreOption
from .common import OptionalEpsilon, Rho, Seed, app, budget, new_console, parse_params, say, usage
from .publish import Categories, Domain, Edges, MaxRecords, Outside, Params, Unit

CLOCKS = ("wall", "input")


def _opt(metavar: str, help: str, **kw: Any) -> Any:
    return typer.Option(metavar=metavar, help=help, **kw)


Source = Annotated[
    str, typer.Argument(metavar="[INPUT]", help="'-' (standard input, CSV) or a CSV/Parquet file.")
]
Folder = Annotated[
    Path | None,
    _opt("DIR", "Read the files arriving in DIR (CSV or Parquet, in name order) instead.",
         file_okay=False),
]  # fmt: skip
Time = Annotated[str, typer.Option("--time", "-t", help="Column holding each record's time.")]
Column = Annotated[str, typer.Option("--column", "-c", help="Column to count.")]
WindowOpt = Annotated[
    str, _opt("LENGTH", "Window length: a number in the time column's unit, or 90s, 15m, 1h, 1d.")
]
Start = Annotated[
    str, _opt("T", "Start of the first window: a number, an ISO time, or 'now' (wall clock).")
]
End = Annotated[str | None, _opt("T", "End of the stream: windows stop there.")]
Mechanism = Annotated[
    str,
    _opt("NAME", "periodic (each window its own budget), uniform, sample, bd, ba (w-event), "
         "tree or factorization (running totals over --horizon windows)."),
]  # fmt: skip
W = Annotated[int | None, _opt("W", "Windows protected together (w-event mechanisms).", min=1)]
Horizon = Annotated[int | None, _opt("T", "Most windows a counter counts.", min=1)]
MethodOpt = Annotated[str | None, _opt("M", "Method publishing each window (default identity).")]
Clock = Annotated[
    str,
    _opt("wall|input", "When windows close: at the wall clock minus --lateness (live data), or "
         "only at the end of the input (then --end is needed)."),
]  # fmt: skip
Lateness = Annotated[str, _opt("LENGTH", "How long after its end a window waits for records.")]
Poll = Annotated[
    float, _opt("SECONDS", "How often standard input or the folder is read.", min=0.01)
]
Once = Annotated[
    bool, typer.Option("--once", help="With --input-dir: read the files present, stop.")
]
Out = Annotated[
    Path, _opt("DIR", "A new folder: one JSON file per window and ledger.jsonl.", file_okay=False)
]


def _start(text: str, length: float) -> float:
    if text.strip().lower() == "now":
        return (_time.time() // length) * length  # the current window's start, public
    return streams.parse_time(text)


def _settings(args: dict[str, Any], stream: Any, bins: ingest.Binning) -> dict[str, Any]:
    return {
        "format": "dphist-stream/1",
        **{k: v for k, v in args.items() if v is not None},
        "bins": bins.spec,
        "n": bins.n,
        "labels": bins.labels() if bins.n <= 10_000 else None,
        "definition": stream.definition,
        "guarantee": stream.guarantee,
    }


def _source(
    source: str, folder: Path | None, once: bool, poll: float, cols: dict[str, Any]
) -> Iterator[Any]:
    if folder is not None:
        if source != "-":
            raise typer.BadParameter("give INPUT or --input-dir, not both")
        return folder_chunks(folder, poll=poll, once=once, **cols)
    if once:
        raise typer.BadParameter("--once goes with --input-dir")
    if source == "-":
        return stdin_chunks(sys.stdin, interval=poll, **cols)
    path = Path(source)
    with usage("'INPUT'"):
        ingest.file_format(path)
        if not path.is_file():
            raise ValueError(f"input file {source!r} does not exist")
    return _one_file(path, cols)


def _one_file(path: Path, cols: dict[str, Any]) -> Iterator[Any]:
    yield streams.sources.read_records(path, **cols)


def _stored(name: str | None, store: str | None) -> Any:
    """The stored budget of --budget (looked up before anything is read)."""
    if name is None:
        if store is not None:
            raise typer.BadParameter("needs --budget NAME", param_hint="'--budget-store'")
        return None
    with usage("'--budget'"):
        return BudgetStore(store, create=False).budget(name)


def _categories(text: str | None) -> object:
    if text is None or not text.startswith("@"):
        return text
    try:
        return [line for line in Path(text[1:]).read_text(encoding="utf-8").splitlines() if line]
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {text[1:]!r}: {exc.strerror or exc}") from None


@app.command("stream")
def stream_command(
    source: Source = "-", input_dir: Folder = None, time: Time = ..., column: Column = ...,
    window: WindowOpt = ..., start: Start = ..., end: End = None,
    epsilon: OptionalEpsilon = None, rho: Rho = None, mechanism: Mechanism = "periodic",
    w: W = None, horizon: Horizon = None, method: MethodOpt = None, param: Params = None,
    edges: Edges = None, domain: Domain = None, categories: Categories = None,
    outside: Outside = None, privacy_unit: Unit = None, max_records: MaxRecords = None,
    clock: Clock = "wall", lateness: Lateness = "0", poll: Poll = 1.0, once: Once = False,
    out: Out = ..., seed: Seed = None, budget_name: BudgetName = None,
    budget_store: BudgetStoreOption = None,
) -> None:  # fmt: skip
    """Publish one private histogram per time window of records arriving on standard input
    or in a folder; each window's release and an append-only ledger go to --out. Ctrl-C
    stops after the last finished window, which is on disk with its ledger line."""
    chosen = budget(epsilon, rho)
    if clock not in CLOCKS:
        raise typer.BadParameter(f"choose one of {', '.join(CLOCKS)}", param_hint="'--clock'")
    with usage("'--window'"):
        length = streams.parse_duration(window)
    with usage("'--start'"):
        first = _start(start, length)
    if clock == "input" and end is None:
        raise typer.BadParameter("--clock input releases windows at the end of the input, "
                                 "up to --end: give --end", param_hint="'--end'")  # fmt: skip
    with usage("'--out'"):
        check_folder(out)
    stored = _stored(budget_name, budget_store)
    with usage():
        bins = ingest.binning(edges=edges, domain=domain, categories=_categories(categories))
    cols = {"time": time, "column": column, "unit": privacy_unit}
    chunks = _source(source, input_dir, once, poll, cols)
    with usage():
        run = streams.stream(
            chunks, **{chosen.name: chosen.amount}, mechanism=mechanism, w=w, horizon=horizon,
            method=method, privacy_unit=privacy_unit, max_records=max_records, rng=seed,
            budget=stored, time=time, column=column, window=length, start=first, end=end,
            edges=edges, domain=domain, categories=_categories(categories), outside=outside,
            lateness=lateness, clock=_time.time if clock == "wall" else None, settle=False,
            **parse_params(param),
        )  # fmt: skip
    args = {"mechanism": mechanism, "w": w, "horizon": horizon, "method": method,
            "window": length, "start": first, "end": end, "time": time, "column": column,
            "privacy_unit": privacy_unit, "max_records": max_records, "clock": clock,
            chosen.name: str(chosen.amount), "seed": seed}  # fmt: skip
    sink = FolderSink(out, _settings(args, run, bins))
    _loop(run, sink, seed)


def _loop(run: streams.Stream, sink: FolderSink, seed: int | None) -> None:
    console = new_console()
    say(console, f"dphist stream: {run!r}", f"Guarantee: {run.guarantee}")
    if seed is not None:
        say(console, f"NOT PRIVATE: seeded with --seed {seed} (reproducible, for experiments)")
    try:
        for rel in run:
            sink.write(rel)
            say(console, estimate_summary(rel))
    finally:
        spent = sum((e.spent for e in run.ledger), Fraction(0))
        say(console, f"{sink.written} window(s) written to {sink.out.resolve()} (ledger.jsonl); "
                     f"sum of the windows' charges {float(spent):g}")  # fmt: skip
