"""A small on-disk memo for designs fitted from public parameters (OPT-H's tree design).

A fit that costs seconds and depends only on public inputs is kept as one JSON file per
key, so a fresh process reads it instead of fitting again. Files are looked up in the
package's own folder (``__pycache__/designs`` beside the sources, filled at install by
:mod:`dphist._precompile`) and then in the per-user cache folder (``DPHIST_CACHE_DIR``,
else ``$XDG_CACHE_HOME/dphist`` or ``~/.cache/dphist``; ``%LOCALAPPDATA%\\dphist`` on
Windows), where new fits are written atomically. Every file holds its full key, which
includes a fingerprint of the code and the numeric libraries and machine that produced
it; a file that does not parse or whose key differs is ignored (the caller fits again
and validates what it reads), so a cache can make a release faster but never different.
Floats are stored as ``float.hex`` strings, which round-trip exactly.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._io import atomic_write

__all__ = ["fingerprint", "package_dir", "read", "user_dir", "write"]

#: Sources whose code decides a design (hashed into every key).
_SOURCES = ("strategy.py", "tree.py")


def package_dir() -> Path:
    """The folder beside the installed sources that the install fills."""
    return Path(__file__).resolve().parent / "__pycache__" / "designs"


def user_dir() -> Path | None:
    """The per-user cache folder for designs fitted at run time (``None``: none known)."""
    base = os.environ.get("DPHIST_CACHE_DIR")
    if base:
        return Path(base) / "designs"
    if sys.platform == "win32":
        root = os.environ.get("LOCALAPPDATA")
    else:
        root = os.environ.get("XDG_CACHE_HOME") or (
            str(Path.home() / ".cache") if "HOME" in os.environ else None
        )
    return Path(root) / "dphist" / "designs" if root else None


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """Hash of the fitting code and of what its floating-point results depend on (numpy,
    scipy and numba versions, Python, the machine and its CPU model)."""
    import numba
    import numpy
    import scipy
    from llvmlite import binding

    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    facts = (numpy.__version__, scipy.__version__, numba.__version__, sys.version,
             platform.machine(), binding.get_host_cpu_name())  # fmt: skip
    h.update(repr(facts).encode())
    return h.hexdigest()


def _file_name(kind: str, key: dict[str, Any]) -> str:
    text = json.dumps(key, sort_keys=True)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def _full_key(kind: str, key: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "fingerprint": fingerprint(), **key}


def read(kind: str, key: dict[str, Any]) -> dict[str, Any] | None:
    """The payload stored under ``key``, or ``None`` (missing, unreadable, foreign)."""
    full = _full_key(kind, key)
    name = _file_name(kind, full)
    for folder in (package_dir(), user_dir()):
        if folder is None:
            continue
        try:
            entry = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict) and entry.get("key") == full and "value" in entry:
            return entry["value"]
    return None


def write(
    kind: str, key: dict[str, Any], value: dict[str, Any], folder: Path | None = None
) -> None:
    """Store ``value`` under ``key`` in ``folder`` (default: the per-user folder),
    atomically; a folder that cannot be written is skipped quietly (it only costs speed)."""
    folder = folder if folder is not None else user_dir()
    if folder is None:
        return
    full = _full_key(kind, key)
    text = json.dumps({"key": full, "value": value}, sort_keys=True)
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / _file_name(kind, full)
        atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
