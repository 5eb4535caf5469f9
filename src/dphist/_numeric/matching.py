"""Top-down consistency of group-size histograms: matching, merging, back-substitution.

Kuo, Chiu, Kifer, Hay, Machanavajjhala, *Differentially Private Hierarchical
Count-of-Counts Histograms*, PVLDB 11(11) 2018 (arXiv:1804.00370), §5.2-§5.3 and
Algorithm 1-2, with the formulas of the group-size spec §7.4-§7.6:

* :func:`match_groups`: Algorithm 2, a minimum-cost perfect matching between a
  parent's groups and the pooled groups of its children, cost ``|size_p - size_c|``.
* :func:`merge_estimates`, :func:`merge_matching`: inverse-variance merge of the two
  size estimates of every matched group; rounding; per-size variances for the next
  level.
* :func:`consistency_step`: both, for one parent.
* :func:`back_substitute`: internal releases as sums of leaf releases.

Nodes are described by size histograms (``hist[i]`` = number of groups of size ``i``),
the batch form of §7.4: groups of one size in one node are interchangeable, so the
matching is a list of ``(parent size, child size, child, multiplicity)``.

Everything here is post-processing of released values: no budget, no noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from .._jit import njit
from ..errors import ValidationError
from .group_views import round_half_up
from .vectors import count_vector

__all__ = [
    "MERGE_RULES", "Matching", "SizeEstimate", "back_substitute", "consistency_step",
    "match_groups", "merge_estimates", "merge_matching", "min_matching_cost",
]  # fmt: skip

MergeRule = Literal["weighted", "mean"]
MERGE_RULES: tuple[str, ...] = ("weighted", "mean")


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _emit(buf, m, a, b, c, k):
    if m == buf.shape[0]:
        grown = np.empty((2 * m, 4), dtype=np.int64)
        grown[:m] = buf
        buf = grown
    buf[m, 0] = a
    buf[m, 1] = b
    buf[m, 2] = c
    buf[m, 3] = k
    return buf


@njit(cache=True)
def _match_kernel(p_size, p_count, c_size, c_child, c_count, g_start):
    """Algorithm 2 in batch form over sorted size classes.

    ``p_size``/``p_count``: the parent's non-empty sizes, ascending. Child entries
    ``(c_size, c_child, c_count)`` are sorted by size, then child; ``g_start`` delimits
    the runs of equal size. Each pass either exhausts the current child size run (the
    parent has at least that many groups left at its smallest size ``a``) or exhausts
    the parent's size ``a`` by an exact largest-remainder share of the run's remaining
    groups. Returns an (m, 4) array of (parent size, child size, child, count) rows.
    """
    rem = c_count.copy()
    buf = np.empty((max(16, c_count.shape[0] + p_size.shape[0]), 4), dtype=np.int64)
    m = 0
    n_p = p_size.shape[0]
    n_g = g_start.shape[0] - 1
    pi = 0
    g = 0
    p = p_count[0] if n_p > 0 else 0
    t_run = 0
    if n_g > 0:
        for j in range(g_start[0], g_start[1]):
            t_run += rem[j]
    while pi < n_p and g < n_g:
        a = p_size[pi]
        lo = g_start[g]
        hi = g_start[g + 1]
        if p >= t_run:
            for j in range(lo, hi):
                if rem[j] > 0:
                    buf = _emit(buf, m, a, c_size[j], c_child[j], rem[j])
                    m += 1
                    rem[j] = 0
            p -= t_run
            g += 1
            t_run = 0
            if g < n_g:
                for j in range(g_start[g], g_start[g + 1]):
                    t_run += rem[j]
            if p == 0:
                pi += 1
                if pi < n_p:
                    p = p_count[pi]
        else:
            # Proportional share: quota p * rem_j / t_run, floors plus the k largest
            # exact remainders (ties: lower child id, as entries are in child order).
            k_run = hi - lo
            share = np.empty(k_run, dtype=np.int64)
            key = np.empty(k_run, dtype=np.int64)
            given = 0
            for j in range(k_run):
                prod = p * rem[lo + j]
                share[j] = prod // t_run
                key[j] = -(prod % t_run)
                given += share[j]
            order = np.argsort(key, kind="mergesort")
            for j in range(p - given):
                share[order[j]] += 1
            for j in range(k_run):
                if share[j] > 0:
                    buf = _emit(buf, m, a, c_size[lo + j], c_child[lo + j], share[j])
                    m += 1
                    rem[lo + j] -= share[j]
            t_run -= p
            pi += 1
            if pi < n_p:
                p = p_count[pi]
    return buf[:m].copy()


# ------------------------------------------------------------------------ validation


def _hist_list(children: object, name: str) -> list[np.ndarray]:
    if isinstance(children, np.ndarray):
        if children.ndim != 2:
            raise ValidationError(f"{name} must be a 2-D array or a sequence of 1-D histograms")
        items = list(children)
    elif isinstance(children, Sequence) and not isinstance(children, str | bytes):
        items = list(children)
    else:
        raise ValidationError(f"{name} must be a sequence of 1-D histograms")
    if not items:
        raise ValidationError(f"{name} must contain at least one node")
    return [count_vector(h, f"{name}[{i}]") for i, h in enumerate(items)]


def _variance_vector(v: npt.ArrayLike, name: str) -> np.ndarray:
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} must be a 1-D array of variances") from None
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D")
    return arr


def _lookup(var: np.ndarray, sizes: np.ndarray, name: str) -> np.ndarray:
    """``var[sizes]``; every size that holds groups needs a finite variance > 0."""
    if sizes.size and int(sizes.max()) >= var.shape[0]:
        raise ValidationError(f"{name} is shorter than the largest size it must cover")
    out = var[sizes]
    if not np.all(np.isfinite(out) & (out > 0.0)):
        raise ValidationError(f"{name} must be finite and > 0 at every size that holds groups")
    return out


# ------------------------------------------------------------------------ public API


class Matching(NamedTuple):
    """Algorithm 2's output: row ``j`` pairs ``count[j]`` parent groups of size
    ``parent_size[j]`` with as many groups of size ``child_size[j]`` of child ``child[j]``.
    Rows come in the order the algorithm emits them (ascending parent size)."""

    parent_size: np.ndarray
    child_size: np.ndarray
    child: np.ndarray
    count: np.ndarray
    n_children: int

    @property
    def cost(self) -> int:
        """Total matching cost ``sum count * |parent_size - child_size|``."""
        return int(np.sum(self.count * np.abs(self.parent_size - self.child_size)))


def match_groups(parent: npt.ArrayLike, children: Sequence[npt.ArrayLike]) -> Matching:
    """Minimum-cost perfect matching of a parent's groups to its children's (Algorithm 2).

    ``parent`` and each of ``children`` are size histograms; the children's totals must
    add up to the parent's. Repeatedly take the smallest unmatched parent size ``a``
    (``p`` groups left) and the smallest unmatched child size ``b`` over all children
    (``t_c`` groups in child ``c``, ``T`` in all): if ``p >= T`` all of them are matched
    to ``a``; otherwise the ``p`` parent groups are shared in proportion to ``t_c`` by
    largest-remainder rounding (:func:`~dphist._numeric.group_views.apportion`: exact
    remainders, ties to the lower child index), and the rest of size ``b`` waits for the
    next parent size. Spec §7.4; Kuo et al. 2018, §5.2.

    Optimal for the cost ``|a - b|`` (Lemma 5): the result pairs the k-th smallest
    parent group with the k-th smallest pooled child group, and uncrossing shows that
    the sorted pairing minimises any convex cost of the difference. Its cost therefore
    equals :func:`min_matching_cost`.

    Time O(D log D + sum over proportional steps of c_b log c_b), where D is the number
    of non-empty (node, size) cells and c_b the number of children holding the size
    ``b`` being shared; there is at most one proportional step per non-empty parent
    size. That is O(D log D) unless many parent sizes each split one child size held by
    many children. Reading the histograms adds O(their total length). No generic
    assignment solver and no per-group work: the cost does not grow with the number of
    groups.
    """
    p_hist = count_vector(parent, "parent")
    kids = _hist_list(children, "children")
    total_p = int(p_hist.sum())
    total_c = sum(int(h.sum()) for h in kids)
    if total_p != total_c:
        raise ValidationError(
            f"the children hold {total_c} groups but the parent holds {total_p}; "
            "the totals must agree"
        )
    p_size = np.flatnonzero(p_hist).astype(np.int64)
    p_count = p_hist[p_size]
    sizes, owners, counts = [], [], []
    for c, h in enumerate(kids):
        nz = np.flatnonzero(h)
        sizes.append(nz)
        owners.append(np.full(nz.shape[0], c, dtype=np.int64))
        counts.append(h[nz])
    c_size = np.concatenate(sizes).astype(np.int64)
    order = np.argsort(c_size, kind="stable")  # keeps child order inside a size
    c_size = c_size[order]
    c_child = np.concatenate(owners)[order]
    c_count = np.concatenate(counts).astype(np.int64)[order]
    if total_p and int(p_count.max()) > (2**63 - 1) // int(c_count.max()):
        raise ValidationError("group counts are too large for exact int64 shares")
    g_start = np.flatnonzero(np.diff(c_size, prepend=-1, append=-1)).astype(np.int64)
    rows = _match_kernel(p_size, p_count, c_size, c_child, c_count, g_start)
    return Matching(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], len(kids))


def min_matching_cost(parent: npt.ArrayLike, children: Sequence[npt.ArrayLike]) -> int:
    """Optimal matching cost ``sum_k |sort(parent)[k] - sort(pooled children)[k]|``.

    Computed without matching, as the EMD between the parent and the pooled children:
    ``sum_i |Hc_parent[i] - Hc_pooled[i]|`` (spec §4.1, §7.4). O(number of sizes).
    """
    p_hist = count_vector(parent, "parent")
    kids = _hist_list(children, "children")
    n = max([p_hist.shape[0], *(h.shape[0] for h in kids)])
    pooled = np.zeros(n, dtype=np.int64)
    for h in kids:
        pooled[: h.shape[0]] += h
    own = np.zeros(n, dtype=np.int64)
    own[: p_hist.shape[0]] = p_hist
    if int(own.sum()) != int(pooled.sum()):
        raise ValidationError("the children's group total must equal the parent's")
    return int(np.abs(np.cumsum(own) - np.cumsum(pooled)).sum())


def merge_estimates(
    s_p: npt.ArrayLike,
    v_p: npt.ArrayLike,
    s_c: npt.ArrayLike,
    v_c: npt.ArrayLike,
    *,
    rule: MergeRule = "weighted",
) -> tuple[np.ndarray, np.ndarray]:
    """Merge two estimates ``(size, variance)`` of one group; vectorised (broadcasts).

    ``rule="weighted"`` (the method; spec §7.5, Kuo et al. 2018, Eq. 5-6): inverse-variance
    weighting, ``s = (v_c*s_p + v_p*s_c) / (v_p + v_c)`` and ``v = v_p*v_c / (v_p + v_c)``.
    ``rule="mean"`` (the paper's baseline): ``s = (s_p + s_c)/2``; its variance is not
    given by the paper, we return ``(v_p + v_c)/4``, that of the mean of two independent
    estimates. Variances must be finite and > 0. Returns unrounded sizes. O(n).
    """
    if rule not in MERGE_RULES:
        raise ValidationError(
            f"rule must be one of {', '.join(map(repr, MERGE_RULES))}; got {rule!r}"
        )
    try:
        sp, vp, sc, vc = np.broadcast_arrays(
            *(np.asarray(a, dtype=np.float64) for a in (s_p, v_p, s_c, v_c))
        )
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"sizes and variances must be numeric and broadcastable ({exc})"
        ) from None
    if not (np.all(np.isfinite(sp)) and np.all(np.isfinite(sc))):
        raise ValidationError("sizes must be finite")
    if not np.all(np.isfinite(vp) & (vp > 0.0) & np.isfinite(vc) & (vc > 0.0)):
        raise ValidationError("variances must be finite and > 0")
    if rule == "mean":
        return (sp + sc) / 2.0, (vp + vc) / 4.0
    total = vp + vc
    return (vc * sp + vp * sc) / total, vp * vc / total


class SizeEstimate(NamedTuple):
    """A node's group sizes as a histogram, with one variance per non-empty size
    (NaN where ``hist`` is 0)."""

    hist: np.ndarray
    variance: np.ndarray


def merge_matching(
    matching: Matching,
    parent_var: npt.ArrayLike,
    child_vars: Sequence[npt.ArrayLike],
    *,
    rule: MergeRule = "weighted",
    length: int | None = None,
) -> list[SizeEstimate]:
    """Apply :func:`merge_estimates` to every matched pair and rebuild the children.

    ``parent_var[i]`` / ``child_vars[c][i]``: the variance of a group of size ``i`` in the
    parent / child ``c`` (e.g. :func:`~dphist._numeric.group_views.size_variances`). Each
    matched pair gives the child's group the size ``round_half_up(s)`` (sizes are
    rounded after merging, §7.2) and the variance ``v``. The merged size lies between
    the two estimates, so it stays ``>= 0``. A child's variance per new size is the mean
    of its groups' merged variances (§7.5, the reference code's rule); that is the
    parent-side variance when the child is matched to its own children. Histograms
    have ``length`` sizes (default: enough for every size in the matching).
    O(r log r + children * length) for ``r`` matching rows.
    """
    if not isinstance(matching, Matching):
        raise ValidationError("matching must be the result of match_groups")
    pv = _variance_vector(parent_var, "parent_var")
    if isinstance(child_vars, str | bytes) or len(child_vars) != matching.n_children:
        raise ValidationError(f"child_vars must hold {matching.n_children} variance arrays")
    cvs = [_variance_vector(v, f"child_vars[{i}]") for i, v in enumerate(child_vars)]
    a, b, c, k = matching.parent_size, matching.child_size, matching.child, matching.count
    v_p = _lookup(pv, a, "parent_var")
    # rows grouped by child once: O(rows log rows), not O(children * rows)
    order = np.argsort(c, kind="stable")
    a, b, k = a[order], b[order], k[order]
    cuts = np.searchsorted(c[order], np.arange(matching.n_children + 1))
    v_c = np.empty(b.shape[0])
    for i, cv in enumerate(cvs):
        part = slice(cuts[i], cuts[i + 1])
        v_c[part] = _lookup(cv, b[part], f"child_vars[{i}]")
    s, v = merge_estimates(a, v_p[order], b, v_c, rule=rule)
    new = round_half_up(s)
    kv = k * v
    need = int(max(a.max(initial=0), b.max(initial=0))) + 1
    if length is None:
        n = need
    else:
        if isinstance(length, bool) or not isinstance(length, int | np.integer):
            raise ValidationError("length must be an integer")
        if length < need:
            raise ValidationError(f"length must be at least {need}")
        n = int(length)
    out = []
    for i in range(matching.n_children):
        part = slice(cuts[i], cuts[i + 1])
        hist = np.zeros(n, dtype=np.int64)
        np.add.at(hist, new[part], k[part])
        vsum = np.zeros(n)
        np.add.at(vsum, new[part], kv[part])
        var = np.full(n, np.nan)
        nz = hist > 0
        var[nz] = vsum[nz] / hist[nz]
        out.append(SizeEstimate(hist, var))
    return out


def consistency_step(
    parent: npt.ArrayLike,
    parent_var: npt.ArrayLike,
    children: Sequence[npt.ArrayLike],
    child_vars: Sequence[npt.ArrayLike],
    *,
    rule: MergeRule = "weighted",
) -> list[SizeEstimate]:
    """One parent of Algorithm 1's top-down pass: match (§7.4), then merge (§7.5).

    ``parent``: the parent's current size histogram (its release at the root, its
    merged sizes below); ``parent_var``: per-size variances. ``children`` and
    ``child_vars``: the children's released histograms and per-size variances. Returns
    the children's new histograms (each with its own group total) and per-size
    variances, all on the inputs' longest size domain. O(D log D) as in
    :func:`match_groups`, plus O(children * length) for the dense outputs.
    """
    p_hist = count_vector(parent, "parent")
    kids = _hist_list(children, "children")
    n = max([p_hist.shape[0], *(h.shape[0] for h in kids)])
    return merge_matching(match_groups(p_hist, kids), parent_var, child_vars, rule=rule, length=n)


def back_substitute(
    parent: npt.ArrayLike, leaf_hists: Sequence[npt.ArrayLike | None]
) -> list[np.ndarray]:
    """Releases of all nodes from the leaves' histograms, summed bottom-up (§7.6).

    Nodes are numbered ``0..m-1`` with ``parent[0] = -1`` (the root) and
    ``0 <= parent[j] < j`` otherwise (e.g. level order). ``leaf_hists[j]`` is node ``j``'s
    histogram if ``j`` is a leaf; entries of internal nodes are ignored (pass None).
    Returns one ``int64`` histogram per node, all padded to one length, with every
    internal node equal to the sum of its children, so integrality, non-negativity,
    group totals and consistency (spec §2.2) hold by construction. O(m * length).
    """
    try:
        par = np.asarray(parent)
    except Exception:
        raise ValidationError("parent must be a 1-D array of node indices") from None
    if par.ndim != 1 or par.size == 0 or not np.issubdtype(par.dtype, np.integer):
        raise ValidationError("parent must be a non-empty 1-D array of integer node indices")
    par = par.astype(np.int64)
    m = par.shape[0]
    idx = np.arange(m)
    if par[0] != -1 or np.any(par[1:] < 0) or np.any(par[1:] >= idx[1:]):
        raise ValidationError("parent must have parent[0] = -1 and 0 <= parent[j] < j for j > 0")
    if isinstance(leaf_hists, str | bytes) or len(leaf_hists) != m:
        raise ValidationError(f"leaf_hists must have one entry per node ({m})")
    is_leaf = np.ones(m, dtype=bool)
    is_leaf[par[1:]] = False
    leaves = {}
    for j in np.flatnonzero(is_leaf).tolist():
        if leaf_hists[j] is None:
            raise ValidationError(f"leaf node {j} has no histogram")
        leaves[j] = count_vector(leaf_hists[j], f"leaf_hists[{j}]")
    n = max(h.shape[0] for h in leaves.values())
    out = np.zeros((m, n), dtype=np.int64)
    for j, h in leaves.items():
        out[j, : h.shape[0]] = h
    for j in range(m - 1, 0, -1):
        out[par[j]] += out[j]
    return list(out)
