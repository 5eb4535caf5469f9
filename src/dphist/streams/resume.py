"""A stream's state on disk, so that a restarted Spark query resumes it.

A Structured Streaming query restarted from its checkpoint runs again every batch it
had not committed, with the same records, and nothing before. What the driver held is
gone: the counts of the open windows, which windows were released, the sliding ledger
and the window mechanism's state. :class:`StateFile` keeps them in one file, replaced
atomically (written, flushed to disk, renamed):

* after each batch: the batch id, the watermark, the counts of the open windows, the
  ledger and the mechanism's state;
* before each window's release, the same with that window marked *in flight*; after
  it, with the window closed. The counts kept during a batch are those before the
  batch, so a batch that Spark runs again is counted once: its records of windows
  already closed are late, those of open windows are added to the counts it had not
  yet touched.

A stream resumed from a file whose window was in flight cannot know whether that
window was released (and what it spent): it is never released again, and the ledger
records it at the most its mechanism could have charged there (the budget store
already holds what was actually charged, committed before any read). The file holds
raw counts of open windows: keep it where the raw data are kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write
from ..errors import ValidationError

__all__ = ["StateFile"]

_VERSION = 1


class StateFile:
    """One stream's resumable state at ``path`` (an ``.npz`` file), for the stream
    described by ``fingerprint`` (its public settings: a file of another stream is
    refused)."""

    def __init__(self, path: str | os.PathLike[str], fingerprint: dict[str, Any]):
        self.path = Path(path)
        if self.path.suffix != ".npz":
            raise ValidationError(f"the state file must end in .npz; got {self.path.name!r}")
        if self.path.exists() and not self.path.is_file():
            raise ValidationError(f"the state path {str(self.path)!r} is not a file")
        self.fingerprint = json.loads(json.dumps(fingerprint))

    def load(self) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The saved fields and arrays, or None when there is no file yet."""
        if not self.path.exists():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            fields = json.loads(str(arrays.pop("fields")))
        except (OSError, ValueError, KeyError) as exc:
            raise ValidationError(
                f"cannot read the stream state {str(self.path)!r}: {exc}"
            ) from None
        if fields.get("version") != _VERSION or fields.get("stream") != self.fingerprint:
            raise ValidationError(
                f"the state file {str(self.path)!r} belongs to another stream (its settings "
                "differ): give a new file, or the settings it was written with"
            )
        return fields, arrays

    def save(self, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Replace the file with ``fields`` (JSON-safe) and ``arrays``, atomically."""
        text = json.dumps({**fields, "version": _VERSION, "stream": self.fingerprint})

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.savez(fh, fields=np.array(text), **arrays)

        atomic_write(self.path, write)
