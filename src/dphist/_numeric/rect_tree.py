"""Trees of rectangles over a ``rows x cols`` grid of cells: layouts, leaf painting and
the exact error of a least-squares estimate for any rectangle.

A :class:`RectTree` holds half-open node rectangles ``[r0, r1) x [c0, c1)`` numbered in
level order: the root covers the grid, the children of a node are consecutive, come
after it and partition it. Two-dimensional hierarchies (Hay et al.'s tree with a
``b x b`` split per node, Qardaji, Yang, Li PVLDB 2013; the quadtree of Cormode et al.),
uniform and adaptive grids (Qardaji, Yang, Li, ICDE 2013) and the leaves of a PrivTree
decomposition are all such trees. Least squares over a measured tree is
:func:`dphist._numeric.tree.gls` (it needs only ``first_child`` and ``n_children``).

Error of a rectangle (:func:`rect_moments`). With each node total measured once (or not:
variance ``inf``) with independent noise and the generalised least-squares (GLS)
estimate, let ``z_v, w_v`` be the estimate of node ``v``'s total from its subtree and its
variance (up pass; ``W_v`` the children's summed ``w``). The estimate of a rectangle
``Q`` is ``h_root z_root + sum_v sum_c (h_c - h_v) z_c`` over the nodes ``v`` that ``Q``
cuts (neither holds nor misses) and their children ``c``, where ``h`` is 1 on nodes
inside ``Q``, 0 on nodes outside, the covered share on a cut leaf (its total is spread
evenly) and ``sum_c (w_c / W_v) h_c`` on a cut inner node. Since ``z_v`` depends on its
own measurement with gain ``w_v / var_v`` and on each child's ``z_c`` with gain
``w_v / W_v``, the coefficient ``A`` of each ``z`` follows top-down
(``A_root = h_root``, ``A_c = A_v w_v / W_v + h_c - h_v``) and

    Var = sum_{cut v, measured} (A_v w_v / var_v)**2 var_v + sum_{c uncut} A_c**2 w_c,

the fourth cumulant likewise with fourth powers, ``kappa_v`` per measurement and
``G_c = sum over c's subtree of (gain to z_c)**4 kappa`` (up pass) in place of ``w_c``.
Only the cut nodes and their children are visited: ``O(perimeter)`` per rectangle, never
the cells inside. Everything here is public structure and arithmetic: no data, no noise.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._jit import njit
from ..errors import ValidationError

__all__ = [
    "INNER",
    "OUTER",
    "RECTANGLE",
    "RectFactors",
    "RectTree",
    "expand_blocks",
    "grid_tree",
    "hierarchy_edges",
    "leaves_tree",
    "level_tree",
    "nested_grid_tree",
    "paint",
    "rect_factors",
    "rect_moments",
    "split_edges",
    "sum_blocks",
    "tree_from_levels",
]


@dataclass(frozen=True, eq=False)
class RectTree:
    """Node rectangles ``[r0, r1) x [c0, c1)`` in level order; ``first_child`` and
    ``n_children`` (0 for a leaf) give each node's consecutive children."""

    shape: tuple[int, int]
    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    first_child: np.ndarray
    n_children: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.r0.size)

    @property
    def leaves(self) -> np.ndarray:
        """Indices of the leaves, in node order."""
        return np.flatnonzero(self.n_children == 0)

    @property
    def area(self) -> np.ndarray:
        return (self.r1 - self.r0).astype(np.int64) * (self.c1 - self.c0)


# --------------------------------------------------------------------------- edges


