"""Fan-out ``f`` aggregation trees over ``n`` bins: layout and post-processing.

Everything here is post-processing of released node values (or a data-independent
layout the kernel measures); there is no noise and no budget logic.

Layout (methods framework A.7). With ``t = 1 + ceil(log_f n)`` levels (``t = 1`` for
``n = 1``), level ``l`` (``0`` = root, ``t - 1`` = leaves) holds the half-open
intervals ``[j * s_l, min((j + 1) * s_l, n))`` with span ``s_l = f**(t - 1 - l)`` and
``j = 0 .. ceil(n / s_l) - 1``. This is the complete tree on ``f**(t - 1)``
zero-padded leaves with every node that covers only padding removed; right-edge
nodes may be truncated or have a single child. Each level partitions ``[0, n)``.

Nodes are numbered in level order (root first, left to right inside a level); the
children of a node are contiguous in the next level, so every per-node quantity is
a flat array. Passes are either a short loop over levels of vectorised numpy work or,
for the least-squares consistency, one compiled loop over the nodes; all are
``O(#nodes)`` with ``#nodes <= f * n / (f - 1) + t``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dphist.errors import ValidationError

from .._jit import njit
from .vectors import positive_int

__all__ = [
    "TreeLayout",
    "best_cut",
    "consistency",
    "frontier",
    "frontiers",
    "gls",
    "is_cut",
    "leaf_estimates",
    "level_consistency",
    "range_nodes",
    "tree_layout",
    "tree_levels",
]


# --------------------------------------------------------------------------- helpers


def _ceil_log(n: int, base: int) -> int:
    """Smallest ``k >= 0`` with ``base**k >= n`` (exact integer arithmetic)."""
    k, power = 0, 1
    while power < n:
        power *= base
        k += 1
    return k


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def tree_levels(n: int, fanout: int) -> int:
    """Number of levels ``t = 1 + ceil(log_fanout n)`` of the tree over ``n`` bins."""
    n = positive_int(n, "n", 1)
    fanout = positive_int(fanout, "fanout", 2)
    return 1 + _ceil_log(n, fanout)


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True, eq=False)
class TreeLayout:
    """The fan-out tree over ``n`` bins (see module doc).

    Attributes
    ----------
    n, fanout : int
        Number of bins and fan-out ``f``.
    spans : ndarray, shape (t,)
        ``spans[l] = f**(t - 1 - l)``, the untruncated width of a level-``l`` node.
    level_offsets : ndarray, shape (t + 1,)
        Nodes of level ``l`` are ``level_offsets[l] : level_offsets[l + 1]``.

    Per-node arrays, built on first use (six int64 arrays of ``#nodes``: 5 GB at 10**8
    bins, which the level-wise passes never need), all read-only:

    lo, hi : half-open node intervals ``[lo, hi)``.
    level : level of each node (``0`` = root).
    parent : parent node, ``-1`` for the root.
    first_child, n_children : children are ``first_child : first_child + n_children``
        (``-1`` and ``0`` for leaves). Leaf ``i`` is node ``level_offsets[t - 1] + i``.
    """

    n: int
    fanout: int
    spans: np.ndarray
    level_offsets: np.ndarray

    @property
    def n_levels(self) -> int:
        """Number of levels ``t`` (root and leaves included)."""
        return int(self.spans.size)

    @property
    def n_nodes(self) -> int:
        return int(self.level_offsets[-1])

    @property
    def level_counts(self) -> np.ndarray:
        """Number of nodes on each level, root first."""
        return np.diff(self.level_offsets)

    def level_slice(self, level: int) -> slice:
        """Slice of the node arrays holding level ``level``."""
        return slice(int(self.level_offsets[level]), int(self.level_offsets[level + 1]))

    @property
    def leaf_slice(self) -> slice:
        return self.level_slice(self.n_levels - 1)

    @functools.cached_property
    def _nodes(self) -> dict[str, np.ndarray]:
        return _node_arrays(self)

    lo = property(lambda self: self._nodes["lo"])
    hi = property(lambda self: self._nodes["hi"])
    level = property(lambda self: self._nodes["level"])
    parent = property(lambda self: self._nodes["parent"])
    first_child = property(lambda self: self._nodes["first_child"])
    n_children = property(lambda self: self._nodes["n_children"])


def tree_layout(n: int, fanout: int = 16) -> TreeLayout:
    """Build the :class:`TreeLayout` of the fan-out tree over ``n`` bins: its levels;
    the per-node arrays follow on first use (``O(#nodes)``, one fill per level)."""
    n = positive_int(n, "n", 1)
    fanout = positive_int(fanout, "fanout", 2)
    t = 1 + _ceil_log(n, fanout)
    spans = np.array([fanout ** (t - 1 - lev) for lev in range(t)], dtype=np.int64)
    counts = np.array([-(-n // int(s)) for s in spans], dtype=np.int64)
    offsets = np.zeros(t + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return TreeLayout(n=n, fanout=fanout, spans=_readonly(spans), level_offsets=_readonly(offsets))


def _node_arrays(layout: TreeLayout) -> dict[str, np.ndarray]:
    """The per-node arrays of ``layout`` (one vectorised fill per level)."""
    n, fanout, t = layout.n, layout.fanout, layout.n_levels
    offsets, spans = layout.level_offsets, layout.spans
    counts = layout.level_counts
    total = layout.n_nodes
    names = ("lo", "hi", "level", "parent", "first_child", "n_children")
    out = {k: np.empty(total, dtype=np.int64) for k in names}
    lo, hi, level, parent = out["lo"], out["hi"], out["level"], out["parent"]
    first_child, n_children = out["first_child"], out["n_children"]
    for lev in range(t):
        a, b, c, s = int(offsets[lev]), int(offsets[lev + 1]), int(counts[lev]), int(spans[lev])
        j = np.arange(c, dtype=np.int64)
        np.multiply(j, s, out=lo[a:b])
        np.minimum(lo[a:b] + s, n, out=hi[a:b])
        level[a:b] = lev
        if lev == 0:
            parent[a:b] = -1
        else:
            np.floor_divide(j, fanout, out=parent[a:b])
            parent[a:b] += offsets[lev - 1]
        if lev == t - 1:
            first_child[a:b] = -1
            n_children[a:b] = 0
        else:
            first = j * fanout
            np.minimum(counts[lev + 1] - first, fanout, out=n_children[a:b])
            np.add(first, offsets[lev + 1], out=first_child[a:b])
    return {k: _readonly(v) for k, v in out.items()}


def _child_starts(layout: TreeLayout, lev: int) -> np.ndarray:
    """Positions, inside level ``lev + 1``, of the first child of each level-``lev`` node."""
    a = layout.level_offsets
    return layout.first_child[a[lev] : a[lev + 1]] - a[lev + 1]


def _expand(layout: TreeLayout, lev: int, values: np.ndarray) -> np.ndarray:
    """Repeat per-node values of level ``lev`` once per child (level ``lev + 1`` order)."""
    return np.repeat(values, layout.n_children[layout.level_slice(lev)])


def _node_vector(layout: TreeLayout, values: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(layout.n_nodes, float(arr))
    if arr.shape != (layout.n_nodes,):
        raise ValidationError(
            f"{name} must have one value per tree node ({layout.n_nodes}), got shape {arr.shape}"
        )
    return arr


# --------------------------------------------------------------------------- consistency


def consistency(
    layout: TreeLayout, y: ArrayLike, var: ArrayLike, *, return_var: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Generalised least-squares estimates of every node total (parent = sum of children).

    Minimises ``sum_v (y_v - T_v)**2 / var_v`` over consistent trees ``T`` (the totals of
    some leaf vector). ``var_v = inf`` marks an unmeasured node (its ``y_v`` is ignored and
    may be NaN); ``var_v`` must otherwise be positive. A scalar ``var`` applies to all nodes.

    Two passes (methods framework B.1, weighted form). Up: ``z_v, w_v`` = estimate of
    ``T_v`` and its variance from the measurements in ``v``'s subtree,
    ``z_v = (y_v/var_v + S/W) / (1/var_v + 1/W)`` with ``S, W`` the sums of the children's
    ``z, w``. Down: ``est_u = z_u + (w_u / W) * (est_v - S)``. This is exact GLS because,
    given a node's total, its children's subtrees are independent (Gaussian tree
    smoothing). Children with ``w_u = inf`` (no information about their total) share the
    parent's residual equally; when the problem is not identifiable the result is then
    one of the minimisers.

    With ``return_var=True`` also returns each estimate's variance (marginal, assuming
    independent noise of the stated variances): ``P_u = w_u (1 - g_u) + g_u**2 P_v``
    with ``g_u = w_u / W``; ``inf`` where the total is not identifiable.

    Time ``O(#nodes)``, memory a few float64 arrays of ``#nodes``.
    """
    y = _node_vector(layout, y, "y")
    var = _node_vector(layout, var, "var")
    if np.any(np.isnan(var)) or np.any(var <= 0):
        raise ValidationError("var must be positive (use inf for an unmeasured node)")
    if not np.all(np.isfinite(y) | np.isinf(var)):
        raise ValidationError("y must be finite wherever var is finite")
    return gls(layout.first_child, layout.n_children, y, var, return_var=return_var)


def gls(
    first_child: np.ndarray,
    n_children: np.ndarray,
    y: np.ndarray,
    var: np.ndarray,
    *,
    return_var: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """:func:`consistency` on any tree in level order given as ``first_child`` and
    ``n_children`` per node (children consecutive, numbered after their parent)."""
    m = first_child.size
    z, w, est = np.empty(m), np.empty(m), np.empty(m)
    post = np.empty(m if return_var else 0)
    _gls_up(first_child, n_children, y, var, z, w)
    _gls_down(first_child, n_children, z, w, est, post, return_var)
    if return_var:
        return est, post
    return est


@njit(cache=True)
def _gls_up(first_child, n_children, y, var, z, w):  # pragma: no cover - compiled
    """Up pass: ``z, w`` = estimate of each subtree total from the measurements in the
    subtree, and its variance (``inf``: no information)."""
    for v in range(first_child.size - 1, -1, -1):
        measured = not np.isinf(var[v])
        k = n_children[v]
        if k == 0:
            z[v] = y[v] if measured else 0.0
            w[v] = var[v]
            continue
        fc = first_child[v]
        s = 0.0
        ws = 0.0
        for u in range(fc, fc + k):
            s += z[u]
            ws += w[u]
        q = 1.0 / ws  # 0 when some child carries no information
        if measured:
            p = 1.0 / var[v]
            z[v] = (p * y[v] + q * s) / (p + q)
            w[v] = 1.0 / (p + q)
        elif q > 0.0:
            z[v] = s
            w[v] = ws
        else:
            z[v] = s
            w[v] = np.inf


@njit(cache=True)
def _gls_down(first_child, n_children, z, w, est, post, with_var):  # pragma: no cover
    """Down pass: final estimates (and variances) from the up-pass ``z, w``."""
    est[0] = z[0]
    if with_var:
        post[0] = w[0]
    for v in range(first_child.size):
        k = n_children[v]
        if k == 0:
            continue
        fc = first_child[v]
        s = 0.0
        ws = 0.0
        fin = 0.0
        n_inf = 0
        for u in range(fc, fc + k):
            s += z[u]
            ws += w[u]
            if np.isinf(w[u]):
                n_inf += 1
            else:
                fin += w[u]
        resid = est[v] - s
        if n_inf == 0:
            for u in range(fc, fc + k):
                g = w[u] / ws
                est[u] = z[u] + g * resid
                if with_var:
                    post[u] = w[u] * (1.0 - g) + g * g * post[v]
        else:
            # No information on some children's totals: they share the residual
            # equally; informed siblings keep their subtree estimates. A lone
            # uninformed child is the parent minus its siblings; two or more are not
            # identifiable.
            for u in range(fc, fc + k):
                if np.isinf(w[u]):
                    est[u] = z[u] + resid / n_inf
                    if with_var:
                        post[u] = fin + post[v] if n_inf == 1 else np.inf
                else:
                    est[u] = z[u]
                    if with_var:
                        post[u] = w[u]


def level_consistency(
    layout: TreeLayout, y: np.ndarray, level_var: ArrayLike, *, return_var: bool = False
) -> np.ndarray | None:
    """:func:`consistency` when every node of a level has the same noise variance
    (``level_var[l]``; ``inf`` for an unmeasured level), in place and lean.

    ``y`` (float64, one value per node) is overwritten with the estimates. Every
    level's nodes but its last span complete subtrees and measure the same levels, so
    their up-pass variances ``w`` are one number per level, the last node's another:
    the passes keep two numbers per level instead of four arrays of ``#nodes`` and read
    children by position (node ``j`` of level ``l`` has children ``j f ..`` of level
    ``l + 1``). With ``return_var=True`` returns the leaves' variances (one level of
    posterior variances is held at a time), else None. Same estimates as
    :func:`consistency` (checked against it and against dense GLS).
    """
    t = layout.n_levels
    var = np.asarray(level_var, dtype=np.float64)
    if var.shape != (t,) or np.any(np.isnan(var)) or np.any(var <= 0):
        raise ValidationError(f"level_var must hold {t} positive variances (inf: unmeasured)")
    if y.dtype != np.float64 or y.shape != (layout.n_nodes,):
        raise ValidationError(f"y must be a float64 array of {layout.n_nodes} node values")
    counts = layout.level_counts
    w_full, w_last = np.empty(t), np.empty(t)
    sum_full, sum_last = np.zeros(t), np.zeros(t)  # children's w summed, per class
    w_full[-1] = w_last[-1] = var[-1]
    for lev in range(t - 2, -1, -1):
        kids_last = int(counts[lev + 1] - (counts[lev] - 1) * layout.fanout)
        sum_full[lev] = layout.fanout * w_full[lev + 1]
        sum_last[lev] = (kids_last - 1) * w_full[lev + 1] + w_last[lev + 1]
        for w, ws in ((w_full, sum_full), (w_last, sum_last)):
            q = 1.0 / ws[lev]
            w[lev] = 1.0 / (1.0 / var[lev] + q) if np.isfinite(var[lev]) else ws[lev]
    offsets = layout.level_offsets
    _level_up(y, offsets, layout.fanout, var, sum_full, sum_last)
    post = np.full(1, w_last[0])
    for lev in range(t - 1):
        post = _level_down(
            y, offsets, lev, layout.fanout, w_full, w_last, sum_full, sum_last, post, return_var
        )
    return post if return_var else None


@njit(cache=True)
def _level_up(y, offsets, fanout, var, sum_full, sum_last):  # pragma: no cover - compiled
    """Up pass in place: ``y`` holds each node's subtree estimate ``z`` afterwards."""
    t = var.shape[0]
    a, b = offsets[t - 1], offsets[t]
    if np.isinf(var[t - 1]):
        y[a:b] = 0.0
    for lev in range(t - 2, -1, -1):
        a, b, c = offsets[lev], offsets[lev + 1], offsets[lev + 2]
        p = 1.0 / var[lev]
        for v in range(a, b):
            fc = b + (v - a) * fanout
            ec = min(fc + fanout, c)
            s = 0.0
            for u in range(fc, ec):
                s += y[u]
            q = 1.0 / (sum_last[lev] if v == b - 1 else sum_full[lev])
            y[v] = (p * y[v] + q * s) / (p + q) if p > 0.0 else s


@njit(cache=True)
def _level_down(
    y, offsets, lev, fanout, w_full, w_last, sum_full, sum_last, post, with_var
):  # pragma: no cover - compiled
    """Down pass from level ``lev`` to ``lev + 1`` in place (``y``: the estimates), and the
    next level's posterior variances from this level's ``post``."""
    a, b, c = offsets[lev], offsets[lev + 1], offsets[lev + 2]
    nxt = np.empty(c - b if with_var else 1)
    for v in range(a, b):
        fc = b + (v - a) * fanout
        ec = min(fc + fanout, c)
        ws = sum_last[lev] if v == b - 1 else sum_full[lev]
        s = 0.0
        for u in range(fc, ec):
            s += y[u]
        resid = y[v] - s
        pv = post[v - a] if with_var else 0.0
        for u in range(fc, ec):
            wu = w_last[lev + 1] if u == c - 1 else w_full[lev + 1]
            if np.isinf(ws):  # no information on the children's totals: share equally
                y[u] += resid / (ec - fc)
                if with_var:
                    nxt[u - b] = pv if ec - fc == 1 else np.inf
            else:
                g = wu / ws
                y[u] += g * resid
                if with_var:
                    nxt[u - b] = wu * (1.0 - g) + g * g * pv
    return nxt


def leaf_estimates(layout: TreeLayout, y: ArrayLike, var: ArrayLike) -> np.ndarray:
    """Consistent leaf (bin) estimates: the last level of :func:`consistency`."""
    return consistency(layout, y, var)[layout.leaf_slice]


# --------------------------------------------------------------------------- cuts


def _node_mask(layout: TreeLayout, mask: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.dtype != np.bool_ or arr.shape != (layout.n_nodes,):
        raise ValidationError(
            f"{name} must be a boolean mask with one entry per node ({layout.n_nodes})"
        )
    return arr


def best_cut(layout: TreeLayout, node_cost: ArrayLike) -> np.ndarray:
    """Minimum-cost cut of the tree (methods framework A.8, Selection).

    A cut is a set of nodes whose intervals partition ``[0, n)``; its cost is the sum of
    its nodes' costs. ``best(leaf) = cost(leaf)``, ``best(v) = min(cost(v), sum of the
    children's best)``; ties keep ``v`` (the coarser choice), so the result is the
    coarsest of the minimum-cost cuts. Returns a boolean node mask. Time ``O(#nodes)``.
    """
    cost = _node_vector(layout, node_cost, "node_cost")
    if np.any(np.isnan(cost)):
        raise ValidationError("node_cost contains NaN")
    t = layout.n_levels
    off = layout.level_offsets
    best = cost.copy()
    keep = np.ones(layout.n_nodes, dtype=bool)
    for lev in range(t - 2, -1, -1):
        p = slice(off[lev], off[lev + 1])
        c = slice(off[lev + 1], off[lev + 2])
        below = np.add.reduceat(best[c], _child_starts(layout, lev))
        keep[p] = cost[p] <= below
        best[p] = np.where(keep[p], cost[p], below)
    # Top-down: a node is reached if no proper ancestor was kept.
    cut = np.zeros(layout.n_nodes, dtype=bool)
    reached = np.ones(1, dtype=bool)
    for lev in range(t):
        p = slice(off[lev], off[lev + 1])
        cut[p] = reached & keep[p]
        if lev < t - 1:
            reached = _expand(layout, lev, reached & ~keep[p])
    return cut


def _under_cut(layout: TreeLayout, cut: np.ndarray) -> np.ndarray:
    """Mask of nodes strictly inside the subtree of a cut node."""
    off = layout.level_offsets
    inside = np.zeros(layout.n_nodes, dtype=bool)
    for lev in range(layout.n_levels - 1):
        p = slice(off[lev], off[lev + 1])
        c = slice(off[lev + 1], off[lev + 2])
        inside[c] = _expand(layout, lev, inside[p] | cut[p])
    return inside


def is_cut(layout: TreeLayout, mask: ArrayLike) -> bool:
    """Whether ``mask`` selects a cut (every leaf has exactly one ancestor-or-self in it)."""
    mask = _node_mask(layout, mask, "mask")
    off = layout.level_offsets
    count = mask[off[0] : off[1]].astype(np.int64)
    for lev in range(layout.n_levels - 1):
        c = slice(off[lev + 1], off[lev + 2])
        count = _expand(layout, lev, count) + mask[c]
    return bool(np.all(count == 1))


def frontiers(layout: TreeLayout, cut: ArrayLike) -> list[np.ndarray]:
    """The cells ``F_l`` of every level for a cut (methods framework A.8).

    ``F_l`` = level-``l`` nodes not strictly inside a cut node's subtree, plus the cut
    nodes above level ``l``. Each ``F_l`` partitions ``[0, n)``. Returns, per level
    (root first), the node indices of ``F_l`` sorted by position, ready to be measured
    as interval sums ``[layout.lo[idx], layout.hi[idx])``.
    Time ``O(#nodes + sum_l |F_l| log |F_l|)``.
    """
    cut = _node_mask(layout, cut, "cut")
    if not is_cut(layout, cut):
        raise ValidationError("cut must select nodes whose intervals partition [0, n)")
    inside = _under_cut(layout, cut)
    off = layout.level_offsets
    out = []
    above = np.empty(0, dtype=np.int64)  # cut nodes on levels < l
    for lev in range(layout.n_levels):
        a = int(off[lev])
        own = a + np.flatnonzero(~inside[off[lev] : off[lev + 1]])
        if above.size:
            cells = np.concatenate((own, above))
            cells = cells[np.argsort(layout.lo[cells], kind="stable")]
        else:
            cells = own
        out.append(cells)
        new_cuts = a + np.flatnonzero(cut[off[lev] : off[lev + 1]])
        if new_cuts.size:
            above = np.concatenate((above, new_cuts))
    return out


def frontier(layout: TreeLayout, cut: ArrayLike, level: int) -> np.ndarray:
    """Node indices of ``F_level`` sorted by position (see :func:`frontiers`)."""
    level = positive_int(level, "level", 0)
    if level >= layout.n_levels:
        raise ValidationError(f"level must be below {layout.n_levels}, got {level}")
    return frontiers(layout, cut)[level]


# --------------------------------------------------------------------------- ranges


def range_nodes(layout: TreeLayout, lo: int, hi: int) -> np.ndarray:
    """Canonical decomposition of ``[lo, hi)`` into maximal tree nodes.

    Returns node indices sorted by position: the nodes inside ``[lo, hi)`` whose parent
    is not inside; at most ``2 (f - 1)`` per level. Time ``O(t + output)``.
    """
    lo = positive_int(lo, "lo", 0)
    hi = positive_int(hi, "hi", 0)
    n, f = layout.n, layout.fanout
    if not lo < hi <= n:
        raise ValidationError(f"need 0 <= lo < hi <= n={n}, got [{lo}, {hi})")
    counts = layout.level_counts
    pieces = []
    prev = (0, 0)  # range of inside nodes on the level above (none above the root)
    for lev, span in enumerate(layout.spans.tolist()):
        a = -(-lo // span)
        b = int(counts[lev]) if hi == n else hi // span
        if a >= b:
            prev = (0, 0)
            continue
        pa, pb = prev
        base = int(layout.level_offsets[lev])
        if pa < pb:
            ca, cb = pa * f, min(pb * f, int(counts[lev]))
            pieces += [np.arange(base + a, base + ca), np.arange(base + cb, base + b)]
        else:
            pieces.append(np.arange(base + a, base + b))
        prev = (a, b)
    nodes = np.concatenate(pieces).astype(np.int64)
    return nodes[np.argsort(layout.lo[nodes], kind="stable")]
