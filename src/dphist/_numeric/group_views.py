"""Group-size histograms after the fit: per-group variances, integerisation and the
three views of one node.

Post-processing steps of Kuo, Chiu, Kifer, Hay, Machanavajjhala, *Differentially
Private Hierarchical Count-of-Counts Histograms*, PVLDB 11(11) 2018 (arXiv:1804.00370),
formulas as restored in the group-size spec (§3, §6.4, §7.3):

* :func:`group_variances`, :func:`size_variances`: the per-group variance heuristics of
  §7.3.
* :func:`round_half_up`, :func:`largest_remainder`, :func:`apportion`,
  :func:`cumulative_round`: integerisation.
* ``hist_to_*`` / ``cumulative_to_*`` / ``ranked_to_*``: the three views of one node,
  size histogram ``H``, cumulative ``Hc`` and ranked sizes ``Hg`` (§3.2).

Everything here is post-processing of released values: no budget, no noise.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .vectors import count_vector, positive_number, real_vector, whole_number

__all__ = [
    "METHODS", "apportion", "cumulative_round", "cumulative_to_hist", "cumulative_to_ranked",
    "group_variances", "hist_to_cumulative", "hist_to_ranked", "largest_remainder",
    "ranked_to_cumulative", "ranked_to_hist", "round_half_up", "size_variances",
]  # fmt: skip

Method = Literal["ranked", "cumulative", "naive"]
METHODS: tuple[str, ...] = ("ranked", "cumulative", "naive")

# Variance of one noisy cell is approximated by the Laplace variance 2/eps**2 (§7.3);
# a count of the cumulative method is a difference of two cells, hence 4/eps**2; a
# naive count carries noise of scale 2/eps, hence 8/eps**2 (our extension of §7.3).
_NOISE_FACTOR = {"ranked": 2.0, "cumulative": 4.0, "naive": 8.0}


def _method(method: object) -> str:
    if method not in METHODS:
        raise ValidationError(
            f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}"
        )
    return str(method)


_CELLS = {"ranked": 1.0, "cumulative": 2.0, "naive": 1.0}  # noisy cells per released count


def size_variances(
    hist: npt.ArrayLike, eps: float, *, method: Method, cell_variance: float | None = None
) -> np.ndarray:
    """Per-size variance heuristic of §7.3 (Kuo et al. 2018, §5.1), from a released ``Ĥ``.

    ``V[i] = c / (eps**2 * Ĥ[i])`` for every size ``i`` with ``Ĥ[i] > 0`` and NaN for
    empty sizes, where ``c = 2`` for the ranked method (``method="ranked"``, Hg: a block
    of ``n`` noisy values of variance ``2/eps**2`` averaged, ``n`` approximated by the
    number of groups of that size; also used for L1 fits), ``c = 4`` for the
    cumulative method (``"cumulative"``, Hc: a count is the difference of two noisy
    cumulative cells, spread over its ``Ĥ[i]`` groups) and ``c = 8`` for the naive
    method (``"naive"``: one cell with noise of scale ``2/eps``; our extension, the
    paper gives no heuristic for it). ``eps`` is the budget of the
    node's level. Every group of size ``i`` gets ``V[i]``. O(len(hist)).

    ``cell_variance`` (any noise, e.g. Gaussian under zCDP): the variance ``v`` of one
    noisy cell of the level's measurement replaces ``2 (sensitivity/eps)**2``, so
    ``V[i] = m v / Ĥ[i]`` with ``m = 2`` cells per count for the cumulative method and
    1 otherwise (the factors ``c`` above are ``m`` times the Laplace ``v``).
    """
    h = count_vector(hist, "hist")
    m = _method(method)
    if cell_variance is None:
        e = positive_number(eps, "eps")
        c = _NOISE_FACTOR[m] / (e * e)
    else:
        c = _CELLS[m] * positive_number(cell_variance, "cell_variance")
    out = np.full(h.shape[0], np.nan)
    nz = h > 0
    out[nz] = c / h[nz]
    return out


def group_variances(
    ranked: npt.ArrayLike,
    eps: float,
    *,
    method: Method,
    blocks: npt.ArrayLike | None = None,
) -> np.ndarray:
    """Per-group variance heuristic of §7.3, one value per entry of the ranked sizes.

    ``V[k] = c / (eps**2 * n(k))`` with ``c`` as in :func:`size_variances` and ``n(k)`` the
    number of groups whose (rounded) size equals ``ranked[k]``. For the ranked method
    the exact-block refinement of §7.3 is available: pass ``blocks``, the block starts
    (:func:`block_starts`) of the unrounded isotonic fit, and ``n(k)`` becomes the length
    of the block containing ``k``. ``ranked`` must be sorted non-decreasing integer
    sizes. O(G).
    """
    r = count_vector(ranked, "ranked")
    e = positive_number(eps, "eps")
    m = _method(method)
    if r.size and np.any(r[1:] < r[:-1]):
        raise ValidationError("ranked must be sorted in non-decreasing order")
    if blocks is None:
        starts = np.concatenate(([0], np.flatnonzero(r[1:] != r[:-1]) + 1)) if r.size else r
    else:
        if m != "ranked":
            raise ValidationError("blocks are only meaningful for method='ranked'")
        starts = count_vector(blocks, "blocks")
        if r.size == 0:
            if starts.size:
                raise ValidationError("blocks must be empty when ranked is empty")
        elif (
            starts.size == 0
            or starts[0] != 0
            or np.any(np.diff(starts) <= 0)
            or starts[-1] >= r.size
        ):
            raise ValidationError(
                "blocks must be strictly increasing starts beginning with 0, below len(ranked)"
            )
    lengths = np.diff(starts, append=r.size)
    return np.repeat(_NOISE_FACTOR[m] / (e * e) / lengths, lengths)


# --------------------------------------------------------------------------- rounding


def round_half_up(x: npt.ArrayLike) -> np.ndarray:
    """``floor(x + 1/2)`` as ``int64``, computed exactly (spec §6.5).

    Halves go up (``0.5 -> 1``, ``2.5 -> 3``, ``-0.5 -> 0``); the reference code rounds
    half to even instead. Non-decreasing in ``x``, so sorted inputs stay sorted. Uses
    ``r = floor(x)`` and ``x - r >= 0.5`` (exact in floating point), so values such as
    0.49999999999999994 are not pushed up by the addition's rounding. O(n).
    """
    arr = np.asarray(x)
    scalar = arr.ndim == 0
    v = real_vector(arr.reshape(-1), "x")
    if v.size and np.max(np.abs(v)) >= 2.0**62:
        raise ValidationError("x holds values too large for int64")
    r = np.floor(v)
    out = (r + (v - r >= 0.5)).astype(np.int64)
    return out.reshape(arr.shape) if not scalar else out.reshape(())


def largest_remainder(x: npt.ArrayLike, total: int) -> np.ndarray:
    """Largest-remainder ("Hamilton") rounding of reals ``x`` summing to the integer ``total``.

    ``LRR(x, T)`` of spec §6.5: floors, then ``k = T - sum(floor(x))`` entries with the
    largest fractional parts go up by one; ties go to the lower index. The result sums
    to ``T`` and every entry moves by less than 1; only entries with a fractional part
    move up. ``sum(x)`` must equal ``T`` up to floating-point rounding. Fractional parts
    are compared as computed floats: for proportional shares of integers use
    :func:`apportion`, which compares exact remainders. O(n log n).
    """
    v = real_vector(x, "x")
    t = whole_number(total, "total")
    if v.size and np.max(np.abs(v)) >= 2.0**52:
        raise ValidationError("x holds values too large for exact floors")
    s = math.fsum(v.tolist())
    if abs(s - t) > 1e-9 * max(1.0, math.fsum(np.abs(v).tolist())):
        raise ValidationError(f"x must sum to total = {t}; its sum is {s!r}")
    f = np.floor(v)
    frac = v - f
    out = f.astype(np.int64)
    k = t - int(out.sum())
    if not 0 <= k <= int(np.count_nonzero(frac > 0.0)):
        raise ValidationError(f"x must sum to total = {t}; its sum is {s!r}")
    order = np.argsort(-frac, kind="stable")
    out[order[:k]] += 1
    return out


def apportion(weights: npt.ArrayLike, total: int) -> np.ndarray:
    """Exact largest-remainder split of the integer ``total`` in proportion to ``weights``.

    ``LRR(total * w / sum(w), total)`` (spec §6.5) in integer arithmetic: floors
    ``total*w_j // W`` and remainders ``total*w_j % W`` are exact, so equal fractional
    parts are recognised as ties and go to the lower index. Used by the proportional
    step of the matching (spec §7.4). ``weights`` are non-negative integers with a
    positive sum, ``total >= 0``. Each share is ``floor`` or ``ceil`` of its quota; with
    ``total <= sum(w)`` no share exceeds its weight. O(n log n).
    """
    w = count_vector(weights, "weights")
    t = whole_number(total, "total")
    if t < 0:
        raise ValidationError(f"total must be >= 0; got {t}")
    big = int(w.sum()) if w.size else 0
    if big <= 0:
        raise ValidationError("weights must have a positive sum")
    if t > 0 and int(w.max()) > (2**63 - 1) // t:
        raise ValidationError("total * max(weights) overflows int64")
    prod = w * t
    out = prod // big
    rem = prod % big
    k = t - int(out.sum())
    order = np.argsort(-rem, kind="stable")
    out[order[:k]] += 1
    return out


def cumulative_round(x: npt.ArrayLike) -> np.ndarray:
    """Round a non-negative real histogram through its prefix sums.

    ``out = diff(round_half_up(cumsum(x)))``, with ``cumsum`` starting at 0: integers
    ``>= 0`` whose prefix sums are the rounded prefix sums of ``x``. So
    ``sum(out) = round_half_up(sum(x))`` and every prefix sum is within 1/2 of the
    real one, hence the EMD to ``x`` is at most ``len(x)/2`` (spec §4.1). For an
    isotonic cumulative fit ``c`` this is ``cumulative_to_hist(round_half_up(c))``, the
    rounding of the cumulative method (spec §6.3 step 3). O(n).
    """
    v = real_vector(x, "x")
    if v.size and v.min() < 0.0:
        raise ValidationError("x must be non-negative")
    c = round_half_up(np.cumsum(v))
    return np.diff(c, prepend=0)


# ------------------------------------------------------------------ view conversions


def hist_to_cumulative(hist: npt.ArrayLike) -> np.ndarray:
    """``Hc[i]`` = number of groups of size ``<= i`` (prefix sums of ``H``). Spec §3.2. O(len)."""
    return np.cumsum(count_vector(hist, "hist"))


def _check_cumulative(cumulative: npt.ArrayLike) -> np.ndarray:
    c = count_vector(cumulative, "cumulative")
    if c.size and np.any(c[1:] < c[:-1]):
        raise ValidationError("cumulative must be non-decreasing")
    return c


def cumulative_to_hist(cumulative: npt.ArrayLike) -> np.ndarray:
    """``H[0] = Hc[0]``, ``H[i] = Hc[i] - Hc[i-1]``; ``Hc`` non-decreasing, ``>= 0``. O(len)."""
    return np.diff(_check_cumulative(cumulative), prepend=0)


def hist_to_ranked(hist: npt.ArrayLike) -> np.ndarray:
    """Ranked sizes ``Hg``: size ``i`` written ``H[i]`` times, ascending. O(len + G) memory."""
    h = count_vector(hist, "hist")
    return np.repeat(np.arange(h.shape[0], dtype=np.int64), h)


def _length(length: object, default: int, needed: int) -> int:
    if length is None:
        return default
    n = whole_number(length, "length")
    if n < needed:
        raise ValidationError(f"length must be at least {needed} (largest size + 1); got {n}")
    return n


def ranked_to_hist(ranked: npt.ArrayLike, length: int | None = None) -> np.ndarray:
    """``H[i] = #{k : Hg[k] = i}`` on sizes ``0..length-1`` (default: largest size + 1). O(G)."""
    r = count_vector(ranked, "ranked")
    need = int(r.max()) + 1 if r.size else 0
    return np.bincount(r, minlength=_length(length, need, need)).astype(np.int64)


def cumulative_to_ranked(cumulative: npt.ArrayLike) -> np.ndarray:
    """``Hg[k] = min{i : Hc[i] >= k}`` for ``k = 1..G``, ``G = Hc[-1]``. O(G log len)."""
    c = _check_cumulative(cumulative)
    g = int(c[-1]) if c.size else 0
    return np.searchsorted(c, np.arange(1, g + 1), side="left").astype(np.int64)


def ranked_to_cumulative(ranked: npt.ArrayLike, length: int | None = None) -> np.ndarray:
    """``Hc[i] = #{k : Hg[k] <= i}`` on sizes ``0..length-1`` (default: largest + 1).

    ``ranked`` must be sorted non-decreasing. O(length log G).
    """
    r = count_vector(ranked, "ranked")
    if r.size and np.any(r[1:] < r[:-1]):
        raise ValidationError("ranked must be sorted in non-decreasing order")
    need = int(r[-1]) + 1 if r.size else 0
    n = _length(length, need, need)
    return np.searchsorted(r, np.arange(n), side="right").astype(np.int64)
