"""The lazy S1 sampler (certified noise on every interval) against exact laws and the
reference that draws every noise."""

import collections
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from scipy import stats

from dphist._kernel import NoisyPartition, coins
from dphist._kernel import partition as pt
from dphist._kernel.noise import GeneratorBits, noise_source, rational_scale
from dphist._numeric import deviation as dv
from dphist._numeric import l1_dp

# ------------------------------------------------------------------ exact laws


def dlap_pmf(z, lam):
    rho = math.exp(-1.0 / lam)
    return (1 - rho) / (1 + rho) * rho ** abs(z)


def dlap_cdf(k, lam):
    """P(Z <= k)."""
    rho = math.exp(-1.0 / lam)
    if k < 0:
        return rho ** (-k) / (1 + rho)
    return 1.0 - rho ** (k + 1) / (1 + rho)


def step_law(base, lam, width):
    """Exact P(first argmin = a, min = w) for phi_a = base_a + Z_a (integers)."""
    lo = int(min(base)) - width
    hi = int(min(base)) + width
    law = {}
    for w in range(lo, hi + 1):
        for a, ba in enumerate(base):
            p = dlap_pmf(w - ba, lam)
            for a2, b2 in enumerate(base):
                if a2 < a:
                    p *= 1.0 - dlap_cdf(w - b2, lam)  # strictly above w
                elif a2 > a:
                    p *= 1.0 - dlap_cdf(w - 1 - b2, lam)  # at least w
            if p > 0:
                law[(a, w)] = p
    return law


def goodness_of_fit(samples, law, min_expected=8.0):
    """Chi-square p-value of observed (argmin, min) pairs against ``law``."""
    reps = len(samples)
    counts = collections.Counter(samples)
    cells = sorted(law, key=law.get, reverse=True)
    obs, exp = [], []
    rest_obs, rest_exp = reps, reps * 1.0
    for cell in cells:
        e = law[cell] * reps
        if e < min_expected:
            continue
        obs.append(counts.get(cell, 0))
        exp.append(e)
        rest_obs -= obs[-1]
        rest_exp -= e
    obs.append(rest_obs)
    exp.append(max(rest_exp, 1e-9))
    return stats.chisquare(obs, np.array(exp) * (reps / sum(exp))).pvalue


# ------------------------------------------------------- one step: exact law


STEP_CASES = [
    # (x, F offsets above the floor, lambda = t/s, slack)
    ([3, 0, 4, 9, 2, 2, 2, 7, 0, 0, 1, 5, 5, 5, 8, 1], "ramp", (2, 1), 0),
    ([3, 0, 4, 9, 2, 2, 2, 7, 0, 0, 1, 5, 5, 5, 8, 1], "ramp", (3, 1), 1),
    ([0] * 16, "flat", (5, 2), 0),
    ([1, 6] * 8, "dips", (2, 1), 0),
    ([1, 6] * 8, "dips", (7, 4), 1),
]


def offsets(kind, n, rng):
    a = np.arange(n)
    if kind == "ramp":  # older starts cost more, as the DP's own drift makes them
        return (2 * (n - 1 - a) + rng.integers(0, 3, n)).astype(float)
    if kind == "flat":
        return rng.integers(0, 4, n).astype(float)
    return np.where(a % 5 == 0, 0.0, 6.0 + (n - a))  # low cost far back, blocks in between


