"""The exact discrete Laplace sampler: scale, distribution, power, bit sources, modes."""

import math
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from scipy import stats

from dphist._kernel import bits as bitsrc
from dphist._kernel import noise as nz
from dphist._kernel.budget import validate_epsilon
from dphist.errors import InputTypeError, PrivacyError, ValidationError


def pmf(y, t, s):
    p = math.exp(-s / t)
    return (1 - p) / (1 + p) * p ** np.abs(y)


def chi2_pvalue(samples, t, s, min_expected=5.0):
    """Binned chi-square of samples against the exact pmf, pooling the tails."""
    n = samples.size
    lim = 1
    while n * pmf(lim + 1, t, s) >= min_expected:
        lim += 1
    edges = np.arange(-lim, lim + 1)
    # cells: (-inf, -lim], -lim+1 .. lim-1, [lim, inf)
    observed = np.bincount(np.clip(samples, -lim, lim) + lim, minlength=2 * lim + 1)
    centre = pmf(edges[1:-1], t, s)
    tail = (1 - centre.sum()) / 2
    expected = n * np.concatenate([[tail], centre, [tail]])
    return stats.chisquare(observed, expected).pvalue


@settings(max_examples=300, deadline=None)
@given(eps=st.floats(1e-3, 10), delta=st.sampled_from([1, 2, 3, 7, 16]))
def test_rational_scale_is_at_least_and_close_to_the_ideal(eps, delta):
    e = validate_epsilon(eps)
    t, s = nz.rational_scale(Fraction(delta), e)
    ideal = Fraction(delta) / e
    assert isinstance(t, int) and isinstance(s, int)
    assert ideal <= Fraction(t, s) <= ideal * (1 + Fraction(1, 10**9))
    assert t <= 2**56


def test_common_scales_are_exact():
    assert nz.rational_scale(Fraction(1), validate_epsilon(0.1)) == (10, 1)
    assert nz.rational_scale(Fraction(2), validate_epsilon(0.3)) == (20, 3)


def test_absurdly_small_epsilon_is_refused():
    with pytest.raises(ValidationError, match="too small"):
        nz.rational_scale(Fraction(1), Fraction(1, 10**18))


@pytest.mark.statistical
@pytest.mark.parametrize("t, s", [(1, 2), (1, 1), (10, 1), (1000, 1), (20, 3)])
def test_distribution_matches_the_exact_pmf(t, s):
    y = nz.noise_source(12345).discrete_laplace(t, s, 10**6)
    assert y.dtype == np.int64
    assert chi2_pvalue(y, t, s) > 1e-6
    sd = math.sqrt(nz.discrete_laplace_variance(t, s) / y.size)
    assert abs(y.mean()) < 6 * sd
    # sign symmetry of the first few magnitudes
    for k in range(1, 4):
        a, b = np.sum(y == k), np.sum(y == -k)
        if a + b > 100:
            assert abs(a - b) < 6 * math.sqrt(a + b)
    assert abs(y.var() / nz.discrete_laplace_variance(t, s) - 1) < 0.02


@pytest.mark.statistical
def test_three_percent_scale_errors_are_detected():
    t, s = 10, 1
    y = nz.noise_source(99).discrete_laplace(t, s, 10**6)
    assert chi2_pvalue(y, t, s) > 1e-6
    for factor in (Fraction(97, 100), Fraction(103, 100)):
        wrong = Fraction(t, s) * factor
        assert chi2_pvalue(y, wrong.numerator, wrong.denominator) < 1e-20


@pytest.mark.statistical
def test_secure_mode_distribution():
    y = nz.noise_source(None).discrete_laplace(4, 1, 2 * 10**5)
    assert chi2_pvalue(y, 4, 1) > 1e-6


def test_duplicated_noise_fails_the_chi_square():
    """The distribution test has power against correlated draws."""
    base = nz.noise_source(3).discrete_laplace(10, 1, 5000)
    assert chi2_pvalue(np.repeat(base, 200), 10, 1) < 1e-20


