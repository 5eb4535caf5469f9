"""Error bars of a 2-D release: the exact noise of any rectangle, bias and intervals.

The 2-D counterpart of :mod:`.noise` and :mod:`.model`, built the same way: a noise
model describes the noise of a release's estimate as public linear structure and gives,
for any half-open rectangle ``[r0, r1) x [c0, c1)``, its variance, its fourth cumulant
(so intervals follow the heavier-than-normal tails of a sum of a few Laplace draws),
where it is one draw of the kernel's noise times a coefficient, and where it is a sum of
whole integer draws. Intervals use the same quantiles as 1-D ranges
(:func:`.model.noise_quantile`).

* :class:`CellNoise` -- one independent draw per cell (identity), ``O(1)`` memory.
* :class:`TreeNoise2D` -- least squares over a tree of measured rectangle totals
  (hierarchies, quadtrees, uniform and adaptive grids, PrivTree's leaves):
  :func:`~dphist._numeric.rect_tree.rect_moments`, exact, ``O(perimeter)`` per
  rectangle; the tree may be built at the first query.
* :class:`HaarNoise2D` -- Privelet's tensor Haar coefficients: the product of the
  one-dimensional sums of powers of the weights, exact, ``O(log)`` per rectangle.
* :class:`OrderNoise` -- a 1-D noise model over a public order of the cells (a method
  run along the Hilbert curve): exact variance through the indicator of the rectangle
  in that order, ``O(cells)`` per rectangle.

:class:`RectErrorModel` joins the noise and, for an estimate spread evenly over leaf
rectangles chosen by the method (grids, PrivTree), the bracket that non-negative counts
give: the truth lies between the total of the leaves inside the rectangle and that of
the leaves it meets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numeric.rect_tree import INNER, OUTER, RECTANGLE, RectFactors, rect_moments
from .._numeric.wavelet import privelet_range_moment
from .model import NoErrorBarError, noise_quantile
from .noise import NoiseModel
from .tails import Tail, check_alpha, fourth_cumulant

__all__ = [
    "CellNoise",
    "HaarNoise2D",
    "OrderNoise",
    "RectErrorModel",
    "RectNoise",
    "TreeNoise2D",
]


def _rects(*bounds: object) -> tuple[np.ndarray, ...]:
    return tuple(np.atleast_1d(np.asarray(b, dtype=np.int64)) for b in bounds)


def _area(r0, r1, c0, c1) -> np.ndarray:
    return (np.maximum(r1 - r0, 0) * np.maximum(c1 - c0, 0)).astype(np.float64)


class RectNoise:
    """Interface of the 2-D noise models: ``shape``, and per rectangle."""

    shape: tuple[int, int]
    tail: Tail | None = None
    law: str = "laplace"

    def variance(self, r0, r1, c0, c1) -> np.ndarray:
        raise NotImplementedError

    def fourth_cumulant(self, r0, r1, c0, c1) -> np.ndarray:
        raise NotImplementedError

    def single(self, r0, r1, c0, c1) -> np.ndarray:
        """``c > 0`` where a rectangle's noise is ``c`` times one draw of :attr:`tail`."""
        return np.zeros(np.shape(r0))

    def integral(self, r0, r1, c0, c1) -> np.ndarray:
        """True where a rectangle's noise is a sum of whole integer draws."""
        return np.zeros(np.shape(r0), dtype=bool)


class CellNoise(RectNoise):
    """One independent draw of variance ``variance`` on every cell (identity)."""

    def __init__(self, shape, variance: float, tail: Tail | None = None, law=None):
        self.shape = (int(shape[0]), int(shape[1]))
        self.cell_variance = float(variance)
        self.tail = tail
        self.law = law or (tail.kind if tail is not None else "laplace")
        self._k4 = float(fourth_cumulant(self.cell_variance, self.law))

    def variance(self, r0, r1, c0, c1):
        return _area(*_rects(r0, r1, c0, c1)) * self.cell_variance

    def fourth_cumulant(self, r0, r1, c0, c1):
        return _area(*_rects(r0, r1, c0, c1)) * self._k4

    def single(self, r0, r1, c0, c1):
        if self.tail is None:
            return np.zeros(np.shape(r0))
        return (_area(*_rects(r0, r1, c0, c1)) == 1).astype(np.float64)

    def integral(self, r0, r1, c0, c1):
        if self.tail is None:
            return np.zeros(np.shape(r0), dtype=bool)
        return _area(*_rects(r0, r1, c0, c1)) > 0


