"""GreedyH: a workload-adapted weighted hierarchy over a public grouping, plus its estimator.

This is the "fixed queries" stage of DAWA (Li, Hay, Miklau, Wang, "A data- and
workload-aware algorithm for range queries under differential privacy", PVLDB 7(5),
2014, Section 4, GreedyH) as used by the MM and PMM schemes of Kellaris et al.,
"Engineering methods for differentially private histograms" (Section 4, Fixed
Queries; Section 5.2, PMM). A public partition of ``N`` bins into ``|G|`` contiguous
groups is given together with a workload: all ``N(N+1)/2`` ranges (``"all"``, MM) or
the ``N`` prefixes (``"prefix"``, PMM).

* :func:`implicit_gram` gives the Gram matrix of the workload reduced to groups (a
  query puts weight ``|q ∩ g| / |g|`` on group ``g``) as an :class:`ImplicitGram`:
  three vectors of length ``|G|`` from closed forms; neither the workload nor the
  ``|G| x |G|`` matrix is built. :func:`reduced_gram` materialises the same matrix
  (tests, small cases).
* :func:`greedy_h` chooses, bottom-up over a tree on the group indices, how much of
  the budget each tree node's range query gets, and returns the weighted strategy.
* :func:`estimate_totals` turns noisy strategy answers into least-squares group
  totals by generalised least squares on the strategy's tree, and
  :func:`total_variances` gives their variances; :func:`strategy_answers` gives the
  noiseless answers.

Everything here is post-processing: no data, no noise, no budgets. Along every
root-to-leaf path of the tree the query weights add up to 1, so each group total
enters the weighted strategy with total weight 1 (L1 sensitivity 1): answering every
weighted query with ``Lap(1/eps2)`` noise is ``eps2``-DP.

Complexity for ``N`` bins and ``|G|`` groups, with an :class:`ImplicitGram`:
``O(N)`` time and memory for the Gram vectors, ``O(|G| log |G|)`` time and ``O(|G|)``
memory for GreedyH (a node of ``n`` cells costs ``O(n)``), ``O(|G|)`` for the
estimator. With a dense ``M`` (any symmetric matrix) GreedyH costs ``O(|G|)`` per
node, ``O(|G|^2)`` in total, besides the ``|G|^2`` numbers of ``M`` itself.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from ..errors import InputTypeError, InternalError, ValidationError

__all__ = [
    "GreedyHStrategy",
    "ImplicitGram",
    "estimate_totals",
    "greedy_h",
    "implicit_gram",
    "reduced_gram",
    "sizes_from_starts",
    "strategy_answers",
    "total_variances",
]

WORKLOADS = ("all", "prefix")
OBJECTIVES = ("reference", "trace")

# Tolerance of the check that the weights on each root-to-leaf path sum to 1.
_PATH_TOL = 1e-9


# --------------------------------------------------------------------------- inputs


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    result = int(value)
    if result < low:
        raise ValidationError(f"{name} must be at least {low}, got {result}")
    return result


def _int_vector(values: ArrayLike, name: str) -> np.ndarray:
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
    n_bins = _check_int(n_bins, "n_bins", 1)
    s = _int_vector(starts, "starts")
    if s[0] != 0:
        raise ValidationError(f"starts must begin with 0, got {int(s[0])}")
    if np.any(np.diff(s) <= 0):
        raise ValidationError("starts must be strictly increasing")
    if s[-1] >= n_bins:
        raise ValidationError(f"starts must be below n_bins = {n_bins}, got {int(s[-1])}")
    return np.diff(np.append(s, n_bins))


def _check_sizes(sizes: ArrayLike) -> np.ndarray:
    s = _int_vector(sizes, "sizes")
    if np.any(s <= 0):
        raise ValidationError("sizes must all be positive (every group holds at least one bin)")
    return s


# --------------------------------------------------------------------------- reduced Gram


def _float_array(values: ArrayLike, name: str) -> np.ndarray:
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
        arrays = [_float_array(getattr(self, name), name) for name in ("left", "right", "diag")]
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
        i = _check_int(i, "i", 0)
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
def _implicit_breaks(left, right, diag):  # pragma: no cover - compiled
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


# --------------------------------------------------------------------------- strategy


@njit(cache=True)
def _tree_parents(lo, hi, n_groups):  # pragma: no cover - compiled
    """Parent of each query (``-1``: none) when the queries, read in order, are the
    pre-order of a tree of nested ranges whose childless nodes partition
    ``[0, n_groups)`` left to right; and a status: 0 valid, 1 a range out of bounds or
    empty, 2 ranges that cross or are out of order, 3 childless ranges that do not
    tile the groups.
    """
    q = lo.size
    parent = np.full(q, -1, dtype=np.int64)
    stack = np.empty(q, dtype=np.int64)
    top = 0
    for i in range(q):
        a = lo[i]
        b = hi[i]
        if a < 0 or b > n_groups or a >= b:
            return parent, 1
        while top > 0 and hi[stack[top - 1]] <= a:
            top -= 1
        if top > 0:
            p = stack[top - 1]
            if a < lo[p] or b > hi[p]:
                return parent, 2
            parent[i] = p
        stack[top] = i
        top += 1
    # In pre-order a node's first child comes right after it.
    pos = 0
    for i in range(q):
        if i == q - 1 or parent[i + 1] != i:
            if lo[i] != pos:
                return parent, 3
            pos = hi[i]
    if pos != n_groups:
        return parent, 3
    return parent, 0


_TREE_ERRORS = {
    1: "every query needs 0 <= lo < hi <= n_groups",
    2: "queries must be nested or disjoint ranges listed in pre-order (a node before "
    "its descendants, children left to right)",
    3: "the queries without sub-queries must tile the groups [0, n_groups)",
}


@dataclass(frozen=True, eq=False)
class GreedyHStrategy:
    """A weighted range strategy over groups, as chosen by :func:`greedy_h`.

    Query ``k`` covers the groups ``lo[k] <= g < hi[k]`` and is answered as
    ``weight[k] * sum_{g in q} T_g`` plus noise. Queries are listed in pre-order of
    a tree of nested ranges (a node before its descendants, children left to right);
    the queries without sub-queries tile the groups. GreedyH omits the tree nodes
    that received weight 0, so a query's parent is its nearest weighted ancestor.
    The constructor checks that structure (``O(#queries)``); it does not require the
    path weights to sum to 1, so other tree strategies can use the estimator too.

    Attributes
    ----------
    lo, hi : ndarray of int64
        Half-open group-index range of each query.
    weight : ndarray of float64
        Positive weight of each query. From :func:`greedy_h` the weights of the
        queries containing any one group sum to 1 (L1 sensitivity 1).
    n_groups : int
        Number of groups ``|G|``.
    expected_error : float
        The objective value GreedyH reached at the root. With ``objective="trace"``
        it equals ``trace(M (A^T A)^+)`` for the weighted strategy matrix ``A`` (rows
        ``weight[k] * 1[lo[k]:hi[k]]``): the summed variance of the reduced workload's
        answers when each strategy answer carries unit-variance noise (multiply by
        ``2 / eps2**2`` for ``Lap(1/eps2)``). With ``objective="reference"`` it is
        DAWA's reference score: ``trace(M.T @ M @ (A^T A)^+)`` (``M`` read as if it
        were the workload) when only the root is an internal node; deeper nodes damp
        their own query with the depth factor, so in general it is a ranking score,
        not a variance.
    objective : str
        The objective that produced the strategy.
    """

    lo: np.ndarray
    hi: np.ndarray
    weight: np.ndarray
    n_groups: int
    expected_error: float = float("nan")
    objective: str = "reference"
    _parent: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n_groups = _check_int(self.n_groups, "n_groups", 1)
        lo = np.array(_int_vector(self.lo, "lo"))
        hi = np.array(_int_vector(self.hi, "hi"))
        weight = _float_array(self.weight, "weight")
        if not lo.shape == hi.shape == weight.shape:
            raise ValidationError(
                f"lo, hi and weight must have the same length, got {lo.size}, {hi.size}, "
                f"{weight.size}"
            )
        if np.any(weight <= 0.0):
            raise ValidationError("weight must be positive (omit queries of weight 0)")
        parent, status = _tree_parents(lo, hi, n_groups)
        if status:
            raise ValidationError(f"not a tree strategy: {_TREE_ERRORS[int(status)]}")
        for arr in (lo, hi, parent):
            arr.flags.writeable = False
        object.__setattr__(self, "n_groups", n_groups)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "expected_error", float(self.expected_error))
        object.__setattr__(self, "_parent", parent)

    @property
    def n_queries(self) -> int:
        """Number of weighted queries to answer."""
        return int(self.lo.shape[0])


# --------------------------------------------------------------------------- GreedyH


_LEAF, _WHOLE, _SPLIT = 0, 1, 2


@njit(cache=True)
def _build_tree(n_groups, branch, breaks):  # pragma: no cover - compiled
    """The GreedyH tree on ``[0, n_groups)`` in pre-order: ``lo, hi, depth, kind, parent``.

    A node of ``n`` cells has ``branch`` children, ``branch - rem`` of size
    ``n // branch`` followed by ``rem`` one larger (``floor(n/2)``, ``ceil(n/2)`` for
    ``branch = 2``), or ``n`` singletons when ``n <= branch``. ``breaks[j]`` counts
    the adjacent column pairs of ``M`` before ``j`` that differ somewhere, so a node
    ``[lo, hi)`` has constant rows iff ``breaks[hi-1] == breaks[lo]``; such a node
    (kind ``_WHOLE``) and a single cell (``_LEAF``) have no children. Every split
    node has at least two children, so there are at most ``2 n_groups - 1`` nodes.
    """
    cap = 2 * n_groups
    lo = np.empty(cap, dtype=np.int64)
    hi = np.empty(cap, dtype=np.int64)
    depth = np.empty(cap, dtype=np.int64)
    kind = np.empty(cap, dtype=np.int64)
    parent = np.empty(cap, dtype=np.int64)
    # Pending nodes; each becomes a tree node, so the stack never exceeds cap.
    st_lo = np.empty(cap, dtype=np.int64)
    st_hi = np.empty(cap, dtype=np.int64)
    st_depth = np.empty(cap, dtype=np.int64)
    st_parent = np.empty(cap, dtype=np.int64)
    st_lo[0] = 0
    st_hi[0] = n_groups
    st_depth[0] = 0
    st_parent[0] = -1
    top = 1
    count = 0
    while top > 0:
        top -= 1
        a = st_lo[top]
        b = st_hi[top]
        d = st_depth[top]
        index = count
        count += 1
        lo[index] = a
        hi[index] = b
        depth[index] = d
        parent[index] = st_parent[top]
        if b - a == 1:
            kind[index] = _LEAF
        elif breaks[b - 1] == breaks[a]:
            kind[index] = _WHOLE
        else:
            kind[index] = _SPLIT
            # Push the children right to left so that they are visited left to right.
            n = b - a
            parts = n if n <= branch else branch
            step = 1 if n <= branch else n // branch
            rem = 0 if n <= branch else n % branch
            end = b
            for j in range(parts - 1, -1, -1):
                size = step + 1 if j >= parts - rem else step
                st_lo[top] = end - size
                st_hi[top] = end
                st_depth[top] = d + 1
                st_parent[top] = index
                top += 1
                end -= size
    return lo[:count], hi[:count], depth[:count], kind[:count], parent[:count]


def _children_csr(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``start, child``: the children of node ``v`` are ``child[start[v]:start[v+1]]``.

    Children of a node follow it in pre-order with increasing indices, left to right.
    """
    n_nodes = parent.size
    counts = np.bincount(parent[1:], minlength=n_nodes)
    start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    child = (np.argsort(parent[1:], kind="stable") + 1).astype(np.int64)
    return start, child