@pytest.mark.parametrize("x, kind, ts, slack", STEP_CASES)
def test_one_step_matches_the_exact_law_of_min_and_first_argmin(x, kind, ts, slack):
    t, s = ts
    lam = t / s
    x = np.array(x)
    n = x.size
    b = n - 1
    rng = np.random.default_rng(7)
    F = offsets(kind, n, rng)
    penalty = 2.0
    dev = dv.interval_deviations(x, np.arange(n), np.full(n, b))
    base = F + np.rint(dev) + penalty  # g = 1: every value is an exact integer
    law = step_law(base, lam, width=int(60 * lam) + 10)
    assert abs(sum(law.values()) - 1.0) < 1e-9
    reps = 30000
    values, args = pt.step_samples(
        x, F, b, penalty, 1.0, t, s, reps, GeneratorBits(np.random.default_rng(11)), slack=slack
    )
    samples = list(zip(args.tolist(), values.astype(int).tolist(), strict=True))
    assert goodness_of_fit(samples, law) > 1e-4
    # the argmin alone, with every start that has a visible probability
    marg = collections.defaultdict(float)
    for (a, _), p in law.items():
        marg[a] += p
    counts = np.bincount(args, minlength=n)
    for a in range(n):
        if marg[a] * reps < 1:
            assert counts[a] <= 10, (a, counts[a], marg[a])


def test_far_blocks_are_tested_as_a_whole_and_still_win_at_the_right_rate():
    # 64 candidates: the closest has base 0; 63 others at distance 9 (lambda 2, so
    # blocks of up to 8 share fair coins). P(argmin lies in the far group) is exact.
    n = 64
    x = np.zeros(n, dtype=np.int64)
    F = np.full(n, 9.0)
    F[n - 1] = 0.0
    t, s = 2, 1
    law = step_law(F + 1.0, t / s, width=200)
    p_far = sum(p for (a, _), p in law.items() if a < n - 1)
    reps = 40000
    _, args = pt.step_samples(
        x, F, n - 1, 1.0, 1.0, t, s, reps, GeneratorBits(np.random.default_rng(3)), slack=0
    )
    far = int((args < n - 1).sum())
    assert stats.binomtest(far, reps, p_far).pvalue > 1e-4
    # and the far winners are spread over the far starts as the law says (ties on the
    # integer values favour the smaller starts)
    counts = np.bincount(args[args < n - 1], minlength=n - 1)
    marg = np.zeros(n - 1)
    for (a, _), p in law.items():
        if a < n - 1:
            marg[a] += p
    assert stats.chisquare(counts, marg / marg.sum() * counts.sum()).pvalue > 1e-4


def step_law_matrix(base, lam, window):
    """Exact P(first argmin = a, min = w) for w in ``window``, vectorised over a."""
    rho = math.exp(-1.0 / lam)

    def cdf(k):
        with np.errstate(over="ignore"):
            return np.where(k < 0, rho ** (-k) / (1 + rho), 1 - rho ** (k + 1) / (1 + rho))

    law = np.empty((window.size, base.size))
    for i, w in enumerate(window):
        pmf = (1 - rho) / (1 + rho) * rho ** np.abs(w - base)
        above = np.cumprod(1 - cdf(w - base))  # P(phi > w), running product from a = 0
        at_least = np.cumprod((1 - cdf(w - 1 - base))[::-1])[::-1]  # P(phi >= w), suffix
        law[i] = pmf * np.append(1.0, above[:-1]) * np.append(at_least[1:], 1.0)
    return law


