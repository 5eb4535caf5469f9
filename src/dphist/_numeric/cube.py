"""DPCube's 1-D split of noisy counts: top-down cuts while a cut pays for its noise.

Xiao, Xiong, Fan, Goryczka, Li, "DPCube: Differentially private histogram release
through multidimensional partitioning", Transactions on Data Privacy 7 (2014)
(the second phase of the two-phase kd-tree partitioning), in the 1-D form of DPBench
(Hay et al., SIGMOD 2016). Post-processing of released values only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .bucketing import check_nonnegative, checked_prefix_sums, dpcube_kernel, reciprocals

__all__ = ["cube_split"]


def cube_split(y: npt.ArrayLike, *, gain: float) -> np.ndarray:
    """Start index of each part of DPCube's top-down partition of the values ``y``.

    A part ``B`` of two or more bins is split at the cut ``k`` with the smallest
    ``SSE(left) + SSE(right)`` (the first on ties) when that beats ``SSE(B)`` by more
    than ``gain``; both halves are then split the same way. DPCube weighs a cut
    against the noise of the extra part's total: ``gain`` is that noise's expected
    absolute value (``1/epsilon`` for Laplace noise). O(N * depth) time (O(N**2)
    worst case), O(N) memory.
    """
    _, p1, p2 = checked_prefix_sums(y)
    g = check_nonnegative("gain", gain, allow_inf=True)
    return dpcube_kernel(p1, p2, reciprocals(p1.shape[0] - 1), -np.inf, g)