@njit
def _draw_below(words, m, count):
    out = np.empty(count, dtype=np.uint64)
    pos = 0
    for i in range(count):
        out[i], pos = nz.uniform_below(words, pos, m)
    return out, pos


@pytest.mark.parametrize("m", [3, 10, 2**32 + 1, 2**62 + 3])
def test_bounded_integers_are_uniform(m):
    words = nz.GeneratorBits(np.random.default_rng(m)).words(3 * 10**5)
    draws, pos = _draw_below(words, np.uint64(m), 10**5)
    assert pos > 0 and int(draws.max()) < m
    cells = min(m, 1000)
    binned = (draws.astype(np.float64) / m * cells).astype(np.int64) if m > cells else draws
    counts = np.bincount(binned.astype(np.int64), minlength=cells)
    assert stats.chisquare(counts).pvalue > 1e-6


def test_below_signals_exhaustion_instead_of_reading_past_the_buffer():
    words = np.array([2**64 - 1], dtype=np.uint64)  # its top 63 bits are rejected for m = 3
    _, pos = nz.uniform_below(words, 0, np.uint64(3))
    assert pos == -1


def test_seeded_noise_is_reproducible_and_seed_independent_of_numpy_global_state():
    a = nz.noise_source(5).discrete_laplace(7, 1, 1000)
    np.random.seed(0)  # noqa: NPY002 (the point: global state must not matter)
    b = nz.noise_source(5).discrete_laplace(7, 1, 1000)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, nz.noise_source(6).discrete_laplace(7, 1, 1000))


def test_secure_source_takes_no_seed_and_is_private():
    with pytest.raises(TypeError):
        nz.SystemBits(42)
    assert nz.noise_source(None).private is True
    assert nz.noise_source(1).private is False
    assert nz.noise_source(np.random.default_rng(1)).private is False


@pytest.mark.parametrize("bad", [1.5, "7", True, object(), -3])
def test_bad_rng_is_refused(bad):
    with pytest.raises((InputTypeError, ValidationError), match="rng"):
        nz.noise_source(bad)


def test_os_randomness_failure_fails_closed(monkeypatch):
    def broken(n):
        raise OSError("no entropy")

    monkeypatch.setattr(bitsrc.os, "urandom", broken)
    empty = [bitsrc._NO_WORDS, np.zeros(1, dtype=np.int64)]
    monkeypatch.setattr(bitsrc, "_POOL", empty)  # the next read of the pool fails
    with pytest.raises(PrivacyError, match="random source failed"):
        nz.noise_source(None).discrete_laplace(1, 1, 10)
    with pytest.raises(PrivacyError, match="random source failed"):
        nz.noise_source(None).discrete_laplace(1, 1, 10**6)  # read directly, not pooled


def test_pooled_secure_words_are_handed_out_once():
    bits = nz.SystemBits()
    got = [bits.words(k) for k in (1, 7, 4096, 3000, 4096, 50_000)]  # pooled, refilled, direct
    words = np.concatenate(got)
    assert all(g.flags.writeable and g.dtype == np.uint64 for g in got)
    assert np.unique(words).size == words.size  # 2**64 words: a repeat means reuse


def test_threads_drawing_secure_noise_share_no_pooled_word(monkeypatch):
    """Words handed out and draws made on the pool at once from several threads: no
    word twice (the pool's position moves under its lock)."""
    import threading

    taken = []
    real = bitsrc.SystemBits.words

    def spy(self, n):
        got = real(self, n)
        taken.append(got.copy())
        return got

    monkeypatch.setattr(bitsrc.SystemBits, "words", spy)
    src = nz.noise_source(None)

    def work():
        for _ in range(25):
            src.bits.words(5)
            src.discrete_laplace(3, 1, 600)  # the pooled one-call sampler: words not seen

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    words = np.concatenate(taken)
    assert words.size == 500 and np.unique(words).size == words.size


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_processes_draw_different_words():
    bits = nz.SystemBits()
    bits.words(8)  # the pool holds unused words at the fork: children must not use them
    readers = []
    for _ in range(2):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.write(w, bits.words(8).tobytes())
            os._exit(0)
        os.close(w)
        readers.append((pid, r))
    seen = [bits.words(8).tobytes()]
    for pid, r in readers:
        seen.append(os.read(r, 64))
        os.close(r)
        os.waitpid(pid, 0)
    assert len(set(seen)) == 3


