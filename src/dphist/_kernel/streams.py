"""Kernel primitives for histograms over time: a window's dissimilarity from a public
release, and continual counters over a public horizon.

* :class:`Dissimilarity` -- the mean absolute difference ``(1/n) sum_i |x_i - r_i|``
  between a window's counts ``x`` and a public vector ``r`` (the last release), the
  statistic of the private test of Kellaris, Papadopoulos, Xiao, Papadias (PVLDB 2014,
  §4) that chooses between publishing a window anew and repeating the last release.
  Adding or removing one record changes one ``x_i`` by one, so ``|x_i - r_i|`` moves by
  at most one and the mean by at most ``1/n``: L1 sensitivity ``1/n``, squared L2
  ``1/n**2``, one value changes. Real-valued: released by ``PrivateView.measure_real``
  (lattice Laplace), which multiplies the sensitivity by the privacy unit's ``K``.
* :class:`ContinualCounter` -- running totals of every bin over ``T`` windows (the
  horizon, public), each bin an independent counter (a record is in one bin of one
  window, so the bins' counters compose in parallel). The whole horizon is one
  mechanism, charged once, before the first window is read, for the sensitivity of
  everything it will ever release about one record:

  - ``"tree"``: the binary tree mechanism (Dwork, Naor, Pitassi, Rothblum, STOC 2010;
    Chan, Shi, Song, TISSEC 2011). Node ``(h, j)`` is the total of windows
    ``[j 2**h, (j + 1) 2**h)``; it is measured, with independent noise, at the window
    that completes it, if that window is within the horizon. A window lies in one node
    per height, so one record moves ``H + 1`` measurements by one (``H = floor(log2
    T)``): L1 sensitivity ``H + 1``, squared L2 ``H + 1``; discrete Laplace (pure DP) or
    discrete Gaussian (zCDP) noise on integer totals.
  - ``"factorization"``: the square-root factorization of the running-sum matrix
    ``A = R R`` (Henzinger, Upadhyay, Upadhyay, SODA 2023; Fichtenberger, Henzinger,
    Upadhyay, ICML 2023): ``R`` lower-triangular Toeplitz with ``R[t, j] = c_{t-j}``,
    ``c_k = binom(2k, k) / 4**k``. Window ``t`` releases ``y_t = (R x)_t + z_t`` per
    bin; the running totals are the post-processing ``L y = A x + R z``. One record in
    window ``j`` moves ``y_t`` by ``c_{t-j}`` for every ``t >= j``: the sensitivities are
    the norms of ``R``'s first (longest) column, ``sum_{k<T} c_k`` (L1, pure DP: the max
    column L1 norm) and ``sum_{k<T} c_k**2`` (squared L2, zCDP). ``R x`` is real, so it
    is released on a lattice as ``measure_real`` does (round to ``g``, add ``g`` times
    discrete noise; ``T`` values per bin can change, each by at most ``g`` more).

The coefficients are float64 (``c_k = c_{k-1} (2k - 1) / (2k)``, relative error below
``k 2**-53``); the sensitivities charged are their sums rounded up by a relative
``2**-30``, above every rounding for ``T <= 2**24``. As for ``measure_real``, the float
evaluation of ``R x`` is treated as exact. With ``K`` records per privacy unit (per
window) every sensitivity is ``K`` times (``K**2`` for squared L2) and ``K T`` values can
change. Counts are clamped at ``floor(2**53 / T)`` per bin and window (public, 1-stable),
so every total of the horizon is exact in int64 and float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..errors import InternalError, PrivacyError, ValidationError
from .budget import Accountant, Charge, Primitive
from .data import MAX_TOTAL, protect
from .gaussian import discrete_gaussian_variance, gaussian_lattice, gaussian_parameters
from .noise import NoiseSource, discrete_laplace_variance, lattice_parameters, rational_scale
from .operators import Query

__all__ = [
    "KINDS",
    "MAX_FACTORIZATION_VALUES",
    "ContinualCounter",
    "CounterNoise",
    "CounterPlan",
    "Dissimilarity",
    "counter_noise",
    "sqrt_coefficients",
]

KINDS = ("tree", "factorization")
MAX_FACTORIZATION_VALUES = 1 << 27
"""Most ``T x n`` history values the factorization keeps (1 GiB of float64): ``(R x)_t``
reads every earlier window."""
_MARGIN = 1 + Fraction(1, 1 << 30)
_MAX_HORIZON = 1 << 24


@dataclass(frozen=True, eq=False)
class Dissimilarity(Query):
    """``mean_i |x_i - reference_i|`` for a public reference (see the module docs)."""

    reference: np.ndarray
    n: int = field(init=False)

    def __post_init__(self) -> None:
        ref = np.array(self.reference, dtype=np.float64)
        if ref.ndim != 1 or ref.size == 0 or not np.all(np.isfinite(ref)):
            raise ValidationError("the reference release must be a finite, non-empty vector")
        ref.flags.writeable = False
        object.__setattr__(self, "reference", ref)
        object.__setattr__(self, "n", int(ref.size))

    @property
    def size(self) -> int:
        return 1

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(1, self.n)

    @property
    def sensitivity2(self) -> Fraction:
        return Fraction(1, self.n * self.n)

    @property
    def changed(self) -> int:
        return 1

    def apply(self, x: np.ndarray) -> np.ndarray:
        raise TypeError("the dissimilarity is real-valued: use measure_real")

    def apply_real(self, x: np.ndarray) -> np.ndarray:
        return np.array([np.mean(np.abs(np.asarray(x, dtype=np.float64) - self.reference))])

    def describe(self) -> str:
        return f"Dissimilarity(n={self.n})"


def sqrt_coefficients(horizon: int) -> np.ndarray:
    """``c_k = binom(2k, k) / 4**k`` for ``k < horizon`` (float64, read-only): the first
    column of the square root of the running-sum matrix."""
    k = np.arange(1, max(int(horizon), 1), dtype=np.float64)
    c = np.concatenate(([1.0], np.cumprod((2.0 * k - 1.0) / (2.0 * k))))
    c.flags.writeable = False
    return c


def _rounded_up(value: float) -> Fraction:
    return Fraction(value) * _MARGIN


@dataclass(frozen=True)
class CounterPlan:
    """The public plan of a continual counter: its kind, horizon and sensitivities
    (one record; the counter multiplies them by ``K``)."""

    kind: str
    horizon: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValidationError(f"a counter is one of {', '.join(KINDS)}; got {self.kind!r}")
        t = self.horizon
        if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= _MAX_HORIZON:
            raise ValidationError(f"the horizon must be an integer in [1, 2**24]; got {t!r}")

    @property
    def levels(self) -> int:
        """Heights of the binary tree whose nodes end within the horizon: ``H + 1``."""
        return self.horizon.bit_length()

    @property
    def sensitivity(self) -> Fraction:
        """L1 sensitivity of everything released about one record over the horizon."""
        if self.kind == "tree":
            return Fraction(self.levels)
        return _rounded_up(math.fsum(sqrt_coefficients(self.horizon)))

    @property
    def sensitivity2(self) -> Fraction:
        """Squared L2 sensitivity of the same."""
        if self.kind == "tree":
            return Fraction(self.levels)
        c = sqrt_coefficients(self.horizon)
        return _rounded_up(math.fsum(c * c))

    def nodes_at(self, t: int) -> list[int]:
        """Tree heights whose node completes at window ``t`` (0-based)."""
        return [h for h in range(self.levels) if (t + 1) % (1 << h) == 0]

    def describe(self, n: int) -> str:
        if self.kind == "tree":
            return f"BinaryTree(n={n}, T={self.horizon}, levels={self.levels})"
        return f"SqrtFactorization(n={n}, T={self.horizon})"


@dataclass(frozen=True)
class CounterNoise:
    """The law of every noisy value a counter releases: ``law`` "laplace" (scale
    ``t/s``) or "gaussian" (variance ``a/b``), times the lattice ``g`` (1 for the tree)."""

    law: str
    params: tuple[int, int]
    g: Fraction

    @property
    def variance(self) -> float:
        """Exact variance of one released value's noise."""
        base = self.params
        v = discrete_laplace_variance(*base) if self.law == "laplace" else (
            discrete_gaussian_variance(*base)
        )  # fmt: skip
        return float(self.g) ** 2 * v

    @property
    def scale(self) -> Fraction:
        """The ledger's scale: Laplace ``g t/s``, or Gaussian variance ``g**2 a/b``."""
        p, q = self.params
        return self.g * Fraction(p, q) if self.law == "laplace" else self.g**2 * Fraction(p, q)


