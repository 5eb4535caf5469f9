"""Count queries over a two-dimensional domain, with sensitivities the kernel derives.

A 2-D histogram is sealed in row-major order with its public ``shape`` (``rows, cols``;
:func:`~dphist._kernel.data.protect_grid`); neighbours differ by one record in one cell.
Every query here states its ``shape``, which the view checks against the data's:

* :class:`GridSums` -- the cell totals of a grid laid over the domain (a level of a
  hierarchy, a uniform grid): the cells partition the domain, sensitivity 1.
* :class:`RectangleSums` -- totals of arbitrary rectangles: the sensitivity is the most
  rectangles covering one cell, computed exactly with a 2-D difference array (disjoint
  rectangles: 1; ``h`` nested levels: ``h``).
* :class:`GridHaar` -- Privelet's 2-D Haar coefficients (unnormalised): one cell enters
  ``(m_r + 1)(m_c + 1)`` coefficients with weight +-1, its sensitivity.
* :class:`WorstRectangle` -- MWEM's choice of the rectangle a public estimate answers
  worst (a selection; sensitivity 1).

The 1-D queries of :mod:`~dphist._kernel.operators` also apply to the flattened cells
(a total, groups of cells in any public order). No query matrix is ever built.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from .._numeric.grid2d import prefix2d, rect_totals
from .._numeric.grid_haar import grid_haar_forward, grid_haar_sensitivity
from .._numeric.wavelet import haar_size
from ..errors import ValidationError
from .noise import NoiseSource
from .operators import Query
from .selection import Selection, noisy_argmin

__all__ = ["GridHaar", "GridSums", "RectangleSums", "WorstRectangle", "check_shape"]


def check_shape(shape: object) -> tuple[int, int]:
    """A 2-D domain shape ``(rows, cols)`` of positive integers."""
    try:
        rows, cols = (int(v) for v in shape)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise ValidationError(f"a 2-D shape is (rows, cols); got {shape!r}") from None
    if rows < 1 or cols < 1:
        raise ValidationError(f"a 2-D shape needs rows, cols >= 1; got {shape!r}")
    return rows, cols


def _edges(edges: object, length: int, name: str) -> np.ndarray:
    e = np.asarray(edges)
    if e.ndim != 1 or e.size < 2 or not np.issubdtype(e.dtype, np.integer):
        raise ValidationError(f"{name} must be an integer array of two or more edges")
    e = e.astype(np.int64)
    if e[0] != 0 or e[-1] != length or np.any(np.diff(e) <= 0):
        raise ValidationError(f"{name} must increase strictly from 0 to {length}")
    e.flags.writeable = False
    return e


@dataclass(frozen=True, eq=False)
class GridSums(Query):
    """Totals of the cells ``[row_edges[a], row_edges[a+1]) x [col_edges[b],
    col_edges[b+1])`` of a grid over the domain, row-major. The grid cells partition the
    domain, so one record changes one total by one: sensitivity 1."""

    shape: tuple[int, int]
    row_edges: np.ndarray
    col_edges: np.ndarray

    def __post_init__(self) -> None:
        rows, cols = check_shape(self.shape)
        object.__setattr__(self, "shape", (rows, cols))
        object.__setattr__(self, "row_edges", _edges(self.row_edges, rows, "row_edges"))
        object.__setattr__(self, "col_edges", _edges(self.col_edges, cols, "col_edges"))

    @property
    def n(self) -> int:  # type: ignore[override]
        return self.shape[0] * self.shape[1]

    @property
    def size(self) -> int:
        return (self.row_edges.size - 1) * (self.col_edges.size - 1)

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(1)

    @property
    def sensitivity2(self) -> Fraction:
        return Fraction(1)

    def apply(self, x: np.ndarray) -> np.ndarray:
        grid = np.asarray(x, dtype=np.int64).reshape(self.shape)
        rows = np.add.reduceat(grid, self.row_edges[:-1], axis=0)
        return np.add.reduceat(rows, self.col_edges[:-1], axis=1).ravel()

    def describe(self) -> str:
        return (
            f"GridSums({self.shape[0]}x{self.shape[1]} domain, "
            f"{self.row_edges.size - 1}x{self.col_edges.size - 1} grid)"
        )


@dataclass(frozen=True, eq=False)
class RectangleSums(Query):
    """Totals of the half-open rectangles ``[r0, r1) x [c0, c1)``. One record changes the
    totals of the rectangles holding its cell by one each: the sensitivity is the most
    rectangles covering one cell (2-D difference array, exact)."""

    shape: tuple[int, int]
    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray

    def __post_init__(self) -> None:
        rows, cols = check_shape(self.shape)
        arrays = [np.asarray(getattr(self, k)) for k in ("r0", "r1", "c0", "c1")]
        if (
            any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays)
            or arrays[0].size == 0
            or not all(np.issubdtype(a.dtype, np.integer) for a in arrays)
        ):
            raise ValidationError("rectangle bounds must be four non-empty 1-D integer arrays")
        r0, r1, c0, c1 = (a.astype(np.int64) for a in arrays)
        if (
            r0.min() < 0 or c0.min() < 0 or r1.max() > rows or c1.max() > cols
            or np.any(r0 >= r1) or np.any(c0 >= c1)
        ):  # fmt: skip
            raise ValidationError(
                f"rectangles must satisfy 0 <= r0 < r1 <= {rows} and 0 <= c0 < c1 <= {cols}"
            )
        object.__setattr__(self, "shape", (rows, cols))
        for name, a in zip(("r0", "r1", "c0", "c1"), (r0, r1, c0, c1), strict=True):
            a.flags.writeable = False
            object.__setattr__(self, name, a)

    @property
    def n(self) -> int:  # type: ignore[override]
        return self.shape[0] * self.shape[1]

    @property
    def size(self) -> int:
        return int(self.r0.size)

    @functools.cached_property
    def sensitivity(self) -> Fraction:  # type: ignore[override]
        rows, cols = self.shape
        d = np.zeros((rows + 1, cols + 1), dtype=np.int64)
        np.add.at(d, (self.r0, self.c0), 1)
        np.add.at(d, (self.r0, self.c1), -1)
        np.add.at(d, (self.r1, self.c0), -1)
        np.add.at(d, (self.r1, self.c1), 1)
        np.cumsum(d, axis=0, out=d)
        np.cumsum(d, axis=1, out=d)
        return Fraction(int(d.max()))

    @property
    def sensitivity2(self) -> Fraction:
        return self.sensitivity  # each covering total moves by exactly 1

    def apply(self, x: np.ndarray) -> np.ndarray:
        p = prefix2d(np.asarray(x, dtype=np.int64).reshape(self.shape))
        return rect_totals(p, self.r0, self.r1, self.c0, self.c1)

    def describe(self) -> str:
        return f"RectangleSums({self.shape[0]}x{self.shape[1]} domain, {self.size} rectangles)"


@dataclass(frozen=True, eq=False)
class GridHaar(Query):
    """Privelet's unnormalised 2-D Haar coefficients (:mod:`dphist._numeric.grid_haar`),
    row-major over ``(haar_size(rows), haar_size(cols))``: sensitivity
    ``(m_r + 1)(m_c + 1)``."""

    shape: tuple[int, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", check_shape(self.shape))

    @property
    def n(self) -> int:  # type: ignore[override]
        return self.shape[0] * self.shape[1]

    @property
    def size(self) -> int:
        return haar_size(self.shape[0]) * haar_size(self.shape[1])

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(grid_haar_sensitivity(self.shape))

    @property
    def sensitivity2(self) -> Fraction:
        return self.sensitivity  # each coefficient holding the cell moves by exactly 1

    def apply(self, x: np.ndarray) -> np.ndarray:
        return grid_haar_forward(np.asarray(x, dtype=np.int64).reshape(self.shape)).ravel()

    def describe(self) -> str:
        return f"GridHaar({self.shape[0]}x{self.shape[1]} domain)"


@dataclass(frozen=True, eq=False)
class WorstRectangle(Selection):
    """MWEM's choice (Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1) of the candidate
    rectangle ``[r0, r1) x [c0, c1)`` maximising ``|q(x) - answers_q|``, by report noisy
    max (or the exponential mechanism under zCDP). One record moves every rectangle's
    total, hence every score, by at most 1: sensitivity 1."""

    shape: tuple[int, int]
    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    answers: np.ndarray
    proof: ClassVar[str] = "report_noisy_min; Dwork and Roth 2014, Claim 3.9"
    bounded_range: ClassVar[bool] = True

    def sensitivity(self, n: int) -> Fraction:
        return Fraction(1)

    def zcdp_cost(self, n: int) -> Fraction:
        return Fraction(1, 8)

    def released(self, n: int) -> int:
        return 1

    def describe(self, n: int) -> str:
        return f"worst-answered rectangle of {len(self.r0)} ({self.shape[0]}x{self.shape[1]})"

    def choose(
        self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource, mechanism: str = "laplace"
    ) -> int:
        if x.shape[0] != self.shape[0] * self.shape[1]:
            raise ValidationError("worst rectangle: the shape does not hold the cells")
        p = prefix2d(x.reshape(self.shape)).astype(np.float64)
        exact = rect_totals(p, self.r0, self.r1, self.c0, self.c1)
        return noisy_argmin(-np.abs(exact - self.answers), Fraction(1), epsilon, noise, mechanism)
