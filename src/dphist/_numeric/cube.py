"""DPCube's 1-D split of noisy counts: top-down cuts while a cut pays for its noise.

Xiao, Xiong, Fan, Goryczka, Li, "DPCube: Differentially private histogram release
through multidimensional partitioning", Transactions on Data Privacy 7 (2014), §4
(the second phase of the two-phase kd-tree partitioning), in the 1-D form of DPBench
(Hay et al., SIGMOD 2016). Post-processing of released values only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._jit import njit
from .bucketing import _check_var, _check_y, _inv, _sse

__all__ = ["cube_split"]


@njit(cache=True)
def _cube_split(p1, p2, inv, gain):
    """Starts of the parts of [0, n): a part is cut at its first SSE-optimal cut when
    the cut lowers its SSE by more than ``gain`` (explicit stack, no recursion)."""
    n = p1.shape[0] - 1
    is_start = np.zeros(n, dtype=np.bool_)
    is_start[0] = True
    st_lo = np.empty(n, dtype=np.int64)
    st_hi = np.empty(n, dtype=np.int64)
    st_lo[0] = 0
    st_hi[0] = n
    top = 1
    while top > 0:
        top -= 1
        a = st_lo[top]
        b = st_hi[top]
        if b - a < 2:
            continue
        best = np.inf
        cut = a + 1
        for k in range(a + 1, b):
            v = _sse(p1, p2, inv, a, k) + _sse(p1, p2, inv, k, b)
            if v < best:
                best = v
                cut = k
        if not best + gain < _sse(p1, p2, inv, a, b):
            continue
        is_start[cut] = True
        st_lo[top] = a
        st_hi[top] = cut
        st_lo[top + 1] = cut
        st_hi[top + 1] = b
        top += 2
    return np.flatnonzero(is_start).astype(np.int64)


def cube_split(y: npt.ArrayLike, *, gain: float) -> np.ndarray:
    """Start index of each part of DPCube's top-down partition of the values ``y``.

    A part ``B`` of two or more bins is split at the cut ``k`` with the smallest
    ``SSE(left) + SSE(right)`` (the first on ties) when that beats ``SSE(B)`` by more
    than ``gain``; both halves are then split the same way. DPCube weighs a cut
    against the noise of the extra part's total: ``gain`` is that noise's expected
    absolute value (``1/epsilon`` for Laplace noise). O(N * depth) time (O(N**2)
    worst case), O(N) memory.
    """
    _, p1, p2 = _check_y(y)
    g = _check_var("gain", gain, allow_inf=True)
    return _cube_split(p1, p2, _inv(p1.shape[0] - 1), g)