@njit(cache=True)
def _choose_share(err_children, k, m, m1, delta, grid):  # pragma: no cover - compiled
    """First minimiser ``g`` of GreedyH's score ``E(g)`` over ``g = 0..grid-1``, and ``E(g)``."""
    c = (m - m1) * delta + m1
    best = 0
    best_score = 0.0
    for g in range(grid):
        s = float(g)
        a = (grid - s) ** 2
        b = s * s * delta
        score = (err_children - c * b / (a + b * k)) / a
        if g == 0 or score < best_score:
            best = g
            best_score = score
    return best, best_score


@njit(cache=True)
def _greedy_implicit(
    left, right, diag, lo, hi, depth, kind, start, child, branch, grid, trace
):  # pragma: no cover - compiled
    """GreedyH's bottom-up pass for ``M`` given by generators (see :class:`ImplicitGram`).

    For a node with column sums ``u`` (supported on ``[lo, hi)``) the vector
    ``v = M u`` is ``left[i] * va`` left of the node (``va = sum_j right[j] u[j]``),
    ``right[i] * vb`` right of it (``vb = sum_j left[j] u[j]``) and is stored inside it
    in ``vin[lo:hi]``. Pending nodes (finished, parent not yet) have disjoint ranges,
    so ``u`` and ``vin`` are single arrays over the groups. A parent's ``vin`` is the
    sum of its children's, each child adding ``right[i] * vb`` right of itself and
    ``left[i] * va`` left of itself; ``||v||^2`` adds the outer parts through
    prefix sums of ``left^2`` and suffix sums of ``right^2``. ``O(n)`` per node of
    ``n`` cells.

    Returns the share ``p`` kept by the children of each node (1 for terminal nodes)
    and the root's error.
    """
    size = diag.size
    n_nodes = lo.size
    left2 = np.zeros(size + 1)  # left2[j] = sum_{i < j} left[i]^2
    for i in range(size):
        left2[i + 1] = left2[i] + left[i] * left[i]
    right2 = np.zeros(size + 1)  # right2[j] = sum_{i >= j} right[i]^2
    for i in range(size - 1, -1, -1):
        right2[i] = right2[i + 1] + right[i] * right[i]

    u = np.empty(size)
    vin = np.empty(size)
    err = np.empty(n_nodes)
    ksum = np.empty(n_nodes)
    va = np.empty(n_nodes)
    vb = np.empty(n_nodes)
    share = np.ones(n_nodes)
    later = np.empty(branch)  # a split node has at most `branch` children

    # Reverse pre-order visits every node after all of its descendants.
    for index in range(n_nodes - 1, -1, -1):
        a = lo[index]
        b = hi[index]
        if kind[index] == _LEAF:
            u[a] = 1.0
            vin[a] = diag[a]
            va[index] = right[a]
            vb[index] = left[a]
            ksum[index] = 1.0
            if trace:
                err[index] = diag[a]
            else:
                err[index] = (
                    right[a] * right[a] * left2[a]
                    + diag[a] * diag[a]
                    + left[a] * left[a] * right2[a + 1]
                )
            continue
        n = b - a
        if kind[index] == _WHOLE:
            # Rows are constant on the node: v = M u = M[:, a].
            inside = diag[a] * diag[a]
            u[a] = 1.0 / n
            vin[a] = diag[a]
            for i in range(a + 1, b):
                u[i] = 1.0 / n
                vin[i] = left[a] * right[i]
                inside += vin[i] * vin[i]
            va[index] = right[a]
            vb[index] = left[a]
            ksum[index] = 1.0
            if trace:
                # 1^T M[node, node] 1 / n^2
                total = 0.0
                run = 0.0  # sum of left[i], a <= i < j
                for j in range(a, b):
                    total += diag[j] + 2.0 * run * right[j]
                    run += left[j]
                err[index] = total / (n * n)
            else:
                err[index] = right[a] * right[a] * left2[a] + inside + left[a] * left[a] * right2[b]
            continue

        c0 = start[index]
        c1 = start[index + 1]
        e = 0.0
        k = 0.0
        m1 = 0.0
        sa = 0.0
        sb = 0.0
        for t in range(c0, c1):
            c = child[t]
            e += err[c]
            k += ksum[c]
            sa += va[c]
            sb += vb[c]
            if not trace:
                inside = 0.0
                for i in range(lo[c], hi[c]):
                    inside += vin[i] * vin[i]
                m1 += va[c] * va[c] * left2[lo[c]] + inside + vb[c] * vb[c] * right2[hi[c]]
        # later[t - c0] = sum of va over the children after t (no cancellation)
        acc = 0.0
        for t in range(c1 - 1, c0 - 1, -1):
            later[t - c0] = acc
            acc += va[child[t]]
        before = 0.0  # sum of vb over the children before t
        for t in range(c0, c1):
            c = child[t]
            after = later[t - c0]
            for i in range(lo[c], hi[c]):
                vin[i] += right[i] * before + left[i] * after
            before += vb[c]
        if trace:
            m = 0.0
            for i in range(a, b):
                m += u[i] * vin[i]
            m1 = m
            delta = 1.0
        else:
            inside = 0.0
            for i in range(a, b):
                inside += vin[i] * vin[i]
            m = sa * sa * left2[a] + inside + sb * sb * right2[b]
            delta = float(branch) ** (-depth[index] / 2.0)
        best, score = _choose_share(e, k, m, m1, delta, grid)
        p = 1.0 - best / grid
        share[index] = p
        if best > 0:
            q2 = (1.0 - p) ** 2
            scale = 1.0 / (p * p + k * q2)
            for i in range(a, b):
                u[i] *= scale
                vin[i] *= scale
            sa *= scale
            sb *= scale
            k *= scale
        err[index] = score * grid * grid
        ksum[index] = k
        va[index] = sa
        vb[index] = sb
    return share, err[0]