@pytest.mark.parametrize("slack", [0, 1])
def test_large_blocks_keep_the_exact_law(slack):
    # 1024 candidates whose costs rise slowly with age: many far blocks of 2**4..2**9
    # starts are decided by shared coins, and together they win most of the time
    n = 1024
    b = n - 1
    rng = np.random.default_rng(4)
    x = np.zeros(n, dtype=np.int64)
    F = np.floor(0.02 * (b - np.arange(n)) + rng.integers(0, 4, n))
    base = F + 1.0
    t, s = 3, 1
    window = np.arange(int(base.min()) - 100, int(base.min()) + 30)
    law = step_law_matrix(base, t / s, window)
    assert abs(law.sum() - 1) < 1e-9
    reps = 25000
    values, args = pt.step_samples(
        x, F, b, 1.0, 1.0, t, s, reps, GeneratorBits(np.random.default_rng(slack)), slack=slack
    )
    edges = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    by_distance = law.sum(axis=0)[::-1]
    expected = np.array([by_distance[lo:hi].sum() for lo, hi in itertools.pairwise(edges)])
    observed = np.histogram(b - args, bins=edges)[0]
    keep = expected * reps >= 5
    assert (
        stats.chisquare(
            observed[keep], expected[keep] / expected[keep].sum() * observed[keep].sum()
        ).pvalue
        > 1e-4
    )
    by_value = law.sum(axis=1) * reps
    counts = np.array([(values == w).sum() for w in window])
    keep = by_value >= 5
    obs = np.append(counts[keep], reps - counts[keep].sum())
    exp = np.append(by_value[keep], reps - by_value[keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-4


# ------------------------------------------- whole partitions: lazy vs reference


def partition_counts(fn, reps):
    return collections.Counter(tuple(fn().tolist()) for _ in range(reps))


@pytest.mark.parametrize(
    "x, penalty, g, ts, slack",
    [
        ([3, 0, 4, 9, 2], 1.5, 1.0, (3, 1), 0),
        ([3, 0, 4, 9, 2], 1.5, 1.0, (3, 1), 1),
        ([5, 5, 5, 100, 0, 1], 1.0, 0.5, (7, 2), 0),
        ([0, 0, 1, 0, 0, 0], 0.25, 0.25, (9, 1), 0),
    ],
)
def test_partition_law_equals_the_reference_that_draws_every_noise(x, penalty, g, ts, slack):
    t, s = ts
    x = np.array(x)
    reps = 2000
    lazy_bits = GeneratorBits(np.random.default_rng(21))
    ref_noise = noise_source(np.random.default_rng(22))
    a = partition_counts(
        lambda: pt.certified_full_partition(
            x, penalty, g, t, s, lazy_bits, slack=slack, chunk=4096
        ),
        reps,
    )
    b = partition_counts(lambda: pt.reference_full_partition(x, penalty, g, t, s, ref_noise), reps)
    keys = sorted(set(a) | set(b))
    table = np.array([[a[k] for k in keys], [b[k] for k in keys]])
    big = table.sum(axis=0) >= 20
    table = np.column_stack([table[:, big], table[:, ~big].sum(axis=1)])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table)[1] > 1e-4


def test_negligible_noise_gives_the_exact_optimum():
    # methods framework A.2 oracle, and brute force on a random vector
    t, s = rational_scale(Fraction(1, 10**6), Fraction(1))
    bits = GeneratorBits(np.random.default_rng(0))
    starts = pt.certified_full_partition(np.array([5, 5, 5, 100]), 1.0, 1.0, t, s, bits)
    assert starts.tolist() == [0, 3]
    rng = np.random.default_rng(1)
    x = rng.integers(0, 20, 40)
    dev = dv.all_interval_deviations(x)
    expected = l1_dp.l1_partition_full(np.rint(dev) + 3.0)
    got = pt.certified_full_partition(x, 3.0, 1.0, t, s, bits)
    assert got.tolist() == expected.tolist()


def test_result_does_not_depend_on_how_words_are_fetched():
    # replaying a step that ran out of words must consume the stream exactly as if
    # the buffer had been large enough
    rng = np.random.default_rng(5)
    x = rng.integers(0, 30, 300)
    t, s = rational_scale(Fraction(160 * 2**21), Fraction(1))
    g = 2.0**-21
    runs = [
        pt.certified_full_partition(
            x, 13.0, g, t, s, GeneratorBits(np.random.default_rng(9)), chunk=chunk
        ).tolist()
        for chunk in (64, 1000, 1 << 16)
    ]
    assert runs[0] == runs[1] == runs[2]


def test_view_uses_the_lazy_sampler_with_the_charged_scale(monkeypatch):
    from dphist._kernel import Accountant, protect, validate_epsilon
    from dphist._kernel.view import PrivateView

    seen = {}
    original = pt.certified_full_partition

    def spy(x, penalty, g, t, s, bits, **kw):
        seen.update(g=g, t=t, s=s, penalty=penalty)
        return original(x, penalty, g, t, s, bits, **kw)

    monkeypatch.setattr("dphist._kernel.l1_partition.certified_full_partition", spy)
    acc = Accountant(validate_epsilon(0.5))
    view = PrivateView(
        protect(np.arange(50) % 7), acc.child(acc.cap, label="b"), noise_source(1), "b"
    )
    starts = view.select(NoisyPartition("all", penalty=2.0))
    assert starts[0] == 0 and np.all(np.diff(starts) > 0)
    (charge,) = acc.ledger
    g = Fraction(seen["g"])
    assert charge.scale == charge.sensitivity / Fraction(1, 2)
    assert Fraction(seen["t"], seen["s"]) * g == charge.scale
    assert seen["penalty"] == 2.0


# ------------------------------------------------------------ the primitives


@njit
def _tail_freq(words, m, paid, t, s, reps):
    pos = 0
    hits = 0
    for _ in range(reps):
        ok, pos = coins.tail_rest(words, pos, m, paid, t, s)
        if pos < 0:
            return -1
        hits += ok
    return hits


@njit
def _laplace_draws(words, t, s, reps):
    out = np.empty(reps, dtype=np.int64)
    pos = 0
    for r in range(reps):
        out[r], pos = coins.laplace_draw(words, pos, t, s)
    return out


@pytest.mark.parametrize(
    "m, paid, t, s", [(1, 0, 3, 1), (4, 0, 3, 1), (4, 1, 3, 1), (7, 2, 5, 2), (3, 0, 1, 2)]
)
def test_tail_coin_has_probability_rho_to_the_m_over_one_plus_rho(m, paid, t, s):
    rho = math.exp(-s / t)
    p = rho**m / (1 + rho) * 2**paid
    reps = 200000
    words = np.random.default_rng(m * 100 + paid).bit_generator.random_raw(60 * reps) >> np.uint64(
        1
    )
    hits = _tail_freq(words, m, paid, t, s, reps)
    assert hits >= 0
    assert stats.binomtest(int(hits), reps, p).pvalue > 1e-4


def test_laplace_draws_follow_the_discrete_laplace():
    t, s = 5, 2
    reps = 100000
    words = np.random.default_rng(4).bit_generator.random_raw(40 * reps) >> np.uint64(1)
    z = _laplace_draws(words, t, s, reps)
    lam = t / s
    support = np.arange(-12, 13)
    obs = np.array([(z == k).sum() for k in support] + [(np.abs(z) > 12).sum()])
    exp = np.array([dlap_pmf(k, lam) for k in support])
    exp = np.append(exp, 1 - exp.sum()) * reps
    assert stats.chisquare(obs, exp).pvalue > 1e-4


@settings(max_examples=200, deadline=None)
@given(
    a=st.integers(0, 2**53),
    b=st.integers(1, 2**63 - 1),
    d=st.integers(1, 2**56),
)
def test_muldivmod_is_exact(a, b, d):
    q, r = coins.muldivmod(a, b, d)
    assert r == (a * b) % d
    assert q == min((a * b) // d, 2**62)


@settings(max_examples=200, deadline=None)
@given(
    f=st.floats(-1e7, 1e7),
    c=st.floats(0, 1e6),
    thr=st.floats(-1e7, 1e7),
    e=st.integers(-30, 2),
)
def test_threshold_search_finds_the_last_passing_noise(f, c, thr, e):
    g = 2.0**e
    k = pt._kmax(f, c, g, thr)
    if -(2**52) <= k < 2**52:
        assert f + (c + k * g) <= thr < f + (c + (k + 1) * g)
    elif k == 2**52:
        assert f + (c + k * g) <= thr
    else:
        assert f + (c + (-(2**52)) * g) > thr


def test_lazy_support_bound():
    assert pt.lazy_supported(2**40, 1)
    assert not pt.lazy_supported(2**46, 1)
