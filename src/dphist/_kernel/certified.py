"""Certified fixed-point bounds for the exact samplers' tables (integers only).

A quantity ``v`` is held at precision ``w`` as an interval ``(lo, hi)`` of integers
with ``lo <= 2**w * v <= hi``. Every operation rounds its lower end down and its
upper end up, so the true value never leaves the interval; :func:`floor_bits`
extracts ``floor(2**k * v)`` only when the interval decides it. The one
transcendental input is ``exp(-x)`` for a rational ``x``, bracketed by consecutive
partial sums of its alternating Taylor series (the terms of ``exp(-f)``, ``f <= 1``,
never grow, so the limit lies between any two consecutive partial sums).
"""

from __future__ import annotations

from fractions import Fraction

__all__ = [
    "Interval",
    "exp_neg",
    "floor_bits",
    "idiv",
    "imul",
    "one_minus",
]

Interval = tuple[int, int]


def _series_bounds(f: Fraction, w: int) -> Interval:
    """``exp(-f)`` for ``0 <= f <= 1`` at precision ``w``: consecutive partial sums."""
    term = Fraction(1)
    total = Fraction(1)
    k = 0
    eps = Fraction(1, 1 << (w + 2))
    while True:
        k += 1
        term = term * f / k
        nxt = total - term if k % 2 else total + term
        if term <= eps:
            lo, hi = min(total, nxt), max(total, nxt)
            return (lo.numerator << w) // lo.denominator, -((-hi.numerator << w) // hi.denominator)
        total = nxt


def imul(a: Interval, b: Interval, w: int) -> Interval:
    """Product of two non-negative intervals at precision ``w``."""
    return (a[0] * b[0]) >> w, -((-a[1] * b[1]) >> w)


def idiv(a: Interval, b: Interval, w: int) -> Interval:
    """Quotient of a non-negative interval by a positive one at precision ``w``."""
    return (a[0] << w) // b[1], -((-a[1] << w) // b[0])


def one_minus(a: Interval, w: int) -> Interval:
    """``1 - v`` for ``v`` in ``a``."""
    return (1 << w) - a[1], (1 << w) - a[0]


def exp_neg(num: int, den: int, w: int) -> Interval:
    """``exp(-num/den)`` for integers ``num >= 0``, ``den >= 1``, at precision ``w``."""
    whole, rest = divmod(num, den)
    if whole > w:  # exp(-whole) < 2**-w
        return 0, 1
    g = w + 64  # guard bits for the powers of exp(-1)
    frac = _series_bounds(Fraction(rest, den), g)
    power = (1 << g, 1 << g)
    base = _series_bounds(Fraction(1), g)
    while whole:
        if whole & 1:
            power = imul(power, base, g)
        base = imul(base, base, g)
        whole >>= 1
    lo, hi = imul(power, frac, g)
    return lo >> 64, -((-hi) >> 64)


def floor_bits(v: Interval, w: int, k: int) -> int | None:
    """``floor(2**k * v)`` when the interval decides it (``k <= w``), else None."""
    lo, hi = v[0] >> (w - k), v[1] >> (w - k)
    return lo if lo == hi else None
