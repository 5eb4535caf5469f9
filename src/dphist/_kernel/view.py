"""Private views, the two measurement primitives, and the pipeline runner.

A block that has a budget share receives a :class:`PrivateView`: the only way to
learn anything about the true counts. When one privacy unit may contribute up to
``K = data.max_records`` records, the view scales every sensitivity by ``K`` itself
(linear measurements add noise for ``K`` times the query's sensitivity; selections
run at ``epsilon / K``, group privacy), so no block can forget it. Each measurement

1. derives the sensitivity from the query (never from the caller),
2. fixes the exact rational noise scale,
3. charges the block's budget slice -- which raises :class:`BudgetExceededError`
   naming the block and primitive if it would overspend -- and only then
4. reads the counts, answers the query and adds exact discrete Laplace noise.

:func:`run_pipeline` resolves every block's share before any data is read, hands a
view only to blocks with a positive share, and closes each view when its block
returns, so a view kept by a block is useless afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from ..errors import CompositionError, InternalError
from .budget import Accountant, Charge, Primitive, as_fraction, resolve_shares
from .data import ProtectedCounts
from .gaussian import discrete_gaussian_variance, gaussian_lattice, gaussian_parameters
from .noise import NoiseSource, discrete_laplace_variance, lattice_parameters, rational_scale
from .operators import Query
from .selection import Selection
from .zcdp import pure_epsilon_within

__all__ = ["DEFINITIONS", "Measurement", "PrivateView", "run_pipeline"]

#: Privacy definitions a view can run under: pure epsilon-DP, or rho-zCDP where the
#: budget is a rho, measurements add discrete Gaussian noise and selections run at the
#: epsilon their rho buys (exponential-mechanism steps at epsilon**2 / 8 each, other
#: pure steps at epsilon**2 / 2).
DEFINITIONS = ("pure", "zcdp")


@dataclass(frozen=True, eq=False, init=False)
class Measurement:
    """Noisy answers to one query; ``variance`` is the noise variance of each answer.

    ``variance`` is one number when every answer has the same noise, else an array.
    ``scale`` is the noise scale of an unweighted answer. Under zCDP ``epsilon`` holds
    the rho spent and ``scale`` the Gaussian variance of an unweighted answer.
    """

    values: np.ndarray
    query: Query
    epsilon: Fraction
    scale: Fraction
    variance: float | np.ndarray

    def __init__(
        self,
        values: np.ndarray,
        query: Query,
        epsilon: Fraction,
        scale: Fraction,
        variance: float | np.ndarray,
    ) -> None:
        values.setflags(write=False)
        # the fields filled at once (a frozen dataclass's own __init__ sets them one by one)
        self.__dict__.update(
            values=values, query=query, epsilon=epsilon, scale=scale, variance=variance
        )

    def as_floats(self) -> np.ndarray:
        """The answers as a read-only float64 array, which ``values`` becomes (the same
        numbers: noisy counts are far below 2**53). An int64 array the measurement owns
        is converted in place, a slice at a time, so a census-scale release makes no
        second copy of its answers (each fresh array of 10**7 answers costs about as
        much in page faults as drawing their noise)."""
        v = self.values
        if v.dtype == np.float64:
            return v
        if v.dtype == np.int64 and v.ndim == 1 and v.flags.owndata and v.flags.c_contiguous:
            v.flags.writeable = True
            out = v.view(np.float64)
            for i in range(0, v.size, _SLICE):  # same addresses: read a slice, then write it
                out[i : i + _SLICE] = v[i : i + _SLICE]
        else:
            out = v.astype(np.float64)
        out.flags.writeable = False
        object.__setattr__(self, "values", out)
        return out


#: Answers converted at a time by :meth:`Measurement.as_floats` (numpy buffers each
#: overlapping slice once: 512 KB).
_SLICE = 1 << 16


class PrivateView:
    """A block's handle on the protected counts, charged against its budget slice."""

    __slots__ = ("_budget", "_data", "_k", "_noise", "_open", "_zcdp", "block")

    def __init__(
        self,
        data: ProtectedCounts,
        budget: Accountant,
        noise: NoiseSource,
        block: str,
        *,
        definition: str = "pure",
    ):
        if definition not in DEFINITIONS:
            raise InternalError(f"unknown privacy definition {definition!r}")
        self._data = data
        self._budget = budget
        self._noise = noise
        self._open = True
        self._k = data.max_records  # records per privacy unit: every sensitivity times K
        self._zcdp = definition == "zcdp"  # the budget is a rho, measurements are Gaussian
        self.block = block

    def __repr__(self) -> str:
        return f"PrivateView(block={self.block!r}, n={self.n}, remaining={self.remaining})"

    def __reduce__(self):
        raise TypeError("private views cannot be pickled or copied")

    @property
    def n(self) -> int:
        """Number of bins (public)."""
        return self._data.n

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the domain (public): ``(n,)``, or ``(rows, cols)`` for a 2-D histogram
        whose cells are sealed in row-major order."""
        return self._data.shape

    @property
    def remaining(self) -> Fraction:
        """Budget this block has left."""
        return self._budget.remaining

    @property
    def definition(self) -> str:
        """The privacy definition (public): "pure" (an epsilon) or "zcdp" (a rho)."""
        return "zcdp" if self._zcdp else "pure"

    def _epsilon(self, epsilon: object) -> Fraction:
        if not self._open:
            raise InternalError(f"block {self.block!r} used its view after it returned")
        if epsilon is None:
            return self._budget.remaining
        return as_fraction(epsilon, name="epsilon")

    def _check(self, query: Query) -> None:
        if not isinstance(query, Query):
            raise InternalError(f"block {self.block!r} passed a non-query {type(query).__name__}")
        if query.n != self.n:
            raise InternalError(f"query over {query.n} bins on a view of {self.n} bins")
        shape = getattr(query, "shape", None)
        if shape is not None and tuple(shape) != self.shape:
            raise InternalError(f"query over a {shape} domain on a view of {self.shape}")

    def measure(self, query: Query, *, epsilon: object = None) -> Measurement:
        """Answer ``query`` with exact discrete Laplace noise of scale >= sensitivity/epsilon.

        ``epsilon`` defaults to all the budget the block has left. For a weighted query
        answer ``q`` gets scale ``sensitivity / (w_q epsilon)``: the privacy loss of one
        record is ``sum_q w_q epsilon / sensitivity <= epsilon`` over the answers it
        enters.
        """
        eps = self._epsilon(epsilon)
        self._check(query)
        if self._zcdp:
            return self._measure_gaussian(query, eps)
        sensitivity = query.sensitivity * self._k if self._k != 1 else query.sensitivity
        t, s, scale, unit_variance = _laplace_terms(sensitivity, eps)
        self._budget.charge(
            Charge(self.block, _LAPLACE, eps, sensitivity, scale, query.size, query.describe())
        )
        if getattr(query, "weights", None) is None:  # one scale for every answer
            noisy = self._read(query)
            self._noise.add_discrete_laplace(noisy, t, s)
            return Measurement(noisy, query, eps, scale, unit_variance)
        # answer q gets scale sensitivity / (w_q * eps)
        plan = _weight_plan(query, lambda w: rational_scale(sensitivity, eps * w))
        noisy, variance = self._answer(
            query, plan, self._noise.add_discrete_laplace, discrete_laplace_variance
        )
        return Measurement(noisy, query, eps, scale, variance)

    def _measure_gaussian(self, query: Query, rho: Fraction) -> Measurement:
        """Zero-concentrated DP: exact discrete Gaussian noise of variance
        ``sigma**2 = D2 / (2 rho)`` (rounded up), ``D2 = K**2`` times the query's squared
        L2 sensitivity; rho-zCDP (Canonne, Kamath, Steinke 2020, Theorem 14). A weighted
        answer ``q`` gets variance ``sigma**2 / w_q**2``: the Gaussian mechanism on the
        weighted answers, rescaled."""
        d2 = query.sensitivity2 * self._k**2
        sigma2 = d2 / (2 * rho)
        a, b = gaussian_parameters(sigma2)
        weighted = getattr(query, "weights", None) is not None
        plan = (
            _weight_plan(query, lambda w: gaussian_parameters(sigma2 / (w * w)))
            if weighted
            else [(slice(None), (a, b))]
        )
        self._budget.charge(
            Charge(
                self.block,
                Primitive.DISCRETE_GAUSSIAN,
                rho,
                d2,
                Fraction(a, b),
                query.size,
                query.describe(),
                unit="rho",
            )
        )
        noisy, variance = self._answer(
            query, plan, self._noise.add_discrete_gaussian, discrete_gaussian_variance
        )
        return Measurement(noisy, query, rho, Fraction(a, b), variance)

    def _read(self, query: Query) -> np.ndarray:
        """The exact answers to ``query`` as a fresh int64 array (read after the charge)."""
        if getattr(query, "whole", False):  # the total, summed when the counts were sealed
            return np.array([self._data._total()], dtype=np.int64)
        return query.apply(self._data._read())

    def _answer(self, query: Query, plan: list, add: Callable, variance_of: Callable) -> tuple:
        """Read the counts (after the charge), answer ``query`` and add noise in place,
        ``add(part, *params)``, to each part of ``plan``; the variance is one number for
        an unweighted query."""
        noisy = self._read(query)
        if getattr(query, "weights", None) is None:
            (_, params), *_ = plan
            add(noisy, *params)
            return noisy, float(variance_of(*params))
        variance = np.empty(query.size)
        for idx, params in plan:
            part = noisy[idx]
            add(part, *params)
            noisy[idx] = part
            variance[idx] = variance_of(*params)
        return noisy, variance

    def measure_real(self, query: Query, *, epsilon: object = None) -> Measurement:
        """Release a real-valued statistic by the lattice Laplace mechanism (under zCDP
        the lattice Gaussian one, :meth:`_measure_real_gaussian`).

        The value is rounded to a power-of-two lattice ``g`` and ``g`` times exact
        discrete Laplace noise is added; the charged sensitivity includes the
        rounding (``sensitivity + changed * g``). See ``noise.lattice_parameters``.
        """
        eps = self._epsilon(epsilon)
        self._check(query)
        if self._zcdp:
            return self._measure_real_gaussian(query, eps)
        changed = min(query.changed * self._k, query.size)
        g, sensitivity, t, s = lattice_parameters(query.sensitivity * self._k, eps, changed)
        scale = g * Fraction(t, s)
        self._budget.charge(
            Charge(
                self.block,
                Primitive.LATTICE_LAPLACE,
                eps,
                sensitivity,
                scale,
                query.size,
                query.describe(),
            )
        )
        exact = np.asarray(query.apply_real(self._data._read()), dtype=np.float64)
        gf = float(g)
        noisy = np.rint(exact / gf) * gf + gf * self._noise.discrete_laplace(t, s, query.size)
        return Measurement(noisy, query, eps, scale, gf * gf * discrete_laplace_variance(t, s))

    def _measure_real_gaussian(self, query: Query, rho: Fraction) -> Measurement:
        """The lattice Gaussian mechanism: round to a lattice ``g``, add ``g`` times exact
        discrete Gaussian noise. Rounding moves only the values that change, each by at
        most ``g`` more, so the rounded statistic's L2 sensitivity is at most
        ``K sqrt(D2) + g sqrt(changed)``; its square (bounded by a rational,
        ``gaussian_lattice``) sets ``sigma**2 = D2' / (2 rho)``."""
        changed = min(query.changed * self._k, query.size)
        g, d2, a, b = gaussian_lattice(query.sensitivity2 * self._k**2, rho, changed)
        variance = g * g * Fraction(a, b)
        self._budget.charge(
            Charge(
                self.block,
                Primitive.LATTICE_GAUSSIAN,
                rho,
                d2,
                variance,
                query.size,
                query.describe(),
                unit="rho",
            )
        )
        exact = np.asarray(query.apply_real(self._data._read()), dtype=np.float64)
        gf = float(g)
        noisy = np.rint(exact / gf) * gf + gf * self._noise.discrete_gaussian(a, b, query.size)
        return Measurement(noisy, query, rho, variance, gf * gf * discrete_gaussian_variance(a, b))

    def selection_epsilon(self, epsilon: object = None) -> Fraction:
        """The pure epsilon a :meth:`select` with this ``epsilon`` (default: what the block
        has left) runs at: under zCDP the largest epsilon with ``epsilon**2 / 2 <= rho``,
        divided by the records per unit ``K`` (public arithmetic, reads nothing)."""
        charged = self._epsilon(epsilon)
        pure = pure_epsilon_within(charged) if self._zcdp else charged
        return pure / self._k

    def select(self, selection: Selection, *, epsilon: object = None) -> Any:
        """Run a private selection (:mod:`~dphist._kernel.selection`) on the counts.

        The charge records the selection's primitive, ``epsilon``, the sensitivity of
        its scores (times the unit's ``K``), the noise scale it uses and how many values
        it reveals; only then are the counts read. With ``K > 1`` records per unit the
        selection runs at ``epsilon / K`` (group privacy). Under zCDP ``epsilon`` is a
        rho: the selection runs at the largest ``e`` whose cost ``c e**2`` fits it
        (``Selection.zcdp_cost``), a bounded-range selection as exponential-mechanism
        choices (primitive ``exponential_min``).
        """
        if not isinstance(selection, Selection):
            raise InternalError(f"block {self.block!r} passed a non-selection")
        charged = self._epsilon(epsilon)
        n = self.n
        chosen = selection.for_unit(self._k)
        bounded = self._zcdp and chosen.bounded_range
        # under zCDP: the run epsilon e whose cost c e**2 fits rho (c adds the selection's
        # steps up in rho: an exponential choice e_i**2 / 8, a pure step e**2 / 2)
        pure = pure_epsilon_within(charged / (2 * chosen.zcdp_cost(n))) if self._zcdp else charged
        eps = pure / self._k  # group privacy: one unit moves up to K records
        self._budget.charge(
            Charge(
                self.block,
                Primitive.EXPONENTIAL_MIN if bounded else chosen.primitive,
                charged,
                chosen.sensitivity(n) * self._k,
                chosen.scale(n, eps),
                chosen.released(n),
                chosen.describe(n),
                chosen.certified,
                "rho" if self._zcdp else "epsilon",
            )
        )
        if bounded:
            return chosen.choose(self._data._read(), eps, self._noise, mechanism="exponential")
        return chosen.choose(self._data._read(), eps, self._noise)

    def close(self) -> None:
        self._open = False


