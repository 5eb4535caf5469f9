"""Seeded bit generators built fast, with numpy's streams word for word.

A seeded release draws from ``PCG64(SeedSequence(seed, spawn_key=key))``. numpy builds
that through two objects whose hashing runs in a Python-level loop over numpy scalars
under error-state contexts: tens of microseconds, more than the noise of a few thousand
bins. :func:`pcg64_words` computes the same 128-bit seed and increment with the seed
sequence's hashing compiled (O'Neill's ``seed_seq`` with numpy's constants and pool of
four words), and :func:`pcg64_state` seeds numpy's PCG64 (O'Neill's 128-bit LCG with
the XSL-RR output) from them as numpy does, as four ``uint64`` words that compiled code
advances itself (:func:`pcg64_fill`) and steps back (:func:`pcg64_back`, the LCG
inverted): a sampler draws numpy's words with no call into numpy and hands back the
words it did not use by rewinding. Seeded noise is for experiments only: nothing here
is private.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, on_load

__all__ = ["pcg64_back", "pcg64_fill", "pcg64_state", "pcg64_words"]

_MASK = 0xFFFFFFFF
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4  # numpy's default pool size (words of 32 bits)


@njit(cache=True)
def _state(entropy, out):  # pragma: no cover - compiled
    """Write to ``out`` the four 64-bit words ``SeedSequence.generate_state(4, uint64)``
    gives for the assembled entropy ``entropy`` (32-bit words, in int64), as int64 bit
    patterns (filled in place: a returned array costs numba a boxing step a call):
    hash each word into a pool of four (the hash constant advancing by ``_MULT_A``),
    mix every pool word into the others, mix the remaining words in, then hash the pool
    out (the constant advancing by ``_MULT_B``). Words stay below 2**32; products wrap
    in int64, and their low 32 bits, the only ones kept, are exact. One int64 function:
    numba compiles it quickly."""
    n = entropy.shape[0]
    pool = np.zeros(_POOL, dtype=np.int64)
    h = _INIT_A
    steps = _POOL + _POOL * (_POOL - 1) + _POOL * max(n - _POOL, 0)
    for k in range(steps):
        if k < _POOL:  # the pool's own words
            dst = k
            word = entropy[k] if k < n else 0
        elif k < _POOL * _POOL:  # every pool word into every other
            src = (k - _POOL) // (_POOL - 1)
            dst = (k - _POOL) % (_POOL - 1)
            dst += dst >= src
            word = pool[src]
        else:  # the words beyond the pool, into each pool word
            src = (k - _POOL * _POOL) // _POOL
            dst = (k - _POOL * _POOL) % _POOL
            word = entropy[_POOL + src]
        v = word ^ h  # hashmix
        h = (h * _MULT_A) & _MASK
        v = (v * h) & _MASK
        v ^= v >> 16
        if k < _POOL:
            pool[dst] = v
        else:  # mix
            r = (_MIX_L * pool[dst] - _MIX_R * v) & _MASK
            pool[dst] = r ^ (r >> 16)
    out[:] = 0
    h = _INIT_B
    for i in range(8):
        v = pool[i % _POOL] ^ h
        h = (h * _MULT_B) & _MASK
        v = (v * h) & _MASK
        v ^= v >> 16
        out[i // 2] |= v << (32 * (i % 2))  # little-endian pairs (bit patterns of uint64)


def _words32(value: int, out: list[int]) -> None:
    """Append ``value``'s 32-bit words, least significant first (one word for 0)."""
    while True:
        out.append(value & 0xFFFFFFFF)
        value >>= 32
        if not value:
            return


def _entropy(entropy: int, spawn_key: tuple[int, ...]) -> np.ndarray:
    """The 32-bit words a seed sequence hashes (int64): the entropy's, padded to the pool
    before a spawn key's, as numpy assembles them."""
    if entropy <= _MASK and (not spawn_key or max(spawn_key) <= _MASK):  # a word each
        words = [entropy, 0, 0, 0, *spawn_key] if spawn_key else [entropy]
    else:
        words = []
        _words32(entropy, words)
        if spawn_key:
            words.extend([0] * (_POOL - len(words)))  # none when the entropy fills the pool
            for k in spawn_key:
                _words32(k, words)
    return np.array(words, dtype=np.int64)


