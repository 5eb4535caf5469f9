"""What ``dphist budget show`` prints, and that command run without Typer.

``show`` is the one command a user runs over a long history (10**5 releases and more),
so what it costs is the store's check and one line per release, not the command line:
Typer's parameter conversion alone imports pydantic (~0.15 s CPU, more than starting
Python). :func:`plain` therefore runs ``budget show NAME [--store PATH|URL] [--json]``
when given in that plain form, straight into the same code as the Typer command
(:func:`lines`); every other form (help, an unknown option, a repeated one) and every
usage error (an unknown budget) goes through Typer, which says it the usual way.
This module imports neither Typer nor rich.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from itertools import chain, islice, starmap
from typing import Any

from .._exact import exact_text as exact
from ..errors import StoreError, StoreIntegrityError
from ..store import BudgetStore, Entry, Status, StoredBudget
from ..store.budget import entries
from ..store.chain import SEP

__all__ = ["DEFINITIONS", "lines", "no_cycles", "plain", "status_json", "write"]

DEFINITIONS = {"pure": "pure epsilon-DP", "zcdp": "rho-zCDP"}
UNRELEASED = "no release recorded: interrupted or failed after its charge, which stands"


def plain(args: Sequence[str]) -> bool:
    """Run ``budget show`` from its arguments after ``budget show`` when they are plain
    (one NAME, at most one ``--store``, at most one ``--json``) and name a budget of the
    store; False, having printed nothing, to leave the command line to Typer."""
    name, store, as_json = None, None, False
    words = iter(args)
    for word in words:
        if word == "--json" and not as_json:
            as_json = True
        elif word == "--store" and store is None:
            store = next(words, "-")
            if store.startswith("-"):
                return False
        elif word.startswith("--store=") and store is None:
            store = word.removeprefix("--store=")
        elif not word.startswith("-") and name is None:
            name = word
        else:
            return False
    if name is None:
        return False
    with no_cycles(), BudgetStore(store, create=False) as opened:
        try:
            stored = opened.budget(name, check=False)  # rows() checks the chain
        except StoreIntegrityError:
            raise
        except StoreError:  # an unknown name: a usage error, said by Typer
            return False
        write(lines(opened, stored, as_json))
    return True


def lines(opened: BudgetStore, stored: StoredBudget, as_json: bool) -> Iterable[str]:
    """What ``show`` prints: the budget's status and one line per charge (or JSON),
    after the store's check and the budget's chain (the lines are formatted as they
    are written, never all held at once)."""
    status, rows = stored.rows()
    if as_json:
        record = {**status_json(status), "store": opened.location}
        listed = [_entry_json(e) for e in entries(rows)]
        return [json.dumps({**record, "entries": listed})]
    head = [f"Budget {stored.name!r} in {opened.location}", summary(status)]
    return chain(head, _entry_lines(rows, status) if rows else ["No charge yet."])


def _entry_lines(rows: list[str], status: Status) -> Iterator[str]:
    """How many charges, the header and one line per charge, in columns, straight from
    the stored texts (:meth:`StoredBudget.rows`): a few splits and one format per line,
    amounts and methods, which repeat, formatted once each."""
    definition = status.definition.definition
    amounts: dict[tuple[str, str, str], str] = {}
    methods: dict[str, int] = {}
    out, missing = [], 0
    add = out.append
    for row in rows:
        seq, charge, _, release, _ = row.split("\n")
        at, method, kind, amount, charged, _ = charge.split(SEP)
        key = (kind, amount, charged)
        text = amounts.get(key)
        if text is None:
            text = amounts[key] = _amount(kind, Fraction(amount), Fraction(charged), definition)
        if release:
            by, files, digest, _ = release.split(SEP)
            if by != method and by:
                method = f"{method} -> {by}"
            if "\\" in files or files == "[]":  # names with escapes, or none written
                written = ", ".join(json.loads(files)) or "(none written)"
            else:
                written = files[2:-2].replace('", "', ", ") or "(none written)"
            add((seq, at[:10], at[11:19], method, text, digest, written))
        else:
            add((seq, at[:10], at[11:19], method, text, "-", UNRELEASED))
            missing += 1
        methods[method] = 0
    header = ("#", "time (UTC)", "method", status.unit, "release", "files")
    widths = [
        max(len(header[0]), len(rows[-1].split("\n", 1)[0])),
        19,
        max(len(header[2]), *map(len, methods)),
        max(len(status.unit), *map(len, amounts.values())),
        16,
    ]
    top = "  ".join([*(h.ljust(w) for h, w in zip(header, widths, strict=False)), header[-1]])
    n, _, m, a, _ = widths
    line = f"{{:<{n}}}  {{}} {{}}  {{:<{m}}}  {{:<{a}}}  {{:<16.16}}  {{}}".format
    note = f"; {missing} without a release" if missing else ""
    count = f"{len(rows)} charge{'s' * (len(rows) != 1)}{note}:"
    return chain((count, top), starmap(line, out))


def _amount(release: str, amount: Fraction, charged: Fraction, definition: str) -> str:
    if release == definition:
        return exact(charged)
    return f"{exact(charged)} (epsilon {exact(amount)})"


def _entry_json(e: Entry) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "time": e.time,
        "method": e.method,
        "definition": e.definition,
        "amount": str(e.amount),
        "charged": str(e.charged),
        "released": e.released,
        "release_method": e.release_method,
        "files": list(e.files),
        "release_hash": e.digest,
    }


def status_json(s: Status) -> dict[str, Any]:
    return {
        "name": s.name,
        "definition": s.definition.definition,
        "cap": str(s.cap),
        "spent": str(s.spent),
        "remaining": str(s.remaining),
        "charges": s.charges,
        "created": s.created,
    }


def summary(s: Status) -> str:
    return (
        f"cap {exact(s.cap)}, spent {exact(s.spent)}, remaining {exact(s.remaining)} "
        f"({s.unit}; {DEFINITIONS[s.definition.definition]})"
    )


def write(lines: Iterable[str]) -> None:
    """Plain lines to stdout, a few thousand per write: fast for 10**5 releases, and
    the whole text is never held at once."""
    lines = iter(lines)
    while batch := list(islice(lines, 4096)):
        sys.stdout.write("\n".join(batch) + "\n")
    sys.stdout.flush()


@contextlib.contextmanager
def no_cycles() -> Iterator[None]:
    """Pause the cyclic garbage collector: reading 10**5 charges allocates 10**5 tuples,
    none in a cycle, each batch of which would make it scan the heap again."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
