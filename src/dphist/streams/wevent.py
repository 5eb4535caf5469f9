"""Window mechanisms: what each window of a stream measures, and with which budget.

Every mechanism here spends, in window ``i``, a budget fixed by public facts and its
own earlier outputs, and is checked by the stream's :class:`~.ledger.SlidingLedger`:

* ``periodic`` (event-level): every window published with its own ``epsilon`` (or
  ``rho``) by any registered method. A record lies in one window, so windows compose
  in parallel; the ledger's ``w`` is 1.
* ``uniform`` (Kellaris, Papadopoulos, Xiao, Papadias, "Differentially Private Event
  Sequences over Infinite Streams", PVLDB 7(12) 2014, a baseline there): every window
  published with ``epsilon/w``.
* ``sample`` (the paper's other baseline): window ``i`` published with the whole
  ``epsilon`` when ``i`` is a multiple of ``w``, the ``w - 1`` windows after it repeat
  that release (no charge).
* ``bd``, Budget Distribution, and ``ba``, Budget Absorption (the paper's two
  mechanisms): each window ``i`` first measures its dissimilarity from the last release
  ``r``,
  ``dis = (1/n) sum_j |c_i[j] - r[j]|``, with ``eps_1 = share * epsilon / w`` (``share``
  1/2 as in the paper; sensitivity ``1/n``, derived in :mod:`dphist._kernel.streams`,
  ``K/n`` for a privacy unit of ``K`` records), then publishes anew, with budget
  ``eps_2`` and Laplace noise on every count (the paper's publication; here the exact
  discrete Laplace of the ``identity`` method), only if the noisy dissimilarity exceeds
  the error that publication would have: its expected absolute error per count, ``err =
  E|Z|`` for the discrete Laplace of scale ``K/eps_2`` (the paper's ``1/eps_2``).
  Otherwise the window repeats the last release and spends no publication budget.

  - BD: ``eps_2`` is half of the publication budget ``(1 - share) epsilon`` left after
    the publications of the previous ``w - 1`` windows (spent budgets come back when
    their window leaves the span).
  - BA: every window is allotted ``u = (1 - share) epsilon / w`` for publication. A
    publication absorbs the allotments of the windows since the previous one that it
    has not used (itself included, at most ``w``): ``k`` of them give ``eps_2 = k u``.
    It then nullifies the ``k - 1`` windows after it, which repeat it without a test
    (their allotments were absorbed). The test is skipped there: its outcome could not
    be used, so it would spend budget for nothing (the paper runs it; this changes no
    release and spends less).

Checked against the paper's rules as two public re-implementations state them (its
``M_{t,1}``/``M_{t,2}`` split: the test with ``eps/(2w)`` and sensitivity ``1/d`` on the
mean absolute change from the last release;
BD's ``eps_rm = eps/2 - sum_{i=t-w+1}^{t-1} eps_{i,2}`` and ``eps_{t,2} = eps_rm/2``;
BA's ``t_N = eps_{l,2} / (eps/(2w)) - 1`` nullified windows after a publication at
``l`` and ``eps_{t,2} = eps/(2w) min(t - (l + t_N), w)``; publication when the noisy
change exceeds ``1/eps_{t,2}``, the Laplace publication's mean absolute error) and
replayed by an oracle in the tests. Departures, each spending no more: the threshold is
the discrete Laplace's exact ``E|Z|`` (below ``1/eps_2``), and BA's nullified windows
skip the test.

First window. Before any release the reference ``r`` is the all-zero histogram, a
public prior: window 0 is tested like any other (BD offers half its publication
budget, BA one allotment) and, if it is not published, repeats zeros. A stream that
starts sparse is then not charged for publishing noise around zeros.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._kernel import Accountant, NoiseSource, PrivateView, ProtectedCounts, as_share
from .._kernel.noise import rational_scale
from .._kernel.streams import Dissimilarity
from ..errors import ValidationError
from ..methods import get_method
from ..methods.run import Outcome, run
from .ledger import check_w

__all__ = ["MECHANISMS", "WEVENT", "Published", "Schedule", "expected_abs_error", "schedule"]

WEVENT = ("uniform", "sample", "bd", "ba")
_NEVER = 1 << 50
MECHANISMS = ("periodic", *WEVENT)


@dataclass(frozen=True, eq=False)
class Published:
    """What a window released: ``outcome`` of the method for a fresh publication, or
    ``None`` when it repeats the release of window ``source`` (``None``: the zero prior)."""

    outcome: Outcome | None
    budget: Fraction
    source: int | None = None
    dissimilarity: float | None = None


def expected_abs_error(epsilon: Fraction, max_records: int = 1) -> float:
    """``E|Z|`` for the discrete Laplace the identity method adds at ``epsilon``:
    ``2p / (1 - p**2)``, ``p = exp(-s/t)`` for the scale ``t/s >= K/epsilon``; infinite
    for a scale beyond ``2**50`` (such a budget is never worth publishing with)."""
    if Fraction(max_records) / Fraction(epsilon) > _NEVER:
        return math.inf
    t, s = rational_scale(Fraction(max_records), Fraction(epsilon))
    p = math.exp(-s / t)
    return 2.0 * p / (1.0 - p * p) if p > 0 else 0.0


class Schedule:
    """A window mechanism (see the module docs): ``step`` measures one window."""

    name = "periodic"

    @staticmethod
    def hook(amount: Fraction, label: str) -> None:
        """Called with a step's budget before the step reads the window (the stream
        commits it to a stored budget there)."""

    def __init__(
        self, amount: Fraction, w: int = 1, *, method: str = "identity", definition: str = "pure",
        share: object = Fraction(1, 2), max_records: int = 1, params: dict[str, Any] | None = None,
    ):  # fmt: skip
        self.amount = Fraction(amount)
        self.w = check_w(w)
        self.definition = definition
        self.k = int(max_records)
        self.params = dict(params or {})
        self.info = get_method(method)
        self.pipeline = self.info.pipeline(**self.params)
        self.share = as_share(share, name="share")
        self._check()
        self.last: np.ndarray | None = None  # the last release (public)
        self.last_index: int | None = None

    def _check(self) -> None:
        if self.definition == "zcdp" and not all(b.zcdp for b in self.pipeline.blocks):
            raise ValidationError(f"method {self.info.name!r} has no zero-concentrated DP form")

    def step(self, i: int, data: ProtectedCounts, account: Accountant, noise: NoiseSource):
        """Measure window ``i`` under ``account``; what it released."""
        return self.publish(i, data, self.amount, account, noise)

    def publish(
        self, i: int, data: ProtectedCounts, budget: Fraction, account: Accountant,
        noise: NoiseSource, dis: float | None = None,
    ) -> Published:  # fmt: skip
        self.hook(budget, "publish")
        outcome = run(
            self.pipeline, data, epsilon=budget,
            budget=account.child(budget, label=self.info.name), noise=noise.spawn(),
            definition=self.definition,
        )  # fmt: skip
        self.last, self.last_index = outcome.estimate, i
        return Published(outcome, budget, None, dis)

    def repeat(self, dis: float | None = None) -> Published:
        return Published(None, Fraction(0), self.last_index, dis)

    # A stream resumed after a crash during window ``i`` cannot know what ``i`` spent:
    # :meth:`most` bounds it from public state, :meth:`assume` moves the budget state as
    # if ``i`` had published with that budget (a path the rules allow, so the windows
    # after it keep within the cap); the last release itself stays the one before.

    def offer(self, i: int) -> Fraction:
        """The publication budget window ``i`` would use (public state only)."""
        return self.amount

    def most(self, i: int) -> Fraction:
        """The most window ``i`` can charge."""
        return self.offer(i)

    def assume(self, i: int) -> None:
        """Budget state as if window ``i`` had published with :meth:`offer`."""

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The schedule's state: JSON-safe fields and arrays."""
        arrays = {} if self.last is None else {"last": np.asarray(self.last)}
        return {"last_index": self.last_index}, arrays

    def restore(self, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.last_index = fields["last_index"]
        self.last = arrays.get("last")


class Uniform(Schedule):
    name = "uniform"

    def offer(self, i):
        return self.amount / self.w

    def step(self, i, data, account, noise):
        return self.publish(i, data, self.offer(i), account, noise)


class Sample(Schedule):
    name = "sample"

    def offer(self, i):
        return self.amount if i % self.w == 0 else Fraction(0)

    def step(self, i, data, account, noise):
        if i % self.w == 0:
            return self.publish(i, data, self.offer(i), account, noise)
        return self.repeat()


class _Tested(Schedule):
    """BD and BA: a private dissimilarity test before each publication."""

    def _check(self) -> None:
        if self.definition != "pure":
            raise ValidationError(f"{self.name.upper()} runs under pure epsilon-DP (the paper's)")
        if self.info.name != "identity":
            raise ValidationError(
                f"{self.name.upper()} publishes with Laplace noise on every count (method "
                "'identity'): its test compares the change with that publication's known error"
            )
        if not 0 < self.share < 1:
            raise ValidationError(f"share must lie strictly between 0 and 1; got {self.share}")
        self.test_budget = self.amount * self.share / self.w
        self.pool = self.amount * (1 - self.share)

    def test(self, data: ProtectedCounts, account: Accountant, noise: NoiseSource) -> float:
        reference = np.zeros(data.n) if self.last is None else self.last
        self.hook(self.test_budget, "test")
        view = PrivateView(data, account.child(self.test_budget, label="dissimilarity"),
                           noise, "dissimilarity")  # fmt: skip
        try:
            m = view.measure_real(Dissimilarity(reference), epsilon=self.test_budget)
        finally:
            view.close()
        return float(m.values[0])

    def most(self, i):
        offer = self.offer(i)
        return self.test_budget + offer if offer > 0 else Fraction(0)

    def decide(self, i, data, account, noise, budget: Fraction) -> Published:
        dis = self.test(data, account, noise)
        if dis > expected_abs_error(budget, self.k):
            return self.publish(i, data, budget, account, noise, dis)
        return self.repeat(dis)


class BudgetDistribution(_Tested):
    name = "bd"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._spent: deque[Fraction] = deque(maxlen=max(self.w - 1, 1))

    def offer(self, i):
        used = sum(self._spent, Fraction(0)) if self.w > 1 else Fraction(0)
        return (self.pool - used) / 2

    def most(self, i):
        return self.test_budget + self.offer(i)

    def step(self, i, data, account, noise):
        result = self.decide(i, data, account, noise, self.offer(i))
        self._spent.append(result.budget)
        return result

    def assume(self, i):
        self._spent.append(self.offer(i))

    def state(self):
        fields, arrays = super().state()
        return {**fields, "spent": [str(x) for x in self._spent]}, arrays

    def restore(self, fields, arrays):
        super().restore(fields, arrays)
        self._spent.clear()
        self._spent.extend(Fraction(x) for x in fields["spent"])


class BudgetAbsorption(_Tested):
    name = "ba"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.unit = self.pool / self.w
        self.anchor: int | None = None  # the last publication (its window)
        self.units_used = 0  # allotments it absorbed

    def absorbable(self, i: int) -> int:
        """Allotments window ``i`` may absorb; 0 when it is nullified."""
        if self.anchor is None:
            return min(i + 1, self.w)
        nullified_until = self.anchor + self.units_used - 1
        if i <= nullified_until:
            return 0
        return min(i - nullified_until, self.w)

    def offer(self, i):
        return self.absorbable(i) * self.unit

    def step(self, i, data, account, noise):
        units = self.absorbable(i)
        if units == 0:
            return self.repeat()
        result = self.decide(i, data, account, noise, units * self.unit)
        if result.outcome is not None:
            self.anchor, self.units_used = i, units
        return result

    def assume(self, i):
        units = self.absorbable(i)
        if units:
            self.anchor, self.units_used = i, units

    def state(self):
        fields, arrays = super().state()
        return {**fields, "anchor": self.anchor, "units_used": self.units_used}, arrays

    def restore(self, fields, arrays):
        super().restore(fields, arrays)
        self.anchor, self.units_used = fields["anchor"], fields["units_used"]


_KINDS = {
    "periodic": Schedule,
    "uniform": Uniform,
    "sample": Sample,
    "bd": BudgetDistribution,
    "ba": BudgetAbsorption,
}


def schedule(name: str, amount: Fraction, w: int, **options: Any) -> Schedule:
    """The window mechanism ``name`` (one of :data:`MECHANISMS`) with budget ``amount``
    over any ``w`` consecutive windows."""
    key = str(name).strip().lower()
    if key not in _KINDS:
        raise ValidationError(
            f"unknown window mechanism {name!r}; choose from {', '.join(MECHANISMS)}"
        )
    if key == "periodic" and w != 1:
        raise ValidationError(
            "periodic release is event-level: each window has its own budget (w=1)"
        )
    return _KINDS[key](amount, w, **options)
