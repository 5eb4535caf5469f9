"""Kellaris S1 (DAWA's L1 partition over all intervals) with certified noise, sampled lazily.

The mechanism (``PrivateView.noisy_partition(family="all")``, methods framework A.2):
every interval ``[a, b]`` gets the cost

    C(a, b) = rint(dev(a, b) / g) * g + penalty + g * Z(a, b),

``Z(a, b)`` i.i.d. discrete Laplace of scale ``t/s`` (lattice units, ``P(z) ~
rho^|z|``, ``rho = exp(-s/t)``), and the partition minimising the total cost is
released; the DP over right ends is ``F(0) = 0``,
``F(b + 1) = min_a F(a) + C(a, b)`` with ties to the smallest ``a``, everything in
float64 with the operations in this order (``fl`` = float64 rounding)::

    phi_a(z) = fl(F(a) + fl(fl(D(a, b) * g + penalty) + z * g)).

Drawing all ``N (N + 1) / 2`` noises costs minutes at ``N = 32768``. Each right end
``b`` uses its own noises, so step ``b`` only needs the pair (minimum, first
minimiser) of ``phi_a(Z_a)`` over ``a <= b`` for independent ``Z_a``; this module
samples exactly that pair without drawing every ``Z_a``.

Why it is exact. ``phi_a`` is non-decreasing in ``z`` (float addition is monotone),
so for any threshold ``T`` the event ``phi_a(Z_a) <= T`` is ``Z_a <= k_a(T)`` for an
integer ``k_a`` found by a monotone search. The candidates are visited right to left
over a binary tree on ``a``; ``T`` is always the value of the best candidate seen so
far, and a candidate is either drawn in full or only asked "is ``Z_a <= k_a(T)``?".
A candidate answering no has ``phi_a > T``, so it can neither be the minimum nor win
a tie; a candidate answering yes gets ``Z_a`` from its exact conditional law. The
noises are independent of each other and of the order of the questions (which may
depend on the data and on earlier answers), so the sampled pair has exactly the law
of the full computation. Tail probabilities are sampled with integer arithmetic only:
for ``m >= 1``, ``P(Z <= -m) = rho^m / (1 + rho)`` factors into independent exact
coins

* ``n1 = floor((m - 1) s / t)`` fair coins and ``n1`` coins of probability ``2/e``
  (together ``n1`` coins of probability ``1/e``: in Canonne, Kamath, Steinke,
  NeurIPS 2020, Algorithm 1 with ``gamma = 1`` the second trial is a fair coin and
  the rest of the series gives ``2/e``),
* one coin ``exp(-((m - 1) s mod t) / t)`` (their Algorithm 1),
* one coin ``rho / (1 + rho)``: the sign of their Algorithm 2 (a fair sign, and a
  negative zero is rejected),

and, given ``Z <= -m``, ``-m - Z`` is geometric with ``P(>= j) = rho^j``
(memorylessness).

Whole blocks. For a tree node of ``2^h`` candidates, a lower bound on every
``phi_a`` (the smallest ``F`` in the node plus the deviation of the node's shortest
interval) gives ``L <= n1_a`` for every ``a`` in it. ``dev`` never shrinks when an
interval grows: ``dev/2`` is the total shortfall of the values below the mean, and
adding a value ``y`` above the mean raises the mean, so every old shortfall grows
(symmetrically for ``y`` below, with the excesses). The fair coins are then shared: with
``S`` the set of candidates passing, draw ``C ~ Bernoulli(2^(h - L))`` and a uniform
``J`` in the node; ``J`` is proposed with probability ``2^-L`` and kept with the
probability of its remaining coins, i.e. with probability ``P(J in S)`` in all. A
kept ``J`` is accepted as the first member of ``S`` if no candidate left of it
passes (checked the same way, recursively), and otherwise the node passes nobody;
after an acceptance the candidates right of ``J`` are examined normally. For ``A``
non-empty with first element ``j`` this gives ``P(S = A) = P(j in S) prod_{i < j}
P(i not in S) prod_{i > j} P(i in S or not, as in A)``, the product law, and the
empty set gets the rest. A far node costs one draw.

Guards as in ``noise.py``: a chain of more than 127 ``1/e`` coins raises instead of
releasing (probability below ``e^-127`` per candidate examined).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .._numeric.deviation import DeviationIndex, interval_dev, l1_partition_streamed
from .._numeric.segment import starts_from_back
from ..errors import InternalError
from .coins import fair_heads, geometric_draw, laplace_draw, muldivmod, tail_rest, uniform_bits
from .noise import BitSource, NoiseSource

__all__ = ["certified_full_partition", "lazy_supported", "reference_full_partition"]

_ZMAX = 1 << 52  # noise values searched; the sampler never exceeds 128 t / s < 2**52
_LMAX = 120  # shared fair coins per block (probability 2**-120 already)
_CAP = 1 << 62
_CHUNK = 1 << 20  # most words fetched per refill
_DEV_SHRINK = 1.0 - 2.0**-49  # dev lower bounds allow for its rounding (relative 2**-51)

# step status codes
_DONE = 0
_REFILL = 1  # out of words: keep words[pos:] and call again (the step is replayed)
_HEADROOM = 2  # a guard tripped (astronomically unlikely): raise
_BROKEN = 3  # an internal invariant failed: raise


# ------------------------------------------------------------------- float helpers


@njit(cache=True, inline="always")
def _phi(f, c, g, z):
    return f + (c + np.float64(z) * g)


@njit(cache=True)
def _kmax(f, c, g, thr):
    """Largest z in [-2**52, 2**52] with f + (c + z g) <= thr (float64), or -2**52 - 1."""
    est = (thr - f - c) / g
    if not est < _ZMAX:
        z = np.int64(_ZMAX)
    elif not est > -_ZMAX:
        z = np.int64(-_ZMAX)
    else:
        z = np.int64(np.floor(est))
    if _phi(f, c, g, z) <= thr:
        step = 1
        while z < _ZMAX:
            up = z + step if z + step < _ZMAX else np.int64(_ZMAX)
            if _phi(f, c, g, up) <= thr:
                z = up
                step *= 2
                continue
            while up - z > 1:
                mid = (z + up) // 2
                if _phi(f, c, g, mid) <= thr:
                    z = mid
                else:
                    up = mid
            return z
        return z
    hi = z
    step = 1
    while hi > -_ZMAX:
        lo = hi - step if hi - step > -_ZMAX else np.int64(-_ZMAX)
        if _phi(f, c, g, lo) <= thr:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _phi(f, c, g, mid) <= thr:
                    lo = mid
                else:
                    hi = mid
            return lo
        hi = lo
        step *= 2
    return np.int64(-_ZMAX - 1)


# ------------------------------------------------------------------- one DP step


@njit(cache=True)
def _cost_base(dev, g, penalty):
    return np.rint(dev / g) * g + penalty


@njit(cache=True)
def _deficit(F, dz, dzb, dsum, vals, m, prefix, a, b, g, penalty, thr):
    """m_a = -k_a(thr) for candidate a (<= 0 when Z = 0 would already pass)."""
    dev = interval_dev(dz, dzb, dsum, vals, m, prefix, a, b)
    c = _cost_base(dev, g, penalty)
    k = _kmax(F[a], c, g, thr)
    return -k, c


@njit(cache=True)
def _any_passes(
    words, pos, F, dz, dzb, dsum, vals, m, prefix, b, g, penalty, thr, t, s, lo, hi, paid
):
    """Exact indicator that some a in [lo, hi) has phi_a(Z_a) <= thr (values discarded).

    Every candidate in the range needs at least ``paid`` fair coins.
    """
    start = lo
    while start < hi:
        size = 1
        while start % (size * 2) == 0 and start + size * 2 <= hi:
            size *= 2
        h = 0
        while (1 << h) < size:
            h += 1
        ok, pos = fair_heads(words, pos, paid - h)
        if pos < 0:
            return False, pos
        if ok:
            j, pos = uniform_bits(words, pos, h)
            if pos < 0:
                return False, pos
            j += start
            mj, _ = _deficit(F, dz, dzb, dsum, vals, m, prefix, j, b, g, penalty, thr)
            ok, pos = tail_rest(words, pos, mj, paid, t, s)
            if pos < 0:
                return False, pos
            if ok:
                before, pos = _any_passes(
                    words,
                    pos,
                    F,
                    dz,
                    dzb,
                    dsum,
                    vals,
                    m,
                    prefix,
                    b,
                    g,
                    penalty,
                    thr,
                    t,
                    s,
                    start,
                    j,
                    paid,
                )
                if pos < 0:
                    return False, pos
                if not before:
                    return True, pos
        start += size
    return False, pos


@njit(cache=True)
def _step(
    words, pos, F, tree, size, depth, dz, dzb, dsum, vals, m, prefix, b, g, penalty, t, s,
    slack, stack,
):  # fmt: skip
    """(min, first argmin) over a <= b of phi_a(Z_a); returns (best, arg, pos)."""
    best = np.inf
    arg = -1
    top = 0
    stack[0, 0] = 0  # lo
    stack[0, 1] = depth  # h
    stack[0, 2] = 1  # node id
    top = 1
    while top > 0:
        top -= 1
        lo = stack[top, 0]
        h = stack[top, 1]
        node = stack[top, 2]
        if lo > b:
            continue
        fmin = tree[node]
        if fmin == np.inf:
            continue
        if h == 0:
            a = lo
            if best == np.inf:
                dev = interval_dev(dz, dzb, dsum, vals, m, prefix, a, b)
                c = _cost_base(dev, g, penalty)
                z, pos = laplace_draw(words, pos, t, s)
                if pos < 0:
                    return best, arg, pos
                v = _phi(F[a], c, g, z)
            else:
                ma, c = _deficit(F, dz, dzb, dsum, vals, m, prefix, a, b, g, penalty, best)
                if ma <= 0:
                    z, pos = laplace_draw(words, pos, t, s)
                    if pos < 0:
                        return best, arg, pos
                else:
                    ok, pos = tail_rest(words, pos, ma, 0, t, s)
                    if pos < 0:
                        return best, arg, pos
                    if not ok:
                        continue
                    gz, pos = geometric_draw(words, pos, t, s)
                    if pos < 0:
                        return best, arg, pos
                    z = -ma - gz
                v = _phi(F[a], c, g, z)
            if v < best or (v == best and a < arg):
                best = v
                arg = a
            continue
        half = 1 << (h - 1)
        split = True
        if best < np.inf:
            last = lo + 2 * half - 1
            if last > b:
                last = b
            dev = interval_dev(dz, dzb, dsum, vals, m, prefix, last, b) * _DEV_SHRINK
            k = _kmax(fmin, _cost_base(dev, g, penalty), g, best)
            if k < 0:
                n1, _ = muldivmod(-k - 1, s, t)
                paid = n1 if n1 < _LMAX else _LMAX
                if paid >= h + slack:
                    split = False
                    ok, pos = fair_heads(words, pos, paid - h)
                    if pos < 0:
                        return best, arg, pos
                    if not ok:
                        continue
                    j, pos = uniform_bits(words, pos, h)
                    if pos < 0:
                        return best, arg, pos
                    j += lo
                    if j > b:
                        continue
                    mj, cj = _deficit(F, dz, dzb, dsum, vals, m, prefix, j, b, g, penalty, best)
                    ok, pos = tail_rest(words, pos, mj, paid, t, s)
                    if pos < 0:
                        return best, arg, pos
                    if not ok:
                        continue
                    before, pos = _any_passes(
                        words,
                        pos,
                        F,
                        dz,
                        dzb,
                        dsum,
                        vals,
                        m,
                        prefix,
                        b,
                        g,
                        penalty,
                        best,
                        t,
                        s,
                        lo,
                        j,
                        paid,
                    )
                    if pos < 0:
                        return best, arg, pos
                    if before:
                        continue  # J was not the first to pass: the node passes nobody
                    gz, pos = geometric_draw(words, pos, t, s)
                    if pos < 0:
                        return best, arg, pos
                    v = _phi(F[j], cj, g, -mj - gz)
                    if v < best or (v == best and j < arg):
                        best = v
                        arg = j
                    # the candidates right of J: aligned blocks of [j + 1, lo + 2 half)
                    start = j + 1
                    end = lo + 2 * half
                    while start < end and start <= b:
                        bsz = 1
                        bh = 0
                        while start % (bsz * 2) == 0 and start + bsz * 2 <= end:
                            bsz *= 2
                            bh += 1
                        stack[top, 0] = start
                        stack[top, 1] = bh
                        stack[top, 2] = (size + start) >> bh
                        top += 1
                        start += bsz
        if split:
            stack[top, 0] = lo
            stack[top, 1] = h - 1
            stack[top, 2] = 2 * node
            stack[top + 1, 0] = lo + half
            stack[top + 1, 1] = h - 1
            stack[top + 1, 2] = 2 * node + 1
            top += 2
    return best, arg, pos


@njit(cache=True)
def _run(
    words, pos, F, argmin, tree, size, depth, dz, dzb, dsum, vals, m, prefix, b, g, penalty,
    t, s, slack, stack, margin,
):  # fmt: skip
    """Steps b, b + 1, ...; returns (next step, position of its first word, status).

    A step starts only with ``margin`` unused words; one that runs out is replayed
    from its first word once more words are appended, so every step is a fixed
    function of the word stream and no word is ever skipped or reused.
    """
    n = prefix.shape[0] - 1
    while b < n:
        if words.shape[0] - pos < margin:
            return b, pos, _REFILL
        best, arg, end = _step(
            words, pos, F, tree, size, depth, dz, dzb, dsum, vals, m, prefix, b, g, penalty,
            t, s, slack, stack,
        )  # fmt: skip
        if end == -1:
            return b, pos, _REFILL  # replay this step with more words
        if end == -2:
            return b, pos, _HEADROOM
        if end < 0 or arg < 0:
            return b, pos, _BROKEN
        pos = end
        F[b + 1] = best
        argmin[b + 1] = arg
        if b + 1 < size:
            node = size + b + 1
            tree[node] = best
            node >>= 1
            while node >= 1:
                left = tree[2 * node]
                right = tree[2 * node + 1]
                tree[node] = left if left < right else right
                node >>= 1
        b += 1
    return b, pos, _DONE


# ------------------------------------------------------------------- drivers


def lazy_supported(t: int, s: int) -> bool:
    """The lazy sampler needs every noise value the sampler can return below 2**52."""
    return 128 * t < _ZMAX * s


def certified_full_partition(
    x: np.ndarray,
    penalty: float,
    g: float,
    t: int,
    s: int,
    bits: BitSource,
    *,
    slack: int = 1,
    chunk: int | None = None,
) -> np.ndarray:
    """The S1 partition with i.i.d. ``g * DiscreteLaplace(t/s)`` noise on every interval.

    Same output law as :func:`reference_full_partition`; see the module docstring.
    ``slack`` (>= 0) only changes how early blocks are tested as a whole (tests use 0
    to exercise the block path); the law does not depend on it. ``chunk`` is the
    number of words fetched at a time (the result is the same for any value: words are
    consumed in stream order). Returns group starts.
    """
    if not lazy_supported(t, s) or t > (1 << 56) or s < 1:
        raise InternalError(f"lazy S1 sampler needs 128 t / s < 2**52; got t={t}, s={s}")
    index = DeviationIndex(x)
    n = index.n
    size = 1
    depth = 0
    while size < n:
        size *= 2
        depth += 1
    tree = np.full(2 * size, np.inf)
    tree[size] = 0.0
    node = size >> 1
    while node >= 1:
        tree[node] = min(tree[2 * node], tree[2 * node + 1])
        node >>= 1
    F = np.empty(n + 1)
    F[0] = 0.0
    argmin = np.zeros(n + 1, dtype=np.int64)
    stack = np.empty((4 * (depth + 2) * (depth + 2), 3), dtype=np.int64)
    parts = index.parts()
    if chunk is None:
        chunk = min(_CHUNK, max(4096, 16 * n))  # a step uses about 30 words
    words = bits.words(chunk)
    pos = 0
    b = 0
    while True:
        b, pos, status = _run(
            words,
            pos,
            F,
            argmin,
            tree,
            size,
            depth,
            *parts,
            b,
            float(g),
            float(penalty),
            int(t),
            int(s),
            int(slack),
            stack,
            chunk // 8,
        )
        if status == _DONE:
            bits.unread(words[pos:])
            break
        if status == _REFILL:
            left = words[pos:]
            words = np.concatenate((left, bits.words(max(chunk, 2 * left.size))))
            pos = 0
        elif status == _HEADROOM:
            raise InternalError("discrete Laplace sampler exceeded its integer headroom")
        else:
            raise InternalError("lazy S1 sampler: a block bound did not hold")
    return starts_from_back(argmin)


@njit(cache=True)
def _step_samples(
    words,
    F,
    tree,
    size,
    depth,
    dz,
    dzb,
    dsum,
    vals,
    m,
    prefix,
    b,
    g,
    penalty,
    t,
    s,
    slack,
    values,
    args,
    done,
):
    """Fill values[done:], args[done:] with samples of one step (for tests).

    Returns (samples done, position of the first word of an unfinished sample, status).
    """
    stack = np.empty((4 * (depth + 2) * (depth + 2), 3), dtype=np.int64)
    pos = 0
    for r in range(done, values.shape[0]):
        best, arg, end = _step(
            words, pos, F, tree, size, depth, dz, dzb, dsum, vals, m, prefix, b, g, penalty,
            t, s, slack, stack,
        )  # fmt: skip
        if end < 0:
            return r, pos, end
        pos = end
        values[r] = best
        args[r] = arg
    return values.shape[0], pos, 0


def step_samples(x, F, b, penalty, g, t, s, reps, bits, *, slack=1):
    """``reps`` independent samples of step ``b`` given ``F[0..b]``: (minima, first argmins).

    For tests: the law of the pair is checked against exact probabilities.
    """
    index = DeviationIndex(x)
    size = 1
    depth = 0
    while size < index.n:
        size *= 2
        depth += 1
    tree = np.full(2 * size, np.inf)
    tree[size : size + b + 1] = F[: b + 1]
    for node in range(size - 1, 0, -1):
        tree[node] = min(tree[2 * node], tree[2 * node + 1])
    values = np.empty(reps)
    args = np.empty(reps, dtype=np.int64)
    done = 0
    words = bits.words(1 << 16)
    while done < reps:
        done, pos, status = _step_samples(
            words,
            np.asarray(F, dtype=np.float64),
            tree,
            size,
            depth,
            *index.parts(),
            b,
            float(g),
            float(penalty),
            int(t),
            int(s),
            int(slack),
            values,
            args,
            done,
        )
        if status == -1:
            words = np.concatenate((words[pos:], bits.words(max(1 << 16, 2 * (words.size - pos)))))
        elif status != 0:
            raise InternalError(f"step sampler stopped with status {status}")
    bits.unread(words[pos:])
    return values, args


def reference_full_partition(
    x: np.ndarray, penalty: float, g: float, t: int, s: int, noise: NoiseSource
) -> np.ndarray:
    """The same mechanism with every noise drawn: ``O(N^2 log N)``, for tests and fallback."""
    n = len(x)

    def to_costs(b0: int, dev: np.ndarray) -> np.ndarray:
        ends = np.arange(b0, b0 + dev.shape[0])[:, None]
        valid = np.arange(n)[None, :] <= ends
        out = np.full(dev.shape, np.inf)
        out[valid] = np.rint(dev[valid] / g) * g + penalty
        out[valid] += g * noise.discrete_laplace(t, s, int(valid.sum())).astype(np.float64)
        return out

    return l1_partition_streamed(x, to_costs)
