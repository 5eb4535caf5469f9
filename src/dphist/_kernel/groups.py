"""Sealed group sizes of a public region hierarchy, and their private measurements.

Kuo, Chiu, Kifer, Hay, Machanavajjhala, *Differentially Private Hierarchical
Count-of-Counts Histograms*, PVLDB 11(11) 2018 (arXiv:1804.00370), §3-§5; formulas as
restored in the group-size spec (§2, §3.3, §5, §7.7, §8.2).

Data model. Regions form a public tree in levels (root = level 0); groups sit in leaf
regions and hold entities. Public: the tree and the number of groups of every region.
Private: each group's size. Neighbours differ by adding or removing one entity, so
exactly one group's size changes by one and no group appears or disappears (spec §5.1).

:func:`protect_groups` seals each leaf's size histogram (distinct sizes and their
multiplicities) in a :class:`ProtectedGroups`; only :class:`GroupMeasurer` reads it.
Every measurement covers *all* regions of one level and is charged once:

* ``truncated``: ``H_K`` per region (sizes ``>= K`` pooled at ``K``), sensitivity 2;
* ``cumulative``: ``Hc[m0..K-1]`` of ``H_K``, sensitivity 1 (``Hc[K] = G`` is public);
* ``ranked``: the sorted sizes ``Hg`` (length ``G``), sensitivity 1;
* ``select_min_emd``: report-noisy-min over candidate releases by their EMD to the
  truth, sensitivity = number of levels.

With a privacy unit of up to ``K = max_records`` entity records (a person), a
neighbour changes up to ``K`` entities, so every sensitivity below is multiplied by ``K``
(the L1 change of each level's answer is at most ``K`` times one entity's).

Privacy argument (spec §5.2, §7.7). The regions of one level are disjoint in groups
and an entity lies in one group, so a neighbouring change alters the answer of one
region only; the level's joint answer vector therefore has the L1 sensitivity of one
region's query: ``+-(e_i - e_{i+1})`` for ``H_K`` (2), ``-+e_i`` for ``Hc`` (1), one
sorted entry by one for ``Hg`` (1). Exact discrete Laplace noise of scale
``sensitivity/epsilon`` on every answer makes the level's measurement epsilon-DP
(parallel composition, expressed as one query of that sensitivity and one charge).
Levels add up (sequential composition); everything after the noise is
post-processing of released values and public facts (``G``, ``K``, ``m0``).
The charge is committed before any sealed value is read.

Under zero-concentrated DP (``definition="zcdp"``, the budget a rho) each level gets
exact discrete Gaussian noise of variance ``D2 / (2 rho)`` with the level's squared L2
sensitivity ``D2``: 2 for ``H_K`` (``+-(e_i - e_{i+1})``), 1 for ``Hc`` and ``Hg`` (one
entry by one), times ``K**2`` for a privacy unit of ``K`` records (the unit's change
is a sum of ``K`` one-entity changes, so its L2 norm is at most ``K`` times theirs);
the disjoint regions of a level again form one query. ``select_min_emd`` runs as the
exponential mechanism at the epsilon with ``epsilon**2 / 8 <= rho`` (bounded range).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from fractions import Fraction

import numpy as np

from ..errors import DomainError, InputTypeError, InternalError
from .budget import Accountant, Charge, Primitive, as_fraction
from .data import records_per_unit
from .gaussian import gaussian_parameters
from .noise import NoiseSource, rational_scale
from .selection import exponential_min, report_noisy_min
from .zcdp import pure_epsilon_within

__all__ = ["GroupMeasurer", "ProtectedGroups", "protect_groups"]

_MAX_SIZE = 1 << 40  # sizes (clamped below it) and group counts: int64 sums cannot overflow
_NOISE_CHUNK = 1 << 22  # values per sampler call (bounds its random-word buffer)


def int_vector(values: object, name: str, *, allow_negative: bool = False) -> np.ndarray:
    """A 1-D int64 array of whole numbers (integers or whole floats), or a clear error."""
    if isinstance(values, str | bytes):
        raise InputTypeError(f"{name} must be an integer array, not a string")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"{name} could not be read as an array: {exc}") from None
    if arr.ndim != 1:
        raise DomainError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_:
        raise InputTypeError(f"{name} must hold integers, not booleans")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise DomainError(f"{name} must hold whole numbers")
    elif not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{name} must hold integers; got dtype {arr.dtype}")
    if not allow_negative and arr.min() < 0:
        raise DomainError(f"{name} must be non-negative")
    return arr.astype(np.int64, copy=False)


def _check_tree(parent: np.ndarray) -> tuple[np.ndarray, int]:
    """Levels of a tree in breadth-first order with all leaves on the last level."""
    m = parent.shape[0]
    if m == 0 or parent[0] != -1:
        raise DomainError("parent must start with -1 (the root)")
    idx = np.arange(m)
    if m > 1 and (
        np.any(parent[1:] < 0) or np.any(parent[1:] >= idx[1:]) or np.any(np.diff(parent[1:]) < 0)
    ):
        raise DomainError(
            "parent must list nodes in breadth-first order: 0 <= parent[j] < j, non-decreasing"
        )
    level = np.zeros(m, dtype=np.int64)
    for j in range(1, m):  # one pass over regions (public, a few thousand), not over groups
        level[j] = level[parent[j]] + 1
    if np.any(np.diff(level) < 0):
        raise DomainError("parent must list the nodes level by level")
    n_levels = int(level[-1]) + 1
    is_leaf = np.ones(m, dtype=bool)
    is_leaf[parent[1:]] = False
    if np.any(is_leaf & (level != n_levels - 1)):
        raise DomainError("every leaf region must lie on the last level")
    return level, n_levels


def protect_groups(
    parent: object, offsets: object, sizes: object, counts: object, *, max_records: int = 1
) -> ProtectedGroups:
    """Validate and seal per-leaf size histograms of a public tree.

    ``parent``: the tree in breadth-first order (``parent[0] = -1``); its last level
    holds the leaves, numbered in node order. Leaf ``j``'s histogram is
    ``sizes[offsets[j]:offsets[j+1]]`` (distinct, increasing sizes ``>= 0``) with
    multiplicities ``counts[...]`` (``> 0``). Errors name what is wrong, never a value.
    Sizes are clamped below the public cap ``2**40`` (1-stable: neighbours stay
    neighbours), never refused; the number of groups is public and must stay below it.
    ``max_records`` is the public bound on one privacy unit's entity records.
    """
    par = int_vector(parent, "parent", allow_negative=True)
    level, n_levels = _check_tree(par)
    n_leaves = int(np.count_nonzero(level == n_levels - 1))
    off = int_vector(offsets, "offsets", allow_negative=True)
    sz = int_vector(sizes, "sizes", allow_negative=True)
    ct = int_vector(counts, "counts", allow_negative=True)
    if off.shape[0] != n_leaves + 1 or off[0] != 0 or np.any(np.diff(off) < 0):
        raise DomainError(f"offsets must be {n_leaves + 1} non-decreasing positions from 0")
    if int(off[-1]) != sz.shape[0] or sz.shape != ct.shape:
        raise DomainError("sizes and counts must both have offsets[-1] entries")
    if sz.size:
        if sz.min() < 0:
            raise DomainError("group sizes must be non-negative")
        if ct.min() <= 0:
            raise DomainError("multiplicities must be positive")
        if int(ct.sum()) >= _MAX_SIZE:
            raise DomainError("too many groups (limit 2**40)")
        inner = np.ones(sz.shape[0], dtype=bool)
        inner[off[:-1][off[:-1] < sz.shape[0]]] = False
        if np.any(np.diff(sz)[inner[1:]] <= 0):
            raise DomainError("sizes must be distinct and increasing within each leaf")
        off, sz, ct = _clamp_sizes(off, sz, ct, _MAX_SIZE - 1)
    return ProtectedGroups(par, level, n_levels, off, sz, ct, records_per_unit(max_records))


def _clamp_sizes(off, sz, ct, cap):
    """Sizes above ``cap`` become ``cap``; equal sizes of a leaf merge (public layout)."""
    if not sz.size or int(sz.max()) <= cap:
        return off, sz, ct
    leaf = np.repeat(np.arange(off.shape[0] - 1), np.diff(off))
    keys, inverse = np.unique(
        np.stack([leaf, np.minimum(sz, cap)], axis=1), axis=0, return_inverse=True
    )
    merged = np.bincount(inverse.ravel(), weights=ct, minlength=keys.shape[0]).astype(np.int64)
    per_leaf = np.bincount(keys[:, 0], minlength=off.shape[0] - 1)
    new_off = np.concatenate(([0], np.cumsum(per_leaf))).astype(np.int64)
    return new_off, keys[:, 1].astype(np.int64), merged


class ProtectedGroups:
    """Sealed group sizes; public: the tree, the levels and the groups per region."""

    __slots__ = (
        "_true_groups", "groups", "leaf_hi", "leaf_lo", "level", "max_records", "n_levels",
        "parent",
    )  # fmt: skip

    def __init__(self, parent, level, n_levels, offsets, sizes, counts, max_records=1):
        self.max_records = int(max_records)
        sealed = tuple(np.array(a, dtype=np.int64, copy=True) for a in (offsets, sizes, counts))
        for a in sealed:
            a.flags.writeable = False
        self._true_groups = sealed
        self.parent = np.array(parent, dtype=np.int64)
        self.level = level
        self.n_levels = n_levels
        m = self.parent.shape[0]
        first_leaf = m - (offsets.shape[0] - 1)
        lo = np.full(m, np.iinfo(np.int64).max)
        hi = np.full(m, -1)
        lo[first_leaf:] = np.arange(m - first_leaf)
        hi[first_leaf:] = lo[first_leaf:] + 1
        for j in range(m - 1, 0, -1):  # regions only
            p = self.parent[j]
            lo[p] = min(lo[p], lo[j])
            hi[p] = max(hi[p], hi[j])
        self.leaf_lo, self.leaf_hi = lo, hi
        cum = np.concatenate(([0], np.cumsum(counts)))
        per_leaf = np.diff(cum[offsets])
        prefix = np.concatenate(([0], np.cumsum(per_leaf)))
        self.groups = prefix[hi] - prefix[lo]  # public G_r for every region
        for a in (self.parent, self.level, self.leaf_lo, self.leaf_hi, self.groups):
            a.flags.writeable = False

    @property
    def n_nodes(self) -> int:
        return int(self.parent.shape[0])

    def level_nodes(self, level: int) -> np.ndarray:
        """Nodes of one level (public)."""
        return np.flatnonzero(self.level == level)

    def _read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._true_groups

    def __repr__(self) -> str:
        return f"ProtectedGroups(regions={self.n_nodes}, levels={self.n_levels})"

    def __reduce__(self):
        raise TypeError("protected group sizes cannot be pickled or copied")

    def __copy__(self):
        raise TypeError("protected group sizes cannot be pickled or copied")

    def __deepcopy__(self, memo):
        raise TypeError("protected group sizes cannot be pickled or copied")


def _node_pairs(data: ProtectedGroups, node: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sizes of one region and their multiplicities (sealed values)."""
    off, sz, ct = data._read()
    a, b = off[data.leaf_lo[node]], off[data.leaf_hi[node]]
    s, c = sz[a:b], ct[a:b]
    if data.leaf_hi[node] - data.leaf_lo[node] == 1:
        return s, c
    uniq, inv = np.unique(s, return_inverse=True)
    return uniq, np.bincount(inv, weights=c, minlength=uniq.shape[0]).astype(np.int64)


