"""StructureFirst's V-optimal table and boundary selection.

The pruned table is checked against a plain O(k N^2) DP on directly computed SSEs,
against exhaustive enumeration of all partitions for N <= 8, and against the
straightforward full-table implementation the pruned one replaced (kept below as
``reference_*``): same table up to rounding, and the same boundaries for fixed seeds.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from dphist import datasets
from dphist._kernel.noise import noise_source
from dphist._kernel.selection import (
    _vopt_table,
    report_noisy_min,
    structure_first_boundaries,
)
from dphist.errors import DatasetUnavailableError

# ------------------------------------------------------------------ oracles


def centred_prefix(x, bound=None):
    """Prefix sums of the (clipped) centred values and squares, as the kernel builds them."""
    c = np.asarray(x, dtype=np.float64)
    if bound is not None:
        c = np.minimum(c, bound)
    c = c - c.mean()
    p1 = np.concatenate(([0.0], np.cumsum(c)))
    p2 = np.concatenate(([0.0], np.cumsum(c * c)))
    return p1, p2


def sse_matrix(x):
    """S[a, i] = sum of squared deviations of x[a:i+1] from its mean, computed directly."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    s = np.full((n, n), np.inf)
    for a in range(n):
        for i in range(a, n):
            seg = x[a : i + 1]
            s[a, i] = float(((seg - seg.mean()) ** 2).sum())
    return s


def plain_vopt(x, k):
    """V-optimal DP over every entry, O(k N^2), on directly computed SSEs."""
    n = len(x)
    s = sse_matrix(x)
    t = np.full((k, n), np.inf)
    t[0] = s[0]
    for j in range(1, k):
        for i in range(j, n):
            a = np.arange(j, i + 1)
            t[j, i] = np.min(t[j - 1, a - 1] + s[a, i])
    return t


def exhaustive_vopt(x, k):
    """Least SSE of x[0:i+1] in j+1 buckets by trying every set of cut positions."""
    n = len(x)
    s = sse_matrix(x)
    t = np.full((k, n), np.inf)
    for i in range(n):
        for j in range(min(k, i + 1)):
            for cuts in itertools.combinations(range(1, i + 1), j):
                edges = (0, *cuts, i + 1)
                cost = sum(s[edges[b], edges[b + 1] - 1] for b in range(j + 1))
                t[j, i] = min(t[j, i], cost)
    return t


def band(n, k):
    """Mask of the entries the selection reads: rows 0..k-2, columns j..N-k+j."""
    j = np.arange(k - 1)[:, None]
    i = np.arange(n)[None, :]
    return (i >= j) & (i <= n - k + j)


def assert_table_close(table, expected, n, k, scale):
    mask = band(n, k)
    assert table.shape == (k - 1, n)
    assert np.all(np.isinf(table[~mask]))
    assert np.all(np.isfinite(table[mask]))
    np.testing.assert_allclose(table[mask], expected[: k - 1][mask], rtol=0, atol=1e-9 * scale)


# ------------------------------------------------------------------ reference implementation


@njit(cache=True)
def reference_vopt_table(p1, p2, k):  # pragma: no cover - compiled
    """The full-table V-optimal DP: every start of the last bucket, every row."""
    n = p1.shape[0] - 1
    table = np.full((k, n), np.inf)
    for i in range(n):
        m = i + 1
        s = p1[m]
        table[0, i] = p2[m] - s * s / m
    for j in range(1, k):
        for i in range(j, n):
            best = np.inf
            for a in range(j, i + 1):
                m = i + 1 - a
                s = p1[i + 1] - p1[a]
                c = table[j - 1, a - 1] + p2[i + 1] - p2[a] - s * s / m
                if c < best:
                    best = c
            table[j, i] = best
    return table


def reference_boundaries(x, k, bound, epsilon, noise):
    """StructureFirst's bucket starts from the full table (right to left, noisy min)."""
    n = x.size
    if k <= 1:
        return np.zeros(1, dtype=np.int64)
    clipped = np.minimum(x, bound).astype(np.float64)
    clipped -= clipped.mean()
    p1 = np.concatenate(([0.0], np.cumsum(clipped)))
    p2 = np.concatenate(([0.0], np.cumsum(clipped * clipped)))
    table = reference_vopt_table(p1, p2, k)
    each = Fraction(epsilon) / (k - 1)
    sensitivity = Fraction(2 * bound + 1)
    starts = [n]
    right = n
    for t in range(k - 1, 0, -1):
        a = np.arange(t, right)
        m = right - a
        s = p1[right] - p1[a]
        scores = table[t - 1, a - 1] + (p2[right] - p2[a]) - s * s / m
        right = int(a[report_noisy_min(scores, sensitivity, each, noise)])
        starts.append(right)
    starts.append(0)
    return np.array(sorted(set(starts) - {n}), dtype=np.int64)


# ------------------------------------------------------------------ inputs


