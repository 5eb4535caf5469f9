"""Rectangle workloads over a 2-D domain of ``rows x cols`` cells.

A rectangle is half-open, ``[r0, r1) x [c0, c1)`` with ``0 <= r0 < r1 <= rows`` and
``0 <= c0 < c1 <= cols``. Its answer is four lookups in the 2-D prefix sums ``P``
(``P[i, j]`` the total above row ``i`` and left of column ``j``). Kinds:

* :func:`rectangles` -- given bounds;
* :func:`random_rectangles` -- ``count`` rectangles with uniformly random corners from a
  seed (DPBench's 2-D workload);
* :func:`marginals` -- every row (``axis=1``) or every column (``axis=0``) of the grid:
  the marginal histogram of one attribute;
* :func:`rectangles_of_size` -- every placement of an ``height x width`` window, held
  implicitly (answers and squared errors by slicing the prefix arrays, ``O(rows cols)``,
  the list built only when asked).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from dphist.errors import WorkloadError

from .kinds import DEFAULT_MAX_QUERIES

__all__ = [
    "RectangleWorkload",
    "Rectangles",
    "Windows2D",
    "marginals",
    "random_rectangles",
    "rectangles",
    "rectangles_of_size",
]


def _shape(shape: object) -> tuple[int, int]:
    try:
        rows, cols = (int(v) for v in shape)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise WorkloadError(f"a 2-D shape is (rows, cols); got {shape!r}") from None
    if rows < 1 or cols < 1:
        raise WorkloadError(f"a 2-D shape needs rows, cols >= 1; got {shape!r}")
    return rows, cols


def _prefix(p: object, shape: tuple[int, int], name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.shape != (shape[0] + 1, shape[1] + 1):
        raise WorkloadError(
            f"{name} must be 2-D prefix sums of shape {(shape[0] + 1, shape[1] + 1)}; "
            f"got {arr.shape}"
        )
    return arr


class RectangleWorkload:
    """Interface: ``shape``, ``size``, :meth:`rectangles`, :meth:`answers` (from prefix
    sums) and :meth:`squared_error_sum` (from prefix sums of the errors)."""

    shape: tuple[int, int]

    @property
    def size(self) -> int:
        raise NotImplementedError

    def rectangles(self, *, max_queries: int = DEFAULT_MAX_QUERIES) -> tuple[np.ndarray, ...]:
        """The bounds ``(r0, r1, c0, c1)`` (int64 arrays), refused beyond ``max_queries``."""
        if self.size > max_queries:
            raise WorkloadError(
                f"the workload has {self.size:,} rectangles; listing them is limited to "
                f"{max_queries:,} (raise max_queries, or use answers / squared_error_sum)"
            )
        return self._rectangles()

    def _rectangles(self) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def answers(self, prefix: object) -> np.ndarray:
        p = _prefix(prefix, self.shape, "prefix")
        r0, r1, c0, c1 = self._rectangles()
        return p[r1, c1] - p[r0, c1] - p[r1, c0] + p[r0, c0]

    def squared_error_sum(self, errors: object) -> float:
        """``sum_q (estimate_q - truth_q)**2`` from the 2-D prefix sums of the cell errors."""
        a = self.answers(errors)
        return float(np.dot(a, a))


@dataclass(frozen=True, eq=False)
class Rectangles(RectangleWorkload):
    """Given rectangles."""

    shape: tuple[int, int]
    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray

    def __post_init__(self) -> None:
        rows, cols = _shape(self.shape)
        arrays = [np.asarray(getattr(self, k)) for k in ("r0", "r1", "c0", "c1")]
        if any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays) or not all(
            np.issubdtype(a.dtype, np.integer) for a in arrays
        ):
            raise WorkloadError("rectangle bounds must be four 1-D integer arrays of one length")
        r0, r1, c0, c1 = (a.astype(np.int64) for a in arrays)
        if r0.size and (
            r0.min() < 0 or c0.min() < 0 or r1.max() > rows or c1.max() > cols
            or np.any(r0 >= r1) or np.any(c0 >= c1)
        ):  # fmt: skip
            raise WorkloadError(
                f"rectangles must satisfy 0 <= r0 < r1 <= {rows} and 0 <= c0 < c1 <= {cols}"
            )
        object.__setattr__(self, "shape", (rows, cols))
        for k, a in zip(("r0", "r1", "c0", "c1"), (r0, r1, c0, c1), strict=True):
            a.flags.writeable = False
            object.__setattr__(self, k, a)

    @property
    def size(self) -> int:
        return int(self.r0.size)

    def _rectangles(self) -> tuple[np.ndarray, ...]:
        return self.r0, self.r1, self.c0, self.c1

    def save(self, path: str) -> None:
        """Write one rectangle per line, ``r0 r1 c0 c1`` (half-open)."""
        np.savetxt(path, np.column_stack(self._rectangles()), fmt="%d")


@dataclass(frozen=True, eq=False)
class Windows2D(RectangleWorkload):
    """Every placement of a ``height x width`` window (implicit)."""

    shape: tuple[int, int]
    height: int
    width: int

    def __post_init__(self) -> None:
        rows, cols = _shape(self.shape)
        for name, v, top in (("height", self.height, rows), ("width", self.width, cols)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 1 <= v <= top:
                raise WorkloadError(f"{name} must be an integer in [1, {top}]; got {v!r}")
        object.__setattr__(self, "shape", (rows, cols))

    @property
    def size(self) -> int:
        return (self.shape[0] - self.height + 1) * (self.shape[1] - self.width + 1)

    def _rectangles(self) -> tuple[np.ndarray, ...]:
        _rows, cols = self.shape
        i, j = np.divmod(np.arange(self.size, dtype=np.int64), cols - self.width + 1)
        return i, i + self.height, j, j + self.width

    def answers(self, prefix: object) -> np.ndarray:
        p = _prefix(prefix, self.shape, "prefix")
        h, w = self.height, self.width
        out = p[h:, w:] - p[:-h, w:] - p[h:, :-w] + p[:-h, :-w]
        return out.ravel()


def rectangles(shape: object, r0: object, r1: object, c0: object, c1: object) -> Rectangles:
    """The given half-open rectangles ``[r0, r1) x [c0, c1)``."""
    return Rectangles(shape, *(np.asarray(v) for v in (r0, r1, c0, c1)))  # type: ignore[arg-type]


def random_rectangles(shape: object, count: int, *, seed: int = 0) -> Rectangles:
    """``count`` rectangles whose row and column ranges are each spanned by two uniformly
    random cells (inclusive, so a range may be one cell), drawn from ``seed``: the
    workload DPBench's 2-D experiments score."""
    rows, cols = _shape(shape)
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
        raise WorkloadError(f"count must be a positive integer; got {count!r}")
    rng = np.random.default_rng(seed)
    a = np.sort(rng.integers(0, rows, size=(int(count), 2)), axis=1)
    b = np.sort(rng.integers(0, cols, size=(int(count), 2)), axis=1)
    return Rectangles((rows, cols), a[:, 0], a[:, 1] + 1, b[:, 0], b[:, 1] + 1)


def marginals(shape: object, axis: int) -> Rectangles:
    """One attribute's marginal histogram as rectangles: each column summed over the
    rows (``axis=0``, ``cols`` queries) or each row over the columns (``axis=1``)."""
    rows, cols = _shape(shape)
    if axis not in (0, 1):
        raise WorkloadError(f"axis must be 0 (sum over rows) or 1 (sum over columns); got {axis!r}")
    if axis == 0:
        j = np.arange(cols, dtype=np.int64)
        return Rectangles((rows, cols), np.zeros(cols, np.int64), np.full(cols, rows), j, j + 1)
    i = np.arange(rows, dtype=np.int64)
    return Rectangles((rows, cols), i, i + 1, np.zeros(rows, np.int64), np.full(rows, cols))


def rectangles_of_size(shape: object, height: int, width: int) -> Windows2D:
    """Every ``height x width`` rectangle of the grid (held implicitly)."""
    return Windows2D(shape, height, width)  # type: ignore[arg-type]
