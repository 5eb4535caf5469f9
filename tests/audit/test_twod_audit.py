"""The privacy audit on 2-D neighbours: every 2-D method (white-box ledger check in the
default run, the statistical audit on 2-D neighbour pairs in the extended one) and a
mutant for each new 2-D primitive, with its correct twin on the same pairs.

2-D histograms are audited as their cells in row-major order; neighbours differ by one
record in one cell (:func:`dphist.lab.audit.grid_catalogue`). PrivTree's quadtree split
has its exact law checked in ``tests/test_twod_privtree.py`` (loss within the bound over
every neighbour of small grids; the mutant without the depth bias exceeds its claim).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from dphist._kernel import GridHaar, RectangleSums, WorstRectangle
from dphist._kernel.selection import noisy_argmin
from dphist.blocks import Block
from dphist.lab import audit
from dphist.twod import list_grid_methods

GRID_METHODS = [m.name for m in list_grid_methods()] + ["hilbert:AHP"]
SHAPE = (4, 4)


def seed_of(name: str, *extra: int) -> list[int]:
    return [33, zlib.crc32(name.encode()), *extra]


@pytest.mark.parametrize("method", GRID_METHODS)
def test_every_draw_is_charged_and_the_ledger_recomposes(method):
    x = audit.standard_grid((6, 5))
    report = audit.ledger_check(method, x, epsilon=0.7)
    assert report.ok, report.problems
    assert report.values_drawn > 0 and report.charged == Fraction(7, 10)


AUDIT_PARAMS = {"MWEM": {"rounds": 3, "replays": 20}}  # the same primitives, fewer rounds


@pytest.mark.extended
@pytest.mark.parametrize("method", GRID_METHODS)
def test_every_2d_method_passes_the_audit(method, audit_row):
    mech = audit.grid_mechanism(method, SHAPE, epsilon=1, **AUDIT_PARAMS.get(method, {}))
    pairs = audit.grid_catalogue(SHAPE)[:3]
    result = audit.audit(mech, pairs, n_search=800, n_confirm=3_200, seed=seed_of(method))
    worst = result.worst
    audit_row(mech.name, result.epsilon, result.eps_lb, "pass" if not result.flagged else "FLAGGED",
              worst.best.event if worst.best else "-", result.runs, result.seconds)  # fmt: skip
    assert not result.flagged, result.summary()


# --------------------------------------------------------------------------- mutants


class _Declared(RectangleSums):
    """Rectangle totals with a declared sensitivity (the true one is the kernel's)."""

    declared: Fraction = Fraction(1)

    @property
    def sensitivity(self) -> Fraction:  # type: ignore[override]
        return self.declared


@dataclass(frozen=True, kw_only=True)
class CellsAndQuadrants(Block):
    """Every cell and every 2 x 2 block in one rectangle query: each cell is in two
    rectangles. MUTANT when ``declared`` is 1 (the kernel's derivation says 2)."""

    label = "cells_and_quadrants"
    spends = True
    declared: int = 1

    def run(self, state, view):
        rows, cols = state.shape
        i, j = np.divmod(np.arange(rows * cols), cols)
        a, b = np.divmod(np.arange((rows // 2) * (cols // 2)), cols // 2)
        r0 = np.concatenate((i, 2 * a))
        c0 = np.concatenate((j, 2 * b))
        r1 = np.concatenate((i + 1, 2 * a + 2))
        c1 = np.concatenate((j + 1, 2 * b + 2))
        query = _Declared(state.shape, r0, r1, c0, c1)
        object.__setattr__(query, "declared", Fraction(self.declared))
        m = view.measure(query)
        answers = m.values.astype(np.float64)
        return state.with_(estimate=answers[: rows * cols], notes={"answers": answers})


class _HaarAsPartition(GridHaar):
    """MUTANT: the 2-D Haar coefficients declared as if one record moved one of them."""

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(1)


@dataclass(frozen=True, kw_only=True)
class HaarUnderstated(Block):
    label = "grid_haar"
    spends = True

    def run(self, state, view):
        m = view.measure(_HaarAsPartition(state.shape))
        coefficients = m.values.astype(np.float64)
        return state.with_(estimate=np.zeros(state.n), notes={"answers": coefficients})


@dataclass(frozen=True, kw_only=True)
class HaarCorrect(Block):
    """The twin: the same coefficients with the kernel's sensitivity."""

    label = "grid_haar"
    spends = True

    def run(self, state, view):
        coefficients = view.measure(GridHaar(state.shape)).values.astype(np.float64)
        return state.with_(estimate=np.zeros(state.n), notes={"answers": coefficients})


class _CheapWorst(WorstRectangle):
    """MUTANT: report noisy max calibrated for scores of sensitivity 1/8."""

    def choose(self, x, epsilon, noise, mechanism="laplace"):
        p = np.zeros((self.shape[0] + 1, self.shape[1] + 1))
        p[1:, 1:] = x.reshape(self.shape).cumsum(0).cumsum(1)
        a, b, c, d = self.r0, self.r1, self.c0, self.c1
        exact = p[b, d] - p[a, d] - p[b, c] + p[a, c]
        return noisy_argmin(-np.abs(exact - self.answers), Fraction(1, 8), epsilon, noise)


@dataclass(frozen=True, kw_only=True)
class WorstOfTwo(Block):
    """MWEM's choice between the top and the bottom half against an empty estimate; the
    chosen index is the output. MUTANT when ``cheap``."""

    label = "worst_rectangle"
    spends = True
    cheap: bool = False

    def run(self, state, view):
        rows, cols = state.shape
        h = rows // 2
        args = (state.shape, np.array([0, h]), np.array([h, rows]), np.array([0, 0]),
                np.array([cols, cols]), np.zeros(2))  # fmt: skip
        pick = view.select((_CheapWorst if self.cheap else WorstRectangle)(*args))
        return state.with_(estimate=np.full(state.n, float(pick)))


CASES = {  # mutant, twin, grid (2 x 2 for the Haar: a cell moves all 4 coefficients)
    "overlapping rectangles declared disjoint": (CellsAndQuadrants(share=1, declared=1),
                                                 CellsAndQuadrants(share=1, declared=2), SHAPE),
    "2-D Haar declared as a partition": (HaarUnderstated(share=1), HaarCorrect(share=1),
                                         (2, 2)),
}  # fmt: skip


@pytest.mark.extended
@pytest.mark.parametrize("case", list(CASES))
def test_mutant_of_a_2d_query_is_flagged_and_its_twin_passes(case, audit_row):
    mutant, twin, shape = CASES[case]
    pairs = list(audit.grid_catalogue(shape)[:2])
    results = []
    for label, block in (("mutant", mutant), ("twin", twin)):
        mech = audit.pipeline_mechanism(f"{case} ({label})", (block,), epsilon=1, shape=shape,
                                        output=lambda state: state.notes["answers"])  # fmt: skip
        result = audit.audit(mech, pairs, n_search=300, n_confirm=1_200, seed=seed_of(case))
        audit_row(mech.name, 1.0, result.eps_lb, "FLAGGED" if result.flagged else "pass",
                  result.summary(), result.runs, result.seconds)  # fmt: skip
        results.append(result)
    assert results[0].flagged, results[0].summary()
    assert not results[1].flagged, results[1].summary()


def test_mutant_worst_rectangle_is_flagged_and_its_twin_passes(audit_row):
    """A pair whose changed cell decides which half is worse: x has 3 records in the top
    half and 2 in the bottom; x' one more at the bottom."""
    x = np.zeros(16, dtype=np.int64)
    x[0], x[15] = 3, 2
    pair = audit.pair(x, 15, +1, "ties the halves")
    for cheap in (True, False):
        mech = audit.pipeline_mechanism(f"worst rectangle (cheap={cheap})",
                                        (WorstOfTwo(share=1, cheap=cheap),), epsilon=1,
                                        shape=SHAPE)  # fmt: skip
        result = audit.audit(mech, [pair], n_search=400, n_confirm=2_000, seed=seed_of("worst"))
        audit_row(mech.name, 1.0, result.eps_lb, "FLAGGED" if result.flagged else "pass",
                  result.summary(), result.runs, result.seconds)  # fmt: skip
        assert result.flagged == cheap, result.summary()
