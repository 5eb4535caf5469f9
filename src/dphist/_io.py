"""Atomic file output: write beside the target, then rename over it.

Readers of ``path`` see either the old file or the complete new one, never a
partial write: the content goes to a hidden temporary file in the same directory
(same filesystem, so the final :func:`os.replace` is atomic) and that file is
removed again if anything fails.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

__all__ = ["atomic_path", "atomic_paths", "atomic_write"]

T = TypeVar("T")

_ATTEMPTS = 16


def _create_temp(target: Path) -> Path:
    """Create an empty, unique temporary file next to ``target``.

    The file is opened with mode 0o666 so the process umask applies, exactly as for
    a plain ``open(path, "w")``; its name keeps the target's suffix so writers that
    pick a format from the extension still work.
    """
    for _ in range(_ATTEMPTS):
        tmp = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.tmp{target.suffix}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"could not create a temporary file next to {str(target)!r}")


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path``.

    Write the whole output to the yielded path inside the ``with`` block. On normal
    exit the file is flushed to disk and renamed over ``path`` (keeping the mode of
    an existing target); on any exception it is deleted and ``path`` is untouched.
    """
    target = Path(path)
    tmp = _create_temp(target)
    try:
        yield tmp
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        _remove_quietly(tmp)
        raise


@contextlib.contextmanager
def atomic_paths(*paths: str | os.PathLike[str]) -> Iterator[tuple[Path, ...]]:
    """Like :func:`atomic_path` for several files that belong together (a table and its
    ledger, a plot): all are written to temporary files first and renamed into place
    only when every one is complete. If a rename fails, the targets already replaced
    get their old content back, so a failure never leaves a mixed set behind (a crash
    of the machine between two renames still can).
    """
    targets = [Path(p) for p in paths]
    temps: list[Path] = []
    try:
        for target in targets:
            temps.append(_create_temp(target))
        yield tuple(temps)
        for tmp, target in zip(temps, targets, strict=True):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _replace_all(temps, targets)
    finally:
        for tmp in temps:
            _remove_quietly(tmp)


def _replace_all(temps: list[Path], targets: list[Path]) -> None:
    """Rename every temp over its target, restoring the old targets if one fails."""
    backups: list[tuple[Path, Path | None]] = []
    try:
        for tmp, target in zip(temps, targets, strict=True):
            backup = None
            if target.exists():
                backup = _create_temp(target)
                os.replace(target, backup)
            backups.append((target, backup))
            os.replace(tmp, target)
    except BaseException:
        for target, backup in reversed(backups):
            if backup is not None:
                os.replace(backup, target)
            else:
                _remove_quietly(target)
        raise
    for _, backup in backups:
        if backup is not None:
            _remove_quietly(backup)


def atomic_write(path: str | os.PathLike[str], writer: Callable[[Path], T]) -> T:
    """Call ``writer(tmp)`` to produce the file, then move it to ``path`` atomically.

    ``writer`` receives a temporary path in the target's directory (with the same
    suffix) and must write the complete content there. Its return value is passed
    back. If it raises, no output and no temporary file are left behind.
    """
    with atomic_path(path) as tmp:
        result = writer(tmp)
    return result
