"""Exact coins from uniform words: the samplers' integer primitives.

Canonne, Kamath and Steinke (NeurIPS 2020), Algorithms 1 and 2, on integers only:
fair coins, Bernoulli(2/e) and Bernoulli(exp(-r/t)) coins, the geometric and
discrete Laplace variables built from them, and the tail event ``Z <= -m`` as a
product of such coins (see ``partition.py`` and the kernel NOTES). Every function
takes ``(words, pos, ...)`` and returns its result with the next position; ``pos < 0``
means the words ran out (the caller refills and replays the step). A coin reads the
top 63 bits of a 64-bit word (``words[pos] >> 1``).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

__all__ = [
    "bernoulli_exp_neg",
    "exp_coin",
    "fair_heads",
    "geometric_draw",
    "laplace_draw",
    "muldivmod",
    "tail_rest",
    "uniform_below",
    "uniform_bits",
]

_CAP = 1 << 62  # saturation of muldivmod
_MAX_LOOP = 127  # loop guards: trips with probability below 1/127! or e**-128
_DROP = np.uint64(1)  # a coin reads a word's top 63 bits


@njit(cache=True)
def uniform_below(words, pos, m):
    """Exactly uniform integer in [0, m) by rejection on 63-bit words; pos < 0 = exhausted."""
    limit = (np.uint64(1) << np.uint64(63)) // m * m
    while 0 <= pos < words.shape[0]:
        w = words[pos] >> _DROP
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
def fair_heads(words, pos, k):
    """True when ``k`` fair coins all come up heads (probability 2**-k)."""
    n = words.shape[0]
    while k > 0:
        if pos < 0 or pos >= n:
            return False, -1
        w = words[pos] >> _DROP
        pos += 1
        take = k if k < 63 else 63
        mask = (np.uint64(1) << np.uint64(take)) - np.uint64(1)
        if (w & mask) != np.uint64(0):
            return False, pos
        k -= take
    return True, pos


@njit(cache=True)
def uniform_bits(words, pos, h):
    """Uniform integer in [0, 2**h), h <= 62."""
    if pos < 0 or pos >= words.shape[0]:
        return 0, -1
    w = words[pos] >> _DROP
    return np.int64(w & ((np.uint64(1) << np.uint64(h)) - np.uint64(1))), pos + 1


@njit(cache=True)
def two_over_e(words, pos):
    """Bernoulli(2/e): CKS20 Algorithm 1 for gamma = 1 continued after its fair coin."""
    k = np.uint64(3)
    while True:
        a, pos = uniform_below(words, pos, k)
        if pos < 0:
            return False, pos
        if a >= np.uint64(1):
            return (k & np.uint64(1)) == np.uint64(1), pos
        k += np.uint64(1)
        if k > np.uint64(127):
            return False, -2


@njit(cache=True)
def exp_coin(words, pos, num, den):
    """Bernoulli(exp(-num/den)) for integers num >= 0, 1 <= den <= 2**56."""
    whole = num // den
    rest = num - whole * den
    for _ in range(whole):
        ok, pos = bernoulli_exp_neg(words, pos, np.uint64(1), np.uint64(1))
        if pos < 0 or not ok:
            return False, pos
    return bernoulli_exp_neg(words, pos, np.uint64(rest), np.uint64(den))


@njit(cache=True)
def negative_sign(words, pos, t, s):
    """Bernoulli(rho / (1 + rho)), rho = exp(-s/t): the sign of CKS20 Algorithm 2."""
    n = words.shape[0]
    while True:
        if pos < 0 or pos >= n:
            return False, -1
        w = words[pos] >> _DROP
        pos += 1
        if (w & np.uint64(1)) == np.uint64(0):
            return False, pos
        nonzero, pos = exp_coin(words, pos, s, t)  # magnitude >= 1, else reject
        if pos < 0:
            return False, pos
        if nonzero:
            return True, pos


@njit(cache=True)
def geometric_draw(words, pos, t, s):
    """G with P(G >= j) = exp(-j s/t) (the magnitude step of CKS20 Algorithm 2)."""
    tu = np.uint64(t)
    while True:
        u, pos = uniform_below(words, pos, tu)
        if pos < 0:
            return 0, pos
        ok, pos = bernoulli_exp_neg(words, pos, u, tu)
        if pos < 0:
            return 0, pos
        if not ok:
            continue
        v = 0
        while True:
            more, pos = bernoulli_exp_neg(words, pos, np.uint64(1), np.uint64(1))
            if pos < 0:
                return 0, pos
            if not more:
                break
            v += 1
            if v > 127:
                return 0, -2
        return (np.int64(u) + t * v) // s, pos


@njit(cache=True)
def laplace_draw(words, pos, t, s):
    """One discrete Laplace draw of scale t/s (CKS20 Algorithm 2)."""
    n = words.shape[0]
    while True:
        y, pos = geometric_draw(words, pos, t, s)
        if pos < 0:
            return 0, pos
        if pos >= n:
            return 0, -1
        negative = ((words[pos] >> _DROP) & np.uint64(1)) == np.uint64(1)
        pos += 1
        if negative and y == 0:
            continue
        return (-y if negative else y), pos


@njit(cache=True)
def muldivmod(a, b, d):
    """``(min(floor(a b / d), 2**62), a b mod d)`` for 0 <= a, b < 2**63, 1 <= d <= 2**56."""
    if a == 0 or b == 0:
        return 0, 0
    if b <= (np.int64(0x7FFFFFFFFFFFFFFF) // a):
        p = a * b
        return min(p // d, _CAP), p % d
    qb = b // d
    rb = b - qb * d
    q = 0
    r = 0
    for bit in range(62, -1, -1):
        q = q * 2 if q < _CAP // 2 else _CAP
        r *= 2
        if r >= d:
            r -= d
            q = q + 1 if q < _CAP else _CAP
        if (a >> bit) & 1:
            q = q + qb if q < _CAP - qb else _CAP
            r += rb
            if r >= d:
                r -= d
                q = q + 1 if q < _CAP else _CAP
    return q, r


@njit(cache=True)
def tail_rest(words, pos, m, paid, t, s):
    """Bernoulli(P(Z <= -m) * 2**paid) given that ``paid <= n1`` fair coins were shared."""
    if m < 1:
        return False, -3  # not a tail event: the caller's bound was not a bound
    n1, rem = muldivmod(m - 1, s, t)
    if n1 < paid:
        return False, -3  # the block bound was not a bound
    ok, pos = fair_heads(words, pos, n1 - paid)
    if pos < 0 or not ok:
        return False, pos
    i = 0
    while i < n1:
        ok, pos = two_over_e(words, pos)
        if pos < 0 or not ok:
            return False, pos
        i += 1
        if i > 127:  # 128 coins of probability 1/e passed: the sampler's guard
            return False, -2
    ok, pos = bernoulli_exp_neg(words, pos, np.uint64(rem), np.uint64(t))
    if pos < 0 or not ok:
        return False, pos
    return negative_sign(words, pos, t, s)
