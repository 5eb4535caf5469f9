"""Public region hierarchy and the user's group-size data (Kuo et al. 2018, §2).

* :class:`Hierarchy`: regions in levels (nation / state / county ...), nodes numbered
  breadth-first with children contiguous; all leaves lie on the last level. Public.
* :class:`GroupSizeData`: the hierarchy plus each leaf's group-size histogram, stored
  sparsely (distinct sizes and multiplicities), so 10**8 groups take a few MB. Built
  from per-leaf size arrays, per-leaf histograms, or record tables
  (entity -> group -> leaf). Public part: the hierarchy and the number of groups of
  every region (spec §2.1); the sizes are the user's private data and are only read
  by :func:`~dphist.groupsize.publish_group_sizes` through the privacy kernel (which
  seals a copy) and by the explicitly non-private evaluation helpers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .._kernel import int_vector
from ..errors import DomainError, InputTypeError, ValidationError

__all__ = ["GroupSizeData", "Hierarchy"]


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A public tree of regions in levels; node 0 is the root (level 0).

    ``parent[j]`` is node ``j``'s parent (``-1`` for the root), nodes are in
    breadth-first order (``parent`` non-decreasing), and every leaf is on the last
    level. ``labels`` (optional) names the nodes.
    """

    parent: np.ndarray
    labels: tuple | None = None

    def __post_init__(self) -> None:
        par = int_vector(self.parent, "parent", allow_negative=True)
        if par.size == 0 or par[0] != -1:
            raise DomainError("parent must start with -1 (the root)")
        j = np.arange(par.shape[0])
        if par.shape[0] > 1 and (
            np.any(par[1:] < 0) or np.any(par[1:] >= j[1:]) or np.any(np.diff(par[1:]) < 0)
        ):
            raise DomainError(
                "inconsistent hierarchy: parent must list nodes breadth-first "
                "(0 <= parent[j] < j, non-decreasing)"
            )
        level = np.zeros(par.shape[0], dtype=np.int64)
        for k in range(1, par.shape[0]):  # regions, not groups
            level[k] = level[par[k]] + 1
        if np.any(np.diff(level) < 0):
            raise DomainError("inconsistent hierarchy: nodes must be listed level by level")
        is_leaf = np.ones(par.shape[0], dtype=bool)
        is_leaf[par[1:]] = False
        if np.any(is_leaf & (level != level[-1])):
            raise DomainError("inconsistent hierarchy: every leaf must lie on the last level")
        if self.labels is not None and len(self.labels) != par.shape[0]:
            raise DomainError("labels must name every node")
        par.flags.writeable = False
        level.flags.writeable = False
        object.__setattr__(self, "parent", par)
        object.__setattr__(self, "level", level)

    level: np.ndarray = field(init=False, repr=False, default=None)  # type: ignore[assignment]

    @classmethod
    def from_fanouts(cls, fanouts: Sequence[Sequence[int]]) -> Hierarchy:
        """Tree from the number of children of every node, level by level.

        ``fanouts[l][i]`` = number of children of the ``i``-th node of level ``l``.
        ``[[3], [2, 1, 2]]`` is a root with three children having 2, 1 and 2 leaves.
        """
        parent = [-1]
        first = 0
        n_prev = 1
        for depth, row in enumerate(fanouts):
            r = int_vector(row, f"fanouts[{depth}]")
            if r.shape[0] != n_prev:
                raise DomainError(
                    f"fanouts[{depth}] must have one entry per node of level {depth} ({n_prev})"
                )
            if np.any(r == 0):
                raise DomainError("inconsistent hierarchy: every leaf must lie on the last level")
            parent.extend(np.repeat(np.arange(first, first + n_prev), r).tolist())
            first += n_prev
            n_prev = int(r.sum())
        return cls(np.array(parent, dtype=np.int64))

    @classmethod
    def from_levels(cls, columns: Sequence[npt.ArrayLike]) -> tuple[Hierarchy, np.ndarray]:
        """Tree from a region table: ``columns[l][row]`` = the level-``l`` region of leaf ``row``.

        The spec's ``Hierarchy`` table (§2.1): one row per leaf region, one column per
        level, level 0 first (one root label). Labels are any sortable values.
        Returns the hierarchy and, per input row, its leaf's position among the leaves
        (use it to place groups). Raises DomainError when a region has two parents
        or a leaf appears twice.
        """
        if isinstance(columns, str | bytes) or len(columns) == 0:
            raise DomainError("columns must hold one label array per level")
        cols = [np.asarray(c) for c in columns]
        n = cols[0].shape[0]
        if n == 0 or any(c.ndim != 1 or c.shape[0] != n for c in cols):
            raise DomainError("every level column must be 1-D with one entry per leaf row")
        codes, uniques = [], []
        for c in cols:
            u, inv = np.unique(c, return_inverse=True)
            uniques.append(u)
            codes.append(inv.astype(np.int64))
        if uniques[0].shape[0] != 1:
            raise DomainError("inconsistent hierarchy: level 0 must hold a single root")
        if uniques[-1].shape[0] != n:
            raise DomainError("inconsistent hierarchy: each leaf region must appear in one row")
        parent = [-1]
        labels: list = [uniques[0][0]]
        pos_prev = np.zeros(1, dtype=np.int64)  # code at level l-1 -> node id
        first = 1
        leaf_pos = None
        for depth in range(1, len(cols)):
            nl = uniques[depth].shape[0]
            par_code = np.full(nl, -1, dtype=np.int64)
            par_code[codes[depth]] = codes[depth - 1]
            if np.any(par_code[codes[depth]] != codes[depth - 1]):
                raise DomainError(
                    f"inconsistent hierarchy: a level-{depth} region lies in two "
                    f"level-{depth - 1} regions"
                )
            par_node = pos_prev[par_code]
            order = np.lexsort((np.arange(nl), par_node))
            pos = np.empty(nl, dtype=np.int64)
            pos[order] = first + np.arange(nl)
            parent.extend(par_node[order].tolist())
            labels.extend(uniques[depth][order].tolist())
            pos_prev = pos
            first += nl
            if depth == len(cols) - 1:
                leaf_pos = pos[codes[depth]] - (first - nl)
        if leaf_pos is None:
            leaf_pos = np.zeros(n, dtype=np.int64)
        return cls(np.array(parent, dtype=np.int64), tuple(labels)), leaf_pos

    @property
    def n_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def n_levels(self) -> int:
        return int(self.level[-1]) + 1

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.level == self.n_levels - 1))

    @property
    def first_leaf(self) -> int:
        return self.n_nodes - self.n_leaves

    def level_nodes(self, level: int) -> np.ndarray:
        """Node ids of one level."""
        return np.flatnonzero(self.level == level)

    def children(self, node: int) -> np.ndarray:
        """Children of ``node`` (a contiguous range of ids)."""
        lo, hi = np.searchsorted(self.parent[1:], [node, node + 1]) + 1
        return np.arange(lo, hi)

    def __repr__(self) -> str:
        sizes = np.bincount(self.level).tolist()
        return f"Hierarchy(levels={self.n_levels}, nodes per level={sizes})"


