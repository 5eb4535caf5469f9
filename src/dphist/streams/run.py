"""Publishing a stream: one release per window, under a window mechanism or a counter.

:func:`stream` checks every option, then returns a :class:`Stream`: iterating it reads
one window at a time (sealed in the kernel at once), measures it and yields a
:class:`WindowRelease` with the window's interval, its release (estimate, error bars,
ledger) and its line of the stream's ledger. Nothing is read before the loop asks for
the next window; memory holds the current window and the mechanism's state (for the
factorization, every window of the horizon).

With a stored budget (``budget=dh.BudgetStore(...).budget(name)``) every step's budget
is committed to the store before the step reads the window, and recorded there with
what the step released: a dissimilarity test and a publication are two charges of one
window, a counter one charge for its whole horizon (recorded when the stream ends).
The store's total is then the sum of the windows' charges: the loss of a person whose
records are in every window (sequential composition over the whole stream), which
the store's cap bounds. docs/streams.md explains why a w-event budget is not a total.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._kernel import Accountant, noise_source, protect, validate_epsilon
from .._kernel.streams import ContinualCounter, CounterPlan
from ..errors import ValidationError
from ..guarantee import histogram_guarantee, unit_terms
from ..release import Release
from ..uncertainty import ErrorModel
from .counters import estimator
from .ledger import SlidingLedger, WindowEntry, check_w
from .wevent import MECHANISMS, Published, schedule
from .windows import Window

__all__ = ["COUNTERS", "KINDS", "Stream", "WindowRelease"]

COUNTERS = ("tree", "factorization")
KINDS = (*MECHANISMS, *COUNTERS)


@dataclass(frozen=True, eq=False)
class _Part:
    """What one stored charge paid for (recorded in the budget store)."""

    method: str
    definition: str
    private: bool
    ledger: tuple
    estimate: np.ndarray


@dataclass(eq=False)
class WindowRelease:
    """One window's release and its ledger line.

    ``kind``: "published" (measured anew), "repeated" (the release of window
    ``entry.source`` again, or zeros before any), "counted" (running totals of a
    counter). ``release`` is a :class:`~dphist.Release`: ``estimate``, ``stderr``,
    ``interval`` and the window's own ledger.
    """

    entry: WindowEntry
    release: Release
    grants: list = field(default_factory=list, repr=False)

    @property
    def index(self) -> int:
        return self.entry.index

    @property
    def kind(self) -> str:
        return self.entry.kind

    @property
    def estimate(self) -> np.ndarray:
        return self.release.estimate

    @property
    def stderr(self) -> np.ndarray | None:
        return self.release.stderr

    def interval(self, lo: int, hi: int, alpha: float = 0.05) -> tuple[float, float]:
        return self.release.interval(lo, hi, alpha)

    def settle(self, files: Iterable[Any] = ()) -> None:
        """Record the window's stored charges with what they paid for (once)."""
        grants, self.grants = self.grants, []
        for grant, part in grants:
            grant.record(part, files)

    def to_dict(self) -> dict[str, Any]:
        return {**self.entry.to_dict(), "release": self.release.to_dict()}


def _guarantee(private: bool, unit: str, k: int, definition: str, scope: str) -> str:
    base = histogram_guarantee(private, True, unit, k, definition)
    return base if not private else f"{scope}; {base}"


class Stream:
    """An iterator of :class:`WindowRelease`, one per window of the source (see the
    module docs). ``ledger`` lists the lines of the windows released so far."""

    def __init__(self, windows: Iterator[Window], engine: Any, settle: bool = True):
        self._windows = windows
        self._engine = engine
        self._settle = settle
        self.ledger: list[WindowEntry] = []

    @property
    def guarantee(self) -> str:
        return self._engine.guarantee

    @property
    def definition(self) -> str:
        return self._engine.definition

    @property
    def spent(self) -> Fraction:
        """The sum of every window's own charge so far (sequential composition)."""
        return sum((e.spent for e in self.ledger), Fraction(0))

    def __iter__(self) -> Iterator[WindowRelease]:
        try:
            for window in self._windows:
                yield self.push(window)
        finally:
            self.finish()

    def push(self, window: Window) -> WindowRelease:
        """Release one window (the next in order): the loop's step, for sources that
        push windows (:class:`~dphist.streams.FrameStream`)."""
        rel = self._engine.step(window)
        self.ledger.append(rel.entry)
        if self._settle:
            rel.settle()
        return rel

    def finish(self) -> None:
        """End the stream (a counter records its horizon's charge)."""
        self._engine.finish()

    def __repr__(self) -> str:
        return f"Stream({self._engine.describe()}, windows released: {len(self.ledger)})"


