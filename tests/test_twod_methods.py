"""2-D methods end to end: every registered method's contract, hand-worked small grids,
the release's rectangle queries against brute force, and error bars that are exact."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.errors import BudgetExceededError, UnknownMethodError, ValidationError, WorkloadError
from dphist.twod import list_grid_methods

METHODS = [m.name for m in list_grid_methods()]
SHAPES = [(8, 8), (7, 3), (1, 5)]


def grid(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.poisson(rng.uniform(0, 20, size=shape))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_method_spends_its_epsilon_exactly(method, shape):
    x = grid(shape)
    rel = dh.publish(x, epsilon=0.7, method=method, rng=3)
    assert isinstance(rel, dh.twod.Release2D)
    assert rel.shape == shape and rel.estimate.shape == shape
    assert rel.spent == Fraction(7, 10) and not rel.private
    again = dh.publish(x, epsilon=0.7, method=method, rng=3)
    np.testing.assert_array_equal(rel.estimate, again.estimate)
    json.loads(rel.to_json())


@pytest.mark.parametrize("method", ["identity", "HB2D", "QuadTree", "Privelet", "PrivTree", "DAWA"])
def test_huge_epsilon_recovers_the_counts(method):
    x = grid((6, 5), 1)
    rel = dh.publish(x, epsilon=10**7, method=method, rng=0)
    np.testing.assert_allclose(rel.estimate, x, atol=0.01)


def test_ugrid_with_a_public_total_hand_worked():
    """N = 800 records at epsilon 1 and c = 10: about 80 cells over 16 x 16, so squares of
    side floor(sqrt(256 / 80)) = 1.79 -> 1; with c = 20, 40 cells: floor(sqrt(6.4)) = 2,
    an 8 x 8 grid, each cell's count spread over 4 cells."""
    from dphist.twod.grids import grid_side, square_edges

    assert grid_side((16, 16), 800 * 1.0 / 10) == 1
    assert grid_side((16, 16), 800 * 1.0 / 20) == 2
    assert square_edges(16, 2).tolist() == list(range(0, 17, 2))
    assert square_edges(5, 2).tolist() == [0, 2, 4, 5]
    x = np.zeros((16, 16), dtype=int)
    x[:8, :8] = 12
    x[8:10, 8:] = 2  # 800 records
    rel = dh.publish(x, epsilon=1, method="UGrid", total=800, c=20, rng=0)
    assert rel.params["total"] == 800 and len(rel.ledger) == 1
    blocks = rel.estimate.reshape(8, 2, 8, 2)
    assert np.allclose(blocks, blocks[:, :1, :, :1])  # constant on each 2 x 2 cell
    assert rel.error_bars.startswith("the noise and the spread")


def test_identity_2x2_hand_worked_queries():
    x = np.array([[3, 0], [5, 9]])
    rel = dh.publish(x, epsilon=10**6, method="identity", rng=0)
    assert rel.rect_sum(0, 2, 0, 2) == pytest.approx(17, abs=1e-3)
    assert rel.rect_sum(1, 2, 0, 2) == pytest.approx(14, abs=1e-3)
    np.testing.assert_allclose(rel.marginal(0), [8, 9], atol=1e-3)
    np.testing.assert_allclose(rel.marginal(1), [3, 14], atol=1e-3)
    assert rel.rect_sum(1, 1, 0, 2) == 0.0  # empty rectangle


def test_rect_queries_equal_brute_force_sums():
    x = grid((9, 7), 2)
    rel = dh.publish(x, epsilon=0.5, method="HB2D", rng=1)
    rng = np.random.default_rng(0)
    r = np.sort(rng.integers(0, 10, (50, 2)), axis=1)
    c = np.sort(rng.integers(0, 8, (50, 2)), axis=1)
    brute = [rel.estimate[a:b, u:v].sum() for (a, b), (u, v) in zip(r, c, strict=True)]
    np.testing.assert_allclose(rel.rects(r[:, 0], r[:, 1], c[:, 0], c[:, 1]), brute, atol=1e-9)
    w = dh.workloads.rectangles_of_size((9, 7), 3, 2)
    lo = w.rectangles()
    np.testing.assert_allclose(rel.answer(w), rel.rects(*lo), atol=1e-9)
    m = dh.workloads.marginals((9, 7), 0)
    np.testing.assert_allclose(rel.answer(m), rel.estimate.sum(axis=0), atol=1e-9)
    with pytest.raises(WorkloadError):
        rel.rect_sum(0, 10, 0, 1)
    with pytest.raises(WorkloadError):
        rel.answer(dh.workloads.marginals((7, 9), 0))