def _greedy_dense(
    gram: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    depth: np.ndarray,
    kind: np.ndarray,
    start: np.ndarray,
    child: np.ndarray,
    branch: int,
    grid: int,
    trace: bool,
) -> tuple[np.ndarray, float]:
    """GreedyH's bottom-up pass for a dense symmetric ``M``; same outputs as
    :func:`_greedy_implicit`. Each pending node keeps ``v = M[:, node] u`` (a row
    combination, ``M`` being symmetric), ``O(|G|)`` per node."""
    size = gram.shape[0]
    n_nodes = lo.size
    u = np.empty(size)
    share = np.ones(n_nodes)
    done: dict[int, tuple[float, float, np.ndarray]] = {}  # err, sum(u), M[:, node] u
    for index in range(n_nodes - 1, -1, -1):
        a, b = int(lo[index]), int(hi[index])
        if kind[index] == _LEAF:
            u[a] = 1.0
            column = gram[a].copy()  # = M[:, a]; rows are contiguous
            err = float(gram[a, a]) if trace else float(column @ column)
            done[index] = (err, 1.0, column)
            continue
        n = b - a
        if kind[index] == _WHOLE:
            u[a:b] = 1.0 / n
            # Rows are constant on the node, so M[:, node] u = M[:, a] = M[a].
            column = gram[a].copy()
            err = float(gram[a:b, a:b].sum()) / (n * n) if trace else float(column @ column)
            done[index] = (err, 1.0, column)
            continue

        parts = [done.pop(int(c)) for c in child[start[index] : start[index + 1]]]
        err_children = sum(part[0] for part in parts)
        k = sum(part[1] for part in parts)
        v = parts[0][2]
        for part in parts[1:]:
            v = v + part[2]
        if trace:
            m = m1 = float(u[a:b] @ v[a:b])
            delta = 1.0
        else:
            m = float(v @ v)
            m1 = sum(float(part[2] @ part[2]) for part in parts)
            delta = float(branch) ** (-int(depth[index]) / 2.0)
        best, score = _choose_share(err_children, k, m, m1, delta, grid)
        p = 1.0 - best / grid
        share[index] = p
        if best > 0:
            scale = 1.0 / (p * p + k * (1.0 - p) ** 2)
            u[a:b] *= scale
            v *= scale
            k *= scale
        done[index] = (float(score) * grid * grid, k, v)
    return share, done.pop(0)[0]


