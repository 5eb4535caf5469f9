"""Pictures of releases and of experiment results.

* :func:`plot_release` - the true histogram beside one private estimate.
* :func:`plot_estimate` - a private estimate alone (what a publisher may show).
* :func:`plot_skyline` - time against error, one point per method, with the Pareto
  front (the non-dominated methods) marked, as in Kellaris et al. 2017 §7.2.
* :func:`plot_error_vs_epsilon` - error against epsilon on log-log axes (§7.3).
* :func:`plot_error_vs_range` - error against range length r% (§7.3).
* :func:`plot_mre_by_size` - mean relative error per group of bins of similar true
  size, per method (SReB_GCA, Fig. 4).

The result plots take tidy rows from :mod:`dphist.lab.experiments` and average over
trials. Every plot is written atomically and returns its path.

Needs matplotlib (``pip install "dphist[plot]"``). It is imported only when a plot
is drawn, and only through the non-interactive Agg canvas, so importing dphist
never requires it and plotting never opens a window or touches pyplot's state.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_write
from .errors import ValidationError
from .release import Release

__all__ = [
    "estimate_writer",
    "new_figure",
    "pareto_front",
    "plot_error_vs_epsilon",
    "plot_error_vs_range",
    "plot_estimate",
    "plot_format",
    "plot_mre_by_size",
    "plot_release",
    "plot_skyline",
    "save_figure",
]

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
    if release is not None:
        _error_band(ax, release, edges)
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


def _error_band(ax: Any, release: Release, edges: np.ndarray) -> None:
    """Shade each bin's 95% interval (nothing for a release without error bars)."""
    if release.stderr is None:
        return
    lower, upper = release.intervals(alpha=0.05)
    ax.stairs(
        upper, edges, baseline=lower, fill=True, color="tab:red", alpha=0.18, linewidth=0,
        label="95% interval",
    )  # fmt: skip


def plot_format(path: str | os.PathLike[str]) -> str:
    """The image format named by ``path``'s suffix, checked before any work is done.

    Raises ImportError (with the pip command) without matplotlib and
    :class:`~dphist.errors.ValidationError` for a suffix matplotlib cannot write.
    """
    figure_cls, canvas_cls = _matplotlib()
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    if fmt not in canvas_cls(figure_cls()).get_supported_filetypes():
        raise ValidationError(
            f"cannot write a plot as {Path(path).suffix!r}; use a .png, .svg or .pdf file name"
        )
    return fmt


_MAX_TICK_LABELS = 40


