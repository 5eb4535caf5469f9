"""Compiled table samplers: exact discrete Laplace and Gaussian noise from 16-bit units.

The tables (:mod:`~dphist._kernel.tables`) are read from a stream of 16-bit units
(the source's 64-bit words, four units each, in order). Each kernel adds draws to
``out[start:]`` in place and consumes units in stream order: draw ``i`` starts where
draw ``i - 1`` ended. A draw's first unit usually decides it (no threshold starts in
its cell); otherwise the thresholds in the cell are compared with it, and on a tie
with the next units. A Laplace draw beyond its top table continues from a tail table
(one compiled function draws everything); a Gaussian tail is finished by
:func:`gaussian_one` with exact coins on 64-bit words made of four units each
(:func:`pack_words`).

Kernels return ``(next index, next position, status)``: status ``-1`` means the units
ran out inside a draw, which the caller replays from that draw's first unit (returned
as the position) once more units are appended, so no unit is skipped or reused and
the output is a function of the unit stream alone, whatever the buffer sizes. Status
``-2`` is a headroom guard (a 192-bit tie with a threshold, or a magnitude beyond
``2**62``): raised, never resampled.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .bits import compiled_words_for
from .coins import exp_coin, geometric_draw
from .seeding import pcg64_back, pcg64_fill
from .tables import DIGIT_BITS, THRESHOLD_UNITS

__all__ = [
    "gaussian_add",
    "gaussian_one",
    "laplace_add",
    "laplace_one",
    "pcg_laplace_add",
    "pool_laplace_add",
    "table_index",
]

_MAX_Q = (1 << 62) - 2  # |Y| = 1 + 256**D Q + digits stays below 2**62


@njit(cache=True)
def descend(units, pos, v, lo, hi, th):  # pragma: no cover - compiled
    """Outcome among the thresholds ``lo..hi-1`` starting in the cell of ``V``'s first
    unit ``v``: each unit of ``V`` (the next ones read from ``units[pos:]``) narrows
    them to those below it and those continuing with it, until none continue;
    ``(lo, next position)``, the position -1 when the units run out, -2 on a tie of
    all 192 bits."""
    c = 0
    while True:
        while lo < hi and th[lo * THRESHOLD_UNITS + c] < v:
            lo += 1
        top = lo
        while top < hi and th[top * THRESHOLD_UNITS + c] == v:
            top += 1
        c += 1
        if lo == top:  # equal so far to none: decided
            return lo, pos
        if c == THRESHOLD_UNITS:
            return lo, -2
        if pos >= units.shape[0]:
            return lo, -1
        hi = top
        v = units[pos]
        pos += 1


@njit(cache=True)
def table_index(units, pos, th, cum, shift, row):  # pragma: no cover - compiled
    """Outcome ``#{j : B_j <= V}`` of table ``row``, ``V`` read from ``units[pos:]``:
    the cell of the first unit's top bits narrows the candidates to the thresholds
    starting in it (:func:`descend` decides among them); ``pos`` -1 when the units
    run out, -2 on a tie of all 192 bits."""
    if pos >= units.shape[0]:
        return 0, -1
    v = units[pos]
    pos += 1
    cell = v >> shift
    lo = np.int64(cum[row, cell])
    hi = np.int64(cum[row, cell + 1])
    if lo < hi:
        lo, pos = descend(units, pos, v, lo, hi, th)
        if pos < 0:
            return 0, pos
    return lo - cum[row, 0], pos


@njit(cache=True)
def pack_words(units, pos, count):  # pragma: no cover - compiled
    """``count`` 64-bit words from ``units[pos:]``, four units each in stream order."""
    words = np.empty(count, dtype=np.uint64)
    for i in range(count):
        p = pos + 4 * i
        words[i] = (
            (np.uint64(units[p]) << np.uint64(48))
            | (np.uint64(units[p + 1]) << np.uint64(32))
            | (np.uint64(units[p + 2]) << np.uint64(16))
            | np.uint64(units[p + 3])
        )
    return words


@njit(cache=True)
def tail_geometric(units, pos, t, s):  # pragma: no cover - compiled
    """``G`` with ``P(G >= j) = exp(-j s/t)`` (CKS20's geometric step) on words made of
    the units from ``pos``; a window of words that runs short grows before the units
    do, so the result depends on the unit stream only."""
    count = 16
    while True:
        avail = (units.shape[0] - pos) // 4
        c = min(count, avail)
        g, wp = geometric_draw(pack_words(units, pos, c), 0, t, s)
        if wp >= 0:
            return g, pos + 4 * wp
        if wp < -1 or c == avail:
            return 0, wp
        count *= 16


@njit(cache=True)
def laplace_one(units, pos, th, cum, shift, m, d):  # pragma: no cover - compiled
    """One discrete Laplace draw with :func:`table_index`, tails included:
    ``(value, next position)``, the reference :func:`laplace_add` must agree with."""
    k, pos = table_index(units, pos, th, cum, shift, 0)
    if pos < 0 or k == m + 1:
        return 0, pos
    negative = k <= m
    q = m - k if negative else k - m - 2
    if k == 0 or k == 2 * m + 2:  # Q >= m: memoryless, Q - m from the tail table
        q = m
        while True:
            g, pos = table_index(units, pos, th, cum, shift, 1)
            if pos < 0:
                return 0, pos
            q += g
            if g < m:
                break
            if q > _MAX_Q >> (DIGIT_BITS * d):
                return 0, -2
    for r in range(2, d + 2):
        digit, pos = table_index(units, pos, th, cum, shift, r)
        if pos < 0:
            return 0, pos
        q = (q << DIGIT_BITS) + digit
    return (-(q + 1) if negative else q + 1), pos


@njit(cache=True)
def laplace_add(units, pos, out, start, th, cum, shift, m, d):  # pragma: no cover
    """Discrete Laplace draws added to ``out[start:]`` (statuses in the module doc).

    Each draw reads row 0 (the sign and ``Q``, or zero), the tail row while ``Q >= m``
    and the ``d`` digit rows, one lookup each: :func:`table_index`'s cell lookup
    written out once for all rows (a call per draw costs more than the draw), with
    :func:`descend` called only when thresholds start in the cell.
    """
    n = units.shape[0]
    edge = 2 * m + 2
    last = d + 1
    i = start
    while i < out.shape[0]:
        first = pos
        row = 0
        sign = np.int64(1)
        q = np.int64(0)
        y = np.int64(0)
        while True:
            if pos >= n:
                return i, first, -1
            v = units[pos]
            pos += 1
            cell = v >> shift
            lo = np.int64(cum[row, cell])
            hi = np.int64(cum[row, cell + 1])
            if lo < hi:  # thresholds start in this cell: compare unit by unit
                lo, pos = descend(units, pos, v, lo, hi, th)
                if pos < 0:
                    return i, first, pos
            k = lo - cum[row, 0]
            if row == 0:
                y = k - m - 1  # the value itself when there is no tail and no digit
                if k == 0 or k == edge:  # Q >= m
                    sign = np.int64(-1) if k == 0 else np.int64(1)
                    q = m
                    row = 1
                    continue
                if d == 0 or y == 0:
                    break
                sign = np.int64(1) if y > 0 else np.int64(-1)
                q = sign * y - 1
                row = 2
            elif row == 1:  # the tail: Q - m, or m more and again
                q += k
                if k == m:
                    if q > _MAX_Q >> (DIGIT_BITS * d):
                        return i, first, -2
                    continue
                if d == 0:
                    y = sign * (q + 1)
                    break
                row = 2
            else:
                q = (q << DIGIT_BITS) + k
                if row == last:
                    y = sign * (q + 1)
                    break
                row += 1
        out[i] += y
        i += 1
    return i, pos, 0


@njit(cache=True)
def gaussian_tail(units, pos, half, a, b):  # pragma: no cover - compiled
    """``G >= 0`` with ``P(G = g)`` proportional to ``exp(-(T + 1 + g)**2 b/(2a))``:
    propose ``g`` geometric with ratio ``exp(-(T + 1) b/a)`` and accept with
    ``exp(-g**2 b/(2a))`` (their product is the target up to a constant); coins on
    words made of units, as in :func:`tail_geometric`."""
    while True:
        g, pos = tail_geometric(units, pos, a, (half + 1) * b)
        if pos < 0:
            return 0, pos
        if g > (np.int64(1) << np.int64(30)) or g * g > (np.int64(1) << np.int64(61)) // b:
            return 0, -2
        count = 16
        while True:
            avail = (units.shape[0] - pos) // 4
            c = min(count, avail)
            ok, wp = exp_coin(pack_words(units, pos, c), 0, g * g * b, 2 * a)
            if wp >= 0 or wp < -1 or c == avail:
                break
            count *= 16
        if wp < 0:
            return 0, wp
        pos += 4 * wp
        if ok:
            return g, pos


@njit(cache=True)
def gaussian_one(units, pos, th, cum, shift, half, a, b):  # pragma: no cover - compiled
    """One discrete Gaussian draw with the complete lookup: ``(value, next position)``."""
    k, pos = table_index(units, pos, th, cum, shift, 0)
    if pos < 0 or 0 < k < 2 * half + 2:
        return k - half - 1, pos
    g, pos = gaussian_tail(units, pos, half, a, b)
    return (half + 1 + g if k else -(half + 1 + g)), pos


@njit(cache=True)
def gaussian_add(units, pos, out, start, th, cum, shift, half, a, b):  # pragma: no cover
    """Discrete Gaussian draws (``tables.GaussianTable``) added to ``out[start:]``; the
    lookup written out as in :func:`laplace_add`, a tail outcome (``|y| > T``) redone
    by :func:`gaussian_one`."""
    n = units.shape[0]
    edge = 2 * half + 2
    i = start
    while i < out.shape[0]:
        first = pos
        if pos >= n:
            return i, first, -1
        v = units[pos]
        pos += 1
        cell = v >> shift
        lo = np.int64(cum[0, cell])
        hi = np.int64(cum[0, cell + 1])
        if lo < hi:  # as in laplace_add
            lo, pos = descend(units, pos, v, lo, hi, th)
            if pos < 0:
                return i, first, pos
        y = lo - half - 1
        if lo == 0 or lo == edge:
            y, pos = gaussian_one(units, first, th, cum, shift, half, a, b)
            if pos < 0:
                return i, first, pos
        out[i] += y
        i += 1
    return i, pos, 0


@njit(cache=True)
def pcg_laplace_add(st, out, th, cum, shift, m, d):  # pragma: no cover - compiled
    """:func:`~dphist._kernel.noise.drive` and :func:`laplace_add` in one compiled call
    for a PCG64 state (:mod:`~dphist._kernel.seeding`): words drawn into one buffer in
    chunks, a draw that runs out replayed once the buffer is refilled behind the units
    it left, the whole words left unread stepped back. Status 0, or -2 (headroom)."""
    size = out.shape[0]
    per = d + 1
    nw = compiled_words_for(per * size, 4)
    buf = np.empty(nw + 16, dtype=np.uint64)  # room for a draw's units left at a refill
    units = buf.view(np.uint16)
    done = np.int64(0)  # int64, not a literal 0: laplace_add compiles for one type only
    first = np.int64(0)  # the call's first unit: units a draw that ran out left, words behind
    k = np.int64(0)  # words those units take
    while True:  # one call site of laplace_add: numba compiles this in a second, not five
        want = compiled_words_for(per * (size - done), 4)
        if k + want > buf.shape[0]:
            grown = np.empty(k + want, dtype=np.uint64)
            for j in range(k):  # loops, not slice assignments: numba compiles those slowly
                grown[j] = buf[j]
            buf = grown
            units = buf.view(np.uint16)
        pcg64_fill(st, buf, k, k + want)
        end = 4 * (k + want)
        done, pos, status = laplace_add(units[:end], first, out, done, th, cum, shift, m, d)
        if status != -1:
            break
        left = end - pos  # moved to end on a word boundary
        k = (left + 3) // 4
        first = 4 * k - left
        for j in range(left):  # forwards: first <= pos
            units[first + j] = units[pos + j]
    if status < -1:
        return status
    pcg64_back(st, (end - pos) // 4)
    return 0


@njit(cache=True)
def pool_laplace_add(pool, at, out, th, cum, shift, m, d):  # pragma: no cover - compiled
    """:func:`laplace_add` over ``out`` on the pooled words ``pool[at[0]:]``, in one
    compiled call: ``at[0]`` moves past every word read (a partly read one included),
    or to the pool's end when the units run out (the caller goes on from the returned
    ``(done, pos, status)`` with fresh words behind the units left)."""
    units = pool.view(np.uint16)
    done, pos, status = laplace_add(units, 4 * at[0], out, np.int64(0), th, cum, shift, m, d)
    at[0] = pool.shape[0] if status else (pos + 3) // 4
    return done, pos, status