@njit(cache=True)
def _path_weights(parent, kind, share):  # pragma: no cover - compiled
    """Query weights top-down and the worst deviation of a root-to-leaf sum from 1.

    A node's query gets ``1 - p`` of the share left by its ancestors (all of it at a
    terminal node); its children inherit the share times ``p``.
    """
    n_nodes = parent.size
    weight = np.empty(n_nodes)
    left = np.empty(n_nodes)  # share of the path left to the node
    spent = np.empty(n_nodes)  # weight already spent by the strict ancestors
    worst = 0.0
    for index in range(n_nodes):
        par = parent[index]
        if par < 0:
            left[index] = 1.0
            spent[index] = 0.0
        else:
            left[index] = left[par] * share[par]
            spent[index] = spent[par] + weight[par]
        if kind[index] == _SPLIT:
            weight[index] = left[index] * (1.0 - share[index])
        else:
            weight[index] = left[index]
            worst = max(worst, abs(spent[index] + weight[index] - 1.0))
    return weight, worst


def greedy_h(
    M: ArrayLike | ImplicitGram,
    *,
    branch: int = 2,
    grid: int = 100,
    objective: Literal["reference", "trace"] = "reference",
) -> GreedyHStrategy:
    """Choose GreedyH's weighted hierarchical strategy for the reduced Gram matrix ``M``.

    Implements GreedyH (Li, Hay, Miklau, Wang, PVLDB 2014, Section 4) as in its
    reference implementation; Kellaris et al. use it as the Fixed Queries component
    (Section 4) with all ranges (MM) or prefixes (PMM, Section 5.2) as workload.

    The tree covers the group indices ``[0, |G|)``; a node of ``n`` cells has
    ``branch`` children (``floor(n/2)``, ``ceil(n/2)`` for ``branch = 2``), or ``n``
    singletons when ``n <= branch``. Bottom-up, each node gets a strategy over its
    cells, the column sums ``u = S 1`` of the inverse ``S`` of that strategy's Gram
    matrix (the scores need nothing else of ``S``) and an error value:

    * one cell: its query with weight 1, ``S = [[1]]``;
    * every row of ``M[:, node]`` constant (the workload cannot tell the cells
      apart): only the node's query, weight 1, ``S = 1 1^T / n^2``, no children;
    * otherwise, with ``u`` the children's column sums side by side, ``k = sum(u)``,
      ``e`` the children's summed errors, ``m = ||M[:, node] u||^2``,
      ``m1 = sum_c ||M[:, c] u_c||^2`` and ``delta = branch**(-depth/2)`` (root depth
      0), for ``g = 0..grid-1`` with ``A = (grid-g)^2``, ``B = g^2 delta``:
      ``E(g) = (e - ((m - m1) delta + m1) B / (A + B k)) / A``. The first minimiser
      ``g*`` gives ``p = 1 - g*/grid``: the children keep the share ``p`` of every
      path, the node's query gets ``1 - p``; by Sherman-Morrison
      ``S = p^-2 (blockdiag(S_c) - (1-p)^2 / (p^2 + k (1-p)^2) u u^T)``, hence
      ``u_node = u / (p^2 + k (1-p)^2)``; the node's error is ``grid^2 E(g*)``.

    ``objective="trace"`` (the variant of the method specification) scores with the
    true workload variance instead: a cell's error is ``M[c, c]``, a constant node's
    ``1^T M[node, node] 1 / n^2``, ``m = m1 = u^T M[node, node] u`` and ``delta = 1``,
    so each node's error is exactly ``trace(M[node, node] S)``. Being blind to the
    queries that cross a node, it is the better rule only on small trees: on MM/PMM
    with 200 to 1000 groups its strategies have a 1.3 to 3 times larger
    ``trace(M (A^T A)^-1)`` than the reference rule's, which is therefore the default.

    Parameters
    ----------
    M : ImplicitGram or array, shape (|G|, |G|)
        Gram matrix of the reduced workload: an :class:`ImplicitGram` (from
        :func:`implicit_gram`; ``O(|G|)`` memory) or any dense symmetric matrix (for
        instance :func:`reduced_gram`), whose rows are read in place of its columns.
    branch : int
        Fan-out of the tree, at least 2.
    grid : int
        Number of candidate shares ``p`` in ``{1, 1 - 1/grid, ..., 1/grid}``.
    objective : {"reference", "trace"}
        Scoring rule, see above.

    Returns
    -------
    GreedyHStrategy

    Notes
    -----
    The vectors ``M[:, node] u`` are kept only for nodes whose parent is still to be
    scored, and the dense inverse is never formed: its role in estimation is taken by
    generalised least squares on the tree (:func:`estimate_totals`). With an
    :class:`ImplicitGram` those vectors are stored in ``O(n)`` numbers per node of
    ``n`` cells (see :class:`ImplicitGram`): ``O(|G| log |G|)`` time, ``O(|G|)``
    memory. With a dense ``M`` each node costs ``O(|G|)``: ``O(|G|^2)`` time, and
    ``O(|G| log |G|)`` memory besides ``M``. Both give the same strategy up to
    rounding.
    """
    branch = _check_int(branch, "branch", 2)
    grid = _check_int(grid, "grid", 1)
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValidationError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    trace = objective == "trace"

    if isinstance(M, ImplicitGram):
        size = M.n_groups
        breaks = _implicit_breaks(M.left, M.right, M.diag)
        gram = None
    else:
        try:
            gram = np.asarray(M, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"M must be a square numeric matrix: {exc}") from None
        if gram.ndim != 2 or gram.shape[0] != gram.shape[1] or gram.shape[0] == 0:
            raise ValidationError(f"M must be a non-empty square matrix, got shape {gram.shape}")
        if not np.all(np.isfinite(gram)):
            raise ValidationError("M contains NaN or infinite values")
        gram = np.ascontiguousarray(gram)
        size = gram.shape[0]
        differ = np.any(gram[:, 1:] != gram[:, :-1], axis=0)
        breaks = np.concatenate(([0], np.cumsum(differ))).astype(np.int64)

    lo, hi, depth, kind, parent = _build_tree(size, branch, breaks)
    start, child = _children_csr(parent)
    if gram is None:
        share, expected_error = _greedy_implicit(
            M.left, M.right, M.diag, lo, hi, depth, kind, start, child, branch, grid, trace
        )
    else:
        share, expected_error = _greedy_dense(
            gram, lo, hi, depth, kind, start, child, branch, grid, trace
        )

    weight, worst = _path_weights(parent, kind, share)
    if not worst <= _PATH_TOL:
        raise InternalError(
            "GreedyH weights along a root-to-leaf path do not sum to 1 "
            f"(worst deviation {worst:.3g})"
        )
    keep = weight > 0.0
    return GreedyHStrategy(
        lo=lo[keep],
        hi=hi[keep],
        weight=weight[keep],
        n_groups=size,
        expected_error=float(expected_error),
        objective=objective,
    )