def split_edges(edges: np.ndarray, parts: int) -> np.ndarray:
    """Refine a partition of ``[0, n)`` (increasing ``edges`` from 0 to ``n``): each
    interval of length ``L`` splits into ``min(parts, L)`` pieces of near-equal length,
    the longer ones first (the split of DPBench's HB2D and QuadTree)."""
    edges = np.asarray(edges, dtype=np.int64)
    lengths = np.diff(edges)
    pieces = np.minimum(lengths, int(parts))
    base = np.repeat(lengths // pieces, pieces)
    rank = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    extra = rank < np.repeat(lengths % pieces, pieces)
    return np.concatenate(([0], np.cumsum(base + extra)))


def hierarchy_edges(shape: tuple[int, int], branching: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Row and column edges of every level of the hierarchy that splits each node into
    ``branching`` near-equal parts along each axis (``branching**2`` children), from the
    root down to single cells. An axis already cut into single bins stays so."""
    rows, cols = (int(s) for s in shape)
    if rows < 1 or cols < 1 or int(branching) < 2:
        raise ValidationError("a hierarchy needs a non-empty grid and a branching of 2 or more")
    re, ce = np.array([0, rows]), np.array([0, cols])
    levels = [(re, ce)]
    while re.size - 1 < rows or ce.size - 1 < cols:
        re, ce = split_edges(re, branching), split_edges(ce, branching)
        levels.append((re, ce))
    return levels


def sum_blocks(a: np.ndarray, row_starts: np.ndarray, col_starts: np.ndarray) -> np.ndarray:
    """Sums of ``a`` over the blocks starting at ``row_starts`` x ``col_starts`` (every
    block non-empty): a level's totals from the level below."""
    return np.add.reduceat(np.add.reduceat(a, row_starts, axis=0), col_starts, axis=1)


def expand_blocks(a: np.ndarray, row_sizes: np.ndarray, col_sizes: np.ndarray) -> np.ndarray:
    """Each entry of ``a`` repeated over its block (the transpose of :func:`sum_blocks`)."""
    return np.repeat(np.repeat(a, row_sizes, axis=0), col_sizes, axis=1)


# --------------------------------------------------------------------------- trees


def tree_from_levels(shape: tuple[int, int], levels: list[tuple[np.ndarray, ...]]) -> RectTree:
    """A tree from its levels below the root, each ``(r0, r1, c0, c1, parent)`` with
    ``parent`` the index of each node's parent in the level above (the root is level 0),
    nodes grouped by parent in the parents' order. Children must partition their parent
    (checked by their total area; overlaps are the caller's to avoid)."""
    rows, cols = int(shape[0]), int(shape[1])
    parts = [[np.array([v]) for v in (0, rows, 0, cols)]]
    parents = []
    for level in levels:
        r0, r1, c0, c1, parent = (np.asarray(a, dtype=np.int64) for a in level)
        if parent.size and np.any(np.diff(parent) < 0):
            raise ValidationError("nodes must be grouped by parent, in the parents' order")
        parts.append([r0, r1, c0, c1])
        parents.append(parent)
    sizes = np.array([p[0].size for p in parts], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    total = int(offsets[-1])
    dtype = np.int32 if total < 2**31 - 1 and max(rows, cols) < 2**31 - 1 else np.int64
    r0, r1, c0, c1 = (np.concatenate([p[k] for p in parts]).astype(dtype) for k in range(4))
    n_children = np.zeros(total, dtype=dtype)
    first_child = np.full(total, -1, dtype=dtype)
    for k, parent in enumerate(parents):
        counts = np.bincount(parent, minlength=int(sizes[k]))
        if counts.size != sizes[k]:
            raise ValidationError("a node names a parent outside the level above")
        here = slice(int(offsets[k]), int(offsets[k + 1]))
        n_children[here] = counts
        starts = offsets[k + 1] + np.cumsum(counts) - counts
        first_child[here] = np.where(counts > 0, starts, -1)
    tree = RectTree((rows, cols), r0, r1, c0, c1, first_child, n_children)
    _check_partition(tree)
    return tree


def _check_partition(tree: RectTree) -> None:
    area = tree.area
    inner = np.flatnonzero(tree.n_children > 0)
    if inner.size:  # every node but the root is a child, in node order
        kids = np.repeat(inner, tree.n_children[inner])
        covered = np.bincount(kids, weights=area[1:], minlength=tree.n_nodes)
        if not np.array_equal(covered[inner], area[inner]):
            raise ValidationError("the children of a node must partition it")
    if np.any(area <= 0):
        raise ValidationError("every node of a tree must hold a cell")


def level_tree(shape: tuple[int, int], levels: list[tuple[np.ndarray, np.ndarray]]) -> RectTree:
    """The tree whose level ``l`` is the grid with edges ``levels[l]`` (each grid refining
    the one above, the first a single cell): a node's children are the next level's cells
    inside it, row-major. Nodes are numbered level by level, parent by parent."""
    rows, cols = int(shape[0]), int(shape[1])
    below = []
    a = np.zeros(1, dtype=np.int64)  # grid coordinates of the current level's nodes
    b = np.zeros(1, dtype=np.int64)
    for (re, ce), (nre, nce) in itertools.pairwise(levels):
        mr, mc = np.searchsorted(nre, re), np.searchsorted(nce, ce)
        if not (np.array_equal(nre[mr], re) and np.array_equal(nce[mc], ce)):
            raise ValidationError("each level's grid must refine the one above")
        a, b, parent = _children(a, b, mr, mc)
        below.append((nre[a], nre[a + 1], nce[b], nce[b + 1], parent))
    first_re, first_ce = levels[0]
    if not (np.array_equal(first_re, [0, rows]) and np.array_equal(first_ce, [0, cols])):
        raise ValidationError("the first level of a tree is its root")
    return tree_from_levels(shape, below)


@njit(cache=True)
def _children(a, b, mr, mc):  # pragma: no cover - compiled
    """Grid coordinates of the children of the nodes ``(a, b)``, parent by parent."""
    total = 0
    for v in range(a.size):
        total += (mr[a[v] + 1] - mr[a[v]]) * (mc[b[v] + 1] - mc[b[v]])
    ca = np.empty(total, dtype=np.int64)
    cb = np.empty(total, dtype=np.int64)
    parent = np.empty(total, dtype=np.int64)
    k = 0
    for v in range(a.size):
        for i in range(mr[a[v]], mr[a[v] + 1]):
            for j in range(mc[b[v]], mc[b[v] + 1]):
                ca[k], cb[k], parent[k] = i, j, v
                k += 1
    return ca, cb, parent


def grid_tree(shape: tuple[int, int], row_edges: np.ndarray, col_edges: np.ndarray) -> RectTree:
    """A root over the cells of one grid (a uniform grid's layout)."""
    rows, cols = int(shape[0]), int(shape[1])
    root = (np.array([0, rows]), np.array([0, cols]))
    return level_tree(shape, [root, (np.asarray(row_edges), np.asarray(col_edges))])


def nested_grid_tree(
    shape: tuple[int, int],
    row_edges: np.ndarray,
    col_edges: np.ndarray,
    row_parts: np.ndarray,
    col_parts: np.ndarray,
    side: np.ndarray | None = None,
) -> RectTree:
    """A root, the cells of a grid (row-major) and, inside cell ``k``, a grid of
    ``row_parts[k] x col_parts[k]`` near-equal cells (an adaptive grid's layout); the
    parts are capped by the cell's size. With ``side``, cell ``k``'s sub-cells are
    squares of ``side[k]`` bins from its top-left corner, the last ones truncated (as
    DPBench's AG lays them; the parts must then be ``ceil(size / side)``)."""
    re, ce = np.asarray(row_edges, dtype=np.int64), np.asarray(col_edges, dtype=np.int64)
    nr, nc = re.size - 1, ce.size - 1
    a, b = np.divmod(np.arange(nr * nc, dtype=np.int64), nc)
    level1 = (re[a], re[a + 1], ce[b], ce[b + 1], np.zeros(nr * nc, dtype=np.int64))
    rp = np.clip(np.asarray(row_parts, dtype=np.int64), 1, re[a + 1] - re[a])
    cp = np.clip(np.asarray(col_parts, dtype=np.int64), 1, ce[b + 1] - ce[b])
    step = np.zeros(rp.size, dtype=np.int64) if side is None else np.asarray(side, dtype=np.int64)
    level2 = _fill_sub_grids(re[a], re[a + 1], ce[b], ce[b + 1], rp, cp, step)
    return tree_from_levels(shape, [level1, level2])


@njit(cache=True)
def _cut(lo, size, parts, step, i):  # pragma: no cover - compiled
    """The ``i``-th of ``parts`` cuts of ``[lo, lo + size)``: near-equal (``step`` 0) or
    runs of ``step`` from the start, the last truncated."""
    if step > 0:
        return lo + min(i * step, size)
    return lo + (i * size) // parts


@njit(cache=True)
def _fill_sub_grids(r0, r1, c0, c1, rp, cp, step):  # pragma: no cover - compiled
    total = 0
    for k in range(r0.size):
        total += rp[k] * cp[k]
    out = np.empty((5, total), dtype=np.int64)
    m = 0
    for k in range(r0.size):
        hr, hc = r1[k] - r0[k], c1[k] - c0[k]
        for i in range(rp[k]):
            top = _cut(r0[k], hr, rp[k], step[k], i)
            bottom = _cut(r0[k], hr, rp[k], step[k], i + 1)
            for j in range(cp[k]):
                out[0, m], out[1, m] = top, bottom
                out[2, m] = _cut(c0[k], hc, cp[k], step[k], j)
                out[3, m] = _cut(c0[k], hc, cp[k], step[k], j + 1)
                out[4, m] = k
                m += 1
    return out[0], out[1], out[2], out[3], out[4]


def leaves_tree(shape: tuple[int, int], r0, r1, c0, c1) -> RectTree:
    """A root whose children are the given rectangles (a partition of the grid)."""
    r0 = np.asarray(r0, dtype=np.int64)
    return tree_from_levels(shape, [(r0, r1, c0, c1, np.zeros(r0.size, dtype=np.int64))])


# --------------------------------------------------------------------------- painting


def paint(shape: tuple[int, int], r0, r1, c0, c1, totals: np.ndarray) -> np.ndarray:
    """The ``rows x cols`` float array with each rectangle's total spread evenly over its
    cells (the rectangles partition the grid)."""
    out = np.zeros((int(shape[0]), int(shape[1])))
    _paint(*(np.asarray(v, dtype=np.int64) for v in (r0, r1, c0, c1)),
           np.asarray(totals, dtype=np.float64), out)  # fmt: skip
    return out


@njit(cache=True)
def _paint(r0, r1, c0, c1, totals, out):  # pragma: no cover - compiled
    for k in range(r0.size):
        value = totals[k] / ((r1[k] - r0[k]) * (c1[k] - c0[k]))
        for i in range(r0[k], r1[k]):
            for j in range(c0[k], c1[k]):
                out[i, j] = value


# --------------------------------------------------------------------------- error


@dataclass(frozen=True, eq=False)
class RectFactors:
    """The up-pass factors of a measured tree: ``w`` (variance of each node's subtree
    estimate), ``big_w`` (the children's summed ``w``, 0 for a leaf), the measurement
    variances ``var`` (``inf``: unmeasured), and for fourth cumulants ``k4`` (per
    measurement) and ``g`` (per subtree)."""

    tree: RectTree
    w: np.ndarray
    big_w: np.ndarray
    var: np.ndarray
    k4: np.ndarray
    g: np.ndarray


def rect_factors(tree: RectTree, var: np.ndarray, k4: np.ndarray | None = None) -> RectFactors:
    """Factors of ``tree`` measured with variances ``var`` (``inf``: unmeasured) and
    fourth cumulants ``k4`` (0 when omitted). Every leaf must be measured."""
    var = np.ascontiguousarray(np.broadcast_to(np.asarray(var, dtype=np.float64), (tree.n_nodes,)))
    k4 = np.zeros(tree.n_nodes) if k4 is None else np.asarray(k4, dtype=np.float64)
    k4 = np.ascontiguousarray(np.broadcast_to(k4, (tree.n_nodes,)))
    if np.any(np.isnan(var)) or np.any(var <= 0):
        raise ValidationError("measurement variances must be positive (inf: unmeasured)")
    if np.any(np.isinf(var[tree.n_children == 0])):
        raise ValidationError("every leaf of the tree must be measured")
    w, big_w, g = _up(tree.first_child, tree.n_children, var, k4)
    return RectFactors(tree, w, big_w, var, k4, g)


@njit(cache=True)
def _up(first, count, var, k4):  # pragma: no cover - compiled
    m = var.size
    w = np.empty(m)
    big_w = np.zeros(m)
    g = np.zeros(m)
    for v in range(m - 1, -1, -1):
        if count[v] == 0:
            w[v] = var[v]
            g[v] = k4[v]
            continue
        s = 0.0
        gs = 0.0
        for c in range(first[v], first[v] + count[v]):
            s += w[c]
            gs += g[c]
        big_w[v] = s
        if np.isinf(var[v]):
            w[v] = s
            g[v] = gs
        else:
            w[v] = 1.0 / (1.0 / var[v] + 1.0 / s)
            g[v] = (w[v] / var[v]) ** 4 * k4[v] + (w[v] / s) ** 4 * gs
    return w, big_w, g


#: What a query sums over: a rectangle (a cut leaf contributes the share it covers), the
#: leaves inside it, or the leaves it meets (a bracket's inner and outer unions).
RECTANGLE, INNER, OUTER = 0, 1, 2


def rect_moments(
    f: RectFactors,
    r0: np.ndarray,
    r1: np.ndarray,
    c0: np.ndarray,
    c1: np.ndarray,
    *,
    mode: int = RECTANGLE,
    est: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Noise variance and fourth cumulant of the GLS estimate of each rectangle
    ``[r0, r1) x [c0, c1)`` (``mode=INNER``: of the union of the leaves inside it;
    ``OUTER``: of the leaves it meets), and that estimate given the node estimates
    ``est`` (zeros without). Empty rectangles: 0. ``O(cut nodes x fan-out)`` each."""
    t = f.tree
    q = [np.ascontiguousarray(np.atleast_1d(v), dtype=np.int64) for v in (r0, r1, c0, c1)]
    node_est = np.zeros(t.n_nodes) if est is None else np.asarray(est, dtype=np.float64)
    return _moments(t.r0, t.r1, t.c0, t.c1, t.first_child, t.n_children, f.w, f.big_w, f.var,
                    f.k4, f.g, node_est, int(mode), *q)  # fmt: skip


@njit(cache=True)
def _overlap(r0, r1, c0, c1, v, a0, a1, b0, b1):  # pragma: no cover - compiled
    dr = min(r1[v], a1) - max(r0[v], a0)
    dc = min(c1[v], b1) - max(c0[v], b0)
    if dr <= 0 or dc <= 0:
        return 0
    return dr * dc


@njit(cache=True)
def _moments(
    r0, r1, c0, c1, first, count, w, big_w, var, k4, g, est, mode, qa0, qa1, qb0, qb1
):  # pragma: no cover
    m = qa0.size
    out_var = np.zeros(m)
    out_k4 = np.zeros(m)
    out_est = np.zeros(m)
    h = np.zeros(w.size)
    coef = np.zeros(w.size)
    cut = np.empty(w.size, dtype=np.int64)
    stack = np.empty(w.size, dtype=np.int64)
    for q in range(m):
        a0, a1, b0, b1 = qa0[q], qa1[q], qb0[q], qb1[q]
        if a0 >= a1 or b0 >= b1:
            continue
        whole = (r1[0] - r0[0]) * (c1[0] - c0[0])
        ov = _overlap(r0, r1, c0, c1, 0, a0, a1, b0, b1)
        if ov == whole:
            out_var[q], out_k4[q], out_est[q] = w[0], g[0], est[0]
            continue
        if ov == 0:
            continue
        # the cut nodes, parents before children
        n_cut = 0
        top = 0
        stack[top] = 0
        top += 1
        while top > 0:
            top -= 1
            v = stack[top]
            cut[n_cut] = v
            n_cut += 1
            for c in range(first[v], first[v] + count[v]):
                oc = _overlap(r0, r1, c0, c1, c, a0, a1, b0, b1)
                if 0 < oc < (r1[c] - r0[c]) * (c1[c] - c0[c]):
                    stack[top] = c
                    top += 1
        # h bottom-up over the cut nodes
        total_est = 0.0
        for k in range(n_cut - 1, -1, -1):
            v = cut[k]
            if count[v] == 0:
                if mode == RECTANGLE:
                    area = (r1[v] - r0[v]) * (c1[v] - c0[v])
                    h[v] = _overlap(r0, r1, c0, c1, v, a0, a1, b0, b1) / area
                else:
                    h[v] = 1.0 if mode == OUTER else 0.0
                total_est += h[v] * est[v]
                continue
            s = 0.0
            for c in range(first[v], first[v] + count[v]):
                s += w[c] * _share(r0, r1, c0, c1, c, a0, a1, b0, b1, h)
                if _overlap(r0, r1, c0, c1, c, a0, a1, b0, b1) == (r1[c] - r0[c]) * (c1[c] - c0[c]):
                    total_est += est[c]  # a child inside the rectangle
            h[v] = s / big_w[v]
        # coefficients top-down, and the moments
        coef[0] = h[0]
        total_var = 0.0
        total_k4 = 0.0
        for k in range(n_cut):
            v = cut[k]
            if not np.isinf(var[v]):
                gain = coef[v] * w[v] / var[v]
                total_var += gain * gain * var[v]
                total_k4 += gain**4 * k4[v]
            if count[v] == 0:
                continue
            down = coef[v] * w[v] / big_w[v]
            for c in range(first[v], first[v] + count[v]):
                hc = _share(r0, r1, c0, c1, c, a0, a1, b0, b1, h)
                coef[c] = down + hc - h[v]
                oc = _overlap(r0, r1, c0, c1, c, a0, a1, b0, b1)
                if oc == 0 or oc == (r1[c] - r0[c]) * (c1[c] - c0[c]):
                    total_var += coef[c] ** 2 * w[c]
                    total_k4 += coef[c] ** 4 * g[c]
        out_var[q], out_k4[q], out_est[q] = total_var, total_k4, total_est
    return out_var, out_k4, out_est


@njit(cache=True)
def _share(r0, r1, c0, c1, c, a0, a1, b0, b1, h):  # pragma: no cover - compiled
    """``h`` of a child: 1 inside the rectangle, 0 outside, else its computed value."""
    oc = _overlap(r0, r1, c0, c1, c, a0, a1, b0, b1)
    if oc == 0:
        return 0.0
    if oc == (r1[c] - r0[c]) * (c1[c] - c0[c]):
        return 1.0
    return h[c]


# --------------------------------------------------------------------------- quadtree


@dataclass(frozen=True)
class QuadLayout:
    """The quadtree of a ``rows x cols`` grid, held implicitly: the root is the grid and a
    node with more than one row (column) splits its rows (columns) into two halves, the
    first the larger, giving 4, 2 or no children (a single cell). Nodes are rectangles
    ``(r0, r1, c0, c1)``; :meth:`children` expands many at once. ``fanout`` is 4 (the
    quadtree's, which PrivTree's bias uses)."""

    shape: tuple[int, int]
    fanout: int = 4

    @property
    def n(self) -> int:
        return int(self.shape[0]) * int(self.shape[1])

    def root(self) -> tuple[np.ndarray, ...]:
        return tuple(np.array([v], dtype=np.int64) for v in (0, self.shape[0], 0, self.shape[1]))

    @staticmethod
    def n_children(r0, r1, c0, c1) -> np.ndarray:
        return (
            np.where(r1 - r0 > 1, 2, 1) * np.where(c1 - c0 > 1, 2, 1) * ((r1 - r0) * (c1 - c0) > 1)
        )

    @staticmethod
    def children(r0, r1, c0, c1) -> tuple[np.ndarray, ...]:
        """The children of every node (none for a single cell), parent by parent, each
        parent's row-major: ``(r0, r1, c0, c1, parent)``."""
        rm = r0 + (r1 - r0 + 1) // 2
        cm = c0 + (c1 - c0 + 1) // 2
        parts = []
        for top, bottom, row_ok in ((r0, rm, True), (rm, r1, r1 - r0 > 1)):
            for left, right, col_ok in ((c0, cm, True), (cm, c1, c1 - c0 > 1)):
                keep = row_ok & col_ok & ((r1 - r0) * (c1 - c0) > 1)
                parts.append((top, bottom, left, right, keep))
        parent = np.arange(r0.size, dtype=np.int64)
        stacked = [np.stack([np.broadcast_to(p[k], r0.shape) for p in parts], axis=1)
                   for k in range(5)]  # fmt: skip
        keep = stacked[4].astype(bool).ravel()
        out = tuple(a.ravel()[keep].astype(np.int64) for a in stacked[:4])
        return (*out, np.repeat(parent, 4)[keep])
