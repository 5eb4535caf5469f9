"""Parameters of aggregation trees: HB's branching factor (Qardaji et al.) and the
per-level budget shares (uniform, or Cormode et al.'s geometric ones).

Public facts only (the number of bins, the noise kind); no data, no budget logic.
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache

import numpy as np

from dphist.errors import ValidationError

from .tree import tree_levels
from .vectors import positive_int

__all__ = ["hb_branching", "level_budgets"]


def _iroot_ceil(n: int, k: int) -> int:
    """Smallest integer ``r >= 1`` with ``r**k >= n``."""
    r = max(1, round(n ** (1.0 / k)))
    while r**k < n:
        r += 1
    while r > 1 and (r - 1) ** k >= n:
        r -= 1
    return r


def hb_branching(n: int, noise: str = "laplace") -> tuple[int, int]:
    """Qardaji et al.'s HB branching factor (methods framework B.2, DPBench rule).

    Returns ``(b, h)`` minimising ``V(b) = (b - 1) h**3 - (2/3) (b + 1) h**2`` over
    ``2 <= b <= n`` with the integer ``h = ceil(log_b n)``; the tree then has ``h + 1``
    levels (``tree_levels(n, b) == h + 1``). The rule does not depend on epsilon.
    ``V`` is ``((b - 1) h - (2/3)(b + 1))`` nodes per range query times a node's
    variance, ``~h**2`` for Laplace noise with epsilon split evenly over the levels;
    with ``noise="gaussian"`` (zCDP, rho split evenly) a node's variance is ``~h``, so
    ``V(b) = (b - 1) h**2 - (2/3) (b + 1) h``.
    Comparisons use the integer ``3 V``; ties go to the smallest ``b`` (what a scan over
    increasing ``b`` that keeps the first minimum returns). ``n = 1`` gives ``(2, 0)``:
    a single node, the fan-out is irrelevant.

    ``V`` increases with ``b`` while ``h`` is constant, so only the smallest ``b`` of each
    run of equal ``h`` can win: ``b = max(2, ceil(n**(1/k)))`` for ``k = 1 .. ceil(log2 n)``.
    Time ``O(log^2 n)`` big-integer operations.
    """
    n = positive_int(n, "n", 1)
    if noise not in ("laplace", "gaussian"):
        raise ValidationError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    return _hb_branching(n, noise)


@lru_cache(maxsize=64)  # public: the same domain's releases ask again
def _hb_branching(n: int, noise: str) -> tuple[int, int]:
    if n == 1:
        return 2, 0
    power = 3 if noise == "laplace" else 2
    candidates = sorted({max(2, _iroot_ceil(n, k)) for k in range(1, tree_levels(n, 2))})
    best: tuple[int, int, int] | None = None
    for b in candidates:
        h = tree_levels(n, b) - 1  # ceil(log_b n)
        v3 = 3 * (b - 1) * h**power - 2 * (b + 1) * h ** (power - 1)
        if best is None or v3 < best[0]:
            best = (v3, b, h)
    assert best is not None
    return best[1], best[2]


def level_budgets(t: int, kind: str = "uniform", ratio: float = 2.0 ** (1.0 / 3.0)) -> np.ndarray:
    """Per-level budget shares (summing to 1), indexed by level, root first.

    ``"uniform"``: ``1/t`` each (Hay et al.; DPBench HB). ``"geometric"``: share of level
    ``l`` proportional to ``ratio**l``, so with ``ratio > 1`` the leaves get the most;
    the default ``2**(1/3)`` reproduces Cormode et al.'s ratio (methods framework B.3).
    Their ratio minimises ``sum_l c_l / epsilon_l**2`` (Laplace) with ``c_l ~ 2**l``
    nodes in use per level, hence ``epsilon_l ~ c_l**(1/3)``; for Gaussian noise the
    same minimisation of ``sum_l c_l / rho_l`` gives ``rho_l ~ c_l**(1/2)``: ratio
    ``2**(1/2)``.
    Floats only; exact per-level budgets are the kernel's business.
    """
    t = positive_int(t, "t", 1)
    if kind == "uniform":
        return np.full(t, 1.0 / t)
    if kind == "geometric":
        if not (isinstance(ratio, numbers.Real) and math.isfinite(ratio) and ratio > 0):
            raise ValidationError(f"ratio must be a positive finite number, got {ratio!r}")
        weights = float(ratio) ** np.arange(t, dtype=np.float64)
        return weights / weights.sum()
    raise ValidationError(f"kind must be 'uniform' or 'geometric', got {kind!r}")