def test_interval_holds_the_estimate_and_stderr_grows_with_the_rectangle():
    x = grid((8, 8), 4)
    rel = dh.publish(x, epsilon=1, method="identity", rng=2)
    low, high = rel.interval(0, 4, 0, 4)
    est = rel.rect_sum(0, 4, 0, 4)
    assert low <= est <= high
    assert rel.rect_stderr(0, 8, 0, 8) == pytest.approx(8 * rel.rect_stderr(0, 1, 0, 1))
    assert rel.stderr.shape == (8, 8)
    assert rel.error_bars == "the noise (exact; the estimate is unbiased)"


def test_mwem_states_no_error_bars():
    rel = dh.publish(grid((8, 8)), epsilon=1, method="MWEM", rng=0)
    assert rel.stderr is None
    with pytest.raises(dh.NoErrorBarError):
        rel.interval(0, 2, 0, 2)


def test_mwem_takes_a_public_workload_as_candidates():
    w = dh.workloads.random_rectangles((8, 8), 30, seed=1)
    rel = dh.publish(grid((8, 8)), epsilon=1, method="MWEM", workload=w, rounds=5, rng=0)
    assert len(rel.ledger) == 5 + 6


def test_error_bars_along_the_curve_are_those_of_the_cells():
    """hilbert:identity is identity in another order: the same exact variance of every
    rectangle (through the 1-D model of the bins along the curve)."""
    x = grid((6, 5), 11)
    a = dh.publish(x, epsilon=1, method="hilbert:identity", rng=0)
    b = dh.publish(x, epsilon=1, method="identity", rng=0)
    rects = (np.array([0, 1, 3]), np.array([6, 4, 4]), np.array([0, 2, 1]), np.array([5, 3, 2]))
    np.testing.assert_allclose(a.rects(*rects, stderr=True)[1], b.rects(*rects, stderr=True)[1])
    np.testing.assert_allclose(a.stderr, b.stderr)


@pytest.mark.parametrize("method", ["DAWA", "hilbert:AHP"])
def test_grouped_estimates_along_the_curve_state_no_error_bars(method):
    """The bracket of groups along the curve held about half of the benchmark's
    rectangles for DAWA: such estimates state no error bar rather than a wrong one."""
    rel = dh.publish(grid((8, 8), 5), epsilon=1, method=method, rng=0)
    assert rel.stderr is None and "Hilbert curve" in rel.error_bars
    with pytest.raises(dh.NoErrorBarError):
        rel.interval(0, 2, 0, 2)


def test_hilbert_option_runs_any_1d_method():
    x = grid((8, 8), 5)
    rel = dh.publish(x, epsilon=1, method="hilbert:AHP", rng=0)
    assert rel.method == "hilbert:AHP" and rel.spent == 1
    exact = dh.publish(x, epsilon=10**6, method="hilbert:identity", rng=0)
    np.testing.assert_allclose(exact.estimate, x, atol=0.01)


def test_errors_are_clear_and_nothing_is_spent():
    with dh.Session(grid((4, 4)), epsilon=1, rng=0) as s:
        with pytest.raises(UnknownMethodError):
            s.publish("H", epsilon=0.5)  # a 1-D method, not a 2-D one
        with pytest.raises(ValidationError, match="auto"):
            s.publish("auto", epsilon=0.5)
        with pytest.raises(ValidationError, match="no parameter"):
            s.publish("HB2D", epsilon=0.5, fanout=4)
        assert s.spent == 0
        s.publish("identity", epsilon=0.5)
        with pytest.raises(BudgetExceededError):
            s.publish("identity", epsilon=0.6)
        assert s.shape == (4, 4)


@pytest.mark.parametrize(
    "method", ["identity", "HB2D", "QuadTree", "Privelet", "UGrid", "PrivTree"]
)
def test_zcdp_forms_run(method):
    rel = dh.publish(grid((8, 8)), rho=0.5, method=method, rng=0)
    assert rel.definition == "zcdp" and rel.spent == Fraction(1, 2)
    assert all(c.unit == "rho" for c in rel.ledger)


LINEAR = ["identity", "HB2D", "QuadTree", "Privelet"]


