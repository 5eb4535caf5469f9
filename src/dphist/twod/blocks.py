"""Blocks of the 2-D methods whose measurements do not depend on the data: noisy cells,
hierarchies, Privelet's wavelet, and the noisy total a grid is sized from.

Each block measures through the kernel's 2-D queries (:mod:`dphist._kernel.grid`), whose
sensitivities the kernel derives; everything after a measurement is post-processing.
The state's ``shape`` is the public ``(rows, cols)``; estimates are held flattened in
row-major order, and every block states the exact error model of what it publishes
(:mod:`dphist.uncertainty.rectangles`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernel import GridHaar, GridSums, Identity, PrivateView
from .._numeric.grid_haar import grid_haar_inverse
from .._numeric.grid_levels import hb2d_branching, level_gls
from .._numeric.rect_tree import (
    RectTree,
    hierarchy_edges,
    level_tree,
    paint,
    rect_factors,
    rect_moments,
    tree_from_levels,
)
from .._numeric.tree import gls
from .._numeric.wavelet import haar_size
from ..blocks import Block, State
from ..blocks.base import planned_variance, weighting_variance
from ..blocks.constraints import AnyOf, Interval, Options, rules
from ..blocks.error_bars import law_of, tail_of
from ..blocks.tree import split_epsilon
from ..errors import CompositionError
from ..uncertainty.rectangles import CellNoise, HaarNoise2D, RectErrorModel, TreeNoise2D
from ..uncertainty.tails import fourth_cumulant
from ..workloads import random_rectangles

__all__ = [
    "PLAN_SAMPLE",
    "GridHierarchy",
    "GridTotal",
    "GridWavelet",
    "NoisyCells",
    "best_plan",
    "equivalent_epsilon",
    "grid_shape",
    "plan_variances",
    "publish_tree",
]


def grid_shape(state: State) -> tuple[int, int]:
    """The state's 2-D shape, or a clear error for a 1-D histogram."""
    if state.shape is None:
        raise CompositionError("this block publishes 2-D histograms; the data is 1-D")
    return state.shape


def equivalent_epsilon(state: State, budget: Fraction) -> float:
    """The epsilon whose Laplace noise has the variance a sensitivity-1 measurement with
    ``budget`` gets (``budget`` itself under pure DP; under zCDP ``sqrt(2 / sigma**2)``),
    for the papers' sizing rules written in epsilon (public arithmetic)."""
    if state.definition != "zcdp":
        return float(budget)
    return float(np.sqrt(2.0 / max(planned_variance(state, budget), 1e-300)))


def publish_tree(
    state: State,
    view: PrivateView,
    tree: RectTree,
    y: np.ndarray,
    var: np.ndarray,
    measured: list[tuple[np.ndarray, float]] | None = None,
) -> State:
    """Least squares over ``tree`` measured with ``y`` (variances ``var``, ``inf`` where
    unmeasured); the leaves' estimates spread evenly over their cells. The error model is
    exact for the noise; leaves of more than one cell add the bracket of non-negative
    counts (the truth lies between the leaves inside a rectangle and those it meets).
    ``measured`` lists the node sets measured and their variances when a node may be
    measured more than once (``y``, ``var``: the precision-weighted combination)."""
    est = gls(tree.first_child, tree.n_children, y, var)
    leaves = tree.leaves
    cells = paint(
        tree.shape, tree.r0[leaves], tree.r1[leaves], tree.c0[leaves], tree.c1[leaves], est[leaves]
    )
    law = law_of(view)
    if measured is None:  # one measurement per measured node
        finite = np.isfinite(var)
        k4 = np.where(finite, fourth_cumulant(np.where(finite, var, 1.0), law), 0.0)
    else:  # nodes measured in several sets: their precision-weighted average
        k4 = np.zeros(tree.n_nodes)
        for nodes, v in measured:
            k4[nodes] += (var[nodes] / v) ** 4 * float(fourth_cumulant(v, law))
    noise = TreeNoise2D(tree.shape, rect_factors(tree, var, k4), law, estimates=est)
    whole = bool(np.all(tree.area[leaves] == 1))
    model = RectErrorModel(noise, "none" if whole else "bracket")
    return state.with_(estimate=cells.ravel(), uncertainty=model)


PLAN_SAMPLE = 400
"""Public random rectangles a measurement plan is scored on."""


def plan_variances(tree: RectTree, measured: list[tuple[np.ndarray, float]]) -> np.ndarray:
    """Each node's measurement variance when the node sets in ``measured`` are measured
    with the given variances (a node measured twice: the combined variance; ``inf``:
    not measured)."""
    precision = np.zeros(tree.n_nodes)
    for nodes, var in measured:
        precision[nodes] += 1.0 / var
    with np.errstate(divide="ignore"):
        return np.where(precision > 0, 1.0 / precision, np.inf)


def best_plan(state: State, tree: RectTree, plans: list[list[tuple[np.ndarray, Fraction]]]) -> int:
    """The index of the plan (node sets and the budget each gets) whose least-squares
    estimates of :data:`PLAN_SAMPLE` public random rectangles have the smallest mean
    noise variance (exact, :func:`~dphist._numeric.rect_tree.rect_moments`). Public
    arithmetic on a released structure: post-processing."""
    sample = random_rectangles(tree.shape, PLAN_SAMPLE, seed=0).rectangles()
    scores = []
    for plan in plans:
        measured = [
            (nodes, float(weighting_variance(planned_variance(state, b)))) for nodes, b in plan
        ]
        var, _, _ = rect_moments(rect_factors(tree, plan_variances(tree, measured)), *sample)
        scores.append(float(var.mean()))
    return int(np.argmin(scores))


