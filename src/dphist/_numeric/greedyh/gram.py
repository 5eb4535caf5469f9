"""The workload's Gram matrix reduced to groups, in closed form (no N x N matrix)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..._jit import njit
from ...errors import ValidationError

WORKLOADS = ("all", "prefix")


# --------------------------------------------------------------------------- inputs


def check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    result = int(value)
    if result < low:
        raise ValidationError(f"{name} must be at least {low}, got {result}")
    return result


def int_vector(values: ArrayLike, name: str) -> np.ndarray:
    """A non-empty 1-D int64 array, or ValidationError naming ``name``."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D integer array: {exc}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValidationError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise ValidationError(f"{name} has values too large for int64")
    return arr.astype(np.int64, copy=False)


def sizes_from_starts(starts: ArrayLike, n_bins: int) -> np.ndarray:
    """Group sizes of the partition of ``n_bins`` bins whose groups begin at ``starts``.

    ``starts`` are 0-based, strictly increasing, begin with 0 and are below
    ``n_bins``. Returns an int64 array of positive sizes that sum to ``n_bins``.
    """
    n_bins = check_int(n_bins, "n_bins", 1)
    s = int_vector(starts, "starts")
    if s[0] != 0:
        raise ValidationError(f"starts must begin with 0, got {int(s[0])}")
    if np.any(np.diff(s) <= 0):
        raise ValidationError("starts must be strictly increasing")
    if s[-1] >= n_bins:
        raise ValidationError(f"starts must be below n_bins = {n_bins}, got {int(s[-1])}")
    return np.diff(np.append(s, n_bins))


def _check_sizes(sizes: ArrayLike) -> np.ndarray:
    s = int_vector(sizes, "sizes")
    if np.any(s <= 0):
        raise ValidationError("sizes must all be positive (every group holds at least one bin)")
    return s


# --------------------------------------------------------------------------- reduced Gram


