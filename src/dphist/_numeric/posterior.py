"""Exact error of least-squares estimates on a tree of interval totals.

A linear release that measures interval totals of a tree (each node's total observed
once with independent noise of known variance, or not at all) and answers with the
generalised least-squares (GLS) estimate has error covariance ``(A' D^-1 A)^-1``. That
matrix is never built here: it is the posterior covariance of the node totals under a
flat prior and Gaussian noise of the same variances, which factorises over the tree
(Gaussian tree smoothing, the structure :func:`dphist._numeric.tree.consistency`
uses):

* ``w_v``: the variance of the estimate of ``T_v`` from the measurements inside
  ``v``'s subtree (up pass); the root's ``w`` is its final variance ``P``;
* given ``T_v``, the children's totals are ``a_c + g_c T_v + eta_c`` with
  ``g_c = w_c / W_v`` (``W_v`` the children's summed ``w``) and innovations ``eta``
  of covariance ``diag(w) - w w' / W_v``, independent across nodes and of ``T_v``.

The estimate of a prefix ``Q(k)`` (the bins before ``k``) is then a linear function of
the root total and of the innovations of the nodes on the path to bin ``k`` only, so
the variance of any range ``[lo, hi)`` costs ``O(depth)`` (times ``log`` of the fan-out
to find the path), however many nodes the tree has. A leaf may cover several bins and
spread its total over them by fixed public shares ``phi`` (a group of bins published as
one noisy total, a cut node of a pruned tree).

Nodes are numbered so that every child comes after its parent (level order or
pre-order); ``ptr``/``kids`` list each node's children left to right (CSR). Groups
that are not contiguous are handled by :mod:`dphist._numeric.group_sums`. Everything is
post-processing of public structure: no data, no noise.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..errors import ValidationError

__all__ = [
    "LevelFactors",
    "TreeFactors",
    "functional_variance",
    "level_factors",
    "level_range_variances",
    "range_fourth_cumulants",
    "range_variances",
    "subtree_kurtosis",
    "tree_factors",
]

_MAX_DEPTH = 128


class TreeFactors:
    """The posterior factors of a measured tree (see the module docstring).

    ``lo``, ``hi``: node intervals; ``ptr``, ``kids``: children in CSR form (leaves
    have none); ``w``, ``W``, ``cw``: per node, the subtree variance, the children's
    summed ``w`` (0 for a leaf) and the summed ``w`` of its earlier siblings;
    ``phi``: prefix sums (length ``n + 1``) of each bin's share of its leaf's total,
    built at the first query when the shares are the even spread (``phi=None``: one
    float per bin not held while a method publishes); ``var``: the measurement
    variances (``inf``: unmeasured).
    """

    __slots__ = ("W", "_phi", "cw", "hi", "kids", "lo", "n", "ptr", "var", "w")

    def __init__(self, n, lo, hi, ptr, kids, w, big_w, cw, phi, var):
        self.n = int(n)
        self.lo, self.hi, self.ptr, self.kids = lo, hi, ptr, kids
        self.w, self.W, self.cw, self._phi, self.var = w, big_w, cw, phi, var

    @property
    def phi(self) -> np.ndarray:
        if self._phi is None:  # even spread over the leaves
            leaves = np.flatnonzero(self.ptr[1:] == self.ptr[:-1])
            phi = np.zeros(self.n + 1)
            _even_shares(self.lo[leaves], self.hi[leaves], phi)
            np.cumsum(phi, out=phi)
            self._phi = phi
        return self._phi

    @property
    def root_variance(self) -> float:
        return float(self.w[0])


def tree_factors(
    n: int,
    lo: np.ndarray,
    hi: np.ndarray,
    ptr: np.ndarray,
    kids: np.ndarray,
    var: np.ndarray,
    shares: np.ndarray | None = None,
) -> TreeFactors:
    """Posterior factors of the tree with node intervals ``lo, hi``, children ``ptr,
    kids`` (CSR, left to right, every child numbered after its parent) and measurement
    variances ``var`` (``inf`` for an unmeasured node; every leaf must be measured or
    informed). ``shares[i]`` is bin ``i``'s share of its leaf's total (default: even
    spread over the leaf). Time ``O(#nodes + n)``.
    """
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    kids = np.ascontiguousarray(kids, dtype=np.int64)
    var = np.ascontiguousarray(var, dtype=np.float64)
    m = lo.size
    if not (hi.size == var.size == m and ptr.size == m + 1 and lo[0] == 0 and hi[0] == n):
        raise ValidationError("a tree needs one interval and variance per node, root [0, n)")
    if np.any(np.isnan(var)) or np.any(var <= 0):
        raise ValidationError("measurement variances must be positive (inf: unmeasured)")
    w, big_w, cw = _up(ptr, kids, var)
    if not np.all(np.isfinite(w)):
        raise ValidationError("some node total has no information: the tree is not identifiable")
    if shares is None:  # even spread: phi is built at the first query (TreeFactors.phi)
        leaves = np.flatnonzero(ptr[1:] == ptr[:-1])
        if (hi[leaves] - lo[leaves]).sum() != n or not _covers(lo[leaves], hi[leaves], n):
            raise ValidationError("the leaves of the tree must partition the bins")
        phi = None
    else:
        phi = np.zeros(n + 1)
        phi[1:] = shares
        np.cumsum(phi, out=phi)
    return TreeFactors(n, lo, hi, ptr, kids, w, big_w, cw, phi, var)


@njit(cache=True)
def _covers(lo, hi, n):  # pragma: no cover - compiled
    """Whether the intervals ``[lo, hi)`` cover every bin of ``n`` (one bit per bin)."""
    seen = np.zeros((n + 7) // 8, dtype=np.uint8)
    for i in range(n, seen.size * 8):  # the padding bits of the last byte
        seen[i >> 3] |= np.uint8(1 << (i & 7))
    for k in range(lo.size):
        for i in range(lo[k], hi[k]):
            seen[i >> 3] |= np.uint8(1 << (i & 7))
    return np.all(seen == 255)


@njit(cache=True)
def _even_shares(lo, hi, phi):  # pragma: no cover - compiled
    """``phi[i + 1] = 1 / |leaf|`` for every bin ``i`` of each leaf ``[lo, hi)``."""
    for k in range(lo.size):
        share = 1.0 / (hi[k] - lo[k])
        for i in range(lo[k], hi[k]):
            phi[i + 1] = share


@njit(cache=True)
def _up(ptr, kids, var):  # pragma: no cover - compiled
    m = var.size
    w = np.empty(m)
    big_w = np.zeros(m)
    cw = np.zeros(m)
    for v in range(m - 1, -1, -1):
        a, b = ptr[v], ptr[v + 1]
        if a == b:
            w[v] = var[v]
            continue
        s = 0.0
        for j in range(a, b):
            c = kids[j]
            cw[c] = s
            s += w[c]
        big_w[v] = s
        if np.isinf(var[v]):
            w[v] = s
        else:
            w[v] = 1.0 / (1.0 / var[v] + 1.0 / s)
    return w, big_w, cw


def range_variances(f: TreeFactors, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Variance of the estimate of every range ``[lo[q], hi[q])`` (``lo <= hi``; empty
    ranges have variance 0). ``O(depth log fan-out)`` per range, compiled."""
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    return _ranges(f.lo, f.ptr, f.kids, f.w, f.W, f.cw, f.phi, f.n, lo, hi)


@njit(cache=True)
def _path(lo_nodes, ptr, kids, k, out):  # pragma: no cover - compiled
    """Nodes from the root to the leaf holding bin ``k``; returns the path length."""
    v = 0
    d = 0
    while True:
        out[d] = v
        d += 1
        a, b = ptr[v], ptr[v + 1]
        if a == b:
            return d
        # last child whose interval starts at or before k
        left, right = a, b - 1
        while left < right:
            mid = (left + right + 1) // 2
            if lo_nodes[kids[mid]] <= k:
                left = mid
            else:
                right = mid - 1
        v = kids[left]


@njit(cache=True)
def _lift(path, d, h_leaf, w, big_w, cw, h, terms):  # pragma: no cover - compiled
    """Fill ``h[j]`` (the gain of node ``path[j]``'s total into the prefix) and
    ``terms[j]`` (the prefix variance from the innovations of ``path[j]``'s children)."""
    h[d - 1] = h_leaf
    terms[d - 1] = 0.0
    for j in range(d - 2, -1, -1):
        v, c = path[j], path[j + 1]
        s = cw[c] + h[j + 1] * w[c]
        h[j] = s / big_w[v]
        terms[j] = cw[c] + h[j + 1] * h[j + 1] * w[c] - s * s / big_w[v]


@njit(cache=True)
def _ranges(lo_nodes, ptr, kids, w, big_w, cw, phi, n, qlo, qhi):  # pragma: no cover
    out = np.empty(qlo.size)
    pa = np.empty(_MAX_DEPTH, dtype=np.int64)
    pb = np.empty(_MAX_DEPTH, dtype=np.int64)
    ha = np.empty(_MAX_DEPTH)
    hb = np.empty(_MAX_DEPTH)
    ta = np.empty(_MAX_DEPTH)
    tb = np.empty(_MAX_DEPTH)
    root = w[0]
    for q in range(qlo.size):
        a, b = qlo[q], qhi[q]
        if a >= b:
            out[q] = 0.0
            continue
        if a == 0 and b == n:
            out[q] = root
            continue
        if b == n:  # a suffix: the prefix before a, mirrored
            da = _path(lo_nodes, ptr, kids, a, pa)
            _lift(pa, da, phi[a] - phi[lo_nodes[pa[da - 1]]], w, big_w, cw, ha, ta)
            total = (1.0 - ha[0]) ** 2 * root
            for j in range(da):
                total += ta[j]
            out[q] = total
            continue
        da = _path(lo_nodes, ptr, kids, a, pa)
        db = _path(lo_nodes, ptr, kids, b, pb)
        _lift(pa, da, phi[a] - phi[lo_nodes[pa[da - 1]]], w, big_w, cw, ha, ta)
        _lift(pb, db, phi[b] - phi[lo_nodes[pb[db - 1]]], w, big_w, cw, hb, tb)
        m = 0  # deepest common node
        while m + 1 < da and m + 1 < db and pa[m + 1] == pb[m + 1]:
            m += 1
        total = (hb[0] - ha[0]) ** 2 * root
        for j in range(m):  # same child on both paths
            c = pa[j + 1]
            dh = hb[j + 1] - ha[j + 1]
            total += dh * dh * w[c] * (1.0 - w[c] / big_w[pa[j]])
        if m + 1 < da:  # the paths split below node pa[m]
            ca, cb = pa[m + 1], pb[m + 1]
            xa, xb = 1.0 - ha[m + 1], hb[m + 1]
            between = cw[cb] - cw[ca] - w[ca]
            s = xa * w[ca] + between + xb * w[cb]
            total += xa * xa * w[ca] + between + xb * xb * w[cb] - s * s / big_w[pa[m]]
            for j in range(m + 1, da):
                total += ta[j]
            for j in range(m + 1, db):
                total += tb[j]
        out[q] = max(total, 0.0)
    return out


class LevelFactors:
    """The posterior factors of a fan-out tree laid out as :func:`~dphist._numeric.tree.
    tree_layout` does, with one measurement variance per level: every node of a level
    but its last is a full subtree, so each level needs two nodes' factors only.

    ``span``, ``count``: per level, the node width and the number of nodes; ``w_full``,
    ``W_full`` (``w_last``, ``W_last``): the subtree variance and the children's summed
    ``w`` of a full node (of the level's last node).
    """

    __slots__ = ("W_full", "W_last", "count", "fanout", "n", "span", "w_full", "w_last")

    def __init__(self, n, fanout, span, count, w_full, w_last, big_full, big_last):
        self.n, self.fanout, self.span, self.count = int(n), int(fanout), span, count
        self.w_full, self.w_last, self.W_full, self.W_last = w_full, w_last, big_full, big_last

    @property
    def root_variance(self) -> float:
        return float(self.w_last[0])


def level_factors(n: int, fanout: int, spans: np.ndarray, level_var: np.ndarray) -> LevelFactors:
    """:class:`LevelFactors` of the fan-out tree over ``n`` bins whose level ``l`` (root
    first, node width ``spans[l]``) is measured with variance ``level_var[l]`` (``inf``:
    not measured; the leaves must be). ``O(levels)``."""
    span = np.ascontiguousarray(spans, dtype=np.int64)
    v = np.ascontiguousarray(level_var, dtype=np.float64)
    t = span.size
    if v.shape != (t,) or np.any(np.isnan(v)) or np.any(v <= 0) or not np.isfinite(v[-1]):
        raise ValidationError("one positive variance per level is needed, the leaves measured")
    count = -(-n // span)
    w_full, w_last = np.empty(t), np.empty(t)
    big_full, big_last = np.zeros(t), np.zeros(t)
    w_full[-1] = w_last[-1] = v[-1]
    for lev in range(t - 2, -1, -1):
        big_full[lev] = fanout * w_full[lev + 1]
        last_kids = count[lev + 1] - (count[lev] - 1) * fanout
        big_last[lev] = (last_kids - 1) * w_full[lev + 1] + w_last[lev + 1]
        for big, w in ((big_full, w_full), (big_last, w_last)):
            w[lev] = big[lev] if np.isinf(v[lev]) else 1.0 / (1.0 / v[lev] + 1.0 / big[lev])
    return LevelFactors(n, fanout, span, count, w_full, w_last, big_full, big_last)


def level_range_variances(f: LevelFactors, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """:func:`range_variances` for a :class:`LevelFactors` tree: the path of a bin is
    arithmetic and every factor is one of two per level, so nothing leaves the cache."""
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    # a power-of-two fan-out finds a bin's node on each level by a shift, not a division
    power = f.fanout & (f.fanout - 1) == 0
    shift = np.array([int(s).bit_length() - 1 if power else -1 for s in f.span], dtype=np.int64)
    return _level_ranges(
        f.n, f.fanout, f.span, shift, f.count, f.w_full, f.w_last, f.W_full, f.W_last, lo, hi
    )


@njit(cache=True)
def _level_lift(k, fanout, span, shift, count, w_full, w_last, big_full, big_last, j, h, terms):
    # pragma: no cover - compiled
    t = span.size
    if shift[0] >= 0:
        for lev in range(t):
            j[lev] = k >> shift[lev]
    else:
        for lev in range(t):
            j[lev] = k // span[lev]
    h[t - 1] = 0.0
    terms[t - 1] = 0.0
    for lev in range(t - 2, -1, -1):
        jc, jp = j[lev + 1], j[lev]
        wc = w_last[lev + 1] if jc == count[lev + 1] - 1 else w_full[lev + 1]
        cw = (jc - jp * fanout) * w_full[lev + 1]
        big = big_last[lev] if jp == count[lev] - 1 else big_full[lev]
        s = cw + h[lev + 1] * wc
        h[lev] = s / big
        terms[lev] = cw + h[lev + 1] * h[lev + 1] * wc - s * s / big


@njit(cache=True)
def _level_ranges(n, fanout, span, shift, count, w_full, w_last, big_full, big_last, qlo, qhi):
    # pragma: no cover - compiled
    t = span.size
    out = np.empty(qlo.size)
    ha, hb, ta, tb = np.empty(t), np.empty(t), np.empty(t), np.empty(t)
    ja = np.empty(t, dtype=np.int64)
    jb = np.empty(t, dtype=np.int64)
    root = w_last[0]
    for q in range(qlo.size):
        a, b = qlo[q], qhi[q]
        if a >= b:
            out[q] = 0.0
            continue
        if a == 0 and b == n:
            out[q] = root
            continue
        _level_lift(a, fanout, span, shift, count, w_full, w_last, big_full, big_last, ja, ha, ta)
        if b == n:
            total = (1.0 - ha[0]) ** 2 * root
            for lev in range(t):
                total += ta[lev]
            out[q] = total
            continue
        _level_lift(b, fanout, span, shift, count, w_full, w_last, big_full, big_last, jb, hb, tb)
        m = 0
        while m + 1 < t and ja[m + 1] == jb[m + 1]:
            m += 1
        total = (hb[0] - ha[0]) ** 2 * root
        for lev in range(m):
            wc = w_last[lev + 1] if ja[lev + 1] == count[lev + 1] - 1 else w_full[lev + 1]
            big = big_last[lev] if ja[lev] == count[lev] - 1 else big_full[lev]
            dh = hb[lev + 1] - ha[lev + 1]
            total += dh * dh * wc * (1.0 - wc / big)
        if m + 1 < t:
            wa = w_full[m + 1]  # the left child is never its level's last node
            wb = w_last[m + 1] if jb[m + 1] == count[m + 1] - 1 else w_full[m + 1]
            big = big_last[m] if ja[m] == count[m] - 1 else big_full[m]
            xa, xb = 1.0 - ha[m + 1], hb[m + 1]
            between = (jb[m + 1] - ja[m + 1] - 1) * w_full[m + 1]
            s = xa * wa + between + xb * wb
            total += xa * xa * wa + between + xb * xb * wb - s * s / big
            for lev in range(m + 1, t):
                total += ta[lev] + tb[lev]
        out[q] = max(total, 0.0)
    return out


def functional_variance(f: TreeFactors, a: np.ndarray) -> float:
    """Variance of ``sum_i a[i] * estimate[i]`` for any weights ``a`` (length ``n``).
    ``O(#nodes + n)``."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.shape != (f.n,):
        raise ValidationError(f"weights must have one value per bin ({f.n})")
    share = np.diff(f.phi) * a  # weight of each bin's share of its leaf
    return float(_functional(f.lo, f.hi, f.ptr, f.kids, f.w, f.W, share))


@njit(cache=True)
def _functional(lo, hi, ptr, kids, w, big_w, share):  # pragma: no cover - compiled
    m = w.size
    h = np.empty(m)
    total = 0.0
    for v in range(m - 1, -1, -1):
        a, b = ptr[v], ptr[v + 1]
        if a == b:
            s = 0.0
            for i in range(lo[v], hi[v]):
                s += share[i]
            h[v] = s
            continue
        s2 = 0.0
        s1 = 0.0
        for j in range(a, b):
            c = kids[j]
            s2 += h[c] * h[c] * w[c]
            s1 += h[c] * w[c]
        h[v] = s1 / big_w[v]
        total += s2 - s1 * s1 / big_w[v]
    return total + h[0] * h[0] * w[0]


# --------------------------------------------------------------------------- fourth cumulants


def subtree_kurtosis(f: TreeFactors, kappa: np.ndarray) -> np.ndarray:
    """``G_u = kappa_u + sum_c g_c**4 G_c`` per node: the summed ``kappa`` of ``u``'s
    subtree, each node weighted by the fourth power of its gain from ``u`` (``kappa_v =
    kappa4_v / var_v**4``, the measurement's fourth cumulant over its variance**4; 0
    for an unmeasured node)."""
    return _subtree_g(f.ptr, f.kids, f.w, f.W, np.ascontiguousarray(kappa, dtype=np.float64))


@njit(cache=True)
def _subtree_g(ptr, kids, w, big_w, kappa):  # pragma: no cover - compiled
    m = w.size
    g = np.empty(m)
    for v in range(m - 1, -1, -1):
        s = kappa[v]
        for j in range(ptr[v], ptr[v + 1]):
            c = kids[j]
            r = w[c] / big_w[v]
            s += r * r * r * r * g[c]
        g[v] = s
    return g


def range_fourth_cumulants(
    f: TreeFactors, kappa: np.ndarray, big_g: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Fourth cumulant of the noise of each range's estimate: ``sum_v c_v**4 kappa4_v``
    over the measurements, ``c_v = Cov(T_v, R) / var_v`` the GLS weight of ``v``'s
    measurement. A node's covariance with a prefix ``Q(k)`` follows the path to ``k``
    (``Cov(T_u, Q) = g_u C + w_u ([u left of the path] - h)`` for a child ``u`` of a path
    node with covariance ``C``); off the two endpoint paths a subtree's covariances are
    its root's times the gains down the tree, so each hanging subtree costs one term
    (``big_g`` from :func:`subtree_kurtosis`). ``O(depth * fan-out)`` per range."""
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    return _k4_ranges(f.lo, f.ptr, f.kids, f.w, f.W, f.cw, f.phi, f.n, kappa, big_g, lo, hi)


@njit(cache=True)
def _down(path, d, h, w, big_w, cw, root, big_c, gain):  # pragma: no cover - compiled
    """Top-down along a path: ``big_c[j] = Cov(T_{path[j]}, Q(k))`` and ``gain[j]`` the
    product of the gains from the root (posterior variances P and the covariance A of
    a path node with the bins left of it, recursively)."""
    p = root
    a = 0.0
    big_c[0] = h[0] * p
    gain[0] = 1.0
    for j in range(1, d):
        v, c = path[j - 1], path[j]
        g = w[c] / big_w[v]
        a = g * (a + p * cw[c] / big_w[v]) - w[c] * cw[c] / big_w[v]
        p = g * g * p + w[c] - w[c] * w[c] / big_w[v]
        big_c[j] = a + h[j] * p
        gain[j] = gain[j - 1] * g


@njit(cache=True)
def _k4_ranges(lo_nodes, ptr, kids, w, big_w, cw, phi, n, kappa, big_g, qlo, qhi):
    # pragma: no cover - compiled
    out = np.empty(qlo.size)
    pa = np.empty(_MAX_DEPTH, dtype=np.int64)
    pb = np.empty(_MAX_DEPTH, dtype=np.int64)
    ha, hb = np.empty(_MAX_DEPTH), np.empty(_MAX_DEPTH)
    ta, tb = np.empty(_MAX_DEPTH), np.empty(_MAX_DEPTH)
    ca, cb = np.empty(_MAX_DEPTH), np.empty(_MAX_DEPTH)
    ga, gb = np.empty(_MAX_DEPTH), np.empty(_MAX_DEPTH)
    root = w[0]
    for q in range(qlo.size):
        a, b = qlo[q], qhi[q]
        if a >= b:
            out[q] = 0.0
            continue
        if a == 0 and b == n:
            out[q] = root**4 * big_g[0]
            continue
        whole = b == n  # Q(n) is the root total: h = 1 on a's path, every child inside
        if a == 0:  # R = Q(b) - Q(0): follow b's path, the other prefix is empty
            a, b = b, 0
        da = _path(lo_nodes, ptr, kids, a, pa)
        _lift(pa, da, phi[a] - phi[lo_nodes[pa[da - 1]]], w, big_w, cw, ha, ta)
        _down(pa, da, ha, w, big_w, cw, root, ca, ga)
        if whole or b == 0:
            db = da
            for j in range(da):
                pb[j] = pa[j]
                hb[j] = 1.0 if whole else 0.0
                cb[j] = ga[j] * root if whole else 0.0
                gb[j] = ga[j]
            m = da - 1
        else:
            db = _path(lo_nodes, ptr, kids, b, pb)
            _lift(pb, db, phi[b] - phi[lo_nodes[pb[db - 1]]], w, big_w, cw, hb, tb)
            _down(pb, db, hb, w, big_w, cw, root, cb, gb)
            m = 0
            while m + 1 < da and m + 1 < db and pa[m + 1] == pb[m + 1]:
                m += 1
        s = 0.0
        fixed_b = whole or b == 0  # every child inside Q(n), none inside Q(0)
        for j in range(m + 1):  # common path nodes and their other children
            v = pa[j]
            s += (cb[j] - ca[j]) ** 4 * kappa[v]
            nxt_a = pa[j + 1] if j + 1 < da else -1
            nxt_b = pb[j + 1] if j + 1 < db else -1
            left_a, left_b = 1.0, 0.0 if b == 0 else 1.0
            for i in range(ptr[v], ptr[v + 1]):
                u = kids[i]
                if u == nxt_a:
                    left_a = 0.0
                if u == nxt_b and not fixed_b:
                    left_b = 0.0
                if u in (nxt_a, nxt_b):
                    continue
                g = w[u] / big_w[v]
                cov_a = g * ca[j] + w[u] * (left_a - ha[j])
                cov_b = g * cb[j] + w[u] * (left_b - hb[j])
                s += (cov_b - cov_a) ** 4 * big_g[u]
        if m + 1 < da and not fixed_b:  # below the split
            v = pa[m]
            ua, ub = pa[m + 1], pb[m + 1]
            # the other endpoint's covariance with each side's top node
            b_side = w[ua] / big_w[v] * cb[m] + w[ua] * (1.0 - hb[m])
            a_side = w[ub] / big_w[v] * ca[m] - w[ub] * ha[m]
            s += _side(pa, da, m, ptr, kids, w, big_w, kappa, big_g, ca, ha, b_side)
            s += _side(pb, db, m, ptr, kids, w, big_w, kappa, big_g, cb, hb, a_side)
        out[q] = s
    return out


@njit(cache=True)
def _side(path, d, m, ptr, kids, w, big_w, kappa, big_g, own_c, own_h, other):
    # pragma: no cover - compiled
    """Fourth powers below the split on one endpoint's path: its own covariances from
    the path formulas, the other endpoint's through the side's top node (``other``)."""
    s = 0.0
    prod = 1.0
    for j in range(m + 1, d):
        v = path[j]
        if j > m + 1:
            prod *= w[v] / big_w[path[j - 1]]
        s += (prod * other - own_c[j]) ** 4 * kappa[v]
        if j + 1 < d:
            nxt = path[j + 1]
            left = 1.0
            for i in range(ptr[v], ptr[v + 1]):
                u = kids[i]
                if u == nxt:
                    left = 0.0
                    continue
                g = w[u] / big_w[v]
                own = g * own_c[j] + w[u] * (left - own_h[j])
                s += (g * prod * other - own) ** 4 * big_g[u]
    return s
