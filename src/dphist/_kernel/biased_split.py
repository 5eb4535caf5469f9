"""Biased top-down splitting of a public tree of intervals (PrivTree) as a kernel selection.

Zhang, Xiao, Xie, "PrivTree: a differentially private algorithm for hierarchical
decompositions", SIGMOD 2016, Algorithm 2, for one dimension. Starting at the root of
a public :class:`~dphist._numeric.tree.TreeLayout`, a node ``v`` at level ``l`` with at
least two children gets the biased score

    b(v) = max(theta - delta, s(v) - l * delta)

and is split into its children when ``b(v) + Z_v > theta`` (``Z_v`` discrete Laplace of
scale ``lambda``); otherwise it is a leaf of the output. Leaves of the layout stop and
single-child nodes pass through, both without a decision. The released value is the
set of leaves (a cut of the layout); the scores and noises are never released.

Scores (integers on a lattice ``g = 2**j``, ``-8 <= j <= 0``): ``"count"`` is the
node's total (PrivTree's score), ``"deviation"`` is half the L1 deviation of the node's
counts around their mean (the DAWA cost of keeping the node whole), floored to the
lattice exactly in integer arithmetic (``DeviationIndex.half_units``). Both are
non-increasing from a node to its children (a deviation never shrinks when an interval
grows: kernel NOTES, S1) and one record moves each by at most 1, hence the lattice
score by at most ``D = 1/g``; only the nodes containing the changed bin move.

Privacy (kernel NOTES, "Biased splitting"): with ``x = D / lambda`` and ``gamma =
delta / lambda`` (``delta >= D``) the output is epsilon-DP for

    epsilon = 2 x + (exp(x) - 1) / (exp(gamma) - 1),

PrivTree's ``(2 e^gamma - 1) / (e^gamma - 1) / lambda`` up to ``exp(x) - 1 >= x``,
proved here for discrete noise and for scores that may move either way. The charge
records ``D`` as the sensitivity and ``lambda`` as the scale. PrivTree's defaults:
``delta = lambda ln(fan-out)``, ``theta = 0`` for counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from .._numeric.deviation import DeviationIndex
from .._numeric.tree import TreeLayout
from ..errors import InternalError, ValidationError
from .budget import Primitive
from .l1_partition import as_permutation
from .noise import NoiseSource, rational_scale
from .selection import Selection

__all__ = ["BiasedSplit", "privtree_epsilon"]

SCORES = ("count", "deviation")
_FINE = 20  # lattice units per noise scale, about 2**_FINE
_MAX_SCALE = 1 << 50  # noise scale in lattice units; keeps every sum inside int64
_MAX_SCORE = 1 << 61


def privtree_epsilon(x: float, gamma: float) -> float:
    """The privacy loss bound for ``x = D / lambda`` and ``gamma = delta / lambda``."""
    if x > 700.0:
        return math.inf
    return 2.0 * x + math.expm1(x) / math.expm1(gamma)


def _solve_x(epsilon: float, gamma: float) -> float:
    """The largest ``x`` with ``privtree_epsilon(x, gamma) <= epsilon`` (bisection)."""
    lo, hi = 0.0, epsilon / 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if privtree_epsilon(mid, gamma) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo * (1.0 - 1e-9)


@dataclass(frozen=True)
class _Plan:
    """Lattice and noise for one run: every integer the splitter uses."""

    g_exp: int  # the lattice is g = 2**g_exp, g_exp <= 0
    d_units: int  # sensitivity D = 1/g in lattice units
    t: int  # noise scale t/s in lattice units
    s: int
    delta: int  # bias per level, lattice units
    theta: int  # threshold, lattice units

    @property
    def scale(self) -> Fraction:
        return Fraction(self.t, self.s)


@dataclass(frozen=True)
class BiasedSplit(Selection):
    """The leaves of a PrivTree decomposition of ``tree`` (a boolean node mask).

    ``score`` is ``"count"`` or ``"deviation"``; ``threshold`` is theta in score units
    (records, or half an L1 deviation); ``order`` a public permutation of the bins
    (from an earlier release) applied before scoring.
    """

    tree: TreeLayout
    score: str = "count"
    threshold: float = 0.0
    order: np.ndarray | None = None
    primitive: ClassVar[Primitive] = Primitive.BIASED_SPLIT
    proof: ClassVar[str] = "dphist._kernel.biased_split; NOTES.md, Biased splitting"

    def __post_init__(self) -> None:
        if self.score not in SCORES:
            raise InternalError(f"unknown split score {self.score!r}")
        if not (math.isfinite(self.threshold) and abs(self.threshold) < 2.0**40):
            raise InternalError("a split threshold must be a finite number below 2**40")

    @property
    def gamma(self) -> float:
        """Bias per level in noise scales: ln(fan-out), PrivTree's choice."""
        return math.log(self.tree.fanout)

    def plan(self, epsilon: Fraction) -> _Plan:
        """Lattice, noise scale, bias and threshold at ``epsilon`` (public arithmetic)."""
        x = _solve_x(float(epsilon), self.gamma)
        if not x > 0.0:
            raise ValidationError(f"epsilon={float(epsilon):.3g} is too small to split a tree")
        g_exp = int(min(0, max(-8, math.floor(math.log2(1.0 / x)) - _FINE)))
        d_units = 1 << -g_exp
        t, s = rational_scale(Fraction(d_units), Fraction(x))
        if Fraction(t, s) > _MAX_SCALE:
            raise ValidationError(f"epsilon={float(epsilon):.3g} is too small to split a tree")
        delta = max(math.ceil(t * self.gamma / s), d_units)
        if privtree_epsilon(d_units * s / t, delta * s / t) > float(epsilon):
            raise InternalError("biased split: the noise plan exceeds its epsilon")
        theta = math.floor(self.threshold * d_units)
        return _Plan(g_exp, d_units, t, s, delta, theta)

    def sensitivity(self, n: int) -> Fraction:
        return Fraction(1)

    def scale(self, n: int, epsilon: Fraction) -> Fraction:
        plan = self.plan(epsilon)
        return plan.scale / plan.d_units

    def describe(self, n: int) -> str:
        return (
            f"biased top-down split, {self.score} scores, fan-out {self.tree.fanout} "
            f"(n={n}, theta={self.threshold:g})"
        )

    def choose(self, x: np.ndarray, epsilon: Fraction, noise: NoiseSource) -> np.ndarray:
        if self.tree.n != x.shape[0]:
            raise InternalError("biased split: the tree does not cover the bins")
        if self.order is not None:
            x = x[as_permutation(self.order, x.shape[0])]
        return split_top_down(self.tree, _scorer(x, self.score), self.plan(epsilon), noise)