_LAPLACE = Primitive.DISCRETE_LAPLACE
_TERMS: dict[tuple, tuple[int, int, Fraction, float]] = {}


def _laplace_terms(sensitivity: Fraction, epsilon: Fraction) -> tuple[int, int, Fraction, float]:
    """``(t, s, t/s, variance)`` of the discrete Laplace for ``sensitivity / epsilon``
    (:func:`~dphist._kernel.noise.rational_scale`), remembered per pair: releases ask
    for the same few, and each would otherwise build the same Fraction and variance.
    The key holds the scale function itself, so that a replaced one (the privacy
    audit's mutants replace it for a while) never reads or leaves an entry the real
    one would use."""
    if type(sensitivity) is not Fraction:
        sensitivity = Fraction(sensitivity)
    scale_of = rational_scale
    key = (scale_of, *sensitivity.as_integer_ratio(), *epsilon.as_integer_ratio())
    found = _TERMS.get(key)
    if found is None:
        t, s = scale_of(sensitivity, epsilon)
        found = (t, s, Fraction(t, s), float(discrete_laplace_variance(t, s)))
        if len(_TERMS) < 4096:
            _TERMS[key] = found
    return found


def _weight_plan(query: Query, params_of: Callable[[Fraction], tuple]) -> list:
    """``[(answers, noise parameters)]`` of a weighted query: one part per distinct
    weight (one sampler call each), its parameters ``params_of(weight)``."""
    weights = query.weights
    w_arr = np.array(weights, dtype=object)
    return [(np.flatnonzero(w_arr == w), params_of(w)) for w in sorted(set(weights))]