def test_seeded_spawn_gives_independent_reproducible_streams():
    src = nz.noise_source(11)
    a = src.spawn().discrete_laplace(5, 1, 100)
    b = src.spawn().discrete_laplace(5, 1, 100)
    src2 = nz.noise_source(11)
    assert np.array_equal(a, src2.spawn().discrete_laplace(5, 1, 100))
    assert not np.array_equal(a, b)


@settings(max_examples=100, deadline=None)
@given(eps=st.floats(1e-3, 10), delta=st.sampled_from([1, 2, 5]), changed=st.integers(1, 10**7))
def test_lattice_parameters_charge_the_rounding(eps, delta, changed):
    e = validate_epsilon(eps)
    g, eff, t, s = nz.lattice_parameters(Fraction(delta), e, changed)
    num, den = g.numerator, g.denominator
    assert (num == 1 and den & (den - 1) == 0) or (den == 1 and num & (num - 1) == 0)
    assert eff == delta + changed * g
    assert g * Fraction(t, s) >= eff / e
    assert changed * g <= Fraction(delta) / 2**19  # inflation stays tiny here


@pytest.mark.parametrize(("entropy", "key"), [(0, ()), (7, (3, 1)), (2**200 + 11, (2**40, 0))])
def test_compiled_pcg64_is_numpys_stream_and_steps_back(entropy, key):
    from dphist._kernel.seeding import pcg64_back, pcg64_fill, pcg64_state

    ref = np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key))
    st = pcg64_state(entropy, key)
    assert [int(st[0]) << 64 | int(st[1]), int(st[2]) << 64 | int(st[3])] == [
        ref.state["state"]["state"],
        ref.state["state"]["inc"],
    ]
    words = np.empty(500, dtype=np.uint64)
    pcg64_fill(st, words, 0, 500)
    assert np.array_equal(words, ref.random_raw(500))
    pcg64_back(st, 123)
    again = np.empty(123, dtype=np.uint64)
    pcg64_fill(st, again, 0, 123)
    assert np.array_equal(again, words[-123:])


def test_a_generators_spawned_stream_is_compiled_from_its_seed_sequence():
    child = nz.GeneratorBits(np.random.default_rng(4)).spawn()
    assert child.pcg() is not None  # built from numpy's state of the child sequence
    seq = np.random.default_rng(4).bit_generator.seed_seq.spawn(1)[0]
    assert np.array_equal(child.words(5), np.random.PCG64(seq).random_raw(5))


def test_seeded_laplace_in_one_compiled_call_equals_the_word_driven_sampler():
    """An int seed's compiled stream (one call, refills, words stepped back) gives what the
    generic driver gives on numpy's words of the same seed, call after call: the
    outputs of a sequence of requests, of every size and scale, are the same."""
    fast = nz.noise_source(5)
    slow = nz.NoiseSource(nz.GeneratorBits(np.random.Generator(np.random.PCG64(5))))
    assert fast.bits.pcg() is not None and slow.bits.pcg() is None
    # (400, 1, 1000) and (511, 3, 2**40): direct draws of about 14 and 17 words, more than
    # the first read's estimate of 12 a draw, so the one-call driver refills
    cases = [(600, 10, 1), (70_000, 10**6, 1), (3, 7, 1), (0, 7, 1), (1, 1, 1), (400, 1, 1000),
             (2_000, 300, 1), (511, 3, 2**40), (40_000, 1, 1)]  # fmt: skip
    for size, t, s in cases:
        assert np.array_equal(fast.discrete_laplace(t, s, size), slow.discrete_laplace(t, s, size))
        assert np.array_equal(
            fast.discrete_gaussian(40, 1, 100), slow.discrete_gaussian(40, 1, 100)
        )
        d = np.arange(30) % 4
        assert fast.exponential_index(d, 1, 2) == slow.exponential_index(d, 1, 2)


