"""Certified inversion tables for the exact discrete Laplace and Gaussian samplers.

A table splits ``[0, 1)`` at the cumulative probabilities ``B_1 <= B_2 <= ...`` of a
finite list of outcomes; a uniform ``V`` falls in outcome ``#{j : B_j <= V}``
(inversion). Each ``B_j`` is irrational, so the table stores ``floor(2**192 B_j)``,
certified by :mod:`~dphist._kernel.certified`, as twelve 16-bit units; the sampler
(:mod:`~dphist._kernel.lookup`) reads ``V`` sixteen bits at a time and compares
lazily, so the outcome has exactly the probability ``B_{j+1} - B_j`` given uniform
bits. A table of cells (``cum``: the thresholds below each cell's start) decides the
outcome from the top bits of ``V``'s first unit unless a threshold starts in that
cell; then the first unit, and if need be the next ones, are compared with those
thresholds. Only a tie on all 192 bits (probability ``2**-192`` per threshold) is
undecided: it raises, like the other headroom guards, and is never resampled.

Tables depend on public noise parameters only and are cached per parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..errors import InternalError
from .certified import Interval, exp_neg, floor_bits, idiv, imul, one_minus

__all__ = [
    "DIGIT_BITS",
    "THRESHOLD_UNITS",
    "UNIT_BITS",
    "GaussianTable",
    "LaplaceTables",
    "Table",
    "gaussian_size",
    "gaussian_table",
    "laplace_size",
    "laplace_tables",
]

UNIT_BITS = 16  # V is read sixteen bits at a time
THRESHOLD_UNITS = 12
THRESHOLD_BITS = UNIT_BITS * THRESHOLD_UNITS  # 192
DIGIT_BITS = 8  # the low part of a large magnitude is drawn 8 bits (one unit) per digit
_TOP_SCALE = 1 << DIGIT_BITS  # the top table covers scales up to 256 (about 4,300 thresholds)
_TAIL_BITS = 12  # a table's tail outcome has probability about 2**-12
_PRECISION = 256  # working bits; doubled when a threshold is not decided
_MAX_PRECISION = 4096


@dataclass(frozen=True, eq=False)
class Table:
    """Certified thresholds ``th``: twelve 16-bit units each, most significant first,
    one threshold after the other, in increasing order."""

    th: np.ndarray

    @property
    def size(self) -> int:
        return self.th.shape[0] // THRESHOLD_UNITS


def _table(bounds: list[Interval], w: int) -> Table | None:
    """The table of certified boundaries, or None when one is not decided at ``w``."""
    floors = []
    last = 0
    below_one = (1 << w) - 1  # every boundary is below 1: the last outcome has mass
    for b in bounds:
        f = floor_bits((b[0], min(b[1], below_one)), w, THRESHOLD_BITS)
        if f is None or f >> THRESHOLD_BITS:
            return None
        if f < last:
            raise InternalError("sampler table thresholds are not ordered")
        last = f
        floors.append(f.to_bytes(THRESHOLD_BITS // 8, "big"))
    return Table(np.frombuffer(b"".join(floors), dtype=">u2").astype(np.uint16))


def _certified(build, *args) -> Table:
    """Build at increasing precision until every threshold is decided."""
    w = _PRECISION
    while w <= _MAX_PRECISION:
        table = _table(build(*args, w), w)
        if table is not None:
            return table
        w *= 2
    raise InternalError("a sampler table could not be certified")  # pragma: no cover


def _stacked(tables: list[Table]) -> tuple[np.ndarray, np.ndarray, int]:
    """All thresholds in one array, and the cells of each table: ``cum[r, c]`` counts
    the thresholds of the first ``r`` tables and those of table ``r`` whose first unit
    is below ``c << shift`` (``2**g`` cells, about sixteen per threshold of the largest
    table, at most one per unit value: the cells stay small enough for the cache)."""
    th = np.ascontiguousarray(np.concatenate([t.th for t in tables]))
    g = min(UNIT_BITS, max(8, max(t.size for t in tables).bit_length() + 4))
    shift = UNIT_BITS - g
    cum = np.zeros((len(tables), (1 << g) + 1), dtype=np.int32)
    offset = 0
    for row, t in zip(cum, tables, strict=True):
        cells = np.bincount(t.th[::THRESHOLD_UNITS] >> shift, minlength=1 << g)
        np.cumsum(cells, out=row[1:])
        row += offset
        offset += t.size
    return th, cum, shift


def _powers(r: Interval, count: int, w: int) -> list[Interval]:
    """``r**0, ..., r**(count - 1)``."""
    out = [(1 << w, 1 << w)]
    for _ in range(count - 1):
        out.append(imul(out[-1], r, w))
    return out


# --- discrete Laplace ------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LaplaceTables:
    """``|Y| = 1 + 256**D Q + sum_j 256**j d_j`` (or ``Y = 0``); row 0 of ``cum`` draws
    the sign and ``Q < m`` (outcomes ``(-, Q >= m), (-, m-1), ..., (-, 0), 0, (+, 0),
    ..., (+, m-1), (+, Q >= m)``); row 1, the tail, draws ``Q - m`` when ``Q >= m``
    (outcomes ``0, ..., m - 1`` and ``>= m``: again); rows ``2..D+1`` the digits, most
    significant first, each truncated geometric on ``[0, 256)``. See
    :func:`laplace_tables`."""

    th: np.ndarray
    cum: np.ndarray
    shift: int
    m: int
    d: int

    @cached_property
    def args(self) -> tuple:
        """The kernels' arguments (Python ints: numba dispatches them fastest)."""
        return self.th, self.cum, self.shift, self.m, self.d