class TreeNoise2D(RectNoise):
    """GLS over a tree of measured rectangle totals. ``factors`` is a
    :class:`~dphist._numeric.rect_tree.RectFactors`, or a function building it (called
    at the first query: a 4,096 x 4,096 hierarchy's tree is built only when asked);
    ``estimates`` the released node estimates (needed by the bracket's unions), an
    array or likewise a function."""

    def __init__(
        self,
        shape,
        factors: RectFactors | Callable[[], Any],
        law: str = "laplace",
        estimates: np.ndarray | Callable[[], np.ndarray] | None = None,
    ):
        self.shape = (int(shape[0]), int(shape[1]))
        self._factors = factors
        self._estimates = estimates
        self.law = law

    @property
    def factors(self) -> RectFactors:
        if not isinstance(self._factors, RectFactors):
            self._factors = self._factors()
        return self._factors

    @property
    def node_estimates(self) -> np.ndarray:
        if self._estimates is None:
            raise NoErrorBarError("the release kept no node estimates for its bracket")
        if callable(self._estimates):
            self._estimates = self._estimates()
        return self._estimates

    def moments(self, mode: int, r0, r1, c0, c1, est=None) -> tuple[np.ndarray, ...]:
        return rect_moments(self.factors, *_rects(r0, r1, c0, c1), mode=mode, est=est)

    def union(self, mode: int, r0, r1, c0, c1) -> tuple[np.ndarray, ...]:
        """Variance, fourth cumulant and estimate of the leaves inside (``INNER``) or
        meeting (``OUTER``) each rectangle."""
        return self.moments(mode, r0, r1, c0, c1, est=self.node_estimates)

    def variance(self, r0, r1, c0, c1):
        return self.moments(RECTANGLE, r0, r1, c0, c1)[0]

    def fourth_cumulant(self, r0, r1, c0, c1):
        return self.moments(RECTANGLE, r0, r1, c0, c1)[1]


class HaarNoise2D(RectNoise):
    """Privelet 2-D: independent noise of variance ``variance`` on every unnormalised
    tensor Haar coefficient, inverted; a rectangle's estimate weights coefficient
    ``(a, b)`` by ``u_a v_b`` (the 1-D weights of its row and column ranges)."""

    def __init__(self, shape, variance: float, law: str = "laplace"):
        self.shape = (int(shape[0]), int(shape[1]))
        self.coefficient_variance = float(variance)
        self.law = law

    def _moment(self, power: int, r0, r1, c0, c1) -> np.ndarray:
        r0, r1, c0, c1 = _rects(r0, r1, c0, c1)
        out = np.zeros(np.broadcast(r0, r1, c0, c1).shape)
        ok = (r0 < r1) & (c0 < c1)
        if np.any(ok):
            rows = privelet_range_moment(self.shape[0], r0[ok], r1[ok], power)
            cols = privelet_range_moment(self.shape[1], c0[ok], c1[ok], power)
            out[ok] = rows * cols
        return out

    def variance(self, r0, r1, c0, c1):
        return self.coefficient_variance * self._moment(2, r0, r1, c0, c1)

    def fourth_cumulant(self, r0, r1, c0, c1):
        k4 = float(fourth_cumulant(self.coefficient_variance, self.law))
        return k4 * self._moment(4, r0, r1, c0, c1)


class OrderNoise(RectNoise):
    """A 1-D noise model ``noise`` over the cells taken in the public ``order`` (cell
    ``order[k]`` is its bin ``k``), for an unbiased 1-D method run along that order: a
    rectangle's noise variance is that of the 1-D estimate's sum over the rectangle's
    cells, exact: ``O(log n)`` when they are consecutive along the order (a cell), else
    ``O(n)``. Its fourth cumulant is not tracked (0: normal quantiles). A method whose
    estimate is spread over groups along the order states no 2-D error bar (see
    :mod:`dphist.twod.run`), so this model has no bracket."""

    def __init__(self, shape, noise: NoiseModel, order: np.ndarray):
        self.shape = (int(shape[0]), int(shape[1]))
        self.noise = noise
        self.law = noise.law
        where = np.empty(order.size, dtype=np.int64)
        where[order] = np.arange(order.size)
        self._where = where.reshape(self.shape)

    def _variance_of(self, bins: np.ndarray) -> float:
        """The 1-D estimate's noise variance summed over ``bins`` (positions): one range
        query when they are consecutive, else the weighted sum over every bin."""
        lo, hi = int(bins.min()), int(bins.max()) + 1
        if hi - lo == bins.size:
            return float(self.noise.variance(np.array([lo]), np.array([hi]))[0])
        a = np.zeros(self._where.size)
        a[bins] = 1.0
        return float(self.noise.functional_variance(a))

    def variance(self, r0, r1, c0, c1):
        r0, r1, c0, c1 = _rects(r0, r1, c0, c1)
        if np.all((r1 - r0 == 1) & (c1 - c0 == 1)):  # single cells: one bin each
            k = self._where[r0, c0]
            return self.noise.variance(k, k + 1)
        out = np.zeros(r0.shape)
        for k in range(r0.size):
            if r0[k] < r1[k] and c0[k] < c1[k]:
                out[k] = self._variance_of(self._where[r0[k] : r1[k], c0[k] : c1[k]].ravel())
        return out

    def fourth_cumulant(self, r0, r1, c0, c1):
        return np.zeros(np.shape(np.atleast_1d(r0)))