class GroupSizeData:
    """A hierarchy and each leaf's group sizes, as sparse per-leaf histograms.

    ``offsets`` (length leaves + 1), ``sizes`` and ``counts``: leaf ``j`` has
    ``counts[k]`` groups of size ``sizes[k]`` for ``k`` in ``offsets[j]:offsets[j+1]``
    (sizes distinct and increasing within a leaf). ``groups`` (public) is the number
    of groups of every node. These arrays are the user's private data: the
    publication functions only reach them through the privacy kernel.
    """

    __slots__ = ("counts", "groups", "hierarchy", "offsets", "sizes")

    def __init__(self, hierarchy: Hierarchy, offsets, sizes, counts):
        if not isinstance(hierarchy, Hierarchy):
            raise InputTypeError("hierarchy must be a Hierarchy")
        off = int_vector(offsets, "offsets")
        sz = int_vector(sizes, "sizes")
        ct = int_vector(counts, "counts")
        nl = hierarchy.n_leaves
        if off.shape[0] != nl + 1 or off[0] != 0 or np.any(np.diff(off) < 0):
            raise DomainError(f"offsets must be {nl + 1} non-decreasing positions from 0")
        if int(off[-1]) != sz.shape[0] or sz.shape != ct.shape:
            raise DomainError("sizes and counts must both have offsets[-1] entries")
        keep = ct > 0
        if not keep.all():  # drop empty cells
            cum = np.concatenate(([0], np.cumsum(keep)))
            off, sz, ct = cum[off], sz[keep], ct[keep]
        starts = np.zeros(sz.shape[0], dtype=bool)
        starts[off[:-1][off[:-1] < sz.shape[0]]] = True
        if sz.size > 1 and np.any(np.diff(sz)[~starts[1:]] <= 0):
            raise DomainError("sizes must be distinct and increasing within each leaf")
        self.hierarchy = hierarchy
        self.offsets, self.sizes, self.counts = off, sz, ct
        cum = np.concatenate(([0], np.cumsum(ct)))
        leaf_groups = np.diff(cum[off])
        g = np.zeros(hierarchy.n_nodes, dtype=np.int64)
        g[hierarchy.first_leaf :] = leaf_groups
        for j in range(hierarchy.n_nodes - 1, 0, -1):  # regions, not groups
            g[hierarchy.parent[j]] += g[j]
        self.groups = g

    # ------------------------------------------------------------------ builders

    @classmethod
    def from_leaf_histograms(
        cls, hierarchy: Hierarchy, hists: Sequence[npt.ArrayLike]
    ) -> GroupSizeData:
        """From dense histograms, one per leaf in leaf order (``hist[i]`` = groups of size i)."""
        if not isinstance(hierarchy, Hierarchy):
            raise InputTypeError("hierarchy must be a Hierarchy")
        if isinstance(hists, str | bytes) or len(hists) != hierarchy.n_leaves:
            raise DomainError(f"hists must hold one histogram per leaf ({hierarchy.n_leaves})")
        sizes, counts, lengths = [], [], [0]
        for i, h in enumerate(hists):
            arr = int_vector(h, f"hists[{i}]")
            nz = np.flatnonzero(arr)
            sizes.append(nz)
            counts.append(arr[nz])
            lengths.append(nz.shape[0])
        return cls(
            hierarchy,
            np.cumsum(lengths),
            np.concatenate(sizes) if sizes else [],
            np.concatenate(counts) if counts else [],
        )

    @classmethod
    def from_leaf_sizes(cls, hierarchy: Hierarchy, sizes: Sequence[npt.ArrayLike]) -> GroupSizeData:
        """From the group sizes of every leaf (one integer array per leaf, leaf order)."""
        if not isinstance(hierarchy, Hierarchy):
            raise InputTypeError("hierarchy must be a Hierarchy")
        if isinstance(sizes, str | bytes) or len(sizes) != hierarchy.n_leaves:
            raise DomainError(f"sizes must hold one array per leaf ({hierarchy.n_leaves})")
        arrs = [int_vector(s, f"sizes[{i}]") for i, s in enumerate(sizes)]
        leaf = np.repeat(np.arange(len(arrs)), [a.shape[0] for a in arrs])
        flat = np.concatenate(arrs) if arrs else np.zeros(0, dtype=np.int64)
        return cls._from_pairs(hierarchy, leaf, flat)

    @classmethod
    def from_records(
        cls,
        hierarchy: Hierarchy,
        group_leaf: npt.ArrayLike,
        entity_group: npt.ArrayLike,
    ) -> GroupSizeData:
        """From record tables: ``group_leaf[g]`` = leaf position (0..leaves-1) of group ``g``;
        ``entity_group[e]`` = group id (0..groups-1) of entity ``e``.

        The spec's ``Groups`` and ``Entities`` tables (§2.1) as id arrays; groups
        without entities have size 0. Entities are private records: one whose group id
        names no group (negative, or not below the number of groups) is dropped, never
        refused. O(entities + groups log groups).
        """
        if not isinstance(hierarchy, Hierarchy):
            raise InputTypeError("hierarchy must be a Hierarchy")
        gl = int_vector(group_leaf, "group_leaf")
        eg = int_vector(entity_group, "entity_group", allow_negative=True)
        if gl.size and gl.max() >= hierarchy.n_leaves:
            raise DomainError("group_leaf must hold leaf positions below the number of leaves")
        eg = eg[(eg >= 0) & (eg < gl.shape[0])]
        size = np.bincount(eg, minlength=gl.shape[0])
        return cls._from_pairs(hierarchy, gl, size)

    @classmethod
    def from_group_sizes(
        cls, hierarchy: Hierarchy, group_leaf: npt.ArrayLike, sizes: npt.ArrayLike
    ) -> GroupSizeData:
        """One row per group: ``group_leaf[g]`` its leaf position, ``sizes[g]`` its size."""
        if not isinstance(hierarchy, Hierarchy):
            raise InputTypeError("hierarchy must be a Hierarchy")
        gl = int_vector(group_leaf, "group_leaf")
        sz = int_vector(sizes, "sizes")
        if gl.shape != sz.shape:
            raise DomainError("group_leaf and sizes must have one entry per group")
        if gl.size and gl.max() >= hierarchy.n_leaves:
            raise DomainError("group_leaf must hold leaf positions below the number of leaves")
        return cls._from_pairs(hierarchy, gl, sz)

    @classmethod
    def _from_pairs(cls, hierarchy: Hierarchy, leaf: np.ndarray, size: np.ndarray):
        """Sparse per-leaf histograms from one (leaf, size) pair per group."""
        if size.size == 0:
            return cls(hierarchy, np.zeros(hierarchy.n_leaves + 1, dtype=np.int64), [], [])
        pairs, cnt = np.unique(
            np.stack([leaf.astype(np.int64), size.astype(np.int64)], axis=1),
            axis=0,
            return_counts=True,
        )  # no leaf * width key: sizes are private and may be huge
        lf, sz = pairs[:, 0], pairs[:, 1]
        offsets = np.searchsorted(lf, np.arange(hierarchy.n_leaves + 1))
        return cls(hierarchy, offsets, sz, cnt)

    # ------------------------------------------------------------------ reading

    @property
    def n_groups(self) -> int:
        return int(self.groups[0])

    def histogram(self, node: int) -> np.ndarray:
        """True size histogram of ``node`` (dense, length largest size + 1).

        Reads the user's private data: for evaluation only, never part of a release.
        """
        leaves = self._leaf_range(node)
        a, b = self.offsets[leaves[0]], self.offsets[leaves[1]]
        s, c = self.sizes[a:b], self.counts[a:b]
        n = int(s.max()) + 1 if s.size else 1
        return np.bincount(s, weights=c, minlength=n).astype(np.int64)

    def _leaf_range(self, node: int) -> tuple[int, int]:
        h = self.hierarchy
        if not (0 <= int(node) < h.n_nodes):
            raise ValidationError(f"node must be in 0..{h.n_nodes - 1}; got {node!r}")
        lo = hi = int(node)
        while lo < h.first_leaf:
            kids = h.children(lo)
            lo = int(kids[0])
            kids = h.children(hi)
            hi = int(kids[-1])
        return lo - h.first_leaf, hi - h.first_leaf + 1

    def histograms(self) -> list[np.ndarray]:
        """True histograms of all nodes (evaluation only)."""
        return [self.histogram(r) for r in range(self.hierarchy.n_nodes)]

    def __repr__(self) -> str:
        return (
            f"GroupSizeData({self.hierarchy!r}, groups={self.n_groups}, "
            f"leaves={self.hierarchy.n_leaves})"
        )