@lru_cache(maxsize=256)
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
    ``h = p/(1+p) = P(Y > 0)``, ``p = exp(-s/t)``, ``q = p**(256**D)``."""
    p = exp_neg(s, t, w)
    h = ((p[0] << w) // ((1 << w) + p[0]), -((-p[1] << w) // ((1 << w) + p[1])))
    q_pow = _powers(exp_neg(s << (DIGIT_BITS * d), t, w), m + 1, w)
    left = [imul(h, qk, w) for qk in reversed(q_pow)]
    return left + [one_minus(b, w) for b in reversed(left)]


def _laplace_tail(t: int, s: int, d: int, m: int, w: int) -> list[Interval]:
    """Geometric ``P(G < k) = 1 - q**k`` for k = 1..m (outcome m: ``G >= m`` again)."""
    q_pow = _powers(exp_neg(s << (DIGIT_BITS * d), t, w), m + 1, w)
    return [one_minus(qk, w) for qk in q_pow[1:]]


def _digit(t: int, s: int, j: int, w: int) -> list[Interval]:
    """Truncated geometric on ``[0, 256)`` with ratio ``r = p**(256**j)``:
    ``P(d < k) = (1 - r**k) / (1 - r**256)``."""
    size = 1 << DIGIT_BITS
    pw = _powers(exp_neg(s << (DIGIT_BITS * j), t, w), size + 1, w)
    total = one_minus(pw[size], w)
    return [idiv(one_minus(pw[k], w), total, w) for k in range(1, size)]


@lru_cache(maxsize=64)
def laplace_tables(t: int, s: int) -> LaplaceTables:
    """Tables of the discrete Laplace ``P(y) proportional to exp(-|y| s/t)``.

    ``|Y| - 1`` given ``Y != 0`` is geometric with ratio ``p = exp(-s/t)``; writing it
    as ``G mod 256**D + 256**D (G div 256**D)`` gives independent parts (the base-256
    digits of a truncated geometric are independent truncated geometrics, and
    ``G div 256**D`` is geometric with ratio ``p**(256**D)``). ``D`` is the least with
    ``t/s <= 256 * 256**D``: one 16-bit unit draws the sign and ``Q``, one unit each
    digit (a scale up to 256 takes one unit a draw, up to 65,536 two); ``Q >= m``
    (probability about ``2**-12``) continues from the tail table, ``Q - m`` being
    geometric with ratio ``p**(256**D)`` again (memoryless).
    """
    d, m = _laplace_plan(t, s)
    top = _certified(_laplace_top, t, s, d, m)
    tail = _certified(_laplace_tail, t, s, d, m)
    digits = [_certified(_digit, t, s, j) for j in range(d - 1, -1, -1)]
    th, cum, shift = _stacked([top, tail, *digits])
    return LaplaceTables(th, cum, shift, m, d)


# --- discrete Gaussian -----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GaussianTable:
    """Outcomes ``Y < -T``, ``-T, ..., T``, ``Y > T``; a tail is drawn by rejection."""

    th: np.ndarray
    cum: np.ndarray
    shift: int
    half: int

    @cached_property
    def args(self) -> tuple:
        return self.th, self.cum, self.shift, self.half


@lru_cache(maxsize=256)
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
    th, cum, shift = _stacked([_certified(_gaussian_bounds, a, b, half)])
    return GaussianTable(th, cum, shift, half)
