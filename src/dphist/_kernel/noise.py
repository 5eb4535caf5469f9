"""Exact discrete Laplace noise from integer arithmetic, vectorised.

The sampler follows Canonne, Kamath and Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithms 1 and 2: Bernoulli(exp(-gamma))
by the alternating-series trick, a geometric variable built from it, and the
discrete Laplace with rational scale ``t/s`` as ``floor(X/s)`` with a random sign.
Only integer operations on uniform random integers are used, so the output
distribution is exactly ``P(Y = y) proportional to exp(-|y| s / t)`` given unbiased
random bits: no floating-point rounding can make outputs porous (Mironov 2012).

Two bit sources feed the same code:

* :class:`SystemBits` (secure mode): the operating system's CSPRNG via
  ``os.urandom``. It takes no seed, keeps no state (so it is fork-safe) and fails
  closed if the OS source errors.
* :class:`GeneratorBits` (seeded mode): raw words of a numpy ``Generator``. Output
  is reproducible and therefore **not private**; releases made with it say so.

Real-valued statistics are released by the lattice Laplace mechanism: the value is
rounded to a fine power-of-two lattice and exact discrete Laplace noise is added in
lattice units; the sensitivity charged includes the rounding (see
:func:`lattice_parameters`). Limit: the statistic itself is computed in floating
point before rounding, and the guarantee treats that computation as exact.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
from numba import njit

from ..errors import InputTypeError, InternalError, PrivacyError, ValidationError

__all__ = [
    "BitSource",
    "GeneratorBits",
    "NoiseSource",
    "SystemBits",
    "discrete_laplace_variance",
    "lattice_parameters",
    "noise_source",
    "noise_variance",
    "rational_scale",
]

_MAX_T = 1 << 56  # t * K and t * V stay below 2**63 while K, V < 128
_MAX_LOOP = 127
_CHUNK = 1 << 22  # words per os.urandom call


class BitSource:
    """Supplies vectors of uniform 63-bit words (``uint64`` values below 2**63)."""

    private: bool = False

    def words(self, n: int) -> np.ndarray:
        raise NotImplementedError


class SystemBits(BitSource):
    """Uniform words from the operating system's cryptographic generator.

    No seed can be given: reproducible noise is not private noise.
    """

    private = True

    def __init__(self) -> None:  # explicit: refuses any seed argument with a TypeError
        pass

    def words(self, n: int) -> np.ndarray:
        parts = []
        left = n
        while left > 0:
            k = min(left, _CHUNK)
            try:
                raw = os.urandom(8 * k)
            except (NotImplementedError, OSError) as exc:
                raise PrivacyError(
                    "the operating system's random source failed; refusing to release "
                    "without secure noise"
                ) from exc
            parts.append(np.frombuffer(raw, dtype=np.uint64))
            left -= k
        w = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return w >> np.uint64(1)


class GeneratorBits(BitSource):
    """Uniform words from a numpy Generator: reproducible, for experiments only."""

    private = False

    def __init__(self, generator: np.random.Generator):
        self.generator = generator

    def words(self, n: int) -> np.ndarray:
        return self.generator.bit_generator.random_raw(n) >> np.uint64(1)


_MARGIN = 4096  # a draw starts only with this many unused words; one draw needs ~10
_WORD64 = frozenset({"PCG64", "PCG64DXSM", "Philox", "SFC64"})  # random_raw gives 64 bits


@njit(cache=True)
def uniform_below(words, pos, m):
    """Exactly uniform integer in [0, m) by rejection on 63-bit words; pos < 0 = exhausted."""
    limit = (np.uint64(1) << np.uint64(63)) // m * m
    while 0 <= pos < words.shape[0]:
        w = words[pos]
        pos += 1
        if w < limit:
            return w % m, pos
    return np.uint64(0), -1


@njit(cache=True)
def bernoulli_exp_neg(words, pos, num, den):
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS20 Algorithm 1, gamma <= 1).

    Draw A_k ~ Bernoulli(gamma/k) for k = 1, 2, ... until one fails; the result is 1
    exactly when the first failure comes at an odd k.
    """
    k = np.uint64(1)
    while True:
        a, pos = uniform_below(words, pos, den * k)
        if pos < 0:
            return False, pos
        if a >= num:
            return (k & np.uint64(1)) == np.uint64(1), pos
        k += np.uint64(1)
        if k > np.uint64(_MAX_LOOP):  # probability below 1/127!
            return False, -2


