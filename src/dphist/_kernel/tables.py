"""Certified inversion tables for the exact discrete Laplace and Gaussian samplers.

A table splits ``[0, 1)`` at the cumulative probabilities ``B_1 <= B_2 <= ...`` of a
finite list of outcomes; a uniform ``V`` falls in outcome ``#{j : B_j <= V}``
(inversion). Each ``B_j`` is irrational, so the table stores ``floor(2**189 B_j)``,
certified by :mod:`~dphist._kernel.certified`, as three 63-bit words; the sampler
(:mod:`~dphist._kernel.lookup`) compares ``V``'s words with them lazily, so the
outcome has exactly the probability ``B_{j+1} - B_j`` given uniform words. Only a
tie on all 189 bits (probability ``2**-189`` per threshold) is undecided: it raises,
like the other headroom guards, and is never resampled.

Tables depend on public noise parameters only and are cached per parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InternalError
from .certified import Interval, exp_neg, floor_bits, idiv, imul, one_minus

__all__ = [
    "DIGIT_BITS",
    "GaussianTable",
    "LaplaceTables",
    "Table",
    "gaussian_size",
    "gaussian_table",
    "laplace_size",
    "laplace_tables",
]

WORD_BITS = 63
THRESHOLD_BITS = 3 * WORD_BITS
DIGIT_BITS = 12  # the low part of a large magnitude is drawn 12 bits per word
_TOP_SCALE = 1024  # the top table covers scales up to this (about 17,000 thresholds)
_TAIL_BITS = 12  # a table's tail outcome has probability about 2**-12
_PRECISION = 256  # working bits; doubled when a threshold is not decided
_MAX_PRECISION = 4096
_MASK = (1 << WORD_BITS) - 1


@dataclass(frozen=True, eq=False)
class Table:
    """Thresholds ``th`` (rows of three 63-bit words, most significant first; ``first``
    holds their first words contiguously) and a guide: ``guide[b]`` counts the
    thresholds whose first word is at most ``b << shift``, where a lookup of word
    ``u`` starts its scan. About sixteen guide cells per threshold keep most scans to
    one comparison."""

    th: np.ndarray
    first: np.ndarray
    guide: np.ndarray
    shift: int

    @property
    def args(self) -> tuple:
        return self.first, self.th, self.guide, self.shift


def _table(bounds: list[Interval], w: int) -> Table | None:
    """The table of certified boundaries, or None when one is not decided at ``w``."""
    rows = np.empty((len(bounds), 3), dtype=np.uint64)
    last = 0
    below_one = (1 << w) - 1  # every boundary is below 1: the last outcome has mass
    for j, b in enumerate(bounds):
        f = floor_bits((b[0], min(b[1], below_one)), w, THRESHOLD_BITS)
        if f is None or f >> THRESHOLD_BITS:
            return None
        if f < last:
            raise InternalError("sampler table thresholds are not ordered")
        last = f
        rows[j] = (f >> 2 * WORD_BITS, (f >> WORD_BITS) & _MASK, f & _MASK)
    gbits = min(16, max(4, len(bounds).bit_length() + 4))
    shift = WORD_BITS - gbits
    first = np.ascontiguousarray(rows[:, 0])
    starts = np.arange(1 << gbits, dtype=np.uint64) << np.uint64(shift)
    guide = np.searchsorted(first, starts, side="right").astype(np.int32)
    return Table(rows, first, guide, shift)


def _certified(build, *args) -> Table:
    """Build at increasing precision until every threshold is decided."""
    w = _PRECISION
    while w <= _MAX_PRECISION:
        table = _table(build(*args, w), w)
        if table is not None:
            return table
        w *= 2
    raise InternalError("a sampler table could not be certified")  # pragma: no cover


def _powers(r: Interval, count: int, w: int) -> list[Interval]:
    """``r**0, ..., r**(count - 1)``."""
    out = [(1 << w, 1 << w)]
    for _ in range(count - 1):
        out.append(imul(out[-1], r, w))
    return out


# --- discrete Laplace ------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LaplaceTables:
    """``|Y| = 1 + sum_j 4096**j d_j + 4096**D Q`` (or ``Y = 0``), sign and ``Q`` from ``top``.

    ``top`` has outcomes ``(-, Q >= m), (-, m-1), ..., (-, 0), 0, (+, 0), ..., (+, m-1),
    (+, Q >= m)``; ``tail`` draws ``Q - m`` (geometric, memoryless) when ``Q >= m``;
    ``digits[j]`` is truncated geometric on ``[0, 4096)``. See :func:`laplace_tables`.
    """

    top: Table
    tail: Table
    digits_first: np.ndarray
    digits_th: np.ndarray
    digits_guide: np.ndarray
    digits_shift: int
    m: int
    d: int

    @property
    def args(self) -> tuple:
        digits = (self.digits_first, self.digits_th, self.digits_guide, self.digits_shift)
        return (*self.top.args, *self.tail.args, *digits, self.m, self.d)


def _laplace_plan(t: int, s: int) -> tuple[int, int]:
    """``(D, m)``: the digits below ``Q`` and the outcomes of ``Q`` per sign."""
    d = 0
    while t > (s * _TOP_SCALE) << (DIGIT_BITS * d):
        d += 1
    lam_top = t / (s << (DIGIT_BITS * d))
    return d, max(1, math.ceil(_TAIL_BITS * math.log(2) * lam_top))


def laplace_size(t: int, s: int) -> int:
    """Thresholds in the tables of scale ``t/s`` (public: sizes the build cost)."""
    d, m = _laplace_plan(t, s)
    return 3 * m + 2 + ((1 << DIGIT_BITS) - 1) * d


def _laplace_top(t: int, s: int, d: int, m: int, w: int) -> list[Interval]:
    """Boundaries ``h q**k`` (k = m..0) then ``1 - h q**k`` (k = 0..m), with
    ``h = p/(1+p) = P(Y > 0)``, ``p = exp(-s/t)``, ``q = p**(4096**D)``."""
    p = exp_neg(s, t, w)
    h = ((p[0] << w) // ((1 << w) + p[0]), -((-p[1] << w) // ((1 << w) + p[1])))
    q_pow = _powers(exp_neg(s << (DIGIT_BITS * d), t, w), m + 1, w)
    left = [imul(h, qk, w) for qk in reversed(q_pow)]
    return left + [one_minus(b, w) for b in reversed(left)]


def _laplace_tail(t: int, s: int, d: int, m: int, w: int) -> list[Interval]:
    """Geometric ``P(Q < k) = 1 - q**k`` for k = 1..m (outcome m: ``Q >= m`` again)."""
    q_pow = _powers(exp_neg(s << (DIGIT_BITS * d), t, w), m + 1, w)
    return [one_minus(qk, w) for qk in q_pow[1:]]


def _digit(t: int, s: int, j: int, w: int) -> list[Interval]:
    """Truncated geometric on ``[0, 4096)`` with ratio ``r = p**(4096**j)``:
    ``P(d < k) = (1 - r**k) / (1 - r**4096)``."""
    size = 1 << DIGIT_BITS
    pw = _powers(exp_neg(s << (DIGIT_BITS * j), t, w), size + 1, w)
    total = one_minus(pw[size], w)
    return [idiv(one_minus(pw[k], w), total, w) for k in range(1, size)]


@lru_cache(maxsize=64)
def laplace_tables(t: int, s: int) -> LaplaceTables:
    """Tables of the discrete Laplace ``P(y) proportional to exp(-|y| s/t)``.

    ``|Y| - 1`` given ``Y != 0`` is geometric with ratio ``p = exp(-s/t)``; writing it
    as ``G mod 4096**D + 4096**D (G div 4096**D)`` gives independent parts (the
    base-4096 digits of a truncated geometric are independent truncated geometrics,
    and ``G div 4096**D`` is geometric with ratio ``p**(4096**D)``). ``D`` is the least
    with ``t/s <= 1024 * 4096**D``: one word draws the sign and ``Q``, one word each
    digit (a scale up to 1024 takes one word a draw, up to 2**22 two).
    """
    d, m = _laplace_plan(t, s)
    digits = [_certified(_digit, t, s, j) for j in range(d)]
    size = (1 << DIGIT_BITS) - 1
    gbits = min(16, size.bit_length() + 4)
    return LaplaceTables(
        top=_certified(_laplace_top, t, s, d, m),
        tail=_certified(_laplace_tail, t, s, d, m),
        digits_first=np.stack([g.first for g in digits]) if d else np.zeros((0, size), np.uint64),
        digits_th=np.stack([g.th for g in digits]) if d else np.zeros((0, size, 3), np.uint64),
        digits_guide=(
            np.stack([g.guide for g in digits]) if d else np.zeros((0, 1 << gbits), np.int32)
        ),
        digits_shift=WORD_BITS - gbits,
        m=m,
        d=d,
    )


# --- discrete Gaussian -----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GaussianTable:
    """Outcomes ``Y < -T``, ``-T, ..., T``, ``Y > T``; a tail is drawn by rejection."""

    table: Table
    half: int

    @property
    def args(self) -> tuple:
        return (*self.table.args, self.half)


def _gaussian_half(a: int, b: int) -> int:
    """``T``: the table covers ``|y| <= T``, beyond which about ``2**-12`` of the mass lies."""
    return max(1, math.ceil(math.sqrt(2 * _TAIL_BITS * math.log(2) * a / b)))


def gaussian_size(a: int, b: int) -> int:
    """Thresholds of the table for ``sigma**2 = a/b`` (public: sizes the build cost)."""
    return 2 * _gaussian_half(a, b) + 2


def _gaussian_bounds(a: int, b: int, half: int, w: int) -> list[Interval]:
    """``P(Y < y)`` for ``y = -T, ..., T + 1``: weights ``r**(y**2)``, ``r = exp(-b/(2a))``,
    summed until the rest is below ``2**(40 - w)`` (bounded by a geometric series)."""
    r = exp_neg(b, 2 * a, w)
    r2 = imul(r, r, w)
    weights = [(1 << w, 1 << w)]
    step = r  # r**(2y + 1): weight y+1 over weight y
    while True:
        nxt = imul(weights[-1], step, w)
        step = imul(step, r2, w)
        rest_hi = -((-nxt[1] << w) // ((1 << w) - step[1])) if step[1] < 1 << w else 1 << w
        if len(weights) > half + 1 and rest_hi < 1 << 40:
            break
        weights.append(nxt)
    rest = (0, rest_hi)
    beyond = (sum(v[0] for v in weights[half + 1 :]), sum(v[1] for v in weights[half + 1 :]))
    beyond = (beyond[0], beyond[1] + rest[1])
    total = (
        weights[0][0] + 2 * (sum(v[0] for v in weights[1:])),
        weights[0][1] + 2 * (sum(v[1] for v in weights[1:]) + rest[1]),
    )
    out = []
    acc = beyond
    out.append(idiv(acc, total, w))
    for y in range(-half, half + 1):
        wy = weights[abs(y)]
        acc = (acc[0] + wy[0], acc[1] + wy[1])
        out.append(idiv(acc, total, w))
    return out


@lru_cache(maxsize=16)
def gaussian_table(a: int, b: int) -> GaussianTable:
    """Table of the discrete Gaussian ``P(y) proportional to exp(-y**2 b/(2a))``."""
    half = _gaussian_half(a, b)
    return GaussianTable(_certified(_gaussian_bounds, a, b, half), half)
