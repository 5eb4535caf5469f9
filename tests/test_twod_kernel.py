"""The kernel's 2-D side: sealing a grid, the 2-D queries' sensitivities (brute force
over every one-record change), the quadtree split against a reference, MWEM's choice."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dphist._kernel import (
    Accountant,
    GridHaar,
    GridSums,
    Identity,
    QuadSplit,
    RectangleSums,
    WorstRectangle,
    protect,
    protect_grid,
)
from dphist._kernel.noise import GeneratorBits, NoiseSource
from dphist._kernel.view import PrivateView
from dphist._numeric.grid2d import prefix2d, rect_totals
from dphist._numeric.rect_tree import QuadLayout
from dphist.errors import (
    BudgetExceededError,
    DomainError,
    InputTypeError,
    InternalError,
    ValidationError,
)


def column_norms(query, shape) -> tuple[int, int]:
    """Max over cells of the L1 and squared L2 change of the answers when one record is
    added to that cell (brute force)."""
    n = shape[0] * shape[1]
    base = query.apply(np.zeros(n, dtype=np.int64))
    l1, l2 = 0, 0
    for k in range(n):
        e = np.zeros(n, dtype=np.int64)
        e[k] = 1
        d = query.apply(e) - base
        l1, l2 = max(l1, int(np.abs(d).sum())), max(l2, int((d * d).sum()))
    return l1, l2


def test_protect_grid_seals_row_major_with_its_shape():
    data = protect_grid(np.array([[1, 2, 3], [4, 5, 6]]))
    assert data.shape == (2, 3) and data.n == 6
    assert "shape=(2, 3)" in repr(data)
    again = data.reordered(np.array([5, 4, 3, 2, 1, 0]))
    assert again.shape == (6,) and again.max_records == 1
    with pytest.raises(InternalError):
        data.reordered(np.array([0, 0, 1, 2, 3, 4]))


@pytest.mark.parametrize(
    "bad, error, text",
    [
        ([1, 2, 3], DomainError, "rows x cols"),
        (np.zeros((0, 3)), DomainError, "empty"),
        (np.array([[1.5, 2]]), DomainError, "whole numbers"),
        (np.array([[1, -2]]), DomainError, "non-negative"),
        (np.array([[True, False]]), InputTypeError, "booleans"),
    ],
)
def test_protect_grid_refuses_what_is_not_a_grid(bad, error, text):
    with pytest.raises(error, match=text):
        protect_grid(bad)


def test_protect_grid_refuses_a_dataframe():
    pd = pytest.importorskip("pandas")
    with pytest.raises(InputTypeError, match="DataFrame"):
        protect_grid(pd.DataFrame([[1, 2], [3, 4]]))


def test_grid_counts_are_clamped_at_the_cap_of_all_cells():
    big = np.array([[2**60, 0], [0, 0]])
    view = _view(protect_grid(big), 10**9)
    m = view.measure(GridSums((2, 2), np.array([0, 2]), np.array([0, 2])))
    assert abs(int(m.values[0]) - 2**53 // 4) < 100


@pytest.mark.parametrize("shape", [(3, 4), (5, 2), (1, 7)])
def test_grid_query_sensitivities_match_brute_force(shape):
    rows, cols = shape
    rng = np.random.default_rng(rows * cols)
    queries = [
        GridSums(shape, np.array([0, 1, rows]) if rows > 1 else np.array([0, 1]),
                 np.array([0, cols - 1, cols]) if cols > 1 else np.array([0, 1])),
        GridHaar(shape),
    ]  # fmt: skip
    for _ in range(3):
        k = int(rng.integers(1, 6))
        a = np.sort(rng.integers(0, rows + 1, (k, 2)), axis=1)
        b = np.sort(rng.integers(0, cols + 1, (k, 2)), axis=1)
        a[:, 1] = np.maximum(a[:, 1], a[:, 0] + 1).clip(max=rows)
        a[:, 0] = np.minimum(a[:, 0], a[:, 1] - 1)
        b[:, 1] = np.maximum(b[:, 1], b[:, 0] + 1).clip(max=cols)
        b[:, 0] = np.minimum(b[:, 0], b[:, 1] - 1)
        queries.append(RectangleSums(shape, a[:, 0], a[:, 1], b[:, 0], b[:, 1]))
    for q in queries:
        l1, l2 = column_norms(q, shape)
        assert q.sensitivity == l1, q.describe()
        assert q.sensitivity2 == l2, q.describe()


def test_rectangle_sums_answer_by_prefix_sums():
    x = np.arange(20).reshape(4, 5)
    q = RectangleSums((4, 5), np.array([0, 1, 3]), np.array([4, 3, 4]), np.array([0, 2, 4]),
                      np.array([5, 4, 5]))  # fmt: skip
    assert q.apply(x.ravel()).tolist() == [x.sum(), x[1:3, 2:4].sum(), x[3, 4]]
    assert q.sensitivity == 2  # cell (3, 4) lies in the first and the last
    with pytest.raises(ValidationError):
        RectangleSums((4, 5), np.array([2]), np.array([2]), np.array([0]), np.array([1]))


def _view(data, epsilon, seed=0) -> PrivateView:
    budget = Accountant(Fraction(epsilon), label="test")
    return PrivateView(data, budget, NoiseSource(GeneratorBits(np.random.default_rng(seed))), "t")


def test_view_refuses_a_query_over_another_shape():
    view = _view(protect_grid(np.ones((3, 4), dtype=int)), 1)
    with pytest.raises(InternalError, match="domain"):
        view.measure(GridSums((4, 3), np.array([0, 4]), np.array([0, 3])))
    assert view.shape == (3, 4) and _view(protect([1, 2]), 1).shape == (2,)


def test_measurement_as_floats_converts_its_own_answers_in_place():
    view = _view(protect_grid(np.arange(300_000).reshape(600, 500) % 7), 1)
    m = view.measure(Identity(300_000))
    ints = m.values.copy()
    before = m.values.__array_interface__["data"][0]
    out = m.as_floats()
    assert out.dtype == np.float64 and not out.flags.writeable and m.values is out
    assert out.__array_interface__["data"][0] == before  # no second array of answers
    np.testing.assert_array_equal(out, ints.astype(np.float64))
    assert m.as_floats() is out
    view2 = _view(protect_grid(np.ones((2, 3), dtype=int)), 1)
    m2 = view2.measure(GridSums((2, 3), np.array([0, 2]), np.array([0, 1, 3])))
    m2_ints = m2.values.copy()
    np.testing.assert_array_equal(m2.as_floats(), m2_ints)


def reference_split(x2d, plan, noise):
    """A plain PrivTree on the quadtree, one level at a time, drawing the level's noise in
    one call as the kernel does (so the same stream gives the same decisions)."""
    layout = QuadLayout(x2d.shape)
    p = prefix2d(x2d)
    active = [(0, x2d.shape[0], 0, x2d.shape[1])]
    leaves, level = [], 0
    while active:
        deciding = []
        for node in active:
            if (node[1] - node[0]) * (node[3] - node[2]) == 1:
                leaves.append(node)
            else:
                deciding.append(node)
        z = noise.discrete_laplace(plan.t, plan.s, len(deciding))
        active = []
        for node, zi in zip(deciding, z, strict=True):
            count = int(rect_totals(p, *node)) << -plan.g_exp
            biased = max(count - level * plan.delta, plan.theta - plan.delta)
            if biased + zi > plan.theta:
                kids = layout.children(*(np.array([v]) for v in node))
                active += list(zip(*(k.tolist() for k in kids[:4]), strict=True))
            else:
                leaves.append(node)
        level += 1
    return sorted(leaves)


@pytest.mark.parametrize("seed", range(4))
def test_quad_split_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    x = rng.poisson(rng.choice([0.2, 3.0, 30.0], size=(6, 9)))
    split = QuadSplit(QuadLayout(x.shape), "count", 0.0)
    eps = Fraction(1, 2)
    fast = split.choose(x.ravel(), eps, NoiseSource(GeneratorBits(np.random.default_rng(seed))))
    ref = reference_split(
        x, split.plan(eps), NoiseSource(GeneratorBits(np.random.default_rng(seed)))
    )
    assert sorted(zip(*(a.tolist() for a in fast), strict=True)) == ref
    area = (fast[1] - fast[0]) * (fast[3] - fast[2])
    assert area.sum() == x.size  # the leaves partition the grid


def test_quad_split_is_charged_before_reading():
    data = protect_grid(np.ones((8, 8), dtype=int) * 50)
    view = _view(data, Fraction(1, 4))
    leaves = view.select(QuadSplit(QuadLayout((8, 8)), "count", 0.0))
    (charge,) = view._budget.ledger
    assert charge.epsilon == Fraction(1, 4) and charge.sensitivity == 1
    assert len(leaves[0]) > 1  # dense data splits
    with pytest.raises(BudgetExceededError, match="short by"):
        view.select(QuadSplit(QuadLayout((8, 8)), "count", 0.0), epsilon=Fraction(1, 8))


def test_worst_rectangle_picks_the_worst_at_high_epsilon():
    x = np.zeros((4, 4), dtype=np.int64)
    x[3, 3] = 100
    q = WorstRectangle((4, 4), np.array([0, 2, 3]), np.array([2, 4, 4]), np.array([0, 2, 3]),
                       np.array([2, 4, 4]), np.array([0.0, 0.0, 100.0]))  # fmt: skip
    noise = NoiseSource(GeneratorBits(np.random.default_rng(0)))
    assert q.choose(x.ravel(), Fraction(1000), noise) == 1
    assert q.sensitivity(16) == 1
