"""The table samplers: certified thresholds, exact laws, ties, tails and the bit stream."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dphist._kernel import gaussian as gs
from dphist._kernel import lookup
from dphist._kernel import noise as nz
from dphist._kernel import tables as tb
from dphist._kernel.certified import exp_neg, floor_bits
from dphist.errors import InternalError

TABLE = 1 << 16  # a request this large uses the tables for the scales below


def laplace_below(e: np.ndarray, t: int, s: int) -> np.ndarray:
    """Exact ``P(Y < e)`` of the discrete Laplace for integer cut points ``e``."""
    p = math.exp(-s / t)
    e = np.asarray(e, dtype=np.float64)
    return np.where(e <= 0, np.exp((e - 1) * s / t) / (1 + p), 1 - np.exp(-e * s / t) / (1 + p))


def gaussian_below(e: np.ndarray, sigma2: float) -> np.ndarray:
    span = int(40 * math.sqrt(sigma2)) + 40
    y = np.arange(-span, span + 1)
    w = np.exp(-(y.astype(float) ** 2) / (2 * sigma2))
    cdf = np.concatenate(([0.0], np.cumsum(w) / w.sum()))
    return cdf[np.clip(np.asarray(e) + span, 0, cdf.size - 1)]


def assert_variance(y: np.ndarray, variance: float) -> None:
    """The mean square within six standard errors of the exact variance."""
    sq = y.astype(np.float64) ** 2
    assert abs(sq.mean() - variance) <= 6 * sq.std() / math.sqrt(y.size) + 1e-12


def chi2_pvalue(y: np.ndarray, below, cells: int = 60) -> float:
    """Chi-square of draws against an exact CDF over cells cut at sample quantiles
    (integer cut points: every cell's probability is exact)."""
    cuts = np.unique(np.ceil(np.quantile(y, np.linspace(0, 1, cells + 1)[1:-1])).astype(np.int64))
    observed = np.bincount(np.searchsorted(cuts, y, side="right"), minlength=cuts.size + 1)
    expected = np.diff(np.concatenate(([0.0], below(cuts), [1.0]))) * y.size
    return stats.chisquare(observed, expected).pvalue


# --- certified arithmetic ------------------------------------------------------------


@pytest.mark.parametrize(("num", "den"), [(0, 1), (1, 1), (1, 3), (7, 2), (10**6, 7), (5, 2**56)])
def test_exp_bounds_contain_the_value_and_are_tight(num, den):
    getcontext().prec = 120
    exact = (-Decimal(num) / Decimal(den)).exp() * (Decimal(2) ** 256)
    lo, hi = exp_neg(num, den, 256)
    assert lo <= exact <= hi
    assert hi - lo <= 4 or hi <= 1


def test_floor_bits_refuses_an_undecided_interval():
    assert floor_bits((5 << 10, (5 << 10) + 3), 20, 10) == 5
    assert floor_bits(((6 << 10) - 1, (6 << 10) + 1), 20, 10) is None


def test_laplace_thresholds_are_the_exact_189_bit_floors():
    """Brute force: every threshold against the boundary computed with 120 digits."""
    getcontext().prec = 120
    t, s = 3, 1
    tables = tb.laplace_tables(t, s)
    m = tables.m
    p = (-Decimal(s) / Decimal(t)).exp()
    h = p / (1 + p)
    left = [h * p**k for k in range(m, -1, -1)]
    bounds = left + [1 - b for b in reversed(left)]
    words = [int(w) for w in tables.top.th.reshape(-1)]
    floors = [
        (words[3 * j] << 126) + (words[3 * j + 1] << 63) + words[3 * j + 2]
        for j in range(len(bounds))
    ]
    assert floors == [int(b * (Decimal(2) ** 189)) for b in bounds]


# --- laws ---------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("t", "s"), [(1, 8), (1, 1), (10, 1), (1000, 1), (2**20, 3), (2**40 + 1, 7)]
)
def test_table_laplace_law(t, s):
    """One word a draw (scale <= 1024), two (<= 2**22) and four: the exact law."""
    y = nz.noise_source(t + s).discrete_laplace(t, s, TABLE * 4)
    assert nz.use_tables(y.size, tb.laplace_size(t, s))
    assert chi2_pvalue(y, lambda e: laplace_below(e, t, s)) > 1e-4
    assert_variance(y, nz.discrete_laplace_variance(t, s))


@pytest.mark.statistical
def test_chi_square_detects_a_one_percent_scale_error():
    y = nz.noise_source(5).discrete_laplace(100, 1, TABLE * 16)
    assert chi2_pvalue(y, lambda e: laplace_below(e, 100, 1)) > 1e-4
    assert chi2_pvalue(y, lambda e: laplace_below(e, 101, 1)) < 1e-8


@pytest.mark.statistical
@pytest.mark.parametrize(("a", "b"), [(1, 3), (10, 1), (1000, 7), (250_000, 1)])
def test_table_gaussian_law(a, b):
    y = gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(a)), a, b, TABLE * 4)
    assert nz.use_tables(y.size, tb.gaussian_size(a, b))
    assert chi2_pvalue(y, lambda e: gaussian_below(e, a / b)) > 1e-4
    assert_variance(y, gs.discrete_gaussian_variance(a, b))


