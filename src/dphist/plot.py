"""Pictures of a release: the true histogram beside its private estimate.

Needs matplotlib (``pip install "dphist[plot]"``). It is imported only when a plot
is drawn, and only through the non-interactive Agg canvas, so importing dphist
never requires it and plotting never opens a window or touches pyplot's state.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_write
from .errors import ValidationError
from .release import Release

__all__ = ["plot_release"]

_INSTALL_HINT = 'plotting needs matplotlib: pip install "dphist[plot]"'


def _matplotlib() -> tuple[Any, Any]:
    """The ``Figure`` class and the Agg canvas, or ImportError with the install hint."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT, name="matplotlib") from exc
    return Figure, FigureCanvasAgg


def _series(values: object, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D array of numbers") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"{name} must be a non-empty 1-D array; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} must hold finite values (found NaN or infinity)")
    return arr


def _heading(release: Release | None, title: str | None) -> str:
    if release is None:
        return title or "True and private histogram"
    mode = "secure noise" if release.private else "seeded, not private"
    about = f"method {release.method}, ε = {float(release.epsilon):g} ({mode})"
    return f"{title}\n{about}" if title else f"True vs private histogram: {about}"


def plot_release(
    true: object,
    release_or_estimate: Release | object,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
) -> Path:
    """Draw the true counts and the private estimate bin by bin and save the figure.

    Parameters
    ----------
    true : array-like
        The true histogram (only for comparison; never store it with a release).
    release_or_estimate : Release or array-like
        A :class:`~dphist.Release` (its method and epsilon go in the title) or a plain
        array of estimated counts of the same length as ``true``.
    path : path-like
        Output file. A PNG unless its suffix names another format matplotlib writes
        (``.svg``, ``.pdf``, ...). Written atomically: on any failure nothing is left
        at ``path`` (an existing file stays as it was) and no temporary file remains.
    title : str, optional
        Heading of the figure; with a Release, the method and epsilon follow it.

    Returns the path written. Raises ImportError (with the pip command to run) when
    matplotlib is missing, :class:`~dphist.errors.ValidationError` for mismatched
    inputs or an unsupported file suffix, and ``OSError`` if the file cannot be written.
    """
    figure_cls, canvas_cls = _matplotlib()
    release = release_or_estimate if isinstance(release_or_estimate, Release) else None
    counts = _series(true, "true")
    estimate = _series(release.estimate if release is not None else release_or_estimate, "estimate")
    if estimate.size != counts.size:
        raise ValidationError(
            f"estimate has {estimate.size} bins but true has {counts.size}; they must match"
        )
    target = Path(path)

    fig = figure_cls(figsize=(10.0, 4.8), dpi=110, layout="constrained")
    canvas = canvas_cls(fig)
    fmt = target.suffix.lstrip(".").lower() or "png"
    if fmt not in canvas.get_supported_filetypes():
        raise ValidationError(
            f"cannot write a plot as {target.suffix!r}; use a .png (or .svg / .pdf) file name"
        )

    edges = np.arange(counts.size + 1)
    ax = fig.add_subplot()
    ax.stairs(counts, edges, fill=True, color="0.78", label="true counts")
    ax.stairs(estimate, edges, color="tab:red", linewidth=1.4, label="private estimate")
    ax.axhline(0.0, color="0.25", linewidth=0.8)
    ax.set_xlim(0, counts.size)
    ax.set_xlabel("bin")
    ax.set_ylabel("count")
    ax.grid(axis="y", alpha=0.3)
    # A fixed corner: "best" placement is slow (and warns) on large domains.
    ax.legend(loc="upper right", frameon=False)
    ax.set_title(_heading(release, title))

    atomic_write(target, lambda tmp: fig.savefig(tmp, format=fmt))
    return target