def counter_noise(
    plan: CounterPlan, n: int, amount: object, definition: str, max_records: int = 1
) -> tuple[Fraction, CounterNoise]:
    """The sensitivity a counter charges (times ``K``, lattice rounding included) and the
    law of its noise, for budget ``amount`` (an epsilon, or a rho under zCDP): public
    arithmetic, reads nothing."""
    amount, k, one = Fraction(amount), int(max_records), Fraction(1)
    if plan.kind == "tree" and definition == "pure":
        d1 = k * plan.sensitivity
        return d1, CounterNoise("laplace", rational_scale(d1, amount), one)
    if plan.kind == "tree":
        d2 = k * k * plan.sensitivity2
        return d2, CounterNoise("gaussian", gaussian_parameters(d2 / (2 * amount)), one)
    changed = min(k, n) * plan.horizon  # every later value of up to K bins
    if definition == "pure":
        g, eff, t, s = lattice_parameters(k * plan.sensitivity, amount, changed)
        return eff, CounterNoise("laplace", (t, s), g)
    g, eff, a, b = gaussian_lattice(k * k * plan.sensitivity2, amount, changed)
    return eff, CounterNoise("gaussian", (a, b), g)


class ContinualCounter:
    """Running per-bin totals over a public horizon, charged once (module docs).

    ``step(counts)`` takes window ``t``'s counts (validated and sealed like
    :func:`~dphist._kernel.protect`) and returns what window ``t`` releases: for the tree
    ``{height: noisy node totals}`` of the nodes it completes, for the factorization
    ``y_t`` (float64, multiples of the lattice). No more than ``horizon`` windows are
    read: the charge covers exactly those.
    """

    def __init__(
        self,
        plan: CounterPlan,
        n: int,
        *,
        amount: Fraction,
        budget: Accountant,
        noise: NoiseSource,
        definition: str = "pure",
        max_records: int = 1,
        block: str = "continual counts",
    ):
        if definition not in ("pure", "zcdp"):
            raise InternalError(f"unknown privacy definition {definition!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValidationError(f"a counter needs a positive number of bins; got {n!r}")
        t = plan.horizon
        if plan.kind == "factorization" and t * n > MAX_FACTORIZATION_VALUES:
            raise ValidationError(
                f"the factorization keeps every window: {t:,} windows of {n:,} bins exceed "
                f"{MAX_FACTORIZATION_VALUES:,} values; use the tree, fewer bins or a shorter "
                "horizon"
            )
        self.plan, self.n, self.k = plan, n, int(max_records)
        self.definition = definition
        sensitivity, self.noise_law = counter_noise(plan, n, amount, definition, self.k)
        self._noise = noise
        self._t = 0
        self._cap = MAX_TOTAL // t
        if plan.kind == "tree":
            self._partial = np.zeros((plan.levels, n), dtype=np.int64)
        else:
            self._coef = sqrt_coefficients(t)
            self._history = np.zeros((t, n), dtype=np.float64)
        budget.charge(
            Charge(
                block, self._primitive, Fraction(amount), sensitivity, self.noise_law.scale,
                n * self.released_per_bin, plan.describe(n),
                unit="rho" if definition == "zcdp" else "epsilon",
            )
        )  # fmt: skip

    @property
    def released_per_bin(self) -> int:
        """Noisy values released per bin over the horizon."""
        t = self.plan.horizon
        if self.plan.kind == "factorization":
            return t
        return sum(t >> h for h in range(self.plan.levels))

    @property
    def windows_read(self) -> int:
        return self._t

    @property
    def _primitive(self) -> Primitive:
        lattice = self.plan.kind == "factorization"
        if self.definition == "zcdp":
            return Primitive.LATTICE_GAUSSIAN if lattice else Primitive.DISCRETE_GAUSSIAN
        return Primitive.LATTICE_LAPLACE if lattice else Primitive.DISCRETE_LAPLACE

    def _add_noise(self, out: np.ndarray) -> None:
        p, q = self.noise_law.params
        if self.noise_law.law == "laplace":
            self._noise.add_discrete_laplace(out, p, q)
        else:
            self._noise.add_discrete_gaussian(out, p, q)

    def step(self, counts: object) -> dict[int, np.ndarray] | np.ndarray:
        """Read window ``t``'s counts (already charged for) and release its values."""
        if self._t >= self.plan.horizon:
            raise PrivacyError(
                f"the counter's horizon of {self.plan.horizon} windows is over: its charge "
                "covers no further window"
            )
        data = protect(counts, max_records=self.k)
        if data.n != self.n:
            raise ValidationError(f"window {self._t} has {data.n} bins; the counter has {self.n}")
        x = np.minimum(data._read(), self._cap)
        t = self._t
        self._t += 1
        if self.plan.kind == "tree":
            self._partial += x
            out = {}
            for h in self.plan.nodes_at(t):
                node = self._partial[h].copy()
                self._partial[h] = 0
                self._add_noise(node)
                out[h] = node
            return out
        self._history[t] = x
        exact = self._coef[t::-1] @ self._history[: t + 1]
        g = float(self.noise_law.g)
        noise = np.zeros(self.n, dtype=np.int64)
        self._add_noise(noise)
        return np.rint(exact / g) * g + g * noise

    def __reduce__(self):
        raise TypeError("a counter holds sealed counts; it cannot be pickled or copied")
