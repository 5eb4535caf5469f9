"""``dh.stream``: histograms over time from windows of counts or from timed records."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import ingest
from .._kernel import noise_source
from ..errors import ValidationError
from ..store import stored_cost
from .resume import StateFile
from .run import Stream, amount_of, counts_windows, engine
from .spark import FrameStream
from .windows import Windowing

__all__ = ["stream", "stream_frames"]

_RECORD_OPTIONS = ("column", "window", "start", "end", "lateness", "clock", "outside")


def stream(
    source: Iterable[Any],
    *,
    epsilon: object = None,
    rho: object = None,
    mechanism: str = "periodic",
    w: int | None = None,
    method: str | None = None,
    horizon: int | None = None,
    share: object = None,
    privacy_unit: object = None,
    max_records: int | None = None,
    budget: object = None,
    rng: object = None,
    time: str | None = None,
    edges: object = None,
    domain: object = None,
    categories: object = None,
    settle: bool = True,
    **options: Any,
) -> Stream:
    """Publish a stream of histograms, one release per window (docs/streams.md).

    ``source``: windows of counts (one array per window, bins in the public order), or,
    with ``time=``, chunks of records (a mapping of columns, a pandas, polars or Arrow
    table) cut into windows by :class:`~dphist.streams.Windowing` (``column``,
    ``window``, ``start``, ``end``, ``lateness``, ``clock``, the public bins and
    ``outside``), with :class:`~dphist.streams.Watermark` items or ``None`` ticks.
    ``epsilon`` / ``rho``: per window for ``"periodic"``, over any ``w`` consecutive
    windows for ``"uniform"``, ``"sample"``, ``"bd"``, ``"ba"`` (Kellaris et al. 2014;
    BD and BA publish with identity, ``share`` of the budget tests), over the whole
    ``horizon`` for the ``"tree"`` and ``"factorization"`` counters. ``method`` and
    ``**params``: the registered method of each publication. ``privacy_unit``,
    ``max_records``: a unit and its public bound ``K`` per window (with ``time=``, the
    unit's column). ``budget``: a stored budget charged before every step reads its
    window; ``settle=False`` leaves recording those charges to the caller. ``rng``: None
    for secure noise, a seed for reproducible, non-private runs.

    >>> import numpy as np, dphist as dh
    >>> days = [np.array([5, 0, 2]), np.array([6, 1, 2]), np.array([9, 0, 3])]
    >>> [r.kind for r in dh.stream(days, epsilon=1, mechanism="sample", w=2, rng=0)]
    ['published', 'repeated', 'published']
    """
    run, cut = _parts(
        epsilon=epsilon, rho=rho, mechanism=mechanism, w=w, method=method, horizon=horizon,
        share=share, privacy_unit=privacy_unit, max_records=max_records, budget=budget,
        rng=rng, time=time, edges=edges, domain=domain, categories=categories, **options,
    )  # fmt: skip
    if cut is None:
        return Stream(counts_windows(source), run, settle)
    return Stream(cut.windows(source), run, settle)


def stream_frames(
    *, time: str, settle: bool = True, on_release: Callable[[Any], Any] | None = None,
    state: str | os.PathLike[str] | None = None, **options: Any,
) -> FrameStream:  # fmt: skip
    """A Spark Structured Streaming ``foreachBatch`` function that publishes windows as
    :func:`stream` does from records (docs/streams.md, "Spark").

    Options as for :func:`stream` with ``time=`` (the bins, ``column``, ``window``,
    ``start``, ``end``, ``lateness``, ``clock``, ``outside``, the mechanism, budget,
    privacy unit and ``rng``). Each micro-batch is binned per window in Spark and only
    per-window counts reach the driver; windows close by the public watermark
    (:meth:`FrameStream.advance`, ``clock``, ``end`` at :meth:`FrameStream.close`).
    ``on_release`` receives each :class:`WindowRelease`; without it they collect in
    ``releases``. ``state``: an ``.npz`` file where the stream keeps what a restarted
    query needs to resume it (:mod:`~dphist.streams.resume`; window mechanisms without a
    privacy unit); it holds raw counts of open windows. Every option is checked here,
    before any batch is read.

    >>> import dphist as dh
    >>> s = dh.stream_frames(time="t", column="v", window=60, start=0, end=180,
    ...                      domain=(0, 100, 10), epsilon=1, rng=0)
    >>> s.close()  # no batch arrived: three windows of zeros, noised
    >>> [r.index for r in s.releases]
    [0, 1, 2]
    """
    run, cut = _parts(time=time, **options)
    assert cut is not None
    saved = None if state is None else StateFile(state, _fingerprint(run, cut))
    return FrameStream(cut, Stream(iter(()), run, settle), on_release, saved)


def _fingerprint(run: Any, cut: Windowing) -> dict[str, Any]:
    """The public settings a resumed stream must share with the one that saved it."""
    if not hasattr(run, "schedule"):
        raise ValidationError(
            "state= resumes window mechanisms; a counter's noise spans its whole horizon "
            "and is not kept on disk"
        )
    if cut.unit is not None:
        raise ValidationError(
            "state= cannot resume a stream with a privacy unit: the records of its open "
            "windows stay in Spark, which does not keep them across a restart"
        )
    b = cut.binning
    bins = getattr(b, "edges", None)
    bins = getattr(b, "categories", None) if bins is None else bins
    digest = hashlib.sha256(repr(np.asarray(bins).tolist()).encode()).hexdigest()
    sched = run.schedule
    return {
        "mechanism": sched.name, "w": run.ledger.w, "amount": str(run.amount),
        "definition": run.definition, "method": sched.info.name, "params": repr(sched.params),
        "bins": b.n, "bins_sha256": digest, "time": cut.time, "column": cut.column,
        "start": cut.start, "window": cut.length, "end": cut.end, "outside": cut.policy,
    }  # fmt: skip


def _parts(
    *, epsilon: object = None, rho: object = None, mechanism: str = "periodic",
    w: int | None = None, method: str | None = None, horizon: int | None = None,
    share: object = None, privacy_unit: object = None, max_records: int | None = None,
    budget: object = None, rng: object = None, time: str | None = None, edges: object = None,
    domain: object = None, categories: object = None, **options: Any,
) -> tuple[Any, Windowing | None]:  # fmt: skip
    """The checked engine and (with ``time``) windowing of a stream: nothing read."""
    amount, definition = amount_of(epsilon, rho)
    noise_source(rng)  # checked before anything is read
    store = None
    if budget is not None:
        stored_cost(budget, *((amount, None) if definition == "pure" else (None, amount)))
        store = budget
    params = {k: v for k, v in options.items() if k not in _RECORD_OPTIONS}
    records = {k: v for k, v in options.items() if k in _RECORD_OPTIONS}
    run = engine(
        mechanism, amount=amount, definition=definition, w=w, horizon=horizon, method=method,
        params=params, share=share, privacy_unit=_unit_label(privacy_unit), max_records=max_records,
        rng=rng, store=store,
    )  # fmt: skip
    if time is None:
        if records or any(b is not None for b in (edges, domain, categories)):
            raise ValidationError(
                f"{', '.join(sorted(records)) or 'bins'} apply to records: give time= as well"
            )
        return run, None
    bins = ingest.binning(edges=edges, domain=domain, categories=categories)
    cut = Windowing(
        time=time, binning=bins, privacy_unit=privacy_unit, max_records=max_records, rng=rng,
        **_required(records),
    )  # fmt: skip
    return run, cut


def _unit_label(privacy_unit: object) -> str | None:
    if privacy_unit is None or isinstance(privacy_unit, str):
        return privacy_unit
    raise ValidationError("privacy_unit names the unit (with time=, its column)")


def _required(records: dict[str, Any]) -> dict[str, Any]:
    missing = [k for k in ("column", "window", "start") if records.get(k) is None]
    if missing:
        raise ValidationError(f"records with a time column need {', '.join(missing)}=")
    return records
