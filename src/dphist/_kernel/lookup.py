"""Compiled table samplers: exact discrete Laplace and Gaussian noise, one word a value.

Each kernel adds draws to ``out[start:]`` in place and consumes the words in stream
order: draw ``i`` starts where draw ``i - 1`` ended. It returns ``(next index, next
position, status)``; status ``-1`` means the words ran out inside a draw, which the
caller replays from that draw's first word (returned as the position) once more
words are appended, so no word is skipped or reused and the output is a function of
the word stream alone, whatever the buffer sizes. Status ``-2`` is a headroom guard
(a 189-bit tie with a threshold, or a magnitude beyond ``2**62``): raised, never
resampled. Status ``-3`` hands a draw whose first word ties with a threshold's (or a
Gaussian tail) to the one-draw functions ``*_one``, which redo it from its first word
with the complete lookup: the fast loop stays small enough to run at memory speed.
The tables are built and certified in :mod:`~dphist._kernel.tables`.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .coins import exp_coin, geometric_draw
from .tables import DIGIT_BITS

__all__ = ["gaussian_add", "gaussian_one", "laplace_add", "laplace_one", "table_index"]


@njit(cache=True, inline="always")
def fast_index(words, pos, first, th, guide, shift):  # pragma: no cover - compiled
    """Outcome ``#{j : B_j <= V}`` from ``V``'s first word ``words[pos]`` (the caller
    checks it exists); ``(0, -3)`` when that word ties with a threshold's."""
    u = words[pos]
    k = np.int64(guide[u >> np.uint64(shift)])
    size = first.shape[0]
    while k < size and first[k] <= u:
        k += 1
    if k > 0 and first[k - 1] == u:
        return 0, -3
    return k, pos + 1


@njit(cache=True)
def table_index(words, pos, first, th, guide, shift):  # pragma: no cover - compiled
    """The complete inversion: on a tie with thresholds ``j..k-1`` compare ``V``'s next
    words with theirs, read lazily; ``pos`` -1 when the words run out, -2 on a tie of
    all 189 bits."""
    n = words.shape[0]
    if pos >= n:
        return 0, -1
    u = words[pos]
    pos += 1
    k = np.int64(guide[u >> np.uint64(shift)])
    size = first.shape[0]
    while k < size and first[k] <= u:
        k += 1
    if k == 0 or first[k - 1] != u:
        return k, pos
    j = k - 1
    while j > 0 and first[j - 1] == u:
        j -= 1
    if pos >= n:
        return 0, -1
    u1 = words[pos]
    pos += 1
    u2 = np.uint64(0)
    have2 = False
    while j < k:
        if th[j, 1] > u1:
            return j, pos
        if th[j, 1] == u1:
            if not have2:
                if pos >= n:
                    return 0, -1
                u2 = words[pos]
                pos += 1
                have2 = True
            if th[j, 2] > u2:
                return j, pos
            if th[j, 2] == u2:
                return 0, -2
        j += 1
    return k, pos


@njit(cache=True)
def laplace_add(
    words, pos, out, start, top_first, top_th, top_guide, top_shift, tail_first, tail_th,
    tail_guide, tail_shift, dig_first, dig_th, dig_guide, dig_shift, m, d,
):  # pragma: no cover - compiled  # fmt: skip
    """Discrete Laplace draws added to ``out[start:]`` (statuses in the module doc).

    Top outcome ``k`` is the value ``k - m - 1`` when there are no digits; otherwise
    it gives the sign and ``Q``, and one lookup per digit follows. A tail outcome
    (``Q >= m``) or a tie goes to :func:`laplace_one`.
    """
    n = words.shape[0]
    i = start
    while i < out.shape[0]:
        if pos + d >= n:
            return i, pos, -1
        k, nxt = fast_index(words, pos, top_first, top_th, top_guide, top_shift)
        if nxt < 0 or k == 0 or k == 2 * m + 2:
            return i, pos, -3
        if d == 0:
            out[i] += k - m - 1
        elif k != m + 1:
            g = np.int64(k - m - 2 if k > m else m - k)
            for j in range(d - 1, -1, -1):
                r, nxt = fast_index(words, nxt, dig_first[j], dig_th[j], dig_guide[j], dig_shift)
                if nxt < 0:
                    return i, pos, -3
                g = (g << DIGIT_BITS) + r
            out[i] += g + 1 if k > m else -(g + 1)
        pos = nxt
        i += 1
    return i, pos, 0


