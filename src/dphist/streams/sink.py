"""A stream's files: one release per window and an append-only ledger.

:class:`FolderSink` writes into a new (or empty) folder:

* ``stream.json``: the stream's public settings and guarantee, written first;
* ``window-000017.json`` per window: its interval, kind, estimate, error bars (standard
  errors and 95% intervals where the window has them), its ledger line and its
  release's ledger, written atomically (complete or absent);
* ``ledger.jsonl``: one JSON line per window, appended and synced after the window's
  file is in place; lines are never rewritten.

A window is committed in a block that Ctrl-C cannot split (the signal is held until
its file and ledger line are on disk and its stored charges recorded), so an
interrupted stream leaves every finished window complete and nothing of the next.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write
from ..errors import ValidationError
from ..release import json_default
from .run import WindowRelease

__all__ = ["FolderSink", "held_interrupts"]


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) until the block ends, then raise it (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda sig, frame: caught.append(sig))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def check_folder(out: Path) -> None:
    """The output folder must be new or empty: a stream never mixes with another's files."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValidationError(
            f"{str(out)!r} exists and is not an empty folder; give a new folder for the stream"
        )
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise ValidationError(f"cannot create {str(out)!r}: its parent folder is not writable")


class FolderSink:
    """Writes a stream's windows and ledger into ``out`` (see the module docs)."""

    def __init__(self, out: Path, settings: dict[str, Any]):
        out = Path(out)
        check_folder(out)
        out.mkdir(parents=False, exist_ok=True)
        self.out = out
        text = json.dumps(settings, default=json_default, indent=1)
        atomic_write(out / "stream.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
        self.ledger = out / "ledger.jsonl"
        self.written = 0

    def write(self, rel: WindowRelease) -> Path:
        """Commit one window: its file, its ledger line, its stored charges."""
        path = self.out / f"window-{rel.index:06d}.json"
        record = rel.to_dict()
        release = record["release"]
        if rel.release.stderr is not None:
            lower, upper = rel.release.intervals()
            release["interval_95"] = {"lower": lower.tolist(), "upper": upper.tolist()}
        body = json.dumps(record, default=json_default)
        line = json.dumps({**rel.entry.to_dict(), "file": path.name}, default=json_default)
        with held_interrupts():
            atomic_write(path, lambda tmp: tmp.write_text(body, encoding="utf-8"))
            with open(self.ledger, "a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
            rel.settle([path])
        self.written += 1
        return path


def estimate_summary(rel: WindowRelease) -> str:
    """One line for a terminal: the window, what it did and what it cost."""
    e = rel.entry
    total = float(np.sum(rel.estimate))
    span = f"{float(e.span):g} over the last {e.w}" if e.w > 1 else f"{float(e.span):g}"
    return (
        f"window {e.index}: {e.kind}"
        + (f" (repeats {e.source})" if e.source is not None else "")
        + f", {e.unit} {float(e.spent):g} (span {span}), estimated total {total:,.1f}"
    )
