"""Exact discrete Gaussian noise from integer arithmetic (for zero-concentrated DP).

Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy"
(NeurIPS 2020), Algorithm 3: propose ``Y`` from the discrete Laplace of scale
``t = floor(sigma) + 1`` and accept with probability
``exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2))``. With ``sigma**2 = a/b`` the exponent
is ``U**2 / Q`` for the integers ``U = |Y| t b - a`` and ``Q = 2 a b t**2``; ``U**2``
is held in 128 bits, its whole part is spent one ``Bernoulli(exp(-1))`` at a time and
the remainder by ``Bernoulli(exp(-r/Q))`` (Algorithm 1). Only integer operations on
uniform random words are used, so the output law is exactly
``P(Y = y) proportional to exp(-y**2 / (2 sigma**2))`` given unbiased bits. The bit
sources are those of :mod:`dphist._kernel.noise` (secure or seeded).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .._jit import njit
from ..errors import InternalError, ValidationError
from .coins import bernoulli_exp_neg, laplace_draw
from .lookup import gaussian_add
from .noise import BitSource, check_out, drive, use_tables
from .tables import gaussian_size, gaussian_table

__all__ = [
    "add_discrete_gaussian",
    "discrete_gaussian",
    "discrete_gaussian_variance",
    "gaussian_lattice",
    "gaussian_noise_variance",
    "gaussian_parameters",
]

_MAX_Q = 1 << 56  # Q * k stays below 2**63 for the k < 128 of Algorithm 1
_MAX_LOOP = 127  # exp(-1) coins in a row: probability exp(-127) of reaching it


def gaussian_parameters(sigma2: Fraction) -> tuple[int, int]:
    """Integers ``(a, b)`` with ``a/b >= sigma2``, as close as the 64-bit sampler allows.

    The exact ratio is used when ``Q = 2 a b t**2`` fits in 2**56 (variance 10 -> 10/1);
    otherwise ``b`` is the largest power of two that fits, with ``a = ceil(sigma2 * b)``,
    so the variance exceeds the requested one by less than ``1/b``. A variance whose
    ``Q`` cannot fit even with ``b = 1`` (sigma above about 8,000) is refused.
    """
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise InternalError(f"a Gaussian variance must be positive; got {sigma2}")
    if _q(sigma2.numerator, sigma2.denominator) < _MAX_Q:
        return sigma2.numerator, sigma2.denominator
    b = 1 << 62
    while b >= 1:
        a = -((-sigma2.numerator * b) // sigma2.denominator)  # ceil(sigma2 * b)
        if _q(a, b) < _MAX_Q:
            return a, b
        b >>= 1
    raise ValidationError(
        f"a Gaussian noise variance of {float(sigma2):.3g} is beyond the exact sampler "
        "(standard deviation above about 8,000): use a larger privacy budget"
    )


_MAX_UNITS = Fraction(1 << 26)  # lattice noise variance: sigma at most 8,192 lattice units


def gaussian_lattice(
    sensitivity2: Fraction, rho: Fraction, changed: int
) -> tuple[Fraction, Fraction, int, int]:
    """Lattice for releasing a real-valued statistic with exact discrete Gaussian noise.

    Values are rounded to multiples of ``g = 2**j``; only the (at most ``changed``)
    values that differ between neighbours round differently, each by at most ``g``
    more, so the rounded statistic's L2 sensitivity is at most ``sqrt(D2) +
    g sqrt(changed)``, whose square is bounded by the rational ``D2' = D2 +
    2 g r + g**2 changed`` with ``r >= sqrt(changed D2)``. ``g`` is the coarsest power
    of two keeping ``g sqrt(changed)`` below ``2**-20 sqrt(D2)``, coarsened until the
    noise's standard deviation is at most 8,192 lattice units (the sampler's range).
    Returns ``(g, D2', a, b)``: add ``g`` times discrete Gaussian noise of variance
    ``a/b >= D2' / (2 rho g**2)``, which is ``rho``-zCDP for the rounded statistic.
    """
    if changed < 1:
        raise InternalError("a real-valued statistic must declare how many values can change")
    d2, rho = Fraction(sensitivity2), Fraction(rho)
    grid = 1 << 40
    root = Fraction(math.isqrt(changed * d2.numerator * grid * grid // d2.denominator) + 1, grid)
    g = Fraction(1)
    while g * g * changed > d2 / (1 << 40):
        g /= 2
    while g * g * changed * (1 << 40) <= d2 / 4:
        g *= 2
    while True:
        eff = d2 + 2 * g * root + g * g * changed
        units = eff / (2 * rho * g * g)
        if units <= _MAX_UNITS:
            a, b = gaussian_parameters(units)
            return g, eff, a, b
        g *= 2


def _q(a: int, b: int) -> int:
    t = math.isqrt(a // b) + 1
    return 2 * a * b * t * t


def gaussian_noise_variance(sensitivity2: Fraction, rho: Fraction) -> float:
    """Variance of the noise ``PrivateView.measure`` adds under zCDP for this squared L2
    sensitivity and rho (public arithmetic, for planning)."""
    return discrete_gaussian_variance(*gaussian_parameters(Fraction(sensitivity2) / (2 * rho)))


def discrete_gaussian_variance(a: int, b: int) -> float:
    """Variance of the discrete Gaussian with ``sigma**2 = a/b`` (at most ``a/b``; CKS20
    Prop. 19), summed over ``|y| <= 40 sigma + 40`` where the tail is below 1e-300. From
    ``sigma**2 >= 9`` on it is ``a/b`` in floating point: by Poisson summation the gap
    is about ``4 pi**2 sigma**4 exp(-2 pi**2 sigma**2)``, below 1e-70."""
    sigma2 = a / b
    if sigma2 >= 9.0:
        return sigma2
    y = np.arange(1, int(40 * math.sqrt(sigma2)) + 41, dtype=np.float64)
    w = np.exp(-(y * y) / (2.0 * sigma2))
    return float(2.0 * np.sum(y * y * w) / (1.0 + 2.0 * np.sum(w)))


def add_discrete_gaussian(bits: BitSource, out: np.ndarray, a: int, b: int) -> None:
    """Add to the int64 vector ``out``, in place, independent draws with
    ``P(y) proportional to exp(-y**2 b / (2 a))``.

    Most requests use a certified inversion table (:mod:`~dphist._kernel.tables`,
    about one 16-bit unit a draw, tails by exact rejection); small ones Algorithm 3
    directly.
    Both are exact; the choice depends on public sizes only.
    """
    check_out(out)
    if use_tables(out.shape[0], _thresholds(a, b)):
        args = (*gaussian_table(a, b).args, a, b)
        drive(bits, out, gaussian_add, args, 1, 4)
        return
    t = math.isqrt(a // b) + 1
    # |Y| t b must fit in 63 bits; a proposal beyond 2**62 / (t b) >= 2**33 / t has
    # probability below exp(-2**33 / t**2), nil for every sigma the sampler accepts
    max_y = np.uint64((1 << 62) // (t * b))
    drive(bits, out, _direct_add, (np.uint64(a), np.uint64(b), np.uint64(t), max_y), 30)


@lru_cache(maxsize=256)
def _thresholds(a: int, b: int) -> int:
    """:func:`~dphist._kernel.tables.gaussian_size` of parameters checked in range."""
    if not (a >= 1 and b >= 1 and _q(a, b) < _MAX_Q):
        raise InternalError(f"discrete Gaussian parameters out of range: a={a}, b={b}")
    return gaussian_size(a, b)


def discrete_gaussian(bits: BitSource, a: int, b: int, size: int) -> np.ndarray:
    """``size`` independent draws with ``P(y) proportional to exp(-y**2 b / (2 a))``."""
    out = np.zeros(size, dtype=np.int64)
    add_discrete_gaussian(bits, out, a, b)
    return out


@njit(cache=True)
def _direct_add(words, pos, out, start, a, b, t, max_y):  # pragma: no cover - compiled
    """Add Algorithm 3 draws to ``out[start:]``; statuses as in the table kernels."""
    i = start
    while i < out.shape[0]:
        first = pos
        y, pos = _draw(words, pos, a, b, t, max_y)
        if pos < 0:
            return i, first, pos
        out[i] += y
        i += 1
    return i, pos, 0


@njit(cache=True)
def _draw(words, pos, a, b, t, max_y):  # pragma: no cover - compiled
    """One draw of Algorithm 3; ``pos < 0`` when the words run out or a guard trips."""
    one = np.uint64(1)
    q = np.uint64(2) * a * b * t * t
    while True:
        y, pos = laplace_draw(words, pos, np.int64(t), np.int64(1))
        if pos < 0:
            return 0, pos
        m = np.uint64(abs(y))
        if m > max_y:
            return 0, -2
        u = m * t * b
        u = u - a if u >= a else a - u
        hi, lo = _square(u)
        accept = True
        k = 0
        while hi > 0 or lo >= q:  # whole part of U**2/Q: one exp(-1) coin per unit
            coin, pos = bernoulli_exp_neg(words, pos, one, one)
            if pos < 0:
                return 0, pos
            if not coin:
                accept = False
                break
            if lo < q:
                hi -= one
            lo -= q  # wraps modulo 2**64 when it borrows
            k += 1
            if k > _MAX_LOOP:
                return 0, -2
        if accept:
            accept, pos = bernoulli_exp_neg(words, pos, lo, q)
            if pos < 0:
                return 0, pos
        if accept:
            return y, pos


@njit(cache=True)
def _square(u):  # pragma: no cover - compiled
    """``u * u`` as (high, low) 64-bit words, for ``u < 2**63``."""
    mask = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    u0, u1 = u & mask, u >> s32
    p00, p01, p11 = u0 * u0, u0 * u1, u1 * u1
    mid = (p00 >> s32) + ((p01 & mask) << np.uint64(1))
    lo = (p00 & mask) | ((mid & mask) << s32)
    hi = p11 + ((p01 >> s32) << np.uint64(1)) + (mid >> s32)
    return hi, lo
