"""The table samplers: certified thresholds, exact laws, ties, tails and the bit stream."""

from __future__ import annotations

import bisect
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

TABLE = 1 << 16  # a request this large uses the tables for every scale below
UNITS = tb.THRESHOLD_UNITS


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


def floors(table_th: np.ndarray) -> list[int]:
    """Each threshold's twelve units as one 192-bit integer."""
    rows = table_th.reshape(-1, UNITS)
    return [int.from_bytes(r.astype(">u2").tobytes(), "big") for r in rows]


def laplace_bounds(t: int, s: int) -> list[Decimal]:
    """The top table's boundaries at 120 digits (``h q**k``, then ``1 - h q**k``)."""
    getcontext().prec = 120
    d, m = tb._laplace_plan(t, s)
    p = (-Decimal(s) / Decimal(t)).exp()
    q = (-Decimal(s << (tb.DIGIT_BITS * d)) / Decimal(t)).exp()
    h = p / (1 + p)
    left = [h * q**k for k in range(m, -1, -1)]
    return left + [1 - b for b in reversed(left)]


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


@pytest.mark.parametrize(("t", "s"), [(3, 1), (2000, 3)])
def test_laplace_thresholds_are_the_exact_192_bit_floors(t, s):
    """Brute force: every threshold (top, tail and digit tables) against the boundary
    computed with 120 digits."""
    tables = tb.laplace_tables(t, s)
    got = floors(tables.th)
    top = laplace_bounds(t, s)
    expected = [int(b * (Decimal(2) ** 192)) for b in top]
    q = (-Decimal(s << (tb.DIGIT_BITS * tables.d)) / Decimal(t)).exp()
    expected += [int((1 - q**k) * (Decimal(2) ** 192)) for k in range(1, tables.m + 1)]
    p = (-Decimal(s) / Decimal(t)).exp()
    for j in range(tables.d - 1, -1, -1):  # digits, most significant first
        r = p ** (1 << (tb.DIGIT_BITS * j))
        total = 1 - r ** (1 << tb.DIGIT_BITS)
        expected += [int((1 - r**k) / total * (Decimal(2) ** 192)) for k in range(1, 256)]
    assert got == expected
    assert tables.cum[0, 0] == 0 and tables.cum[-1, -1] == len(expected)
    cells = tables.cum.shape[1] - 1
    assert cells == 1 << (tb.UNIT_BITS - tables.shift) and cells >= 16 * (tables.d and 255)


def test_gaussian_thresholds_are_the_exact_192_bit_floors():
    getcontext().prec = 120
    a, b = 7, 2
    table = tb.gaussian_table(a, b)
    half = table.half
    span = 400
    w = {y: (-Decimal(y * y * b) / Decimal(2 * a)).exp() for y in range(-span, span + 1)}
    total = sum(w.values())
    below = sum(v for y, v in w.items() if y < -half)
    expected = []
    for y in range(-half - 1, half + 1):
        if y >= -half:
            below += w[y]
        expected.append(int(below / total * (Decimal(2) ** 192)))
    assert floors(table.th) == expected


# --- the fast path by enumeration ------------------------------------------------------


@pytest.mark.parametrize(("t", "s"), [(10, 1), (1, 3)])
def test_every_first_unit_gives_the_inverse_of_the_exact_cdf(t, s):
    """Brute-force oracle over all 2**16 first units, each followed by its own random
    continuation: the kernel's value is outcome ``#{j : B_j <= V}`` with the boundaries
    ``B_j`` at 120 digits (a tail outcome: its sign and a magnitude beyond the table)."""
    tables = tb.laplace_tables(t, s)
    m, width = tables.m, 41
    bounds = laplace_bounds(t, s)
    rng = np.random.default_rng(t)
    units = rng.integers(0, 1 << 16, (1 << 16, width), dtype=np.uint64).astype(np.uint16)
    units[:, 0] = np.arange(1 << 16)
    more = rng.integers(0, 1 << 16, 400, dtype=np.uint64).astype(np.uint16)  # for tails
    scale = Decimal(2) ** (16 * width)
    out = np.zeros(1, dtype=np.int64)
    for u in range(1 << 16):
        out[0] = 0
        stream = np.concatenate((units[u], more))
        assert lookup.laplace_add(stream, 0, out, 0, *tables.args)[::2] == (1, 0)
        v = Decimal(int.from_bytes(units[u].astype(">u2").tobytes(), "big")) / scale
        k = bisect.bisect_right(bounds, v)
        if 0 < k < 2 * m + 2:
            assert out[0] == k - m - 1, u
        else:
            assert out[0] < -m if k == 0 else out[0] > m, u