@pytest.mark.parametrize("method", [*LINEAR, "hilbert:H"])
def test_stated_variance_is_the_noise_variance(method):
    """The model's variance of a rectangle's estimate against the empirical variance over
    300 seeded releases (a 20% band: the standard error of a variance from 300 draws is
    about 8% for nearly normal noise, 13% for one Laplace draw, as H's total is)."""
    x = grid((6, 5), 6)
    rects = (
        np.array([0, 1, 2, 0]),
        np.array([6, 4, 3, 1]),
        np.array([0, 1, 0, 4]),
        np.array([5, 3, 5, 5]),
    )
    answers = np.array([
        dh.publish(x, epsilon=1, method=method, rng=s).rects(*rects) for s in range(300)
    ])  # fmt: skip
    rel = dh.publish(x, epsilon=1, method=method, rng=0)
    _, se = rel.rects(*rects, stderr=True)
    ratio = answers.var(axis=0) / se**2
    assert np.all((ratio > 0.8) & (ratio < 1.2)), ratio
    truth = np.array([x[a:b, c:d].sum() for a, b, c, d in zip(*rects, strict=True)])
    assert np.all(np.abs(answers.mean(axis=0) - truth) < 4 * se / np.sqrt(300))


@pytest.mark.extended
@pytest.mark.parametrize("method", LINEAR)
def test_intervals_cover_95_percent_of_rectangles(method):
    """Coverage of the 95% intervals over 400 releases x 50 random rectangles (20,000
    intervals): within 94-96%."""
    x = grid((16, 16), 7)
    w = dh.workloads.random_rectangles((16, 16), 50, seed=3)
    truth = np.array([x[a:b, c:d].sum() for a, b, c, d in zip(*w.rectangles(), strict=True)])
    hits = []
    for s in range(400):
        rel = dh.publish(x, epsilon=0.5, method=method, rng=s)
        low, high = rel.intervals(*w.rectangles())
        hits.append((low <= truth) & (truth <= high))
    assert 0.94 <= np.mean(hits) <= 0.96


def test_privtree_counts_over_fixed_leaves_have_the_stated_variance():
    """The leaves (and the frontier least squares measures beside them, measured twice
    where a leaf lies on it) published over 300 seeds: the model's variance of each
    rectangle against the empirical one (a 20% band: sums of few Laplace draws have heavy
    tails, so a variance from 300 draws scatters by about 10%)."""
    from dataclasses import dataclass

    from dphist._kernel import Accountant, protect_grid
    from dphist._kernel.noise import GeneratorBits, NoiseSource
    from dphist.blocks import Block
    from dphist.methods.run import run
    from dphist.twod.privtree import LeafTotals

    x = grid((16, 16), 8)
    # a quadtree decomposition: two quadrants split once more, two kept whole
    r0 = np.array([0, 0, 4, 4, 0, 8, 8, 8, 12, 12])
    r1 = np.array([4, 4, 8, 8, 8, 16, 12, 12, 16, 16])
    c0 = np.array([0, 4, 0, 4, 8, 0, 8, 12, 8, 12])
    c1 = np.array([4, 8, 4, 8, 16, 8, 12, 16, 12, 16])

    @dataclass(frozen=True, kw_only=True)
    class Given(Block):
        label = "given_leaves"

        def run(self, state, view):
            return state.with_(notes={"leaves": (r0, r1, c0, c1)})

    data = protect_grid(x)
    rects = (np.array([0, 2, 5, 0]), np.array([16, 9, 13, 4]), np.array([0, 3, 1, 0]),
             np.array([16, 14, 9, 16]))  # fmt: skip
    answers, models = [], []
    for seed in range(300):
        root = Accountant(Fraction(1, 4), label="test")
        out = run([Given(), LeafTotals(share=1)], data, epsilon=Fraction(1, 4),
                  budget=root.child(Fraction(1, 4), label="t"),
                  noise=NoiseSource(GeneratorBits(np.random.default_rng(seed))))  # fmt: skip
        rel = dh.twod.Release2D(out.estimate.reshape(16, 16), "t", {}, Fraction(1, 4), out.ledger,
                                False, "", out.uncertainty)  # fmt: skip
        answers.append(rel.rects(*rects))
        models.append(rel.uncertainty.noise.variance(*rects))  # the noise (no bracket)
    ratio = np.var(answers, axis=0) / np.mean(models, axis=0)
    assert np.all((ratio > 0.8) & (ratio < 1.2)), ratio


def test_heat_map_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    from dphist.twod.plot import plot_grid

    x = grid((8, 6), 9)
    rel = dh.publish(x, epsilon=1, method="HB2D", rng=0)
    path = plot_grid(rel, tmp_path / "grid.png", true=x, labels=(None, list("abcdef")))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValidationError):
        plot_grid(rel, tmp_path / "bad.png", true=np.zeros((3, 3)))