@njit(cache=True)
def laplace_one(
    words, pos, top_first, top_th, top_guide, top_shift, tail_first, tail_th, tail_guide,
    tail_shift, dig_first, dig_th, dig_guide, dig_shift, m, d,
):  # pragma: no cover - compiled  # fmt: skip
    """One discrete Laplace draw with the complete lookup, tails included:
    ``(value, next position)``, the reference :func:`laplace_add` must agree with."""
    k, pos = table_index(words, pos, top_first, top_th, top_guide, top_shift)
    if pos < 0 or k == m + 1:
        return 0, pos
    negative = k <= m
    q = m - k if negative else k - m - 2
    if k == 0 or k == 2 * m + 2:  # Q >= m: memoryless, draw Q - m again
        limit = (np.int64(1) << np.int64(62 - DIGIT_BITS * d)) - 2
        q = m
        while True:
            r, pos = table_index(words, pos, tail_first, tail_th, tail_guide, tail_shift)
            if pos < 0:
                return 0, pos
            q += r
            if r < m:
                break
            if q > limit:
                return 0, -2
    g = np.int64(q)
    for j in range(d - 1, -1, -1):
        r, pos = table_index(words, pos, dig_first[j], dig_th[j], dig_guide[j], dig_shift)
        if pos < 0:
            return 0, pos
        g = (g << DIGIT_BITS) + r
    return (-(g + 1) if negative else g + 1), pos


@njit(cache=True)
def gaussian_tail(words, pos, half, a, b):  # pragma: no cover - compiled
    """``G >= 0`` with ``P(G = g)`` proportional to ``exp(-(T + 1 + g)**2 b/(2a))``:
    propose ``g`` geometric with ratio ``exp(-(T + 1) b/a)`` and accept with
    ``exp(-g**2 b/(2a))`` (their product is the target up to a constant)."""
    while True:
        g, pos = geometric_draw(words, pos, a, (half + 1) * b)
        if pos < 0:
            return 0, pos
        if g > (np.int64(1) << np.int64(30)) or g * g > (np.int64(1) << np.int64(61)) // b:
            return 0, -2
        ok, pos = exp_coin(words, pos, g * g * b, 2 * a)
        if pos < 0:
            return 0, pos
        if ok:
            return g, pos


@njit(cache=True)
def gaussian_add(words, pos, out, start, first, th, guide, shift, half, a, b):  # pragma: no cover
    """Discrete Gaussian draws (``tables.GaussianTable``) added to ``out[start:]``; a
    tie or a tail outcome (``|y| > T``) goes to :func:`gaussian_one`."""
    n = words.shape[0]
    i = start
    while i < out.shape[0]:
        if pos >= n:
            return i, pos, -1
        k, nxt = fast_index(words, pos, first, th, guide, shift)
        if nxt < 0 or k == 0 or k == 2 * half + 2:
            return i, pos, -3
        out[i] += k - half - 1
        pos = nxt
        i += 1
    return i, pos, 0


@njit(cache=True)
def gaussian_one(words, pos, first, th, guide, shift, half, a, b):  # pragma: no cover
    """One discrete Gaussian draw with the complete lookup: ``(value, next position)``."""
    k, pos = table_index(words, pos, first, th, guide, shift)
    if pos < 0 or 0 < k < 2 * half + 2:
        return k - half - 1, pos
    g, pos = gaussian_tail(words, pos, half, a, b)
    return (half + 1 + g if k else -(half + 1 + g)), pos