def test_first_units_split_the_unit_interval_as_the_exact_law_does():
    """A first unit no threshold starts with decides its outcome: counting them per
    outcome gives its exact probability times 2**16, to within the two units its
    boundaries fall in."""
    t, s = 30, 1
    tables = tb.laplace_tables(t, s)
    m = tables.m
    first = tables.th[: (2 * m + 2) * UNITS : UNITS].astype(np.int64)  # the top table
    units = np.arange(1 << 16)
    decided = ~np.isin(units, first)
    outcome = np.searchsorted(first, units, side="left")[decided]
    cells = np.bincount(outcome, minlength=2 * m + 3)
    p = math.exp(-s / t)
    values = np.arange(2 * m + 3) - m - 1
    pmf = (1 - p) / (1 + p) * p ** np.abs(values)
    pmf[0] = pmf[-1] = p ** (m + 1) / (1 + p)  # the two tail outcomes
    assert np.all(np.abs(cells - pmf * (1 << 16)) <= 2)


# --- laws ---------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("t", "s"), [(1, 8), (1, 1), (10, 1), (1000, 1), (2**20, 3), (2**40 + 1, 7)]
)
def test_table_laplace_law(t, s):
    """One unit a draw (scale <= 256), two (<= 65,536) and more: the exact law."""
    y = nz.noise_source(t + s).discrete_laplace(t, s, TABLE * 4)
    assert nz.use_tables(y.size, tb.laplace_size(t, s))
    assert chi2_pvalue(y, lambda e: laplace_below(e, t, s)) > 1e-4
    assert_variance(y, nz.discrete_laplace_variance(t, s))


@pytest.mark.statistical
def test_secure_table_law():
    y = nz.noise_source(None).discrete_laplace(40, 1, TABLE * 2)
    assert chi2_pvalue(y, lambda e: laplace_below(e, 40, 1)) > 1e-6


@pytest.mark.statistical
def test_chi_square_detects_a_one_percent_scale_error():
    y = nz.noise_source(5).discrete_laplace(100, 1, TABLE * 32)
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
    tb._laplace_plan.cache_clear()
    tb._gaussian_half.cache_clear()
    try:
        for t, s in ((40, 1), (3000, 1)):
            y = nz.noise_source(1).discrete_laplace(t, s, TABLE * 2)
            assert chi2_pvalue(y, lambda e, t=t, s=s: laplace_below(e, t, s)) > 1e-4
            m, d = tb.laplace_tables(t, s).m, tb.laplace_tables(t, s).d
            assert np.mean(np.abs(y) > m << (tb.DIGIT_BITS * d)) > 0.3
        z = gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(2)), 400, 1, TABLE * 2)
        assert chi2_pvalue(z, lambda e: gaussian_below(e, 400.0)) > 1e-4
        assert np.mean(np.abs(z) > tb.gaussian_table(400, 1).half) > 0.2
    finally:
        tb.laplace_tables.cache_clear()
        tb.gaussian_table.cache_clear()
        tb._laplace_plan.cache_clear()
        tb._gaussian_half.cache_clear()


# --- ties: the units after the first decide -------------------------------------------


@pytest.mark.parametrize("second", ["below", "above", "equal-then-below", "equal-then-above"])
def test_a_first_unit_tie_is_decided_by_the_next_units(second):
    tables = tb.laplace_tables(5, 1)
    top = tables.th[: (2 * tables.m + 2) * UNITS]  # row 0's thresholds
    rows = top.reshape(-1, UNITS)
    j = rows.shape[0] // 3
    w0, w1, w2 = (int(x) for x in rows[j, :3])
    nxt = {
        "below": (w1 - 1, 0),
        "above": (w1 + 1, 0),
        "equal-then-below": (w1, w2 - 1),
        "equal-then-above": (w1, w2 + 1),
    }[second]
    units = np.array([w0, *nxt, 12345], dtype=np.uint16)
    k, pos = lookup.table_index(units, 0, tables.th, tables.cum, tables.shift, 0)
    v = (w0 << 176) + (nxt[0] << 160) + (nxt[1] << 144)
    assert k == sum(f <= v for f in floors(top))
    assert pos == (2 if second in ("below", "above") else 3)
    out = np.zeros(1, dtype=np.int64)  # the fast kernel narrows the tie the same way
    assert lookup.laplace_add(units, 0, out, 0, *tables.args)[:2] == (1, pos)
    assert out[0] == k - tables.m - 1