def _truncated(data: ProtectedGroups, node: int, k: int) -> np.ndarray:
    s, c = _node_pairs(data, node)
    return np.bincount(np.minimum(s, k), weights=c, minlength=k + 1).astype(np.int64)


def _emd_to_truth(data: ProtectedGroups, node: int, estimate: np.ndarray) -> int:
    """``sum_i |CT(i) - CE(i)|`` over sizes ``i < max(largest true size + 1, len(estimate))``
    with CT, CE the cumulative true and estimated histograms, in closed form: memory and
    time grow with ``len(estimate)`` (public) and the number of distinct true sizes,
    never with a size itself."""
    s, c = _node_pairs(data, node)
    est = np.asarray(estimate, dtype=np.int64)
    length = est.shape[0]
    end = max(int(s[-1]) + 1 if s.size else 1, length)
    cum_c = np.concatenate(([0], np.cumsum(c)))
    ce = np.cumsum(est)
    ct = cum_c[np.searchsorted(s, np.arange(length), side="right")]
    total = int(np.abs(ct - ce).sum())
    if end > length:  # beyond the estimate: CE is its total, CT steps at each true size
        last = int(ce[-1]) if length else 0
        points = np.concatenate(([length], s[(s > length) & (s < end)], [end]))
        heights = cum_c[np.searchsorted(s, points[:-1], side="right")]
        widths = np.diff(points)
        total += sum(abs(int(h) - last) * int(w) for h, w in zip(heights, widths, strict=True))
    return total


