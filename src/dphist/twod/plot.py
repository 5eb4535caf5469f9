"""Pictures of a 2-D release: the private estimate as a heat map beside its standard
errors (what a publisher may show), and optionally the true counts beside both (for a
data owner's own comparison; never store them with a release).

Needs matplotlib (``pip install "dphist[plot]"``), imported only when a plot is drawn,
through the non-interactive Agg canvas; files are written atomically.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import ValidationError
from ..plot import new_figure, save_figure
from .release import Release2D

__all__ = ["heatmap_writer", "plot_grid"]


def _panel(fig, ax, values: np.ndarray, title: str, cmap: str, labels, axes) -> None:
    image = ax.imshow(values, origin="upper", aspect="auto", cmap=cmap, interpolation="nearest")
    fig.colorbar(image, ax=ax, shrink=0.85)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(axes[1])
    ax.set_ylabel(axes[0])
    if labels[0] is not None and len(labels[0]) <= 12:
        ax.set_yticks(range(len(labels[0])), labels[0], fontsize=7)
    if labels[1] is not None and len(labels[1]) <= 12:
        ax.set_xticks(range(len(labels[1])), labels[1], fontsize=7, rotation=60, ha="right")


def _figure(release: Release2D, true: np.ndarray | None, labels, axes):
    panels = [(release.estimate, "private estimate", "viridis")]
    if release.stderr is not None:
        panels.append((release.stderr, "its standard error", "magma"))
    else:
        panels.append(
            (np.zeros(release.shape), "no error bars: " + release.error_bars[9:60], "Greys")
        )
    if true is not None:
        panels.insert(
            0, (np.asarray(true, dtype=np.float64), "true counts (not private)", "viridis")
        )
    fig, canvas = new_figure((5.2 * len(panels), 4.8), bottom=0.24)
    fig.subplots_adjust(left=0.07, right=0.97, wspace=0.35, top=0.82)
    for k, (values, title, cmap) in enumerate(panels):
        _panel(fig, fig.add_subplot(1, len(panels), k + 1), values, title, cmap, labels, axes)
    mode = "secure noise" if release.private else "seeded, not private"
    fig.suptitle(f"{release.method}, epsilon = {float(release.epsilon):g} ({mode})", fontsize=11)
    return fig, canvas


def plot_grid(
    release: Release2D,
    path: str | os.PathLike[str],
    *,
    true: object = None,
    labels: tuple[list[str] | None, list[str] | None] = (None, None),
    axes: tuple[str, str] = ("rows", "columns"),
) -> Path:
    """Draw the release's estimate as a heat map beside its standard errors (and the true
    counts first when ``true`` is given) and save it; returns the path written."""
    if true is not None and np.shape(true) != release.shape:
        raise ValidationError(f"true has shape {np.shape(true)}; the release is {release.shape}")
    fig, canvas = _figure(release, None if true is None else np.asarray(true), labels, axes)
    return save_figure(fig, canvas, path)


def heatmap_writer(
    release: Release2D, fmt: str, labels=(None, None), axes=("rows", "columns")
) -> Callable[[Path], None]:
    """A writer of :func:`plot_grid`'s figure (no true counts) for an atomic commit."""

    def write(tmp: Path) -> None:
        fig, _ = _figure(release, None, labels, axes)
        fig.savefig(tmp, format=fmt)

    return write
