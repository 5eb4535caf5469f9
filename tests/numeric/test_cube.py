"""DPCube (1-D): the split by hand and against a recursive oracle, the method end to end."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._kernel import Accountant, noise_source, noise_variance, protect
from dphist._numeric.cube import cube_least_squares, cube_split
from dphist.blocks import REST, FixedSizeGroups, NoisyCells, PartsLeastSquares, Pipeline
from dphist.errors import CompositionError, ValidationError
from dphist.lab import audit
from dphist.methods.run import run


def _sse(v: np.ndarray) -> float:
    return float(((v - v.mean()) ** 2).sum()) if v.size else 0.0


def _oracle(y: np.ndarray, gain: float, lo: int = 0) -> list[int]:
    """Plain recursion over every cut: starts of the parts of ``y`` (offset ``lo``)."""
    if y.size < 2:
        return [lo]
    costs = [_sse(y[:k]) + _sse(y[k:]) for k in range(1, y.size)]
    k = 1 + int(np.argmin(costs))  # first minimum
    if not costs[k - 1] + gain < _sse(y) - 1e-9:
        return [lo]
    return _oracle(y[:k], gain, lo) + _oracle(y[k:], gain, lo + k)


def test_split_by_hand():
    # [0, 0, 4, 4]: SSE 16 whole, 0 cut at 2 (10.67 at 1 and 3): kept iff the gain < 16
    assert cube_split([0, 0, 4, 4], gain=15.9).tolist() == [0, 2]
    assert cube_split([0, 0, 4, 4], gain=16.0).tolist() == [0]
    # [0, 4, 0]: SSE 32/3; cuts at 1 and 2 both leave 8, the first wins; then [4, 0]
    # (SSE 8) is cut when the gain is below 8
    assert cube_split([0, 4, 0], gain=2.0).tolist() == [0, 1, 2]
    assert cube_split([0, 4, 0], gain=2.7).tolist() == [0]
    assert cube_split([5.0], gain=0.0).tolist() == [0]


@pytest.mark.parametrize("seed", range(6))
def test_split_matches_recursive_oracle(seed):
    rng = np.random.default_rng(seed)
    y = np.repeat(rng.poisson(20, 12), rng.integers(1, 6, 12)) + rng.normal(0, 3, size=1)
    for gain in (0.5, 5.0, 50.0, 500.0):
        assert cube_split(y, gain=gain).tolist() == _oracle(y, gain)


def test_split_rejects_bad_gain():
    with pytest.raises(ValidationError):
        cube_split([1, 2], gain=-1.0)


@pytest.mark.parametrize(
    ("alias", "name", "publisher"),
    [("dpcube1d", "DPCube", "group_totals"), ("dpcube-ls", "DPCube-LS", "part_totals")],
)
def test_method_finds_the_steps_and_charges_each_phase(alias, name, publisher):
    x = np.array([0] * 22 + [50] * 22 + [0] * 22)
    r = dh.publish(x, epsilon=1e6, method=alias, rng=3)
    assert r.method == name
    # cells of 11 bins are exact at this epsilon; the split keeps the two steps only
    # (three parts of whole cells)
    assert np.allclose(r.estimate, x, atol=1e-3)
    assert [(c.block, c.epsilon, c.size) for c in r.ledger] == [
        ("cells", 5e5, 6),
        (publisher, 5e5, 3),
    ]
    lo, hi = r.interval(20, 30)
    assert lo <= x[20:30].sum() <= hi


def test_ratio_and_width_are_settings():
    x = np.arange(30)
    r = dh.publish(x, epsilon=1.0, method="DPCube", ratio=0.25, width=4, rng=1)
    assert r.ledger[0].size == 8  # ceil(30 / 4) cells
    assert float(r.ledger[0].epsilon) == 0.25
    with pytest.raises(ValidationError):
        dh.publish(x, epsilon=1.0, method="DPCube", width=0)


@pytest.mark.statistical
@pytest.mark.extended
@pytest.mark.parametrize(("method", "seed"), [("DPCube", 36), ("DPCube-LS", 37)])
def test_audit_with_cells_that_let_the_split_act(method, seed):
    # the registry-wide audit runs 8 bins, one cell of 11: here cells of 2 bins, so the
    # split (and DPCube-LS's mix) depends on the noisy counts
    mech = audit.method_mechanism(method, epsilon=1.0, width=2)
    pairs = list(audit.method_catalogue(method, 8))[:2]
    result = audit.audit(mech, pairs, n_search=800, n_confirm=3_200, seed=[20260, seed])
    assert not result.flagged, result.summary()


# --------------------------------------------------------------------------- least squares


def test_least_squares_by_hand():
    # part [1, 2, 3] sums to 6 against a total of 9; equal variances (r = 1): each bin
    # moves by 1 * (9 - 6) / (1 + 3 * 1) = 0.75, variance 2 (1 - 1/4) = 1.5; the lone
    # bin 10 against its total 10 stays, variance 2 (1 - 1/2) = 1
    y, totals = [1.0, 2.0, 3.0, 10.0], [9.0, 10.0]
    est, var = cube_least_squares(y, [0, 3], totals, var_cells=2.0, var_parts=2.0)
    assert np.allclose(est, [1.75, 2.75, 3.75, 10.0], rtol=0, atol=1e-12)
    assert np.allclose(var, [1.5, 1.5, 1.5, 1.0], rtol=0, atol=1e-12)
    # a precise total (r = 4): the bins take 4 * 3 / 13 of the gap each
    est, _ = cube_least_squares([1.0, 2.0, 3.0], [0], [9.0], var_cells=2.0, var_parts=0.5)
    assert np.allclose(est, np.array([1.0, 2.0, 3.0]) + 12 / 13)


def _dense_gls(y, starts, totals, var_cells, var_parts):
    """Weighted least squares with the whole design matrix (bins, then part totals)."""
    n = y.size
    ends = np.append(starts[1:], n)
    parts = np.zeros((starts.size, n))
    for g, (a, b) in enumerate(zip(starts, ends, strict=True)):
        parts[g, a:b] = 1.0
    design = np.vstack((np.eye(n), parts))
    w = np.concatenate((np.full(n, 1 / var_cells), np.full(starts.size, 1 / var_parts)))
    obs = np.concatenate((y, totals))
    sw = np.sqrt(w)
    est = np.linalg.lstsq(design * sw[:, None], obs * sw, rcond=None)[0]
    cov = np.linalg.inv(design.T @ (design * w[:, None]))
    return est, cov


@pytest.mark.parametrize("seed", range(5))
def test_least_squares_matches_dense_oracle(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    starts = np.flatnonzero(np.concatenate(([True], rng.random(n - 1) < 0.4)))
    y = rng.normal(5, 3, n)
    totals = rng.normal(5, 3, starts.size) * np.diff(np.append(starts, n))
    v_cells, v_parts = rng.uniform(0.1, 10, 2)
    est, var = cube_least_squares(y, starts, totals, var_cells=v_cells, var_parts=v_parts)
    want, cov = _dense_gls(y, starts, totals, v_cells, v_parts)
    assert np.allclose(est, want) and np.allclose(var, np.diag(cov))


def test_least_squares_rejects_bad_input():
    for bad in (
        lambda: cube_least_squares([1.0, 2.0], [0, 1], [1.0], var_cells=1.0, var_parts=1.0),
        lambda: cube_least_squares([1.0, 2.0], [1], [1.0], var_cells=1.0, var_parts=1.0),
        lambda: cube_least_squares([1.0, np.nan], [0], [1.0], var_cells=1.0, var_parts=1.0),
        lambda: cube_least_squares([1.0], [0], [1.0], var_cells=0.0, var_parts=1.0),
    ):
        with pytest.raises(ValidationError):
            bad()


def test_least_squares_method_error_bars_are_the_dense_posterior():
    # cells of 2 bins: the estimate of a range is linear in the noisy cell and part
    # totals; its noise variance is the GLS covariance of the cells, spread over their
    # bins
    x = np.array([3, 1, 4, 1, 5, 9, 2])
    r = dh.publish(x, epsilon=2.0, method="DPCube-LS", width=2, ratio=0.5, rng=5)
    v_cells, v_parts = (float(noise_variance(1, c.epsilon)) for c in r.ledger)
    edges = np.array([0, 2, 4, 6, 7])
    starts = np.searchsorted(edges, np.flatnonzero(np.diff(r.groups, prepend=-1)))
    _, cov = _dense_gls(np.zeros(4), starts, np.zeros(starts.size), v_cells, v_parts)
    spread = np.zeros((7, 4))
    for c in range(4):
        spread[edges[c] : edges[c + 1], c] = 1.0 / (edges[c + 1] - edges[c])
    for lo, hi in [(0, 7), (1, 4), (3, 6), (6, 7), (2, 3)]:
        a = np.zeros(7)
        a[lo:hi] = 1.0
        want = a @ spread @ cov @ spread.T @ a
        assert np.isclose(r.uncertainty.noise.variance(lo, hi)[0], want)
    # inside a cell the even spread is biased: the bins' intervals add its bracket
    assert type(r.uncertainty.bias).__name__ == "Bracket" and "grouping bias" in r.error_bars


def test_least_squares_needs_whole_cells():
    # parts of 2 bins over cells of 3: a part ends inside a cell
    blocks = (
        NoisyCells(share=0.5, width=3),
        FixedSizeGroups(width=2),
        PartsLeastSquares(share=REST),
    )
    x = protect(np.arange(9))
    with pytest.raises(CompositionError, match="whole noisy cells"):
        run(
            Pipeline(blocks),
            x,
            epsilon=Fraction(10**6),
            budget=Accountant(Fraction(10**6)),
            noise=noise_source(1),
        )


def test_least_squares_method_rules():
    # the paper's stopping rule (default) and DPBench's gain rule, both between whole
    # cells: at this epsilon both find the two steps of 22 bins (cells of 11)
    x = np.array([0] * 22 + [50] * 22)
    for rule in ("variance", "gain"):
        r = dh.publish(x, epsilon=1e6, method="DPCube-LS", rule=rule, rng=2)
        assert np.unique(r.groups).size == 2 and np.allclose(r.estimate, x, atol=1e-3)
    with pytest.raises(ValidationError):
        dh.publish(x, epsilon=1.0, method="DPCube-LS", rule="median")