def _candidate_histograms(
    data: ProtectedGroups, candidates: Sequence[Sequence[np.ndarray]]
) -> list[list[np.ndarray]]:
    """The candidates as int64 histograms, one per region, each summing to the region's
    public number of groups ``G_r``; anything else is an estimator's fault (public: the
    candidates are released values) and raises before anything is charged or read."""
    out = []
    for c, cand in enumerate(candidates):
        if len(cand) != data.n_nodes:
            raise InternalError(
                f"candidate {c} has {len(cand)} region histograms; the tree has {data.n_nodes}"
            )
        fixed = []
        for r, h in enumerate(cand):
            arr = np.asarray(h)
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise InternalError(f"candidate {c}, region {r}: not a 1-D integer histogram")
            arr = arr.astype(np.int64)
            if int(arr.sum()) != int(data.groups[r]):
                raise InternalError(
                    f"candidate {c}, region {r}: its histogram does not hold the region's "
                    "public number of groups, so its EMD score would have no bounded "
                    "sensitivity"
                )
            fixed.append(arr)
        out.append(fixed)
    return out


class GroupMeasurer:
    """One release's handle on sealed group sizes: every measurement is charged first.

    ``definition``: "pure" (the budget an epsilon, discrete Laplace noise) or "zcdp"
    (a rho, discrete Gaussian noise).
    """

    __slots__ = ("_budget", "_data", "_noise", "_zcdp")

    def __init__(
        self,
        data: ProtectedGroups,
        budget: Accountant,
        noise: NoiseSource,
        *,
        definition: str = "pure",
    ):
        if not isinstance(data, ProtectedGroups):
            raise InternalError("GroupMeasurer needs ProtectedGroups")
        if definition not in ("pure", "zcdp"):
            raise InternalError(f"unknown privacy definition {definition!r}")
        self._data = data
        self._budget = budget
        self._noise = noise
        self._zcdp = definition == "zcdp"

    def __reduce__(self):
        raise TypeError("group measurers cannot be pickled or copied")

    @property
    def data(self) -> ProtectedGroups:
        return self._data

    def _nodes(self, level: int) -> np.ndarray:
        if not (isinstance(level, int | np.integer) and 0 <= level < self._data.n_levels):
            raise InternalError(f"no level {level!r}")
        return self._data.level_nodes(int(level))

    @property
    def definition(self) -> str:
        return "zcdp" if self._zcdp else "pure"

    def _charge(self, block, primitive, eps, sensitivity, scale, size, what) -> None:
        unit = "rho" if self._zcdp else "epsilon"
        self._budget.charge(
            Charge(block, primitive, eps, Fraction(sensitivity), scale, size, what, unit=unit)
        )

    def _noisy(self, level, epsilon, sensitivity, width, what, answer, block):
        eps = as_fraction(epsilon, name="epsilon")
        nodes = self._nodes(level)
        k = self._data.max_records  # K records per unit
        size = int(sum(width(int(r)) for r in nodes))
        what = (
            f"{what} of the {nodes.size} regions of level {level} "
            "(disjoint groups: parallel composition)"
        )
        if self._zcdp:
            # D2 = sensitivity: +-(e_i - e_{i+1}) has squared norm 2, one entry by one 1
            d2 = Fraction(sensitivity) * k * k
            a, b = gaussian_parameters(d2 / (2 * eps))
            self._charge(block, Primitive.DISCRETE_GAUSSIAN, eps, d2, Fraction(a, b), size, what)

            def draw(m: int) -> np.ndarray:
                return self._noise.discrete_gaussian(a, b, m)
        else:
            sens = Fraction(sensitivity) * k
            t, s = rational_scale(sens, eps)
            self._charge(block, Primitive.DISCRETE_LAPLACE, eps, sens, Fraction(t, s), size, what)

            def draw(m: int) -> np.ndarray:
                return self._noise.discrete_laplace(t, s, m)

        def run() -> Iterator[tuple[int, np.ndarray]]:
            for r in nodes.tolist():
                values = np.array(answer(r), dtype=np.int64)
                # the sampler buffers ~12-30 random words per value: draw in chunks
                for a0 in range(0, values.shape[0], _NOISE_CHUNK):
                    part = values[a0 : a0 + _NOISE_CHUNK]
                    part += draw(part.shape[0])
                yield r, values

        return run()

    def truncated(self, level: int, k: int, *, epsilon: object, block: str):
        """Per region of ``level``: ``H_K`` plus noise of scale ``2/epsilon`` (spec §6.1).

        Yields ``(node, noisy int64 array of length K+1)``. Sensitivity 2: one entity
        moves one group between adjacent cells (spec §5.2).
        """
        return self._noisy(
            level,
            epsilon,
            2,
            lambda r: k + 1,
            f"truncated size histograms H_K (K={k})",
            lambda r: _truncated(self._data, r, k),
            block,
        )

    def cumulative(self, level: int, k: int, m0: int, *, epsilon: object, block: str):
        """Per region: ``Hc[m0..K-1]`` of ``H_K`` plus noise of scale ``1/epsilon`` (§6.3).

        Yields ``(node, noisy int64 array of length K - m0)``. ``Hc[K] = G`` is public and
        the cells below the public minimum ``m0`` are not measured. Sensitivity 1: a
        change ``+-(e_i - e_{i+1})`` of ``H_K`` moves one prefix sum by one (spec §5.2).
        Groups smaller than ``m0`` are not refused (that would depend on one entity):
        ``Hc[j]`` for ``j >= m0`` counts them exactly as if their size were ``m0``, so the
        estimators, which put no mass below ``m0``, report them at size ``m0``.
        """
        return self._noisy(
            level,
            epsilon,
            1,
            lambda r: k - m0,
            f"cumulative size histograms Hc[{m0}..{k - 1}] (K={k})",
            lambda r: np.cumsum(_truncated(self._data, r, k))[m0:k],
            block,
        )

    def ranked(self, level: int, *, epsilon: object, block: str):
        """Per region: its sorted group sizes plus noise of scale ``1/epsilon`` (§6.2).

        Yields ``(node, noisy int64 array of length G_r)``. Sensitivity 1: one entity
        raises (lowers) the last (first) sorted entry equal to the old size by one.
        """

        def answer(r: int) -> np.ndarray:
            s, c = _node_pairs(self._data, r)
            return np.repeat(s, c)

        return self._noisy(
            level,
            epsilon,
            1,
            lambda r: int(self._data.groups[r]),
            "ranked group sizes Hg",
            answer,
            block,
        )

    def select_min_emd(
        self, candidates: Sequence[Sequence[np.ndarray]], *, epsilon: object, block: str
    ) -> int:
        """Index of the candidate release with the smallest noisy total EMD (spec §8.2).

        ``candidates[c][r]`` is candidate ``c``'s released histogram of region ``r`` (all
        regions). Score: ``sum_r EMD(H_r, candidate_r)``, with each candidate held fixed.
        One entity moves one group by one size in one region per level, which changes
        that region's cumulative histogram in one cell by one, so the score has
        sensitivity ``L`` (the number of levels). That needs every candidate histogram
        to hold exactly its region's public number of groups: otherwise a group growing
        past the largest true size lengthens the sum by a term ``|G_r - total|``, any
        size. The kernel checks it, on the candidates (public), before the charge and
        before any score (:func:`_candidate_histograms`). Report-noisy-min with scale
        ``2(L+g)/epsilon`` is epsilon-DP (``selection.report_noisy_min``). The
        candidates' own measurements are charged separately, in full.
        """
        charged = as_fraction(epsilon, name="epsilon")
        fixed = _candidate_histograms(self._data, candidates)  # public, before the charge
        sens = Fraction(self._data.n_levels * self._data.max_records)  # K records per unit
        # under zCDP: the exponential mechanism at the epsilon with eps**2 / 8 <= rho
        eps = pure_epsilon_within(4 * charged) if self._zcdp else charged
        self._charge(
            block,
            Primitive.EXPONENTIAL_MIN if self._zcdp else Primitive.NOISY_MIN,
            charged,
            sens,
            2 * sens / eps,
            1,
            f"choice among {len(candidates)} candidate releases by total EMD",
        )
        scores = np.array(
            [sum(_emd_to_truth(self._data, r, h) for r, h in enumerate(cand)) for cand in fixed],
            dtype=np.float64,
        )
        if self._zcdp:
            return exponential_min(scores, sens, eps, self._noise)
        return report_noisy_min(scores, sens, eps, self._noise)