def float_array(values: ArrayLike, name: str) -> np.ndarray:
    """A read-only, non-empty, finite 1-D float64 copy of ``values``."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D numeric array: {exc}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} contains NaN or infinite values")
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class ImplicitGram:
    """A symmetric ``|G| x |G|`` matrix stored as three vectors.

    ``M[g, h] = left[min(g, h)] * right[max(g, h)]`` for ``g != h`` and
    ``M[g, g] = diag[g]``: a symmetric semiseparable matrix (rank one below and above
    the diagonal) with its own diagonal. The reduced Gram matrices of both range
    workloads have this form (see :func:`implicit_gram`). ``O(|G|)`` memory; entries,
    rows and the dense matrix are available on request.

    Attributes
    ----------
    left, right, diag : ndarray of float64, shape (|G|,)
        The generators; read-only copies of the arguments.
    """

    left: np.ndarray
    right: np.ndarray
    diag: np.ndarray

    def __post_init__(self) -> None:
        arrays = [float_array(getattr(self, name), name) for name in ("left", "right", "diag")]
        if len({arr.size for arr in arrays}) != 1:
            raise ValidationError(
                "left, right and diag must have the same length, got "
                f"{', '.join(str(arr.size) for arr in arrays)}"
            )
        for name, arr in zip(("left", "right", "diag"), arrays, strict=True):
            object.__setattr__(self, name, arr)

    @property
    def n_groups(self) -> int:
        """Number of rows (and columns) ``|G|``."""
        return int(self.diag.size)

    @property
    def shape(self) -> tuple[int, int]:
        """``(|G|, |G|)``."""
        return (self.n_groups, self.n_groups)

    def row(self, i: int) -> np.ndarray:
        """Row ``i`` of ``M`` (equal to column ``i``) as a new array; ``O(|G|)``."""
        i = check_int(i, "i", 0)
        if i >= self.n_groups:
            raise ValidationError(f"i must be below |G| = {self.n_groups}, got {i}")
        out = np.empty(self.n_groups)
        np.multiply(self.left[:i], self.right[i], out=out[:i])
        out[i] = self.diag[i]
        np.multiply(self.left[i], self.right[i + 1 :], out=out[i + 1 :])
        return out

    def to_dense(self) -> np.ndarray:
        """The full matrix, ``|G|^2`` float64 numbers: for small ``|G|`` only."""
        m = np.triu(np.multiply.outer(self.left, self.right), 1)
        m += m.T
        np.fill_diagonal(m, self.diag)
        return m


def _check_workload(workload: object) -> str:
    if not isinstance(workload, str) or workload not in WORKLOADS:
        raise ValidationError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    return workload


def implicit_gram(sizes: ArrayLike, workload: str) -> ImplicitGram:
    """Gram matrix ``M = W_red^T W_red`` of a range workload reduced to groups, implicitly.

    Parameters
    ----------
    sizes : array of int
        Sizes of the ``|G|`` contiguous groups, in natural order; they sum to ``N``.
        (Use :func:`sizes_from_starts` for start indices.)
    workload : {"all", "prefix"}
        ``"all"``: every range ``[l, u]``, ``1 <= l <= u <= N`` (MM).
        ``"prefix"``: the ranges ``[1, j]``, ``j = 1..N`` (PMM).

    Returns
    -------
    ImplicitGram
        ``M[g, h] = sum_{i in g, j in h} (W^T W)_{ij} / (|g| |h|)``, the Gram matrix of
        the workload whose queries put weight ``|q ∩ g| / |g|`` on group ``g``
        (uniformity inside groups; Li et al., PVLDB 2014, Section 4), with
        ``left = Lbar`` (all ranges) or ``1`` (prefix), ``right = Rbar``.

    Notes
    -----
    With 1-based bins, all ranges give ``(W^T W)_{ij} = min(i,j) (N+1-max(i,j))`` and
    prefixes give ``N+1-max(i,j)``. For groups ``g`` left of ``h`` every ``i`` in
    ``g`` is below every ``j`` in ``h``, so the block average factorises into
    ``Lbar_g * Rbar_h`` (all ranges) or ``Rbar_h`` (prefix), where ``Lbar`` is the mean
    bin index of a group and ``Rbar = N + 1 - Lbar``. The diagonal blocks are summed bin
    by bin with within-group running sums: all ranges
    ``sum_{t in g} (N+1-t) (t + 2 sum_{a <= i < t} i)``, prefix
    ``sum_{t in g} (N+1-t) (2 (t-a) + 1)`` for a group starting at bin ``a``.
    ``O(N)`` time and memory.
    """
    s = _check_sizes(sizes)
    workload = _check_workload(workload)
    n = int(s.sum())
    ends = np.cumsum(s)  # 1-based last bin of each group
    firsts = ends - s + 1  # 1-based first bin of each group
    sf = s.astype(np.float64)

    # Per-bin terms of the diagonal blocks (exact integers until the float product).
    t = np.arange(1, n + 1, dtype=np.int64)
    a = np.repeat(firsts, s)
    right_of_bin = (n + 1 - t).astype(np.float64)
    if workload == "all":
        # sum_{i=a}^{t-1} i, exact in int64
        running = (t - 1) * t // 2 - (a - 1) * a // 2
        term = right_of_bin * (t + 2 * running).astype(np.float64)
    else:
        term = right_of_bin * (2 * (t - a) + 1).astype(np.float64)
    diag = np.add.reduceat(term, firsts - 1) / (sf * sf)

    lbar = (firsts + ends).astype(np.float64) / 2.0
    rbar = (n + 1) - lbar
    left = lbar if workload == "all" else np.ones_like(lbar)
    return ImplicitGram(left=left, right=rbar, diag=diag)


def reduced_gram(sizes: ArrayLike, workload: str) -> np.ndarray:
    """The matrix of :func:`implicit_gram` as a dense ``(|G|, |G|)`` float64 array.

    ``M[g, h] = min(Lbar_g, Lbar_h) * min(Rbar_g, Rbar_h)`` (all ranges) or
    ``min(Rbar_g, Rbar_h)`` (prefix) off the diagonal, since ``Lbar`` increases and
    ``Rbar`` decreases along the groups. ``O(N + |G|^2)`` time and memory: meant for
    tests and small ``|G|``; :func:`greedy_h` takes the implicit form directly.
    """
    return implicit_gram(sizes, workload).to_dense()


@njit(cache=True)
def implicit_breaks(left, right, diag):  # pragma: no cover - compiled
    """``breaks[j]`` = number of ``t < j`` whose columns ``t, t + 1`` of ``M`` differ.

    Compares the same floats as the dense test ``M[:, t] != M[:, t + 1]`` and stops at
    the first row that differs. For the reduced workload Grams that is row 0 or 1 in
    practice: in exact arithmetic adjacent columns always differ, because
    ``M (e_t - e_{t+1}) = 0`` would force ``W_red e_t = W_red e_{t+1}`` (``M`` is a
    Gram matrix), yet the prefix ending at the last bin of group ``t`` (a query of both
    workloads) has weight 1 on group ``t`` and 0 on group ``t + 1``. Row 0 already
    compares ``left[0] right[t]`` with ``left[0] right[t+1]`` for ``t >= 1``, and the
    half-integers ``Rbar`` strictly decrease. Only the running time rests on this
    argument, not the result.
    """
    size = diag.size
    breaks = np.zeros(size, dtype=np.int64)
    count = 0
    for t in range(size - 1):
        for i in range(size):
            if i < t:
                x = left[i] * right[t]
                y = left[i] * right[t + 1]
            elif i == t:
                x = diag[t]
                y = left[t] * right[t + 1]
            elif i == t + 1:
                x = left[t] * right[t + 1]
                y = diag[t + 1]
            else:
                x = left[t] * right[i]
                y = left[t + 1] * right[i]
            if x != y:
                count += 1
                break
        breaks[t + 1] = count
    return breaks