@dataclass(frozen=True, kw_only=True)
class NoisyCells(Block):
    """Noisy count of every cell (the Laplace mechanism; identity).

    Privacy: one measurement of every cell (sensitivity 1) with the block's share."""

    label = "noisy_cells"
    zcdp = True
    unbiased = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        m = view.measure(Identity(view.n))
        noise = CellNoise(shape, m.variance, tail_of(m, view))
        return state.with_(estimate=m.as_floats(), uncertainty=RectErrorModel(noise))


BRANCHING = AnyOf(Interval(int, 2, 1 << 20), Options("hb"))
ALLOCATIONS = ("uniform", "geometric")


@dataclass(frozen=True, kw_only=True)
class GridHierarchy(Block):
    """A 2-D hierarchy of noisy node totals made consistent by least squares.

    Each node splits its rows and its columns into ``branching`` near-equal parts
    (``branching**2`` children) down to single cells: Hay et al.'s tree over a grid with
    Qardaji, Yang, Li's branching (PVLDB 2013, §5; ``branching="hb"``) or Cormode et al.'s
    quadtree (ICDE 2012: branching 2, ``allocation="geometric"``, leaves get the most,
    ratio ``2**(1/3)`` between levels). ``root`` says whether the total is measured.
    Privacy: each level's nodes partition the grid, so each level is one sensitivity-1
    :class:`~dphist._kernel.GridSums` measurement with its share; the levels compose to
    the block's budget. GLS (level by level, exact) is post-processing; its error model
    is exact for every rectangle.
    """

    label = "grid_tree"
    zcdp = True
    unbiased = True
    spends = True
    constraints = rules(
        branching=BRANCHING, allocation=Options(*ALLOCATIONS), root=Options(True, False)
    )
    branching: object = "hb"
    allocation: str = "uniform"
    root: bool = False

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        noise = "gaussian" if view.definition == "zcdp" else "laplace"
        b = hb2d_branching(shape, noise) if self.branching == "hb" else int(self.branching)
        levels = hierarchy_edges(shape, b)
        measured = list(range(0 if self.root else 1, len(levels))) or [0]
        eps = split_epsilon(view.remaining, len(measured), self.allocation, noise)
        values: list[np.ndarray | None] = [None] * len(levels)
        variances = [np.inf] * len(levels)
        for k, e in zip(measured, eps, strict=True):
            re, ce = levels[k]
            m = view.measure(GridSums(shape, re, ce), epsilon=e)
            values[k] = m.values.reshape(re.size - 1, ce.size - 1).astype(np.float64)
            variances[k] = float(weighting_variance(m.variance))
            del m
        cells = level_gls(levels, values, variances)
        law = law_of(view)

        def factors():
            tree = level_tree(shape, levels)
            counts = [(r.size - 1) * (c.size - 1) for r, c in levels]
            var = np.repeat(np.array(variances), counts)
            k4 = np.where(
                np.isinf(var), 0.0, fourth_cumulant(np.where(np.isinf(var), 1.0, var), law)
            )
            return rect_factors(tree, var, k4)

        model = RectErrorModel(TreeNoise2D(shape, factors, law))
        notes = {**state.notes, "branching": b, "levels": len(levels)}
        return state.with_(estimate=cells.ravel(), uncertainty=model, notes=notes)


@dataclass(frozen=True, kw_only=True)
class GridWavelet(Block):
    """Privelet on a grid (Xiao, Wang, Gehrke, ICDE 2010, §5, standard decomposition):
    noisy unnormalised 2-D Haar coefficients, inverted.

    Privacy: one measurement of :class:`~dphist._kernel.GridHaar`, whose sensitivity
    ``(m_r + 1)(m_c + 1)`` the kernel derives (uniform noise on the unnormalised
    coefficients is the paper's weighted noise on the normalised ones). The inverse is
    post-processing; the error model is exact (a product of 1-D weights).
    """

    label = "grid_haar"
    zcdp = True
    unbiased = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        m = view.measure(GridHaar(shape))
        coeffs = m.values.reshape(haar_size(shape[0]), haar_size(shape[1]))
        cells = grid_haar_inverse(coeffs, shape)
        model = RectErrorModel(HaarNoise2D(shape, float(m.variance), law_of(view)))
        return state.with_(estimate=cells.ravel(), uncertainty=model)


@dataclass(frozen=True, kw_only=True)
class GridTotal(Block):
    """The noisy number of records, kept in ``notes["total"]`` with its noise variance
    (the grids size themselves from it: Qardaji et al. take it as known; here it is
    measured); with ``publish=True`` also the estimate, spread evenly over the cells
    (the Uniform baseline). Privacy: one measurement of the total (sensitivity 1)."""

    label = "noisy_total"
    zcdp = True
    spends = True
    constraints = rules(publish=Options(True, False))
    publish: bool = False

    def run(self, state: State, view: PrivateView | None) -> State:
        shape = grid_shape(state)
        m = view.measure(GridSums(shape, np.array([0, shape[0]]), np.array([0, shape[1]])))
        total = (float(m.values[0]), float(weighting_variance(m.variance)))
        notes = {**state.notes, "total": total}
        if not self.publish:
            return state.with_(notes=notes)
        tree = tree_from_levels(shape, [])
        out = publish_tree(state, view, tree, np.array([total[0]]), np.array([total[1]]))
        return out.with_(notes=notes)