# --------------------------------------------------------------------------- estimation


def _check_strategy(strategy: object) -> GreedyHStrategy:
    if not isinstance(strategy, GreedyHStrategy):
        raise InputTypeError(
            f"strategy must be a GreedyHStrategy from greedy_h, got {type(strategy).__name__}"
        )
    return strategy


def _float_vector(values: ArrayLike, name: str, length: int) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D numeric array: {exc}") from None
    if arr.shape != (length,):
        raise ValidationError(f"{name} must have shape ({length},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} contains NaN or infinite values")
    return arr


@njit(cache=True)
def _tree_gls(parent, weight, y):  # pragma: no cover - compiled
    """GLS estimate of every query's range total and its variance (unit answer noise).

    Query ``q`` observes its range total ``T_q`` as ``y_q / w_q`` with variance
    ``1 / w_q^2``. A virtual root (index ``Q``) without a measurement holds the
    top-level queries. Up, in reverse pre-order: ``z_v, s_v`` = estimate of ``T_v``
    from the answers in ``v``'s subtree and its variance; a childless query gives
    ``z = y/w``, ``s = 1/w^2``; otherwise, with ``S, W`` the sums of the children's
    ``z, s``, ``z = (w y + S/W) / (w^2 + 1/W)``, ``s = 1 / (w^2 + 1/W)``. Down, in
    pre-order, with ``g = s_u / W`` for child ``u`` of ``v``:
    ``est_u = z_u + g (est_v - S)`` and ``var_u = g (W - s_u) + g^2 var_v``, where
    ``W - s_u`` is summed over the siblings (no cancellation). This is exact GLS:
    given ``T_v`` the children's subtrees are independent of every other answer, and
    ``T_u`` given ``T_v`` and the subtree answers is normal with mean
    ``z_u + g (T_v - S)`` and variance ``s_u (1 - g)``. ``O(Q)``.
    """
    q = parent.size
    z = np.empty(q)
    s = np.empty(q)
    sum_z = np.zeros(q + 1)
    sum_s = np.zeros(q + 1)
    later = np.empty(q)  # summed s of the later siblings
    for i in range(q - 1, -1, -1):
        par = parent[i] if parent[i] >= 0 else q
        w = weight[i]
        if i == q - 1 or parent[i + 1] != i:
            z[i] = y[i] / w
            s[i] = 1.0 / (w * w)
        else:
            prec = 1.0 / sum_s[i]
            z[i] = (w * y[i] + prec * sum_z[i]) / (w * w + prec)
            s[i] = 1.0 / (w * w + prec)
        later[i] = sum_s[par]
        sum_z[par] += z[i]
        sum_s[par] += s[i]
    est = np.empty(q)
    var = np.empty(q)
    earlier = np.zeros(q + 1)  # summed s of the earlier children, per parent
    for i in range(q):
        par = parent[i]
        if par < 0:
            est[i] = z[i]
            var[i] = s[i]
        else:
            g = s[i] / sum_s[par]
            est[i] = z[i] + g * (est[par] - sum_z[par])
            var[i] = g * (earlier[par] + later[i]) + g * g * var[par]
            earlier[par] += s[i]
    return est, var