def test_a_tie_on_all_192_bits_raises_instead_of_resampling():
    tables = tb.laplace_tables(5, 1)
    row = tables.th.reshape(-1, UNITS)[7]
    units = np.array([*row, 0], dtype=np.uint16)
    assert lookup.table_index(units, 0, tables.th, tables.cum, tables.shift, 0)[1] == -2

    class Rigged(nz.BitSource):
        def words(self, n):
            return np.resize(row, 4 * n).view(np.uint64)

    with pytest.raises(InternalError, match="headroom"):
        nz.add_discrete_laplace(Rigged(), np.zeros(TABLE, dtype=np.int64), 5, 1)


@pytest.mark.parametrize(("t", "s"), [(7, 1), (200, 1), (3000, 1), (2**30, 1)])
def test_fast_kernel_agrees_with_the_one_draw_reference(t, s):
    """Draw by draw with the complete lookup on the same units: the same values (ties
    and tails included: many at these scales)."""
    tables = tb.laplace_tables(t, s)
    units = nz.GeneratorBits(np.random.default_rng(t)).words(100_000).view(np.uint16)
    out = np.zeros(100_000, dtype=np.int64)
    done, _, _ = lookup.laplace_add(units, 0, out, 0, *tables.args)
    ref, pos = [], 0
    for _ in range(done):
        y, pos = lookup.laplace_one(units, pos, *tables.args)
        ref.append(y)
    assert done > 10_000 and np.array_equal(out[:done], ref)


def test_units_are_the_words_sixteen_bits_at_a_time():
    words = np.array([0x0123_4567_89AB_CDEF], dtype=np.uint64)
    assert [hex(u) for u in words.view(np.uint16)] == ["0xcdef", "0x89ab", "0x4567", "0x123"]
    assert lookup.pack_words(words.view(np.uint16), 0, 1)[0] == 0xCDEF_89AB_4567_0123


# --- the bit stream ------------------------------------------------------------------


@pytest.mark.parametrize("size", [100, 1000, TABLE])
def test_seeded_output_does_not_depend_on_chunk_sizes(monkeypatch, size):
    """The compiled driver of an int seed (chunks of 16,384 words, refilled inside) and
    the word-driven sampler fetching three words at a time give the same noise."""
    a = nz.noise_source(9).discrete_laplace(2**20, 3, size)
    g = gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(9)), 40, 1, size)
    monkeypatch.setattr(nz, "CHUNK", 3)  # words fetched three at a time
    driven = nz.NoiseSource(nz.GeneratorBits(np.random.Generator(np.random.PCG64(9))))
    assert driven.bits.pcg() is None  # a caller's generator: drawn through numpy
    assert np.array_equal(a, driven.discrete_laplace(2**20, 3, size))
    assert np.array_equal(
        g, gs.discrete_gaussian(nz.GeneratorBits(np.random.default_rng(9)), 40, 1, size)
    )


@pytest.mark.parametrize("sizes", [(40, 60), (600, 900), (600, 40)])
def test_unused_words_return_to_a_seeded_stream(sizes):
    """Requests after a table request start at the next whole word: two requests draw
    what their words allow, and the rest of the stream is untouched."""
    src = nz.noise_source(3)
    first = src.discrete_laplace(10, 1, sizes[0])
    second = src.discrete_laplace(10, 1, sizes[1])
    again = nz.noise_source(3)
    assert np.array_equal(first, again.discrete_laplace(10, 1, sizes[0]))
    assert np.array_equal(second, again.discrete_laplace(10, 1, sizes[1]))
    if max(sizes) < nz._TABLE_MIN:  # the direct sampler: words are never split
        assert np.array_equal(
            np.concatenate((first, second)), nz.noise_source(3).discrete_laplace(10, 1, sum(sizes))
        )


def test_noise_is_added_in_place():
    base = np.arange(TABLE, dtype=np.int64)
    out = base.copy()
    nz.noise_source(4).add_discrete_laplace(out, 10, 1)
    assert np.array_equal(out - base, nz.noise_source(4).discrete_laplace(10, 1, TABLE))
    with pytest.raises(InternalError):
        nz.noise_source(4).add_discrete_laplace(np.zeros(3), 10, 1)


def test_table_choice_depends_on_public_sizes_only():
    assert not nz.use_tables(100, 10)
    assert nz.use_tables(1000, tb.laplace_size(10, 1))
    assert all(nz.use_tables(1000, tb.laplace_size(t, 1)) for t in (1, 256, 257, 2**56))
    assert not nz.use_tables(TABLE, tb.gaussian_size(4000**2, 1))  # a big table waits
    assert Fraction(tb.laplace_size(2**20, 3), 1) > 0