def pcg64_words(entropy: int, spawn_key: tuple[int, ...] = ()) -> np.ndarray:
    """``SeedSequence(entropy, spawn_key=spawn_key).generate_state(4, np.uint64)`` for
    non-negative integers."""
    out = np.empty(4, dtype=np.int64)
    _state(_entropy(entropy, spawn_key), out)
    return out.view(np.uint64)


_M64 = (1 << 64) - 1
_MULT = 0x2360ED051FC65DA44385DF649FCCF645  # numpy's PCG64 multiplier (PCG's default)
_MULT_INV = pow(_MULT, -1, 1 << 128)  # steps the LCG back: s = (s' - inc) * _MULT_INV
_MH, _ML = np.uint64(_MULT >> 64), np.uint64(_MULT & _M64)
_IH, _IL = np.uint64(_MULT_INV >> 64), np.uint64(_MULT_INV & _M64)
_S58, _R63 = np.uint64(58), np.uint64(63)
_U64 = np.dtype(np.uint64)
_ONE = np.uint64(1)


def pcg64_state(entropy: int, spawn_key: tuple[int, ...] = ()) -> np.ndarray:
    """The state of ``np.random.PCG64(SeedSequence(entropy, spawn_key=spawn_key))`` as
    ``uint64`` words ``[state high, state low, increment high, increment low]`` (one
    compiled call, :func:`_seed_pcg64`)."""
    st = np.empty(4, dtype=_U64)
    _seed_pcg64(_entropy(entropy, spawn_key), st)
    return st


_umulh = None  # the high word of a 64 x 64-bit product: an LLVM 128-bit multiply, made
# (:func:`_define_umulh`) when numba is imported, before any kernel compiles


def _define_umulh() -> None:
    global _umulh
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def umulh(typingctx, a, b):  # pragma: no cover - compiled
        def codegen(context, builder, signature, args):
            wide = ir.IntType(128)
            product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
            return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

        return types.uint64(types.uint64, types.uint64), codegen

    _umulh = umulh


on_load(_define_umulh)


@njit(cache=True)
def _mul128(ah, al, bh, bl):  # pragma: no cover - compiled
    """``(a b) mod 2**128`` as (high, low) words."""
    return _umulh(al, bl) + ah * bl + al * bh, al * bl


@njit(cache=True)
def pcg64_fill(st, words, start, stop):  # pragma: no cover - compiled
    """Fill ``words[start:stop]`` with the generator's next words (``random_raw``'s):
    a step ``s = s M + inc``, then the XSL-RR output of the new state."""
    sh, sl, ih, il = st[0], st[1], st[2], st[3]
    for k in range(start, stop):
        sh, sl = _mul128(sh, sl, _MH, _ML)
        lo = sl + il
        sh = sh + ih + (_ONE if lo < sl else np.uint64(0))
        sl = lo
        x = sh ^ sl
        r = sh >> _S58
        words[k] = (x >> r) | (x << ((np.uint64(64) - r) & _R63))
    st[0], st[1] = sh, sl


@njit(cache=True)
def pcg64_back(st, count):  # pragma: no cover - compiled
    """Step the generator back ``count`` words: the next ``count`` words drawn are the
    last ``count`` it gave."""
    sh, sl, ih, il = st[0], st[1], st[2], st[3]
    for _ in range(count):
        lo = sl - il
        sh = sh - ih - (_ONE if sl < il else np.uint64(0))
        sh, sl = _mul128(sh, lo, _IH, _IL)
    st[0], st[1] = sh, sl


@njit(cache=True)
def _seed_pcg64(entropy, st):  # pragma: no cover - compiled
    """Fill ``st`` with numpy's PCG64 state for the hashed ``entropy`` (:func:`_state`):
    the seed words' halves ``s, i`` give ``inc = 2 i + 1`` and the state ``(inc + s) M +
    inc`` (a step from zero, ``+ s``, a step), all mod 2**128 in (high, low) words."""
    w = np.empty(4, dtype=np.int64)
    _state(entropy, w)
    u = w.view(np.uint64)
    ih = (u[2] << _ONE) | (u[3] >> _R63)
    il = (u[3] << _ONE) | _ONE
    lo = il + u[1]
    hi = ih + u[0] + (_ONE if lo < il else np.uint64(0))
    hi, lo = _mul128(hi, lo, _MH, _ML)
    sl = lo + il
    st[0] = hi + ih + (_ONE if sl < lo else np.uint64(0))
    st[1] = sl
    st[2], st[3] = ih, il
