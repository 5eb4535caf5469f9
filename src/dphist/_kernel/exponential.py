"""Exact exponential mechanism on lattice scores, from integer arithmetic.

Under zero-concentrated DP a selection runs as the exponential mechanism rather than
report noisy min: an epsilon exponential mechanism has epsilon-bounded range (Durfee
and Rogers, NeurIPS 2019), which is ``epsilon**2 / 8``-zCDP (Cesar and Rogers, ALT
2021), a quarter of the ``epsilon**2 / 2`` of an arbitrary pure epsilon step. Report
noisy min with Laplace noise is epsilon-DP but not known to have bounded range, so it
would keep the pure cost.

:func:`exponential_draw` returns index ``i`` with probability proportional to
``exp(-d_i p / q)`` for integers ``d_i >= 0`` (lattice scores minus their minimum)
and a rational exponent ``p/q``: propose ``i`` uniformly, accept it with probability
``exp(-d_i p / q)`` (Canonne, Kamath, Steinke 2020, Algorithm 1: one exp(-1) coin
per unit of the whole part, then one coin for the rest), repeat. The minimum's
weight is 1, so a proposal is accepted with probability at least ``1/n``. The law is
exact given uniform words; the whole part saturates at ``2**62`` (an acceptance
probability below ``exp(-2**62)`` replaced by a smaller one).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .coins import muldivmod
from .noise import BitSource, bernoulli_exp_neg, uniform_below

__all__ = ["exponential_draw"]


def exponential_draw(bits: BitSource, d: np.ndarray, p: int, q: int) -> int:
    """Index ``i`` with probability ``exp(-d_i p/q) / sum_j exp(-d_j p/q)``.

    ``d``: int64 values in ``[0, 2**62]``; ``0 <= p < 2**63``, ``1 <= q <= 2**56``. Words
    are consumed in stream order; when they run out the draw is replayed from its first
    word with more words appended, so the result does not depend on the buffer size.
    """
    d = np.ascontiguousarray(d, dtype=np.int64)
    size = 8 * d.shape[0] + 4096
    words = bits.words(size)
    while True:
        index = _draw(words, d, np.int64(p), np.int64(q))
        if index >= 0:
            return int(index)
        words = np.concatenate((words, bits.words(size)))
        size *= 2


@njit(cache=True)
def _draw(words, d, p, q):  # pragma: no cover - compiled
    """One draw by rejection from the uniform proposal; -1 when the words run out."""
    n = np.uint64(d.shape[0])
    one = np.uint64(1)
    pos = 0
    while True:
        i, pos = uniform_below(words, pos, n)
        if pos < 0:
            return -1
        whole, rest = muldivmod(d[i], p, q)
        accept = True
        k = 0
        while k < whole:
            accept, pos = bernoulli_exp_neg(words, pos, one, one)
            if pos < 0:
                return -1
            if not accept:
                break
            k += 1
        if accept:
            accept, pos = bernoulli_exp_neg(words, pos, np.uint64(rest), np.uint64(q))
            if pos < 0:
                return -1
        if accept:
            return np.int64(i)
