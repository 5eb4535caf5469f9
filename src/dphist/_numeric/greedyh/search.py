"""GreedyH's strategy search: bottom-up shares over a tree on the groups.

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
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..._jit import njit
from ...errors import InternalError, ValidationError
from .gram import ImplicitGram, check_int, implicit_breaks
from .strategy import GreedyHStrategy

OBJECTIVES = ("reference", "trace")

# Tolerance of the check that the weights on each root-to-leaf path sum to 1.
_PATH_TOL = 1e-9


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
def _choose_share(err_children, k, m, m1, delta, grid, l2):  # pragma: no cover - compiled
    """First minimiser ``g`` of GreedyH's score ``E(g)`` over ``g = 0..grid-1``, and ``E(g)``.

    ``B`` is the node query's squared weight ``(1 - p)**2`` (L1 paths) or ``1 - p**2``
    (L2 paths) times ``grid**2 delta``."""
    c = (m - m1) * delta + m1
    best = 0
    best_score = 0.0
    for g in range(grid):
        s = float(g)
        a = (grid - s) ** 2
        b = (grid * grid - a if l2 else s * s) * delta
        score = (err_children - c * b / (a + b * k)) / a
        if g == 0 or score < best_score:
            best = g
            best_score = score
    return best, best_score


@njit(cache=True)
def _greedy_implicit(
    left, right, diag, lo, hi, depth, kind, start, child, branch, grid, trace, l2
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
        best, score = _choose_share(e, k, m, m1, delta, grid, l2)
        p = 1.0 - best / grid
        share[index] = p
        if best > 0:
            q2 = 1.0 - p * p if l2 else (1.0 - p) ** 2
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
    l2: bool = False,
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
        best, score = _choose_share(err_children, k, m, m1, delta, grid, l2)
        p = 1.0 - best / grid
        share[index] = p
        if best > 0:
            scale = 1.0 / (p * p + k * (1.0 - p * p if l2 else (1.0 - p) ** 2))
            u[a:b] *= scale
            v *= scale
            k *= scale
        done[index] = (float(score) * grid * grid, k, v)
    return share, done.pop(0)[0]


@njit(cache=True)
def _path_weights(parent, kind, share, l2):  # pragma: no cover - compiled
    """Query weights top-down and the worst deviation of a root-to-leaf sum from 1.

    A node's query gets ``1 - p`` of the share left by its ancestors (all of it at a
    terminal node); its children inherit the share times ``p``. With ``l2`` the sums
    are of squared weights: the node's query gets ``sqrt(1 - p**2)`` times the weight
    left, so the squares along a path still add up to 1.
    """
    n_nodes = parent.size
    weight = np.empty(n_nodes)
    left = np.empty(n_nodes)  # share of the path left to the node
    spent = np.empty(n_nodes)  # weight (squared with l2) spent by the strict ancestors
    worst = 0.0
    for index in range(n_nodes):
        par = parent[index]
        if par < 0:
            left[index] = 1.0
            spent[index] = 0.0
        else:
            left[index] = left[par] * share[par]
            spent[index] = spent[par] + (weight[par] ** 2 if l2 else weight[par])
        if kind[index] == _SPLIT:
            p = share[index]
            weight[index] = left[index] * (np.sqrt(1.0 - p * p) if l2 else 1.0 - p)
        else:
            weight[index] = left[index]
            used = spent[index] + (weight[index] ** 2 if l2 else weight[index])
            worst = max(worst, abs(used - 1.0))
    return weight, worst


def _breaks(M: ArrayLike | ImplicitGram) -> tuple[int, np.ndarray, np.ndarray | None]:
    """Number of groups, the running count of column changes of ``M`` (cells the
    workload cannot tell apart share a count) and the dense matrix, if ``M`` is one."""
    if isinstance(M, ImplicitGram):
        return M.n_groups, implicit_breaks(M.left, M.right, M.diag), None
    try:
        gram = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"M must be a square numeric matrix: {exc}") from None
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1] or gram.shape[0] == 0:
        raise ValidationError(f"M must be a non-empty square matrix, got shape {gram.shape}")
    if not np.all(np.isfinite(gram)):
        raise ValidationError("M contains NaN or infinite values")
    gram = np.ascontiguousarray(gram)
    differ = np.any(gram[:, 1:] != gram[:, :-1], axis=0)
    return gram.shape[0], np.concatenate(([0], np.cumsum(differ))).astype(np.int64), gram


def greedy_h(
    M: ArrayLike | ImplicitGram,
    *,
    branch: int = 2,
    grid: int = 100,
    objective: Literal["reference", "trace"] = "reference",
    norm: Literal["l1", "l2"] = "l1",
) -> GreedyHStrategy:
    """Choose GreedyH's weighted hierarchical strategy for the reduced Gram matrix ``M``.

    Implements GreedyH (Li, Hay, Miklau, Wang, PVLDB 2014, Section 4) as in its
    reference implementation; Kellaris et al. use it as the Fixed Queries component
    (Section 4) with all ranges (MM) or prefixes (PMM, Section 5.2) as workload. The
    scoring rule is in the module docstring.

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
    norm : {"l1", "l2"}
        What adds up to 1 on every root-to-leaf path: the weights (L1 sensitivity 1,
        Laplace noise) or their squares (L2 sensitivity 1, Gaussian noise under zCDP;
        the node's squared weight ``1 - p**2`` replaces ``(1 - p)**2`` throughout).

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
    branch = check_int(branch, "branch", 2)
    grid = check_int(grid, "grid", 1)
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValidationError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if norm not in ("l1", "l2"):
        raise ValidationError(f"norm must be 'l1' or 'l2', got {norm!r}")
    trace, l2 = objective == "trace", norm == "l2"

    size, breaks, gram = _breaks(M)
    lo, hi, depth, kind, parent = _build_tree(size, branch, breaks)
    start, child = _children_csr(parent)
    if gram is None:
        share, expected_error = _greedy_implicit(
            M.left, M.right, M.diag, lo, hi, depth, kind, start, child, branch, grid, trace, l2
        )
    else:
        share, expected_error = _greedy_dense(
            gram, lo, hi, depth, kind, start, child, branch, grid, trace, l2
        )

    weight, worst = _path_weights(parent, kind, share, l2)
    if not worst <= _PATH_TOL:
        msg = f"GreedyH weights ({norm}) on a root-to-leaf path do not sum to 1 ({worst:.3g})"
        raise InternalError(msg)
    keep = weight > 0.0
    return GreedyHStrategy(
        lo=lo[keep],
        hi=hi[keep],
        weight=weight[keep],
        n_groups=size,
        expected_error=float(expected_error),
        objective=objective,
    )