def estimate_writer(
    release: Release, fmt: str, *, binning: Any = None, labels: Sequence[str] | None = None,
    xlabel: str = "bin", counts: str = "float",
) -> Any:  # fmt: skip
    """A function ``write(path)`` drawing the private estimate of ``release`` alone.

    ``binning`` (default: the release's own, from :func:`dphist.histogram`) puts the
    x axis in the column's units: numeric bins as steps over their edges (open end bins
    hatched, since they also hold every value beyond), categories as bars with error
    bars; without one the axis is the bin index (``labels`` name up to 30 bins).
    ``counts`` is the table drawn (:meth:`dphist.Release.table`). Only released
    values are drawn; the true counts never leave the kernel.
    """
    figure_cls, canvas_cls = _matplotlib()
    fig = figure_cls(figsize=(10.0, 4.8), dpi=110, layout="constrained")
    canvas_cls(fig)
    ax = fig.add_subplot()
    binning = release.binning if binning is None else binning
    table = release.table(counts, 0.05)
    if binning is not None and binning.categories is not None:
        _bars(ax, table, list(binning.categories))
    else:
        numeric = binning is not None and binning.edges is not None
        edges = np.asarray(binning.edges) if numeric else np.arange(release.n + 1.0)
        if table.lower is not None:
            ax.stairs(
                table.upper, edges, baseline=table.lower, fill=True, color="tab:red",
                alpha=0.18, linewidth=0, label="95% interval",
            )  # fmt: skip
        ax.stairs(table.estimate, edges, color="tab:red", label="estimate")
        if numeric and binning.open_ends:
            _open_ends(ax, edges, binning)
        ax.set_xlim(edges[0], edges[-1])
        if not numeric and labels is not None and release.n <= 30:
            ax.set_xticks(np.arange(release.n) + 0.5, list(labels), rotation=45, ha="right")
    ax.axhline(0.0, color="0.25", linewidth=0.8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", frameon=False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("private count")
    mode = "secure noise" if release.private else "seeded, NOT private"
    ax.set_title(f"{release.method}, ε = {float(release.epsilon):g} ({mode})")

    def write(target: Any) -> None:
        fig.savefig(target, format=fmt)

    write.figure = fig  # type: ignore[attr-defined]  # for callers that add to it
    return write


def _bars(ax: Any, table: Any, names: list[str]) -> None:
    """Categories as bars with their 95% error bars."""
    x = np.arange(table.n)
    yerr = None
    if table.lower is not None:
        yerr = np.vstack((table.estimate - table.lower, table.upper - table.estimate))
    ax.bar(x, table.estimate, color="tab:red", alpha=0.75, label="estimate")
    if yerr is not None:
        ax.errorbar(x, table.estimate, yerr=yerr, fmt="none", ecolor="0.2", capsize=3,
                    label="95% interval")  # fmt: skip
    step = max(1, math.ceil(table.n / _MAX_TICK_LABELS))
    ax.set_xticks(x[::step], names[::step], rotation=45 if table.n > 8 else 0, ha="right")
    ax.set_xlim(-0.6, table.n - 0.4)


def _open_ends(ax: Any, edges: np.ndarray, binning: Any) -> None:
    """Hatch the open end bins: they hold every value beyond the edges drawn."""
    spans = (
        [(edges[0], edges[1])] if binning.n == 1 else [(edges[0], edges[1]), (edges[-2], edges[-1])]
    )
    label = f"open end bins: {binning.label(0)}" + (
        "" if binning.n == 1 else f" and {binning.label(-1)}"
    )
    for i, (lo, hi) in enumerate(spans):
        ax.axvspan(lo, hi, facecolor="none", edgecolor="0.55", hatch="//", linewidth=0,
                   label=label if i == 0 else None)  # fmt: skip


def plot_estimate(
    release: Release,
    path: str | os.PathLike[str],
    *,
    binning: Any = None,
    labels: Sequence[str] | None = None,
    xlabel: str = "bin",
    counts: str = "float",
) -> Path:
    """Draw the private estimate of ``release`` and save it atomically at ``path``
    (arguments as for :func:`estimate_writer`)."""
    target = Path(path)
    writer = estimate_writer(
        release, plot_format(target), binning=binning, labels=labels, xlabel=xlabel,
        counts=counts,
    )  # fmt: skip
    atomic_write(target, writer)
    return target


# --------------------------------------------------------------------------- experiment plots


def pareto_front(x: object, y: object) -> np.ndarray:
    """Boolean mask of the points not dominated when both coordinates are minimised.

    Point ``i`` is dominated when some ``j`` has ``x_j <= x_i`` and ``y_j <= y_i`` with
    at least one strict inequality (Kellaris et al. 2017 §7.2, the "skyline").
    Identical points do not dominate each other. O(P log P) for P points.
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if xs.ndim != 1 or xs.shape != ys.shape:
        raise ValidationError("x and y must be 1-D arrays of the same length")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise ValidationError("x and y must be finite")
    if xs.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((ys, xs))  # by x, then y
    sx, sy = xs[order], ys[order]
    first = np.searchsorted(sx, sx, side="left")  # first point with the same x
    running = np.minimum.accumulate(sy)
    before = np.where(first > 0, running[np.maximum(first - 1, 0)], np.inf)
    keep = (sy < before) & (sy == sy[first])
    mask = np.empty(xs.size, dtype=bool)
    mask[order] = keep
    return mask


def _select(rows: Iterable[Mapping[str, Any]], **where: Any) -> list[Mapping[str, Any]]:
    """Successful rows matching every ``column=value`` given (``None`` matches any)."""
    out = []
    for row in rows:
        if row.get("error"):
            continue
        if all(v is None or _matches(row, k, v) for k, v in where.items()):
            out.append(row)
    return out


def _matches(row: Mapping[str, Any], column: str, value: Any) -> bool:
    if column == "epsilon":
        return math.isclose(float(row["epsilon"]), float(value), rel_tol=1e-12)
    return row[column] == value


def _args(row: Mapping[str, Any]) -> dict[str, Any]:
    text = row.get("metric_args") or "{}"
    return json.loads(text)


def _label(row: Mapping[str, Any]) -> str:
    params = json.loads(row.get("params") or "{}")
    if not params:
        return str(row["method"])
    inner = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{row['method']}[{inner}]"


def _mean_by(
    rows: Iterable[Mapping[str, Any]], key: Any, field: str = "value"
) -> dict[Any, dict[Any, float]]:
    """``{label: {key(row): mean of field}}`` over the rows, labels in first-seen order."""
    sums: dict[Any, dict[Any, list[float]]] = {}
    for row in rows:
        sums.setdefault(_label(row), {}).setdefault(key(row), []).append(float(row[field]))
    return {lab: {k: float(np.mean(v)) for k, v in d.items()} for lab, d in sums.items()}


def new_figure(size: tuple[float, float] = (7.0, 4.8), bottom: float = 0.11) -> tuple[Any, Any]:
    """A figure with fixed margins: a computed layout costs more than the drawing itself."""
    figure_cls, canvas_cls = _matplotlib()
    fig = figure_cls(figsize=size, dpi=100)
    fig.subplots_adjust(left=0.11, right=0.97, bottom=bottom, top=0.9)
    return fig, canvas_cls(fig)


def save_figure(fig: Any, canvas: Any, path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower() or "png"
    if fmt not in canvas.get_supported_filetypes():
        raise ValidationError(
            f"cannot write a plot as {target.suffix!r}; use a .png (or .svg / .pdf) file name"
        )
    atomic_write(target, lambda tmp: fig.savefig(tmp, format=fmt))
    return target


def _log_y(ax: Any, curves: Mapping[Any, Mapping[Any, float]]) -> None:
    """Logarithmic y axis when every plotted value is positive (errors of 0 stay visible)."""
    if all(v > 0 for points in curves.values() for v in points.values()):
        ax.set_yscale("log")


def _nonempty(selected: Sequence[Any], what: str) -> None:
    if not selected:
        raise ValidationError(f"no successful rows match {what}; nothing to plot")


def plot_skyline(
    rows: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    metric: str,
    dataset: str | None = None,
    epsilon: float | None = None,
    title: str | None = None,
) -> Path:
    """Time against error, one point per method, Pareto front in bold (Kellaris Figs 3-10).

    Rows are filtered on ``metric`` (base name), ``dataset`` and ``epsilon``; each
    method (with its parameters) becomes the point (mean seconds, mean value) over
    its trials. Both axes are logarithmic. Returns the path written.
    """
    selected = _select(rows, metric=metric, dataset=dataset, epsilon=epsilon)
    _nonempty(selected, f"metric={metric!r}, dataset={dataset!r}, epsilon={epsilon!r}")
    errors = _mean_by(selected, lambda r: 0)
    times = _mean_by(selected, lambda r: 0, "seconds")
    labels = list(errors)
    x = np.array([max(times[lab][0], 1e-6) for lab in labels])
    y = np.array([errors[lab][0] for lab in labels])
    front = pareto_front(x, y)

    fig, canvas = new_figure()
    ax = fig.add_subplot()
    ax.scatter(x[~front], y[~front], color="0.55", marker="o", label="dominated")
    ax.scatter(x[front], y[front], color="tab:red", marker="D", s=50, label="Pareto front")
    order = np.argsort(x[front])
    ax.plot(x[front][order], y[front][order], color="tab:red", linewidth=1.0, alpha=0.6)
    for lab, xi, yi, on in zip(labels, x, y, front, strict=True):
        ax.annotate(
            lab,
            (xi, yi),
            textcoords="offset points",
            xytext=(4, 3),
            fontsize=8,
            fontweight="bold" if on else "normal",
        )
    ax.set_xscale("log")
    if np.all(y > 0):
        ax.set_yscale("log")
    ax.margins(x=0.12, y=0.08)  # room for the labels of the outermost points
    ax.set_xlabel("time (s)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", frameon=False)
    about = ", ".join(
        s for s in (dataset, None if epsilon is None else f"ε = {float(epsilon):g}") if s
    )
    ax.set_title(title or (f"Time vs error ({about})" if about else "Time vs error"))
    return save_figure(fig, canvas, path)


def plot_error_vs_epsilon(
    rows: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    metric: str,
    dataset: str | None = None,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """Mean error against epsilon on log-log axes, one line per method (Kellaris Figs 11-14)."""
    selected = _select(rows, metric=metric, dataset=dataset)
    if methods is not None:
        selected = [r for r in selected if r["method"] in set(methods)]
    _nonempty(selected, f"metric={metric!r}, dataset={dataset!r}")
    curves = _mean_by(selected, lambda r: float(r["epsilon"]))
    fig, canvas = new_figure()
    ax = fig.add_subplot()
    for lab, points in curves.items():
        eps = np.array(sorted(points))
        ax.plot(eps, [points[e] for e in eps], marker="o", label=lab)
    ax.set_xscale("log")
    _log_y(ax, curves)
    ax.set_xlabel("ε")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper right", frameon=False, fontsize=8)
    ax.set_title(title or f"Error vs ε{f' ({dataset})' if dataset else ''}")
    return save_figure(fig, canvas, path)


def plot_error_vs_range(
    rows: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    metric: str = "range_pct_mse",
    dataset: str | None = None,
    epsilon: float | None = None,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """Mean error against range length r% (metric argument ``r``), per method (Figs 15-18).

    The x axis is logarithmic in base 2 (r = 1, 2, 4, ... 64 in the paper).
    """
    selected = [
        r for r in _select(rows, metric=metric, dataset=dataset, epsilon=epsilon) if "r" in _args(r)
    ]
    if methods is not None:
        selected = [r for r in selected if r["method"] in set(methods)]
    _nonempty(selected, f"metric={metric!r} with r=, dataset={dataset!r}, epsilon={epsilon!r}")
    curves = _mean_by(selected, lambda r: float(_args(r)["r"]))
    fig, canvas = new_figure()
    ax = fig.add_subplot()
    for lab, points in curves.items():
        rs = np.array(sorted(points))
        ax.plot(rs, [points[v] for v in rs], marker="o", label=lab)
    ax.set_xscale("log", base=2)
    ticks = sorted({v for points in curves.values() for v in points})
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    _log_y(ax, curves)
    ax.set_xlabel("range length r (% of the domain)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", frameon=False, fontsize=8)
    about = ", ".join(
        s for s in (dataset, None if epsilon is None else f"ε = {float(epsilon):g}") if s
    )
    ax.set_title(title or f"Error vs range length{f' ({about})' if about else ''}")
    return save_figure(fig, canvas, path)


def plot_mre_by_size(
    rows: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    dataset: str | None = None,
    epsilon: float | None = None,
    methods: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """MRE per group of bins of similar true size, one line per method (SReB_GCA Fig. 4).

    Uses rows of the ``mre_size`` metric (arguments ``lo``, ``hi``: the group holds
    the bins with ``lo <= true < hi``); groups without bins (NaN) are left out.
    """
    selected = [
        r
        for r in _select(rows, metric="mre_size", dataset=dataset, epsilon=epsilon)
        if math.isfinite(float(r["value"]))
    ]
    if methods is not None:
        selected = [r for r in selected if r["method"] in set(methods)]
    _nonempty(selected, f"metric 'mre_size', dataset={dataset!r}, epsilon={epsilon!r}")
    curves = _mean_by(selected, lambda r: (float(_args(r)["lo"]), float(_args(r)["hi"])))
    groups = sorted({g for points in curves.values() for g in points})
    position = {g: i for i, g in enumerate(groups)}
    fig, canvas = new_figure((8.0, 4.8), bottom=0.2)
    ax = fig.add_subplot()
    for lab, points in curves.items():
        keys = sorted(points)
        ax.plot([position[g] for g in keys], [points[g] for g in keys], marker="o", label=lab)
    ax.set_xticks(range(len(groups)), [_interval(lo, hi) for lo, hi in groups], rotation=30)
    _log_y(ax, curves)
    ax.set_xlabel("true bin count")
    ax.set_ylabel("mean relative error")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", frameon=False, fontsize=8)
    about = ", ".join(
        s for s in (dataset, None if epsilon is None else f"ε = {float(epsilon):g}") if s
    )
    ax.set_title(title or f"MRE by bin size{f' ({about})' if about else ''}")
    return save_figure(fig, canvas, path)


def _interval(lo: float, hi: float) -> str:
    def fmt(v: float) -> str:
        return "∞" if math.isinf(v) else f"{v:g}"

    return f"[{fmt(lo)}, {fmt(hi)})"