@njit(cache=True)
def _discrete_laplace_fill(words, t, s, out, start):
    """Fill out[start:] with discrete Laplace draws of scale t/s (CKS20 Algorithm 2).

    Returns (next index to fill, status): status >= 0 means the buffer ran low
    between draws (refill and call again); -1 a draw exhausted the buffer; -2 a loop
    exceeded its integer headroom. Both failures are astronomically unlikely and are
    raised, never resampled, so no draw is ever discarded because of its value.
    """
    pos = 0
    i = start
    n_words = words.shape[0]
    while i < out.shape[0]:
        if n_words - pos < _MARGIN:
            return i, pos
        y, pos = dlap_draw(words, pos, t, s)
        if pos < 0:
            return i, pos
        out[i] = y
        i += 1
    return i, pos


@njit(cache=True)
def dlap_draw(words, pos, t, s):
    """One discrete Laplace draw of scale t/s (CKS20 Algorithm 2); pos < 0 on failure."""
    one = np.uint64(1)
    while True:
        u, pos = uniform_below(words, pos, t)
        accept, pos = bernoulli_exp_neg(words, pos, u, t)
        if pos < 0:
            return np.int64(0), pos
        if not accept:
            continue
        v = np.uint64(0)
        while True:
            success, pos = bernoulli_exp_neg(words, pos, one, one)
            if pos < 0:
                return np.int64(0), pos
            if not success:
                break
            v += one
            if v > np.uint64(_MAX_LOOP):
                return np.int64(0), -2
        y = np.int64((u + t * v) // s)
        if pos >= words.shape[0]:
            return np.int64(0), -1
        negative = (words[pos] & one) == one
        pos += 1
        if negative and y == 0:
            continue
        return (-y if negative else y), pos


def discrete_laplace(bits: BitSource, t: int, s: int, size: int) -> np.ndarray:
    """``size`` independent draws with ``P(y) proportional to exp(-|y| s/t)`` (CKS20 Alg. 2).

    ``t`` and ``s`` are positive integers with ``t <= 2**56`` and ``s < 2**63``. Random
    words are fetched in large batches from ``bits`` and consumed in order.
    """
    if not (1 <= t <= _MAX_T and 1 <= s < (1 << 63)):
        raise InternalError(f"discrete Laplace parameters out of range: t={t}, s={s}")
    out = np.empty(size, dtype=np.int64)
    done = 0
    while done < size:
        words = bits.words(12 * (size - done) + 2 * _MARGIN)
        done, status = _discrete_laplace_fill(words, np.uint64(t), np.uint64(s), out, done)
        if status < 0:
            raise InternalError(
                "discrete Laplace sampler exceeded its random buffer or integer headroom"
            )
    return out


def rational_scale(sensitivity: Fraction, epsilon: Fraction) -> tuple[int, int]:
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
        return discrete_laplace(self.bits, t, s, size)

    def discrete_gaussian(self, a: int, b: int, size: int) -> np.ndarray:
        """Discrete Gaussian draws with ``sigma**2 = a/b`` (:mod:`dphist._kernel.gaussian`)."""
        from .gaussian import discrete_gaussian

        return discrete_gaussian(self.bits, a, b, size)

    def exponential_index(self, d: np.ndarray, p: int, q: int) -> int:
        """Index ``i`` with probability proportional to ``exp(-d_i p/q)``
        (:mod:`dphist._kernel.exponential`)."""
        from .exponential import exponential_draw

        return exponential_draw(self.bits, d, p, q)

    def spawn(self) -> NoiseSource:
        """An independent source for one release (a child stream in seeded mode)."""
        if isinstance(self.bits, GeneratorBits):
            return NoiseSource(GeneratorBits(self.bits.generator.spawn(1)[0]))
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
        return NoiseSource(GeneratorBits(np.random.default_rng(int(rng))))
    raise InputTypeError(
        "rng must be None (secure noise), an int seed or a numpy.random.Generator "
        f"(seeded, not private); got {type(rng).__name__}"
    )
