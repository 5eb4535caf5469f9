"""Group-size measurements when the number of groups is private too (spec §7.9).

Kuo et al. (PVLDB 2018, footnote 4) take the Groups table as public, so each region's
number of groups ``G_r`` is known; they suggest, when it is not, releasing noisy counts
made consistent and using them as ``G_r``. Read literally that is not enough: the
cumulative measurement ``Hc[m0..K-1]`` counts every group of size ``<= i``, so one
more group moves all ``K - m0`` cells, and the private counts would leak through it.

Neighbours here: one entity added or removed (as in :mod:`.groups`), **or one empty
group** (a group without entities, such as a vacant housing unit) added or removed; a
group with its entities is that many neighbouring steps (group privacy). Two
measurements of a level, each with parallel composition over its disjoint regions:

* :meth:`PrivateGroupsMeasurer.group_counts`: ``G_r`` of every region plus noise. An
  empty group changes one region of the level by one, an entity none: sensitivity 1.
* :meth:`PrivateGroupsMeasurer.reverse_cumulative`: ``R[i]`` = groups of size ``>= i``
  for ``i = m0+1..K`` (sizes ``>= K`` pooled at ``K``, groups smaller than ``m0``
  counted at ``m0``). An entity moves one group from size ``s`` to ``s + 1``, which
  changes ``R[s+1]`` by one; an empty group (size ``0 <= m0``) changes no cell:
  sensitivity 1. Nothing here depends on ``G_r``; ``Hc[i] = G - R[i+1]`` follows from
  a released ``G`` by post-processing.

With a privacy unit of up to ``K`` entity records every sensitivity is multiplied by
``K`` (for the counts, which one entity never moves, that is conservative).
"""

from __future__ import annotations

import numpy as np

from .groups import GroupMeasurer

__all__ = ["PrivateGroupsMeasurer"]


class PrivateGroupsMeasurer(GroupMeasurer):
    """A :class:`GroupMeasurer` whose measurements never depend on the number of groups,
    plus the noisy group counts themselves (module doc). Every measurement is charged
    before any sealed value is read."""

    __slots__ = ()

    def group_counts(self, level: int, *, epsilon: object, block: str):
        """Per region of ``level``: its number of groups plus noise of scale
        ``1/epsilon``. Yields ``(node, noisy int64 array of length 1)``."""
        return self._noisy(
            level,
            epsilon,
            1,
            lambda r: 1,
            "numbers of groups (one empty group moves one region by one)",
            lambda r: np.array([self._data.groups[r]], dtype=np.int64),
            block,
        )

    def reverse_cumulative(self, level: int, k: int, m0: int, *, epsilon: object, block: str):
        """Per region: ``R[m0+1..K]`` (groups of size ``>= i``) plus noise of scale
        ``1/epsilon``. Yields ``(node, noisy int64 array of length K - m0)``."""

        def answer(r: int) -> np.ndarray:
            off, sz, ct = self._data._read()
            a, b = off[self._data.leaf_lo[r]], off[self._data.leaf_hi[r]]
            h = np.bincount(np.minimum(sz[a:b], k), weights=ct[a:b], minlength=k + 1)
            at_least = np.cumsum(h[::-1])[::-1]  # at_least[i] = groups of size >= i
            return at_least[m0 + 1 : k + 1].astype(np.int64)

        return self._noisy(
            level,
            epsilon,
            1,
            lambda r: k - m0,
            f"groups of size >= i, i = {m0 + 1}..{k} (K={k}; no cell counts an empty group)",
            answer,
            block,
        )