def random_input(rng, n, kind):
    """Counts with ties, zeros, plateaus and spikes (the cases the bounds must survive)."""
    if kind == "poisson":
        return rng.poisson(3.0, n)
    if kind == "sparse":
        return rng.poisson(5.0, n) * (rng.random(n) < 0.2)
    if kind == "plateaus":
        levels = rng.integers(0, 4, max(1, n // 5)) * 7
        return np.resize(np.repeat(levels, 5), n)
    if kind == "binary":
        return rng.integers(0, 2, n) * 10
    if kind == "constant":
        return np.full(n, 4)
    if kind == "spikes":
        x = np.zeros(n, dtype=np.int64)
        x[rng.integers(0, n, max(1, n // 30))] = rng.integers(50, 2000, max(1, n // 30))
        return x
    raise AssertionError(kind)


KINDS = ["poisson", "sparse", "plateaus", "binary", "constant", "spikes"]


# ------------------------------------------------------------------ table


def test_hand_worked_table():
    # x = [0, 2, 10, 10], k = 3: boundary 1 lies in [1, 2] and boundary 2 in [2, 3], so
    # row 0 is read at columns 0..1 and row 1 at columns 1..2.
    # T[0] = SSE([0]) = 0, SSE([0, 2]) = 2; T[1, 1] = 0 ([0] [2]);
    # T[1, 2] = min(T[0, 0] + SSE([2, 10]) = 32, T[0, 1] + SSE([10]) = 2) = 2.
    p1, p2 = centred_prefix([0, 2, 10, 10])
    t = _vopt_table(p1, p2, 3)
    assert t.shape == (2, 4)
    np.testing.assert_allclose(t[0, :2], [0.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(t[1, 1:3], [0.0, 2.0], atol=1e-12)
    assert np.isinf(t[0, 2:]).all() and np.isinf(t[1, [0, 3]]).all()


@pytest.mark.parametrize("seed", range(6))
def test_table_matches_exhaustive_enumeration(seed):
    rng = np.random.default_rng(seed)
    for kind in KINDS:
        n = int(rng.integers(2, 9))
        x = random_input(rng, n, kind)
        full = exhaustive_vopt(x, n)
        p1, p2 = centred_prefix(x)
        scale = max(1.0, float(p2[-1]))
        for k in range(2, n + 1):
            assert_table_close(_vopt_table(p1, p2, k), full, n, k, scale)


@pytest.mark.parametrize("kind", KINDS)
def test_table_matches_plain_dp(kind):
    rng = np.random.default_rng(sum(map(ord, kind)))
    for n in (9, 23, 47):
        x = random_input(rng, n, kind)
        full = plain_vopt(x, n)
        p1, p2 = centred_prefix(x)
        scale = max(1.0, float(p2[-1]))
        for k in sorted({2, 3, math.ceil(n / 10), n // 3, n // 2, n - 1, n}):
            if k >= 2:
                assert_table_close(_vopt_table(p1, p2, k), full, n, k, scale)


def test_table_with_one_bucket_or_one_bin():
    p1, p2 = centred_prefix([5, 1, 2])
    assert _vopt_table(p1, p2, 1).shape == (0, 3)
    p1, p2 = centred_prefix([7])
    assert _vopt_table(p1, p2, 1).shape == (0, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_table_matches_reference_on_larger_inputs(kind):
    rng = np.random.default_rng(100 + KINDS.index(kind))
    for n, bound in ((300, 1000), (640, 40)):
        x = random_input(rng, n, kind) * 3
        p1, p2 = centred_prefix(x, bound)
        scale = max(1.0, float(p2[-1]))
        for k in (2, 7, math.ceil(n / 10), n // 4):
            ref = reference_vopt_table(p1, p2, k)
            assert_table_close(_vopt_table(p1, p2, k), ref, n, k, scale)


def test_table_on_far_apart_levels():
    # plateaus at 0 and 10**6 (clipped counts of a large bound): rounding stays tiny
    x = np.repeat([0, 10**6, 3, 10**6, 0, 5], [40, 7, 30, 1, 50, 12])
    p1, p2 = centred_prefix(x)
    n = x.size
    for k in (3, 6, 14):
        ref = reference_vopt_table(p1, p2, k)
        assert_table_close(_vopt_table(p1, p2, k), ref, n, k, float(p2[-1]))


# ------------------------------------------------------------------ boundaries


def boundaries_both(x, k, bound, epsilon, seed):
    new = structure_first_boundaries(x, k, bound, epsilon, noise_source(seed))
    old = reference_boundaries(x, k, bound, epsilon, noise_source(seed))
    return new, old


@pytest.mark.parametrize("kind", KINDS)
def test_boundaries_unchanged_for_fixed_seeds(kind):
    rng = np.random.default_rng(7 + KINDS.index(kind))
    for n, k, bound, eps in ((200, 20, 100, Fraction(1)), (120, 9, 30, Fraction(10**6))):
        x = random_input(rng, n, kind)
        for seed in range(3):
            new, old = boundaries_both(x, k, bound, eps, seed)
            np.testing.assert_array_equal(new, old)
            assert new[0] == 0 and np.all(np.diff(new) > 0) and new[-1] < n


def test_boundaries_follow_the_data_with_little_noise():
    # three clean plateaus and a huge budget: the V-optimal cuts are chosen
    x = np.repeat([0, 50, 10], [30, 20, 25])
    new = structure_first_boundaries(x, 3, 50, Fraction(10**9), noise_source(0))
    assert new.tolist() == [0, 30, 50]


def _load(name):
    try:
        return datasets.load(name)
    except DatasetUnavailableError as exc:
        pytest.skip(f"dataset {name} not available: {exc}")


@pytest.mark.needs_data
@pytest.mark.parametrize("name", ["searchlogs_4096", "nettrace_4096", "md_salary_4096"])
def test_real_data_table_and_boundaries_unchanged(name):
    # the first 1,024 bins (the full table of 4,096 takes seconds by the reference)
    x = _load(name)[:1024]
    n, k, bound = x.size, math.ceil(x.size / 10), 1000
    p1, p2 = centred_prefix(x, bound)
    ref = reference_vopt_table(p1, p2, k)
    assert_table_close(_vopt_table(p1, p2, k), ref, n, k, float(p2[-1]))
    for seed in range(2):
        new, old = boundaries_both(x, k, bound, Fraction(1, 10), seed)
        np.testing.assert_array_equal(new, old)