def _per_group(strategy: GreedyHStrategy, values: np.ndarray, power: int) -> np.ndarray:
    """Spread the values of the childless queries evenly over their groups."""
    parent = strategy._parent
    q = strategy.n_queries
    childless = np.ones(q, dtype=bool)
    childless[:-1] = parent[1:] != np.arange(q - 1)
    sizes = strategy.hi[childless] - strategy.lo[childless]
    return np.repeat(values[childless] / sizes.astype(np.float64) ** power, sizes)


def estimate_totals(strategy: GreedyHStrategy, answers: ArrayLike) -> np.ndarray:
    """Least-squares group totals from the strategy's answers.

    ``answers[k]`` is the (noisy) answer to query ``k`` of ``strategy``:
    ``weight[k] * sum_{lo[k] <= g < hi[k]} T_g`` plus noise of equal variance for all
    queries. Returns the least-squares solution ``(A^T A)^+ A^T y`` (Li et al., PVLDB
    2014, Section 4): generalised least squares on the strategy's tree, each query
    observing its range total with variance ``1 / weight^2`` (see
    :func:`total_variances`). Where ``A`` has full column rank this is the ordinary
    least-squares solution; inside a query without sub-queries that covers several
    groups (a GreedyH node kept whole) the query's total is spread evenly (the
    minimum-norm solution). ``O(#queries + |G|)`` time and memory.
    """
    st = _check_strategy(strategy)
    y = _float_vector(answers, "answers", st.n_queries)
    est, _ = _tree_gls(st._parent, st.weight, y)
    return _per_group(st, est, 1)


def total_variances(strategy: GreedyHStrategy) -> np.ndarray:
    """Variance of each group total of :func:`estimate_totals` per unit answer variance.

    The diagonal of ``(A^T A)^+``: multiply by the variance of one weighted answer
    (``2 / eps2**2`` for ``Lap(1/eps2)``). Inside a query kept whole over ``n``
    groups each group gets the query total's variance divided by ``n^2``, like its
    estimate the total divided by ``n``. ``O(#queries + |G|)``.
    """
    st = _check_strategy(strategy)
    _, var = _tree_gls(st._parent, st.weight, np.zeros(st.n_queries))
    return _per_group(st, var, 2)


def strategy_answers(strategy: GreedyHStrategy, totals: ArrayLike) -> np.ndarray:
    """Noiseless answers ``weight[k] * sum_{lo[k] <= g < hi[k]} totals[g]`` of every query.

    Computed from prefix sums of ``totals`` in ``O(#queries + |G|)``.
    """
    st = _check_strategy(strategy)
    t = _float_vector(totals, "totals", st.n_groups)
    prefix = np.concatenate(([0.0], np.cumsum(t)))
    return st.weight * (prefix[st.hi] - prefix[st.lo])