class _Engine:
    """What every engine shares: definition, unit, noise, stored budget."""

    def __init__(
        self, amount: Fraction, definition: str, unit: str, k: int, rng: object, store: Any
    ):
        self.amount, self.definition, self.unit, self.k = amount, definition, unit, k
        self.noise = noise_source(rng)
        self.private = self.noise.private
        self.store = store
        self.name = "epsilon" if definition == "pure" else "rho"

    def charge_store(self, amount: Fraction, label: str) -> Any:
        if self.store is None:
            return None
        return self.store.charge(**{self.name: amount}, method=label)

    def finish(self) -> None:
        return None


class _WindowEngine(_Engine):
    """Window mechanisms (periodic, uniform, sample, BD, BA) under a sliding ledger."""

    def __init__(self, mechanism: str, w: int, method: str, params: dict, share: object, **base):
        super().__init__(**base)
        options = {"method": method, "definition": self.definition, "max_records": self.k}
        if share is not None:
            options["share"] = share
        self.schedule = schedule(mechanism, self.amount, w, params=params, **options)
        self.ledger = SlidingLedger(self.amount, w, self.name)
        self.last: np.ndarray | None = None
        scope = (
            f"event-level: each window at most {self.name} = {self.amount} and a record lies in "
            "one window"
            if mechanism == "periodic"
            else f"w-event privacy (w = {w}): any {w} consecutive windows together at most "
            f"{self.name} = {self.amount} for one record's (unit's) events"
        )
        self.guarantee = _guarantee(self.private, self.unit, self.k, self.definition, scope)

    def describe(self) -> str:
        return f"{self.schedule.name}, w={self.ledger.w}, {self.name}={self.amount}"

    def step(self, window: Window) -> WindowRelease:
        data = protect(window.counts, max_records=self.k)
        account = self.ledger.account()
        grants: list = []
        self.schedule.hook = lambda amount, label: grants.append(
            (self.charge_store(amount, f"stream {self.schedule.name} window {window.index} "
                                       f"{label}"), label, amount)
        )  # fmt: skip
        result = self.schedule.step(window.index, data, account, self.noise)
        kind = "published" if result.outcome is not None else "repeated"
        entry = self.ledger.close(
            account, start=window.start, end=window.end, kind=kind, source=result.source
        )
        release = self._release(window, result, entry)
        parts = [(g, self._part(label, account, release)) for g, label, _ in grants if g]
        return WindowRelease(entry, release, parts)

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What resuming needs: the sliding ledger and the schedule's state."""
        fields, arrays = self.schedule.state()
        return {"ledger": self.ledger.state(), "schedule": fields}, arrays

    def restore(self, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.ledger.restore(fields["ledger"])
        self.schedule.restore(fields["schedule"], arrays)

    def interrupted(self, i: int, start: float | None, end: float | None) -> WindowEntry:
        """Close window ``i``, cut off mid-release, at the most it can have charged."""
        entry = self.ledger.close_unknown(
            self.schedule.most(i), start=start, end=end, kind="interrupted"
        )
        self.schedule.assume(i)
        return entry

    def _part(self, label: str, account: Accountant, release: Release) -> _Part:
        mine = tuple(c for c in account.ledger if (c.block == "dissimilarity") == (label == "test"))
        return _Part(label, self.definition, release.private, mine, release.estimate)

    def _release(self, window: Window, result: Published, entry: WindowEntry) -> Release:
        params = {"stream": self.schedule.name, "w": self.ledger.w, "window": window.index}
        common = dict(
            ledger=entry.charges, private=self.private, guarantee=self.guarantee,
            privacy_unit=self.unit, max_records=self.k, definition=self.definition,
        )  # fmt: skip
        if result.outcome is not None:
            out = result.outcome
            return Release(
                estimate=out.estimate, method=self.schedule.info.name, epsilon=entry.spent,
                noise_variance=out.variance, groups=out.groups, uncertainty=out.uncertainty,
                params={**self.schedule.info.defaults, **self.schedule.params, **params,
                        "dissimilarity": result.dissimilarity},
                **common,
            )  # fmt: skip
        before = np.zeros(entry_n(window)) if self.schedule.last is None else self.schedule.last
        why = (
            f"this window repeats the release of window {result.source}"
            if result.source is not None
            else "this window repeats the all-zero prior (nothing published yet)"
        )
        model = ErrorModel.without(f"{why}; the change since is not measured")
        return Release(
            estimate=before, method="repeat", epsilon=entry.spent, uncertainty=model,
            params={**params, "repeats": result.source, "dissimilarity": result.dissimilarity},
            **common,
        )  # fmt: skip


class _CounterEngine(_Engine):
    """Continual counts: running totals per bin over a public horizon."""

    def __init__(self, kind: str, horizon: int, **base):
        super().__init__(**base)
        self.plan = CounterPlan(kind, horizon)
        self.kind = kind
        self.counter: ContinualCounter | None = None
        self.estimator = None
        self.grant = None
        self.last: np.ndarray | None = None
        scope = (
            f"event-level over the horizon of {horizon} windows: one record (unit) in any "
            f"window changes all the running totals by at most {self.name} = {self.amount}"
        )
        self.guarantee = _guarantee(self.private, self.unit, self.k, self.definition, scope)

    def describe(self) -> str:
        return f"{self.kind} counter, T={self.plan.horizon}, {self.name}={self.amount}"

    def _open(self, n: int) -> Accountant:
        account = Accountant(self.amount, label="continual counts")
        self.grant = self.charge_store(self.amount, f"stream {self.kind} counter")
        self.counter = ContinualCounter(
            self.plan, n, amount=self.amount, budget=account, noise=self.noise,
            definition=self.definition, max_records=self.k,
        )  # fmt: skip
        self.estimator = estimator(self.plan, n, self.counter.noise_law)
        self.charges = account.ledger
        return account

    def step(self, window: Window) -> WindowRelease:
        first = self.counter is None
        if first:
            self._open(entry_n(window))
        values = self.counter.step(window.counts)
        self.last = self.estimator.update(values)
        charges = self.charges if first else ()
        spent = self.amount if first else Fraction(0)
        entry = WindowEntry(
            window.index, window.start, window.end, "counted", charges, spent, self.amount,
            self.amount, 1, self.name,
        )  # fmt: skip
        release = Release(
            estimate=self.last, method=self.kind, epsilon=spent, ledger=charges,
            private=self.private, guarantee=self.guarantee, uncertainty=self.estimator.model(),
            params={"stream": self.kind, "horizon": self.plan.horizon, "window": window.index},
            privacy_unit=self.unit, max_records=self.k, definition=self.definition,
        )  # fmt: skip
        return WindowRelease(entry, release)

    def finish(self) -> None:
        """Record the horizon's charge with the last running totals."""
        if self.grant is not None and self.last is not None:
            part = _Part(self.kind, self.definition, self.private, self.charges, self.last)
            grant, self.grant = self.grant, None
            grant.record(part)


def entry_n(window: Window) -> int:
    """The number of bins of a window's counts (validated by the kernel when sealed)."""
    return int(np.shape(window.counts)[0])


def amount_of(epsilon: object, rho: object) -> tuple[Fraction, str]:
    if (epsilon is None) == (rho is None):
        raise ValidationError("give either epsilon= (pure DP) or rho= (zCDP), exactly one")
    if rho is None:
        return validate_epsilon(epsilon), "pure"
    return validate_epsilon(rho, name="rho"), "zcdp"


def engine(
    mechanism: str, *, amount: Fraction, definition: str, w: object, horizon: object,
    method: str, params: dict, share: object, privacy_unit: object, max_records: object,
    rng: object, store: Any,
) -> Any:  # fmt: skip
    """The checked engine of a stream (nothing read, nothing charged)."""
    key = str(mechanism).strip().lower()
    if key not in KINDS:
        raise ValidationError(
            f"unknown stream mechanism {mechanism!r}; choose from {', '.join(KINDS)}"
        )
    unit, k = unit_terms(privacy_unit, 1 if max_records is None else max_records)
    base = dict(amount=amount, definition=definition, unit=unit, k=k, rng=rng, store=store)
    if key in COUNTERS:
        if horizon is None:
            raise ValidationError(f"the {key} counter needs horizon= (the most windows, public)")
        if w is not None or share is not None or params or method not in (None, "identity"):
            raise ValidationError("a counter takes horizon= only (no w, share, method or params)")
        return _CounterEngine(key, horizon, **base)
    if horizon is not None:
        raise ValidationError("horizon= is for the tree and factorization counters")
    w = 1 if w is None and key == "periodic" else w
    if w is None:
        raise ValidationError(f"{key} needs w= (the windows protected together)")
    return _WindowEngine(key, check_w(w), method or "identity", params, share, **base)


def counts_windows(source: Iterable[Any]) -> Iterator[Window]:
    """Windows given as count arrays (or :class:`Window` items), numbered in order."""
    for i, item in enumerate(source):
        if isinstance(item, Window):
            yield item
        else:
            yield Window(i, item)
