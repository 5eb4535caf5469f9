"""The two-dimensional Haar transform of Privelet (Xiao, Wang, Gehrke, ICDE 2010, §5).

Privelet's standard decomposition of a ``rows x cols`` grid applies the one-dimensional
unnormalised Haar transform of :mod:`dphist._numeric.wavelet` to every column, then to
every row of the result. A coefficient is then ``sum_{i,j} s_a(i) t_b(j) x[i, j]``
with ``s_a`` and ``t_b`` one-dimensional coefficients (each ``+1``, ``-1`` or ``0`` on a
bin), so one record changes ``(m_r + 1)(m_c + 1)`` coefficients by one each
(``m = ceil(log2 n)`` per axis): the L1 sensitivity, and Privelet's generalised
sensitivity in the unnormalised form (uniform noise on unnormalised coefficients is its
weighted noise on normalised ones). The inverse is the one-dimensional inverse along
each axis; the estimate of a rectangle weights coefficient ``(a, b)`` by the product of
the one-dimensional weights of its row and column ranges, so its noise variance is
``var * M_r * M_c`` with ``M`` the one-dimensional sums of squared weights
(:func:`~dphist._numeric.wavelet.privelet_range_moment`). All exact linear algebra on
public structure or released values: no data, no noise.
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError
from .wavelet import haar_depth, haar_size

__all__ = ["grid_haar_forward", "grid_haar_inverse", "grid_haar_sensitivity", "haar_along"]


def grid_haar_sensitivity(shape: tuple[int, int]) -> int:
    """``(m_r + 1)(m_c + 1)``: how many coefficients one cell enters (each with +-1)."""
    return (haar_depth(int(shape[0])) + 1) * (haar_depth(int(shape[1])) + 1)


def haar_along(a: np.ndarray) -> np.ndarray:
    """The one-dimensional forward transform of every column of ``a`` (axis 0), in the
    coefficient order of :func:`~dphist._numeric.wavelet.haar_forward`. Integer input
    stays exact (int64)."""
    totals = a.astype(np.int64 if a.dtype.kind in "iub" else np.float64)
    details = []
    while totals.shape[0] > 1:
        if totals.shape[0] % 2:
            totals = np.concatenate([totals, np.zeros((1, *totals.shape[1:]), totals.dtype)])
        left, right = totals[0::2], totals[1::2]
        details.append(left - right)
        totals = left + right
    return np.concatenate([totals, *reversed(details)])


def _inverse_along(c: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`haar_along` for ``n`` bins on axis 0 (float)."""
    m = haar_depth(n)
    totals = c[:1].astype(np.float64)
    pos = 1
    for lev in range(m, 0, -1):
        k = totals.shape[0]
        d = c[pos : pos + k]
        pos += k
        children = np.empty((2 * k, *totals.shape[1:]))
        children[0::2] = (totals + d) / 2
        children[1::2] = (totals - d) / 2
        totals = children[: -(-n >> (lev - 1))]
    return totals


def grid_haar_forward(x: np.ndarray) -> np.ndarray:
    """Coefficients of a ``rows x cols`` array: columns transformed, then rows; shape
    ``(haar_size(rows), haar_size(cols))``."""
    x = np.asarray(x)
    if x.ndim != 2 or x.size == 0:
        raise ValidationError("the 2-D Haar transform needs a non-empty rows x cols array")
    return haar_along(haar_along(x).T).T


def grid_haar_inverse(coeffs: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Cell estimates (``rows x cols``) from coefficients in :func:`grid_haar_forward`'s
    layout; linear in them."""
    rows, cols = int(shape[0]), int(shape[1])
    c = np.asarray(coeffs, dtype=np.float64)
    if c.shape != (haar_size(rows), haar_size(cols)):
        raise ValidationError(
            f"coefficients must have shape {(haar_size(rows), haar_size(cols))} for a "
            f"{rows} x {cols} grid, got {c.shape}"
        )
    return _inverse_along(_inverse_along(c, rows).T, cols).T
