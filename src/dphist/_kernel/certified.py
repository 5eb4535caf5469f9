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

from functools import lru_cache

__all__ = [
    "Interval",
    "exp_neg",
    "floor_bits",
    "idiv",
    "imul",
    "one_minus",
]

Interval = tuple[int, int]


def _series_bounds(num: int, den: int, w: int) -> Interval:
    """``exp(-num/den)`` for ``0 <= num <= den`` at precision ``w``: consecutive partial
    sums, kept as exact integer fractions ``total / (den**k k!)`` (no gcd per step)."""
    total = scale = 1  # partial sum total / scale
    term = 1  # num**k, the k-th term times scale
    k = 0
    while True:
        k += 1
        term *= num
        total *= den * k
        scale *= den * k
        nxt = total - term if k % 2 else total + term
        if term << (w + 2) <= scale:  # the term is at most 2**-(w + 2)
            lo, hi = min(total, nxt), max(total, nxt)
            return (lo << w) // scale, -((-hi << w) // scale)
        total = nxt


@lru_cache(maxsize=8)
def _exp_minus_one(w: int) -> Interval:
    return _series_bounds(1, 1, w)


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
    frac = _series_bounds(rest, den, g)
    power = (1 << g, 1 << g)
    base = _exp_minus_one(g)
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