def _scorer(x: np.ndarray, score: str):
    """``f(lo, hi, g_exp) -> int64 lattice scores`` of half-open node intervals."""
    if score == "count":
        prefix = np.concatenate(([0], np.cumsum(x, dtype=np.int64)))

        def counts(lo: np.ndarray, hi: np.ndarray, g_exp: int) -> np.ndarray:
            return (prefix[hi] - prefix[lo]) << -g_exp

        return counts
    index = DeviationIndex(x)

    def half_deviations(lo: np.ndarray, hi: np.ndarray, g_exp: int) -> np.ndarray:
        return index.half_units(lo, hi - 1, -g_exp, _MAX_SCORE)  # exact integers

    return half_deviations


def split_top_down(tree: TreeLayout, scorer, plan: _Plan, noise: NoiseSource) -> np.ndarray:
    """Run the biased splitting level by level; return the mask of output leaves."""
    cut = np.zeros(tree.n_nodes, dtype=bool)
    active = np.zeros(1, dtype=np.int64)
    floor = plan.theta - plan.delta
    for level in range(tree.n_levels):
        if active.size == 0:
            break
        kids = tree.n_children[active]
        cut[active[kids == 0]] = True
        deciding = active[kids >= 2]
        scores = scorer(tree.lo[deciding], tree.hi[deciding], plan.g_exp)
        biased = np.maximum(scores - min(level * plan.delta, 1 << 62), floor)
        z = noise.discrete_laplace(plan.t, plan.s, int(deciding.size))
        split = biased + z > plan.theta
        cut[deciding[~split]] = True
        parents = np.concatenate((active[kids == 1], deciding[split]))
        active = _children(tree, np.sort(parents))
    return cut


def _children(tree: TreeLayout, nodes: np.ndarray) -> np.ndarray:
    """All children of ``nodes``, in node order."""
    counts = tree.n_children[nodes]
    first = np.repeat(tree.first_child[nodes], counts)
    before = np.repeat(np.cumsum(counts) - counts, counts)
    step = np.arange(int(counts.sum()), dtype=np.int64) - before
    return first + step
