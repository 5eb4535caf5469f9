"""Exact discrete Laplace noise from integer arithmetic, vectorised.

Two exact samplers of ``P(Y = y) proportional to exp(-|y| s / t)`` share one bit
stream; which one runs depends on public sizes only (:func:`use_tables`):

* Small requests: Canonne, Kamath and Steinke, "The Discrete Gaussian for
  Differential Privacy" (NeurIPS 2020), Algorithms 1 and 2 -- Bernoulli(exp(-gamma))
  by the alternating-series trick, a geometric variable built from it, and the
  discrete Laplace as ``floor(X/s)`` with a random sign (about twelve words a draw).
* Larger requests: inversion by certified tables (:mod:`~dphist._kernel.tables`,
  :mod:`~dphist._kernel.lookup`): one 16-bit unit a draw up to scale 256, two up to
  65,536.

Only integer operations on uniform random bits are used, so both laws are exact
given unbiased bits: no floating-point rounding can make outputs porous (Mironov
2012). Noise is added in place, in chunks of at most ``CHUNK`` words.

Bit sources (:mod:`~dphist._kernel.bits`), each one stream of uniform 64-bit words
(the coins of CKS20 use a word's top 63 bits; the tables read words as four 16-bit
units): :class:`SystemBits` (secure: the operating system's CSPRNG, never seeded,
pooled words handed out once, fork-safe) and :class:`GeneratorBits` (seeded,
reproducible and therefore **not private**). The Laplace table sampler runs in one
compiled call on either's words when it can, the direct one on a seed's stream
(:func:`add_discrete_laplace`).

Real-valued statistics are released by the lattice Laplace mechanism: the value is
rounded to a fine power-of-two lattice and exact discrete Laplace noise is added in
lattice units; the sensitivity charged includes the rounding (see
:func:`lattice_parameters`). Limit: the statistic itself is computed in floating
point before rounding, and the guarantee treats that computation as exact.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._jit import njit
from ..errors import InputTypeError, InternalError, ValidationError
from .bits import (
    CHUNK,
    BitSource,
    GeneratorBits,
    SystemBits,
    compiled_words_for,
    on_pool,
    words_for,
)
from .coins import bernoulli_exp_neg, laplace_draw, uniform_below
from .lookup import laplace_add, pcg_laplace_add, pool_laplace_add
from .seeding import pcg64_back, pcg64_fill
from .tables import laplace_size, laplace_tables

__all__ = [
    "BitSource",
    "GeneratorBits",
    "NoiseSource",
    "SystemBits",
    "add_discrete_laplace",
    "bernoulli_exp_neg",
    "check_out",
    "discrete_laplace_variance",
    "drive",
    "lattice_parameters",
    "noise_source",
    "noise_variance",
    "rational_scale",
    "uniform_below",
    "use_tables",
]

_MAX_T = 1 << 56  # t * K and t * V stay below 2**63 while K, V < 128


_WORD64 = frozenset({"PCG64", "PCG64DXSM", "Philox", "SFC64"})  # random_raw gives 64 bits
_TABLE_MIN = 512  # requests this large use the table sampler ...
_EAGER_THRESHOLDS = 8_000  # ... built at once up to this size (tens of milliseconds) ...
_DRAWS_PER_THRESHOLD = 16  # ... a bigger one for requests of this many draws a threshold


@njit(cache=True)
def _direct_add(words, pos, out, start, t, s):  # pragma: no cover - compiled
    """Add CKS20 Algorithm 2 draws of scale t/s to out[start:]; statuses as in
    :mod:`~dphist._kernel.lookup` (a draw that runs out of words is replayed)."""
    i = start
    while i < out.shape[0]:
        first = pos
        y, pos = laplace_draw(words, pos, t, s)
        if pos < 0:
            return i, first, pos
        out[i] += y
        i += 1
    return i, pos, 0


@njit(cache=True)
def _pcg_direct_add(st, out, t, s):  # pragma: no cover - compiled
    """:func:`drive` with :func:`_direct_add` in one compiled call for a PCG64 state
    (:mod:`~dphist._kernel.seeding`): words drawn as
    :func:`~dphist._kernel.bits.words_for` sizes them, a draw that runs out replayed
    behind the words it left, the words left unread stepped back. Status 0, or below
    -1 (headroom)."""
    size = out.shape[0]
    words = np.empty(0, dtype=np.uint64)
    done, pos, status = 0, 0, -1
    while done < size and status == -1:  # words for the draws left, behind those left over
        left = words.shape[0] - pos
        n = compiled_words_for(12 * (size - done), 1)
        more = np.empty(left + n, dtype=np.uint64)
        for j in range(left):
            more[j] = words[pos + j]
        pcg64_fill(st, more, left, left + n)
        words = more
        done, pos, status = _direct_add(words, 0, out, done, t, s)
    if status < -1:
        return status
    pcg64_back(st, words.shape[0] - pos)
    return 0


def drive(
    bits: BitSource, out: np.ndarray, kernel, args: tuple, per_value: int, per_word: int = 1
) -> None:
    """Run a sampler kernel over ``out`` (in place), feeding it the stream's words as
    ``per_word`` units each: whole 64-bit words (1) or 16-bit units (4, in order).

    Words are fetched in chunks of at most ``CHUNK``; a draw that runs out is
    replayed after more are appended, and the whole words left at the end go back to
    the stream (a partly read word is dropped), so the output depends on the word
    stream only, never on chunk sizes. ``per_value`` estimates the units a value takes.
    """
    units = bits.words(words_for(per_value * out.shape[0], per_word)).view(_UNIT[per_word])
    done, pos, status = kernel(units, 0, out, 0, *args)
    finish(bits, out, kernel, args, per_value, per_word, units, done, pos, status)


def finish(bits, out, kernel, args, per_value, per_word, units, done, pos, status) -> None:
    """The rest of :func:`drive` after a kernel call on ``units`` stopped at ``(done,
    pos, status)``: more words appended behind the units left while draws remain, the
    whole words left at the end handed back."""
    unit = _UNIT[per_word]
    size = out.shape[0]
    joined = False
    while done < size or status < -1:
        if status < -1:
            raise InternalError("exact noise sampler exceeded its integer headroom")
        more = bits.words(words_for(per_value * (size - done), per_word))
        units = np.concatenate((units[pos:], more.view(unit)))
        joined = True
        done, pos, status = kernel(units, 0, out, done, *args)
    if bits.keeps_unread:  # joined units may leave the whole words unaligned: a copy
        left = units[pos + (units.shape[0] - pos) % per_word :]
        bits.unread((left.copy() if joined else left).view(_U64))


_U64 = np.dtype(np.uint64)  # dtype objects: numpy converts a scalar type on every call
_U16 = np.dtype(np.uint16)
_UNIT = {1: _U64, 4: _U16}


def use_tables(size: int, thresholds: int) -> bool:
    """Whether a request of ``size`` draws uses the table sampler (public facts only).

    Tables are cached per parameter, so repeated requests pay their build once (about
    as long as 15 direct draws a threshold). The Laplace tables have at most about
    8,000 thresholds, so every request of ``_TABLE_MIN`` draws or more uses them; only
    the large Gaussian tables (sigma above about 950) wait for requests that amortise
    them."""
    return size >= _TABLE_MIN and (
        thresholds <= _EAGER_THRESHOLDS or thresholds <= size // _DRAWS_PER_THRESHOLD
    )


def add_discrete_laplace(bits: BitSource, out: np.ndarray, t: int, s: int) -> None:
    """Add to the int64 vector ``out``, in place, independent draws with
    ``P(y) proportional to exp(-|y| s/t)``.

    ``t`` and ``s`` are positive integers with ``t <= 2**56`` and ``s < 2**63``. Most
    requests use certified inversion tables (:mod:`~dphist._kernel.tables`, one or two
    16-bit units a draw); small ones the direct CKS20 Algorithm 2, whose setup is nil.
    Both are exact, so the law is the same; the choice depends on public sizes only.
    """
    check_out(out)
    size = out.shape[0]
    thresholds, tables = _LAPLACE.get((t, s)) or _laplace_plan(t, s)
    if not use_tables(size, thresholds):
        st = bits.pcg()
        if st is None:
            drive(bits, out, _direct_add, (t, s), 12)
        elif _pcg_direct_add(st, out, t, s):
            raise InternalError("exact noise sampler exceeded its integer headroom")
        return
    if tables is None:
        tables = _laplace_plan(t, s, build=True)[1]
    kernels, args, per_value = tables
    st = bits.pcg()
    if st is not None:
        if kernels[1](st, out, *args):
            raise InternalError("exact noise sampler exceeded its integer headroom")
    elif type(bits) is SystemBits and (need := words_for(per_value * size, 4)) < CHUNK:
        pool, (done, pos, status) = on_pool(need, kernels[2], out, args)  # one compiled call
        if status:  # rare: the draws outran the pool (its words all used) or headroom
            finish(bits, out, kernels[0], args, per_value, 4, pool.view(_U16), done, pos, status)
    else:
        drive(bits, out, kernels[0], args, per_value, 4)


def check_out(out: np.ndarray) -> None:
    """Noise is added to a 1-D int64 vector."""
    if (out.dtype is not _INT64 and out.dtype != _INT64) or out.ndim != 1:
        raise InternalError("noise is added to a 1-D int64 vector")


_INT64 = np.dtype(np.int64)
_LAPLACE: dict[tuple[int, int], tuple[int, tuple | None]] = {}


def _laplace_plan(t: int, s: int, build: bool = False) -> tuple[int, tuple | None]:
    """``(thresholds, (kernels, table arguments, units a draw))`` of scale ``t/s``, checked
    in range and remembered (the tables once a request uses them; ``laplace_tables``
    keeps them too). The kernels are numba's dispatchers of
    :func:`~dphist._kernel.lookup.laplace_add` and its one-call drivers
    (``pcg_laplace_add``, ``pool_laplace_add``), called directly: a call through the
    lazy wrapper costs a third of a microsecond more, a tenth of a small request."""
    if not (1 <= t <= _MAX_T and 1 <= s < (1 << 63)):
        raise InternalError(f"discrete Laplace parameters out of range: t={t}, s={s}")
    tables = None
    if build:
        tb = laplace_tables(t, s)
        kernels = tuple(k.dispatcher() for k in (laplace_add, pcg_laplace_add, pool_laplace_add))
        tables = (kernels, tb.args, tb.d + 1)
    plan = (laplace_size(t, s), tables)
    if len(_LAPLACE) < 4096:
        _LAPLACE[(t, s)] = plan
    return plan


def discrete_laplace(bits: BitSource, t: int, s: int, size: int) -> np.ndarray:
    """``size`` independent draws with ``P(y) proportional to exp(-|y| s/t)``."""
    out = np.zeros(size, dtype=np.int64)
    add_discrete_laplace(bits, out, t, s)
    return out


_SCALES: dict[tuple[int, int, int, int], tuple[int, int]] = {}


def rational_scale(sensitivity: Fraction, epsilon: Fraction) -> tuple[int, int]:
    """Integers ``(t, s)`` with ``t/s >= sensitivity/epsilon``, as close as int64 allows
    (:func:`_rational_scale`, remembered per pair: releases ask for the same few)."""
    a = sensitivity if type(sensitivity) is Fraction else Fraction(sensitivity)
    b = epsilon if type(epsilon) is Fraction else Fraction(epsilon)
    key = (a.numerator, a.denominator, b.numerator, b.denominator)
    found = _SCALES.get(key)
    if found is None:
        found = _rational_scale(a, b)
        if len(_SCALES) < 4096:
            _SCALES[key] = found
    return found


def _rational_scale(sensitivity: Fraction, epsilon: Fraction) -> tuple[int, int]:
    """Integers ``(t, s)`` with ``t/s >= sensitivity/epsilon``, as close as int64 allows.

    The exact ratio is used when it fits (0.1 -> scale 10/1 for sensitivity 1);
    otherwise ``s`` is the largest power of two keeping ``t = ceil(s * ratio)`` within
    2**56, so the scale exceeds the ideal one by a relative 2**-55 at most.
    """
    lam = Fraction(sensitivity) / Fraction(epsilon)
    if lam <= 0:
        raise InternalError(f"noise scale must be positive; got {lam}")
    if lam.numerator <= _MAX_T and lam.denominator < (1 << 62):
        return lam.numerator, lam.denominator
    if lam * (1 << 62) <= 1:  # a tiny scale (huge epsilon): 2**-62 is still >= lam
        return 1, 1 << 62
    if lam > _MAX_T:
        raise ValidationError(
            f"epsilon={float(epsilon):.3g} is too small for a query of sensitivity "
            f"{float(sensitivity):g}: the noise scale {float(lam):.3g} exceeds 2**56"
        )
    k = min(62, math.floor(math.log2(_MAX_T / lam)) + 1)
    while True:
        s = 1 << k
        t = -((-lam.numerator * s) // lam.denominator)  # ceil(lam * s)
        if t <= _MAX_T:
            return t, s
        k -= 1


def discrete_laplace_variance(t: int, s: int) -> float:
    """Variance ``2p/(1-p)^2`` with ``p = exp(-s/t)`` of the discrete Laplace of scale t/s."""
    a = s / t
    one_minus_p = -math.expm1(-a)
    return 2.0 * math.exp(-a) / (one_minus_p * one_minus_p)


def noise_variance(sensitivity: Fraction, epsilon: Fraction) -> float:
    """Variance of the noise ``PrivateView.measure`` adds for this sensitivity and epsilon.

    Public arithmetic (no data): lets a block plan with the exact discrete variance,
    which is slightly below the continuous ``2 (sensitivity/epsilon)**2``.
    """
    return discrete_laplace_variance(*rational_scale(Fraction(sensitivity), Fraction(epsilon)))


def lattice_parameters(
    sensitivity: Fraction, epsilon: Fraction, changed: int
) -> tuple[Fraction, Fraction, int, int]:
    """Lattice for releasing a real-valued statistic with exact discrete noise.

    Each of the statistic's values is rounded to a multiple of ``g = 2**j``; rounding
    can move each value by up to ``g`` more between neighbours, and at most
    ``changed`` values differ between neighbours, so the rounded statistic has
    sensitivity ``sensitivity + changed * g``. ``g`` is the coarsest power of two
    keeping that inflation below ``2**-20`` of the sensitivity, coarsened further only
    when the noise scale in lattice units would not fit in 2**56.

    Returns ``(g, effective_sensitivity, t, s)``: add ``g * DiscreteLaplace(t/s)`` to
    the rounded values. The real noise scale ``g*t/s`` is at least
    ``effective_sensitivity / epsilon``.
    """
    if changed < 1:
        raise InternalError("a real-valued statistic must declare how many values can change")
    target = Fraction(sensitivity) / (changed << 20)
    j = math.floor(math.log2(target.numerator) - math.log2(target.denominator))
    while Fraction(2) ** j > target:
        j -= 1
    while True:
        g = Fraction(2) ** j
        eff = Fraction(sensitivity) + changed * g
        lam_units = eff / (Fraction(epsilon) * g)
        if lam_units <= _MAX_T // 2:
            t, s = rational_scale(eff, Fraction(epsilon) * g)
            return g, eff, t, s
        j += 1


class NoiseSource:
    """The kernel's noise: exact samplers fed by one bit source."""

    def __init__(self, bits: BitSource):
        self.bits = bits

    @property
    def private(self) -> bool:
        return self.bits.private

    def discrete_laplace(self, t: int, s: int, size: int) -> np.ndarray:
        """``size`` discrete Laplace draws of scale t/s (via :meth:`add_discrete_laplace`)."""
        out = np.zeros(size, dtype=np.int64)
        self.add_discrete_laplace(out, t, s)
        return out

    def add_discrete_laplace(self, out: np.ndarray, t: int, s: int) -> None:
        """Add discrete Laplace noise of scale t/s to the int64 vector ``out`` in place:
        every Laplace draw of the kernel goes through here."""
        add_discrete_laplace(self.bits, out, t, s)

    def discrete_gaussian(self, a: int, b: int, size: int) -> np.ndarray:
        """Discrete Gaussian draws with ``sigma**2 = a/b`` (:mod:`dphist._kernel.gaussian`)."""
        out = np.zeros(size, dtype=np.int64)
        self.add_discrete_gaussian(out, a, b)
        return out

    def add_discrete_gaussian(self, out: np.ndarray, a: int, b: int) -> None:
        """Add discrete Gaussian noise with ``sigma**2 = a/b`` to ``out`` in place."""
        from .gaussian import add_discrete_gaussian

        add_discrete_gaussian(self.bits, out, a, b)

    def exponential_index(self, d: np.ndarray, p: int, q: int) -> int:
        """Index ``i`` with probability proportional to ``exp(-d_i p/q)``
        (:mod:`dphist._kernel.exponential`)."""
        from .exponential import exponential_draw

        return exponential_draw(self.bits, d, p, q)

    def spawn(self) -> NoiseSource:
        """An independent source for one release (a child stream in seeded mode)."""
        if isinstance(self.bits, GeneratorBits):
            return NoiseSource(self.bits.spawn())
        return self


def noise_source(rng: object) -> NoiseSource:
    """Secure noise for ``rng=None``; seeded (not private) noise for an int or Generator."""
    if rng is None:
        return NoiseSource(SystemBits())
    if isinstance(rng, np.random.Generator):
        bits = type(rng.bit_generator).__name__
        if bits not in _WORD64:
            raise ValidationError(
                f"rng's bit generator {bits} does not produce 64-bit words; the sampler "
                f"needs one of {', '.join(sorted(_WORD64))} (numpy.random.default_rng uses PCG64)"
            )
        return NoiseSource(GeneratorBits(rng))
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool | np.bool_):
        if int(rng) < 0:
            raise ValidationError(f"rng seed must be a non-negative integer; got {rng!r}")
        return NoiseSource(GeneratorBits.from_seed((int(rng), ())))
    raise InputTypeError(
        "rng must be None (secure noise), an int seed or a numpy.random.Generator "
        f"(seeded, not private); got {type(rng).__name__}"
    )