@pytest.mark.statistical
def test_tails_beyond_the_tables_follow_the_law(monkeypatch):
    """With the tables cut to about half their mass, most draws take the tail paths
    (geometric continuation; Gaussian rejection): the whole law is still exact."""
    monkeypatch.setattr(tb, "_TAIL_BITS", 1)
    tb.laplace_tables.cache_clear()
    tb.gaussian_table.cache_clear()
    try:
        y = nz.noise_source(1).discrete_laplace(40, 1, TABLE * 2)
        assert chi2_pvalue(y, lambda e: laplace_below(e, 40, 1)) > 1e-4
        assert np.mean(np.abs(y) > tb.laplace_tables(40, 1).m) > 0.3
        z = gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(2)), 400, 1, TABLE * 2)
        assert chi2_pvalue(z, lambda e: gaussian_below(e, 400.0)) > 1e-4
        assert np.mean(np.abs(z) > tb.gaussian_table(400, 1).half) > 0.2
    finally:
        tb.laplace_tables.cache_clear()
        tb.gaussian_table.cache_clear()


# --- ties: the words after the first decide -----------------------------------------


def _index_by_brute_force(table: tb.Table, v: int) -> int:
    """``#{j : B_j <= V}`` for a 189-bit prefix ``v`` of V (no tie at 189 bits)."""
    th = [(int(a) << 126) + (int(b) << 63) + int(c) for a, b, c in table.th]
    return sum(f < v for f in th)


@pytest.mark.parametrize("second", ["below", "above", "equal-then-below", "equal-then-above"])
def test_a_first_word_tie_is_decided_by_the_next_words(second):
    top = tb.laplace_tables(5, 1).top
    j = top.th.shape[0] // 3
    w0, w1, w2 = (int(x) for x in top.th[j])
    nxt = {
        "below": (w1 - 1, 0),
        "above": (w1 + 1, 0),
        "equal-then-below": (w1, w2 - 1),
        "equal-then-above": (w1, w2 + 1),
    }[second]
    words = np.array([w0, *nxt, 12345], dtype=np.uint64)
    k, pos = lookup.table_index(words, 0, *top.args)
    v = (w0 << 126) + (nxt[0] << 63) + nxt[1]
    assert k == _index_by_brute_force(top, v)
    assert pos == (2 if second in ("below", "above") else 3)
    assert lookup.fast_index(words, 0, *top.args)[1] == -3  # the fast loop hands it over


def test_a_tie_on_all_189_bits_raises_instead_of_resampling():
    top = tb.laplace_tables(5, 1).top
    words = np.array([*top.th[7], 0], dtype=np.uint64)
    assert lookup.table_index(words, 0, *top.args)[1] == -2

    class Rigged(nz.BitSource):
        def words(self, n):
            return np.resize(words[:3], n)

    with pytest.raises(InternalError, match="headroom"):
        nz.add_discrete_laplace(Rigged(), np.zeros(TABLE, dtype=np.int64), 5, 1)


def test_fast_kernel_agrees_with_the_one_draw_reference():
    """Draw by draw with the complete lookup on the same words: the same values."""
    for t, s in ((7, 1), (3000, 1)):
        tables = tb.laplace_tables(t, s)
        words = nz.GeneratorBits(np.random.default_rng(t)).words(20_000)
        out = np.zeros(5000, dtype=np.int64)
        done, _, _ = lookup.laplace_add(words, 0, out, 0, *tables.args)
        ref, pos = [], 0
        for _ in range(done):
            y, pos = lookup.laplace_one(words, pos, *tables.args)
            ref.append(y)
        assert done > 0 and np.array_equal(out[:done], ref)


# --- the bit stream ------------------------------------------------------------------


@pytest.mark.parametrize("size", [100, TABLE])
def test_seeded_output_does_not_depend_on_chunk_sizes(monkeypatch, size):
    a = nz.noise_source(9).discrete_laplace(2**20, 3, size)
    g = gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(9)), 40, 1, size)
    monkeypatch.setattr(nz, "_CHUNK", 3)  # words fetched three at a time
    assert np.array_equal(a, nz.noise_source(9).discrete_laplace(2**20, 3, size))
    assert np.array_equal(
        g, gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(9)), 40, 1, size)
    )


def test_unused_words_return_to_a_seeded_stream():
    """Two small requests draw what one request of their total draws."""
    src = nz.noise_source(3)
    parts = np.concatenate([src.discrete_laplace(10, 1, 40), src.discrete_laplace(10, 1, 60)])
    assert np.array_equal(parts, nz.noise_source(3).discrete_laplace(10, 1, 100))


def test_noise_is_added_in_place():
    base = np.arange(TABLE, dtype=np.int64)
    out = base.copy()
    nz.noise_source(4).add_discrete_laplace(out, 10, 1)
    assert np.array_equal(out - base, nz.noise_source(4).discrete_laplace(10, 1, TABLE))
    with pytest.raises(InternalError):
        nz.noise_source(4).add_discrete_laplace(np.zeros(3), 10, 1)


def test_table_choice_depends_on_public_sizes_only():
    assert not nz.use_tables(1000, 10)
    assert nz.use_tables(TABLE, tb.laplace_size(10, 1))
    assert not nz.use_tables(TABLE, tb.gaussian_size(4000**2, 1))  # a big table waits
    assert Fraction(tb.laplace_size(2**20, 3), 1) > 0
