"""The noisy L1 partition (DAWA's partition; Kellaris S1, S~, S1+H) as a kernel selection.

Candidates: ``"all"`` intervals (S1), ``"pow2"`` intervals of power-of-two length at
every start (S~), or the nodes of a :class:`~dphist._numeric.tree.TreeLayout` (S1+H).
Each candidate ``B`` costs ``dev(B) + penalty + eta_B`` with ``dev`` the L1 deviation
around the mean; the cheapest partition (or tree cut) is returned; the noisy costs are
never released. ``penalty`` is a public constant per group (an array over tree nodes
for a tree). With a public ``order`` (a permutation from an earlier release) the
candidates are intervals of the reordered bins.

Privacy (``mode="coupled"``; methods framework A.2). One record changes ``dev(B)`` by
at most ``D_B = 2(1 - 1/|B|)`` for every ``B`` containing it. Fix an output; let ``B*``
be its group containing the changed bin. Shifting only ``eta_{B*}`` by ``s = delta_{B*}
- min_{B' != B*} delta_{B'}`` keeps that output optimal (every competitor has exactly
one group containing the bin), so the output probabilities differ by at most
``exp(|s| / sigma_{B*})`` with ``|s| <= D_{B*} + D* + 2g`` (``D*`` the largest ``D_B``,
``g`` the lattice of the rounded costs). Noise of scale ``sigma_B = (D_B + D* +
2g)/epsilon`` (``"pow2"``, tree) or the largest such scale for every candidate
(``"all"``) therefore gives epsilon-DP. With one scale the ``"all"`` noises are i.i.d.,
so each step of its DP only needs the minimum and first minimiser over the
candidates; those are sampled exactly without drawing every noise (``partition.py``,
kernel NOTES). Ties cannot break the argument: the dynamic programs break ties by a
fixed order on partitions.

``mode="reference"`` reproduces the public DAWA code (scale ``(2 - 1/|B| -
1/N)/epsilon``, no noise on single bins, costs floored at ``penalty``), which is *not*
epsilon-DP; its charge is marked uncertified and releases that use it are not private.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._numeric.deviation import l1_partition_streamed, pow2_deviations, window_deviations
from .._numeric.l1_dp import l1_partition_pow2
from .._numeric.tree import TreeLayout, best_cut
from ..errors import InternalError
from .budget import Primitive
from .noise import NoiseSource, rational_scale
from .partition import certified_full_partition, lazy_supported, reference_full_partition
from .selection import Selection

__all__ = ["NoisyPartition", "as_permutation"]

MODES = ("coupled", "reference")


def as_permutation(order: object, n: int) -> np.ndarray:
    """``order`` as an int64 permutation of ``range(n)``, or InternalError."""
    arr = np.asarray(order)
    if arr.shape != (n,) or arr.dtype.kind not in "iu":
        raise InternalError(f"a bin order must be {n} integers; got shape {arr.shape}")
    arr = arr.astype(np.int64)
    seen = np.zeros(n, dtype=bool)
    inside = (arr >= 0) & (arr < n)
    seen[arr[inside]] = True
    if not (inside.all() and seen.all()):
        raise InternalError("a bin order must be a permutation of the bins")
    return arr


def _lattice_step(d_star: Fraction) -> Fraction:
    """Largest power of two at most ``d_star * 2**-21``: rounding costs to it inflates
    the coupling bound by a relative 2**-20 at most."""
    target = d_star / (1 << 21)
    step = Fraction(1)
    while step > target:
        step /= 2
    return step


@dataclass(frozen=True)
class NoisyPartition(Selection):
    """The partition (group starts) or tree cut with the smallest noisy L1 cost."""

    family: str | TreeLayout
    penalty: float | np.ndarray
    mode: str = "coupled"
    order: np.ndarray | None = None
    primitive: ClassVar[Primitive] = Primitive.NOISY_PARTITION
    proof: ClassVar[str] = "coupling argument in dphist._kernel.l1_partition; NOTES.md S1"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InternalError(f"unknown partition noise mode {self.mode!r}")
        if not isinstance(self.family, TreeLayout) and self.family not in ("all", "pow2"):
            raise InternalError(f"unknown candidate family {self.family!r}")

    @property
    def certified(self) -> bool:
        return self.mode == "coupled"

    def _d_star(self, n: int) -> tuple[Fraction, Fraction]:
        """``D*`` (the largest one-record change of a candidate's deviation) and ``g``."""
        tree = self.family if isinstance(self.family, TreeLayout) else None
        if tree is not None:
            longest = int((tree.hi - tree.lo).max())
        else:
            longest = n if self.family == "all" else 1 << (n.bit_length() - 1)
        d_star = 2 - Fraction(2, longest)
        g = Fraction(1, 1 << 40) if d_star == 0 else _lattice_step(d_star)
        return d_star, g

    def sensitivity(self, n: int) -> Fraction:
        d_star, g = self._d_star(n)
        return 2 * d_star + 2 * g

    def scale(self, n: int, epsilon: Fraction) -> Fraction:
        return self.sensitivity(n) / epsilon if self.certified else Fraction(2) / epsilon

    def describe(self, n: int) -> str:
        what = "tree nodes" if isinstance(self.family, TreeLayout) else self.family
        return f"L1 partition over {what} (n={n}, {self.mode})"

    def choose(self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource) -> np.ndarray:
        n = x.shape[0]
        if self.order is not None:
            x = x[as_permutation(self.order, n)]
        costs = _Costs(n, epsilon, *self._d_star(n), self.penalty, self.certified, noise)
        if isinstance(self.family, TreeLayout):
            return costs.tree_cut(x, self.family)
        if self.family == "pow2":
            return costs.pow2_partition(x)
        return costs.full_partition(x)


@dataclass(frozen=True)
class _Costs:
    """Noisy candidate costs for one run: lattice-rounded deviations plus noise."""

    n: int
    eps: Fraction
    d_star: Fraction
    g: Fraction
    penalty: Any
    certified: bool
    noise: NoiseSource

    def _lattice_noise(self, scale: Fraction, size: int) -> np.ndarray:
        """``size`` draws of g * DiscreteLaplace(scale / g), as floats."""
        t, s = rational_scale(scale / self.g, Fraction(1))
        return float(self.g) * self.noise.discrete_laplace(t, s, size).astype(np.float64)

    def noisy(self, dev: np.ndarray, lengths: np.ndarray, certified: bool) -> np.ndarray:
        """dev (rounded to the lattice) + penalty + noise, per candidate length."""
        gf = float(self.g)
        out = np.rint(dev / gf) * gf
        for length in np.unique(lengths):
            idx = lengths == length
            d_b = 2 - Fraction(2, int(length))
            if certified:
                scale = (d_b + self.d_star + 2 * self.g) / self.eps
            elif length == 1:
                continue
            else:
                scale = (2 - Fraction(1, int(length)) - Fraction(1, self.n)) / self.eps
            out[idx] += self._lattice_noise(scale, int(idx.sum()))
        out += self.penalty
        return out if certified else np.maximum(out, self.penalty)

    def pow2_partition(self, x: np.ndarray) -> np.ndarray:
        lengths, dev = pow2_deviations(x)
        fits = np.arange(self.n)[None, :] <= (self.n - lengths)[:, None]
        costs = np.full(dev.shape, np.inf)
        flat_len = np.broadcast_to(lengths[:, None], dev.shape)[fits]
        costs[fits] = self.noisy(dev[fits], flat_len, self.certified)
        return l1_partition_pow2(costs)

    def full_partition(self, x: np.ndarray) -> np.ndarray:
        n = self.n
        if self.certified:
            # Same noise law, sampled lazily (partition.py): only the pair (min, argmin)
            # of each right end is drawn, never all N (N + 1) / 2 noises.
            scale = (2 * self.d_star + 2 * self.g) / self.eps
            t, s = rational_scale(scale / self.g, Fraction(1))
            gf = float(self.g)
            if np.ndim(self.penalty) == 0 and lazy_supported(t, s):
                return certified_full_partition(x, float(self.penalty), gf, t, s, self.noise.bits)
            return reference_full_partition(x, self.penalty, gf, t, s, self.noise)

        def to_costs(b0: int, dev: np.ndarray) -> np.ndarray:
            ends = np.arange(b0, b0 + dev.shape[0])[:, None]
            valid = np.arange(n)[None, :] <= ends
            out = np.full(dev.shape, np.inf)
            lengths = (ends - np.arange(n)[None, :] + 1)[valid]
            out[valid] = self.noisy(dev[valid], lengths, False)
            return out

        return l1_partition_streamed(x, to_costs, prefer_singleton=True)

    def tree_cut(self, x: np.ndarray, tree: TreeLayout) -> np.ndarray:
        prefix = np.concatenate(([0], np.cumsum(x)))
        dev = np.empty(tree.n_nodes)
        for level in range(tree.n_levels):
            sl = tree.level_slice(level)
            lo, hi = tree.lo[sl], tree.hi[sl]
            width = int((hi - lo).max())
            if width == 1:
                dev[sl] = 0.0
                continue
            windows = window_deviations(x, width)
            full = (hi - lo) == width
            dev[sl] = np.where(full, windows[np.minimum(lo, windows.size - 1)], np.nan)
            for k in np.flatnonzero(~full):  # the truncated right-edge node
                a, b = int(lo[k]), int(hi[k])
                seg = x[a:b].astype(np.float64)
                dev[sl.start + k] = np.abs(seg - (prefix[b] - prefix[a]) / (b - a)).sum()
        return best_cut(tree, self.noisy(dev, tree.hi - tree.lo, self.certified))