def test_secure_laplace_on_the_pool_goes_on_with_fresh_words_when_the_pool_runs_out(monkeypatch):
    """The one-call pooled sampler whose draws outrun the pool finishes with fresh words
    behind the units left, exactly as the word-driven sampler on the same stream, and
    uses up the old pool. The pool's last 261 words (a request's estimate) are one
    draw that never ends (a zero unit, then the top unit of the tail row: "m more"
    again and again); the OS's next words are a fixed stream here."""
    fresh = np.random.default_rng(1).bit_generator.random_raw(2 * bitsrc.CHUNK)
    stuck = np.full(300, 2**64 - 1, dtype=np.uint64)
    stuck[39] = 2**64 - 2**16  # units 0, 0xFFFF, 0xFFFF, 0xFFFF
    at = np.array([39])
    monkeypatch.setattr(bitsrc, "_POOL", [stuck.copy(), at])
    monkeypatch.setattr(bitsrc, "_os_words", lambda n, head=fresh[:0]: np.r_[head, fresh[:n]])

    class Stream(nz.BitSource):
        def __init__(self, words):
            self.rest = words

        def words(self, n):
            got, self.rest = self.rest[:n], self.rest[n:]
            return got.copy()

    t, s = 10, 1
    got = nz.noise_source(None).discrete_laplace(t, s, 1000)
    assert at[0] == 300 and bitsrc._POOL[1][0] > 0  # the old pool used up, a new one in use
    want = np.zeros(1000, dtype=np.int64)
    kernels, args, per_value = nz._LAPLACE[t, s][1]
    nz.drive(Stream(np.concatenate((stuck[39:], fresh))), want, kernels[0], args, per_value, 4)
    assert np.array_equal(got, want)
    assert got[0] < -80_000 and np.count_nonzero(got) > 500  # the long draw, then the rest


def test_one_call_seeded_driver_grows_its_buffer_for_a_long_draw(monkeypatch):
    """The driver's own code (run by Python here, on a crafted stream): a draw longer
    than its buffer (a zero unit, then "m more" for 200 words) is carried into bigger
    buffers and finished, as the word-driven sampler finishes it on the same stream;
    the words left are stepped back."""
    from dphist._kernel import lookup

    rest = np.random.default_rng(2).bit_generator.random_raw(400)
    stream = np.concatenate(([2**64 - 2**16], np.full(200, 2**64 - 1), rest)).astype(np.uint64)
    at = [0]

    def fill(st, buf, start, stop):
        buf[start:stop] = stream[at[0] : at[0] + stop - start]
        at[0] += stop - start

    def back(st, count):
        at[0] -= count

    monkeypatch.setattr(lookup, "pcg64_fill", fill)
    monkeypatch.setattr(lookup, "pcg64_back", back)
    t, s = 10, 1
    nz.noise_source(None).discrete_laplace(t, s, 600)  # the tables built
    kernels, args, per_value = nz._LAPLACE[t, s][1]
    got = np.zeros(3, dtype=np.int64)
    assert lookup.pcg_laplace_add.py_func(None, got, *args) == 0

    class Stream(nz.BitSource):
        keeps_unread = True

        def __init__(self, words):
            self.rest, self.taken = words, 0

        def words(self, n):
            got, self.rest = self.rest[:n], self.rest[n:]
            self.taken += got.size
            return got.copy()

        def unread(self, words):
            self.taken -= words.size

    want = np.zeros(3, dtype=np.int64)
    src = Stream(stream)
    nz.drive(src, want, kernels[0], args, per_value, 4)
    assert np.array_equal(got, want) and got[0] < -10_000
    assert at[0] == src.taken  # the same words used, the rest handed back
