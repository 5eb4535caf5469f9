"""One region's estimate from its noisy measurement (Kuo et al. 2018, §4; spec §6).

Each function is post-processing of a released noisy vector plus public facts (the
region's group count ``G``, the cap ``K``, the minimum size ``m0``), and returns an
integer histogram ``Ĥ >= 0`` with ``sum(Ĥ) = G``:

* :func:`naive_estimate`: noisy ``H_K`` -> projection onto ``{x >= 0, sum x = G}`` ->
  largest-remainder rounding (spec §6.1).
* :func:`ranked_estimate`: noisy sorted sizes -> isotonic regression (L2 by PAV, L1 by
  lower-median PAV) -> clip at ``m0`` -> round -> histogram (spec §6.2).
* :func:`cumulative_estimate`: noisy ``Hc[m0..K-1]`` -> isotonic regression clipped to
  ``[0, G]`` -> round -> differences (spec §6.3). Size ``K`` means "K or more".
"""

from __future__ import annotations

import numpy as np

from .._numeric.group_views import largest_remainder, round_half_up
from .._numeric.isotonic import bounded_isotonic, isotonic_l1, isotonic_l2_inplace, project_simplex
from ..errors import ValidationError

__all__ = ["ESTIMATORS", "cumulative_estimate", "naive_estimate", "ranked_estimate", "trim"]

ESTIMATORS: tuple[str, ...] = ("cumulative", "ranked", "naive")
# Default norms: the better one in the paper's experiments for each method (§6.2, §6.3).
DEFAULT_NORM = {"cumulative": "l1", "ranked": "l2", "naive": "l2"}


def trim(hist: np.ndarray) -> np.ndarray:
    """``hist`` without trailing zeros (at least one entry), as ``int64``."""
    nz = np.flatnonzero(hist)
    return np.asarray(hist[: (int(nz[-1]) + 1 if nz.size else 1)], dtype=np.int64)


def naive_estimate(noisy: np.ndarray, groups: int) -> np.ndarray:
    """Naive method (spec §6.1): nearest non-negative vector with total ``G``, then LRR."""
    noisy = np.asarray(noisy, dtype=np.float64)
    if groups == 0:
        return np.zeros(noisy.shape[0], dtype=np.int64)
    return largest_remainder(project_simplex(noisy, groups), groups)


def ranked_estimate(
    noisy: np.ndarray, *, norm: str = "l2", m0: int = 0, k: int | None = None
) -> np.ndarray:
    """Ranked method (spec §6.2): monotone fit of noisy sorted sizes, bounded below by ``m0``.

    Returns the histogram of the rounded fit (length largest size + 1). The lower bound
    is applied by clipping, optimal for both norms (spec §6.4.4). With a public cap
    ``k`` the fit is clipped at ``k`` too ("k or more", as the cumulative and naive
    methods report sizes), so the histogram's length never follows a noisy size.
    O(G) for L2 (in place), O(G log G) for L1.
    """
    y = np.asarray(noisy, dtype=np.float64)
    if y.size == 0:
        return np.zeros(1, dtype=np.int64)
    if norm == "l2":
        fit = isotonic_l2_inplace(np.array(y, dtype=np.float64, copy=True))
    elif norm == "l1":
        fit = isotonic_l1(y)
    else:
        raise ValidationError(f"norm must be 'l1' or 'l2'; got {norm!r}")
    np.maximum(fit, float(m0), out=fit)
    if k is not None:
        np.minimum(fit, float(k), out=fit)
    return np.bincount(round_half_up(fit)).astype(np.int64)


def cumulative_estimate(
    noisy: np.ndarray, groups: int, *, k: int, norm: str = "l1", m0: int = 0
) -> np.ndarray:
    """Cumulative method (spec §6.3): bounded monotone fit of noisy ``Hc[m0..K-1]``.

    ``noisy`` has ``K - m0`` entries; cells below ``m0`` are 0 and ``Hc[K] = G``. Returns
    ``Ĥ`` on sizes ``0..K`` (``Ĥ[K]`` counts groups of size ``>= K``). O(K) for L2,
    O(K log K) for L1.
    """
    y = np.asarray(noisy, dtype=np.float64)
    if y.shape[0] != k - m0:
        raise ValidationError(f"noisy must have K - m0 = {k - m0} entries; got {y.shape[0]}")
    c = np.zeros(k + 1, dtype=np.int64)
    c[k] = groups
    if y.size:
        fit = bounded_isotonic(y, lower=0.0, upper=float(groups), norm=norm)
        c[m0:k] = round_half_up(fit)
    return np.diff(c, prepend=0)