class Step(Protocol):
    """What :func:`run_pipeline` needs of a block: a unique name, a share and a run method."""

    name: str
    share: Any

    def run(self, state: Any, view: PrivateView | None) -> Any: ...


def run_pipeline(
    data: ProtectedCounts,
    blocks: Sequence[Step],
    start: Callable[[dict[str, Fraction]], Any],
    *,
    epsilon: Fraction,
    budget: Accountant,
    noise: NoiseSource,
    definition: str = "pure",
) -> tuple[Any, dict[str, float]]:
    """Run ``blocks`` in order; each spends at most its share of ``epsilon``.

    All shares are resolved (and may fail) before any block runs; ``start(plan)``
    builds the initial state from the public per-block budgets. A block with share
    zero gets ``view=None``. Returns the final state and seconds spent per block.
    Under ``definition="zcdp"`` the budget and the shares are amounts of rho.
    """
    names = [b.name for b in blocks]
    shares = dict(zip(names, [b.share for b in blocks], strict=True))
    if len(shares) != len(names):
        raise CompositionError(f"block names must be unique within a method; got {names}")
    plan = resolve_shares(epsilon, shares)
    state = start(dict(plan))  # the state's copy: a block cannot change the plan
    timings: dict[str, float] = {}
    clock = time.perf_counter
    for name, block in zip(names, blocks, strict=True):
        eps = plan[name]
        view = None
        if eps.numerator > 0:  # an exact share (integer test: no rational comparison)
            part = budget.part(eps, label=name)
            view = PrivateView(data, part, noise, name, definition=definition)
        began = clock()
        try:
            state = block.run(state, view)
        finally:
            if view is not None:
                view.close()
        timings[name] = clock() - began
    return state, timings
