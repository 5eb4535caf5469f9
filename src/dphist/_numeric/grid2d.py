"""Two-dimensional grids: prefix sums, rectangle totals and the Hilbert order of cells.

A ``rows x cols`` grid is held flattened in row-major order (cell ``(i, j)`` at
``i * cols + j``). Rectangles are half-open, ``[r0, r1) x [c0, c1)``, like Python
slices. Everything here is public arithmetic or post-processing: no data, no noise.
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError

__all__ = ["hilbert_index", "hilbert_order", "prefix2d", "rect_totals"]


def prefix2d(x: np.ndarray) -> np.ndarray:
    """2-D prefix sums with a leading row and column of zeros (exact int64 for integer
    input, float64 otherwise): ``P[i, j]`` is the total above row ``i`` and left of
    column ``j``, so a rectangle's total is four lookups."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValidationError(f"prefix sums of a grid need a 2-D array; got shape {x.shape}")
    dtype = np.int64 if x.dtype.kind in "iub" else np.float64
    out = np.zeros((x.shape[0] + 1, x.shape[1] + 1), dtype=dtype)
    np.cumsum(x, axis=0, dtype=dtype, out=out[1:, 1:])
    np.cumsum(out[1:, 1:], axis=1, out=out[1:, 1:])
    return out


def rect_totals(p: np.ndarray, r0, r1, c0, c1) -> np.ndarray:
    """Totals of the rectangles ``[r0, r1) x [c0, c1)`` from prefix sums ``p``."""
    return p[r1, c1] - p[r0, c1] - p[r1, c0] + p[r0, c0]


def hilbert_index(rows: np.ndarray, cols: np.ndarray, order: int) -> np.ndarray:
    """Position of each cell ``(rows[k], cols[k])`` along the Hilbert curve of the
    ``2**order x 2**order`` square (the classic rotate-and-reflect construction, all
    cells at once)."""
    x = np.asarray(cols, dtype=np.int64).copy()
    y = np.asarray(rows, dtype=np.int64).copy()
    d = np.zeros(x.shape, dtype=np.int64)
    side = 1 << order
    s = side >> 1
    while s > 0:
        rx = ((x & s) > 0).astype(np.int64)
        ry = ((y & s) > 0).astype(np.int64)
        d += s * s * ((3 * rx) ^ ry)
        # rotate the quadrant so the curve's pattern repeats inside it
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, side - 1 - x, x)
        y = np.where(flip, side - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        s >>= 1
    return d


def hilbert_order(shape: tuple[int, int]) -> np.ndarray:
    """The cells of a ``rows x cols`` grid (row-major indices) in the order of the
    Hilbert curve over the smallest enclosing power-of-two square, cells outside the
    grid skipped. Consecutive cells of the order are close in the grid, so a 1-D method
    run in this order groups cells that are near each other (Li et al., DAWA, PVLDB
    2014, §6)."""
    rows, cols = (int(v) for v in shape)
    if rows < 1 or cols < 1:
        raise ValidationError(f"a grid needs rows, cols >= 1; got {shape!r}")
    order = max(rows - 1, cols - 1, 0).bit_length()
    i, j = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    return np.argsort(hilbert_index(i, j, order), kind="stable")