@dataclass(frozen=True, eq=False)
class RectErrorModel:
    """Noise, and whether the estimate is unbiased (``bias="none"``) or spread over the
    leaves of ``noise``'s tree, whose bracket then bounds it (``"bracket"``);
    ``withheld`` the reason no error bars are given."""

    noise: RectNoise | None
    bias: str = "none"
    withheld: str | None = None
    covers_text: str = field(default="", repr=False)

    @classmethod
    def without(cls, reason: str) -> RectErrorModel:
        return cls(None, "none", reason)

    @property
    def covers(self) -> str:
        if self.withheld is not None:
            return "nothing: " + self.withheld
        if self.bias == "bracket":
            return (
                "the noise and the spread within the leaves: intervals hold the truth between "
                "the noisy totals of the leaves inside and of the leaves meeting the rectangle, "
                "each at its level or above over the noise (a bound, not an exact law); the "
                "rectangles of one release share its noise, so the share held in a single "
                "release varies widely"
            )
        return "the noise (exact; the estimate is unbiased)"

    @property
    def exact(self) -> bool:
        return self.withheld is None and self.bias == "none"

    def _check(self) -> None:
        if self.withheld is not None:
            raise NoErrorBarError(f"this release states no error bar: {self.withheld}")

    def variance(self, rects: tuple[np.ndarray, ...], est: np.ndarray) -> np.ndarray:
        """Squared standard error of each rectangle (``est``: their estimates). With a
        bracket, the bracket's farther edge (each end one standard error out) is added
        to the noise as a bias, as 1-D contiguous groups do."""
        self._check()
        var = self.noise.variance(*rects)
        if self.bias == "none":
            return var
        inner_var, _, inner = self.noise.union(INNER, *rects)
        outer_var, _, outer = self.noise.union(OUTER, *rects)
        low = inner - np.sqrt(inner_var)
        high = outer + np.sqrt(outer_var)
        return var + np.maximum(np.abs(est - low), np.abs(high - est)) ** 2

    def intervals(
        self, rects: tuple[np.ndarray, ...], est: np.ndarray, alpha: object
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ``1 - alpha`` limits for each rectangle."""
        self._check()
        a = check_alpha(alpha)
        if self.bias == "bracket":
            inner_var, inner_k4, inner = self.noise.union(INNER, *rects)
            outer_var, outer_k4, outer = self.noise.union(OUTER, *rects)
            lower = inner - _quantile(inner_var, inner_k4, self.noise, a)
            upper = outer + _quantile(outer_var, outer_k4, self.noise, a)
            lower = np.where(inner_var > 0, lower, 0.0)  # no leaf inside: the bound is 0
        else:
            half = noise_quantile(self.noise, a, *rects)
            lower, upper = est - half, est + half
        # true counts are never negative: a lower limit below 0 rises to 0
        lower = np.where(upper >= 0.0, np.maximum(lower, 0.0), lower)
        r0, r1, c0, c1 = rects
        empty = (r0 >= r1) | (c0 >= c1)
        return np.where(empty, 0.0, lower), np.where(empty, 0.0, upper)

    def describe(self) -> dict[str, Any]:
        return {"error_bars": self.withheld is None, "covers": self.covers, "exact": self.exact}


class _Fixed(RectNoise):
    """Given moments as a noise model, so a union's interval uses the quantile rule."""

    def __init__(self, var: np.ndarray, k4: np.ndarray, law: str):
        self._var, self._k4, self.law = var, k4, law

    def variance(self, *rects):
        return self._var

    def fourth_cumulant(self, *rects):
        return self._k4

    def single(self, *rects):
        return np.zeros(self._var.shape)

    def integral(self, *rects):
        return np.zeros(self._var.shape, dtype=bool)


def _quantile(var: np.ndarray, k4: np.ndarray, noise: RectNoise, alpha: float) -> np.ndarray:
    return noise_quantile(_Fixed(var, k4, noise.law), alpha, np.zeros(var.shape))
