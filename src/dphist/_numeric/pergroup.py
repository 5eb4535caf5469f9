"""One number per group, spread over the bins by their labels, built only when read.

A grouping's per-bin noise variance is ``values[labels]``: one number per group,
repeated over the group's bins. Kept as :class:`PerGroup` it costs the groups'
numbers and a reference to the labels the release keeps anyway, not 8 bytes per bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PerGroup"]


@dataclass(frozen=True, eq=False)
class PerGroup:
    """``values[labels]`` not yet built: ``values[g]`` is group ``g``'s number and
    ``labels[i]`` the group of bin ``i`` (the labels are shared, not copied)."""

    values: np.ndarray
    labels: np.ndarray

    def per_bin(self) -> np.ndarray:
        """The number of every bin's group: a new read-only float64 array."""
        out = np.asarray(self.values, dtype=np.float64)[self.labels]
        out.flags.writeable = False
        return out
