"""Bit sources: streams of uniform 64-bit words for the exact samplers.

* :class:`SystemBits` (secure mode): the operating system's CSPRNG via ``os.urandom``.
  It takes no seed and fails closed. Small requests are cut from a per-process pool of
  OS words read 128 KB at a time; each pooled word is handed out once (words a sampler
  did not use are dropped, never handed out again) and a forked child drops the pool
  it inherited, so no two requests or processes share a word.
* :class:`GeneratorBits` (seeded mode): the raw words of a numpy ``Generator``; unused
  words go back to the stream, so outputs depend on the seed and the sequence of
  requests only, never on buffer sizes. Reproducible and therefore **not private**.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .._jit import njit
from ..errors import PrivacyError
from .seeding import pcg64_back, pcg64_fill, pcg64_state

__all__ = ["CHUNK", "BitSource", "GeneratorBits", "SystemBits", "on_pool", "words_for"]

CHUNK = 1 << 14  # words per OS read (128 KB): reused memory in cache; fresh multi-MB
# buffers cost more in page faults than their random bytes on some machines
_U64 = np.dtype(np.uint64)  # dtype objects: numpy converts a scalar type on every call
_NO_WORDS = np.zeros(0, dtype=np.uint64)
_M64 = (1 << 64) - 1
_POOLED = CHUNK >> 2  # secure requests of at most this many words come from the pool
_POOL: list = [_NO_WORDS, np.zeros(1, dtype=np.int64)]  # words, first not handed out
_POOL_LOCK = threading.Lock()


def words_for(units: int, per_word: int) -> int:
    """Words to fetch for an estimated ``units`` (``per_word`` to a word): a margin of a
    sixty-fourth, sixteen units and four words (a draw's rare extra units: a threshold's
    first unit matched, a tail), so that a second read is rare, at most ``CHUNK``. The
    compiled drivers size their reads with the same rule (:data:`compiled_words_for`)."""
    return min(CHUNK, (units + (units >> 6) + 16) // per_word + 4)


compiled_words_for = njit(cache=True)(words_for)


class BitSource:
    """Supplies vectors of uniform 64-bit words (``uint64``), one stream: a sampler
    hands back the words it did not use with :meth:`unread`."""

    private: bool = False
    keeps_unread: bool = False  # whether unread words go back to the stream

    def pcg(self) -> np.ndarray | None:
        """A PCG64 state compiled samplers may draw from directly (:class:`GeneratorBits`)."""
        return None

    def words(self, n: int) -> np.ndarray:
        raise NotImplementedError

    def unread(self, words: np.ndarray) -> None:
        """Return unused words to the front of the stream (dropped by default)."""


class SystemBits(BitSource):
    """Uniform words from the operating system's cryptographic generator.

    No seed can be given: reproducible noise is not private noise. Small requests are
    cut from a per-process pool of OS bytes read 128 KB at a time (one system call
    and one copy for many requests); each pooled word is handed out once, and a forked
    child drops the pool it inherited (:func:`_drop_pool`), so no two processes or
    requests ever share a word.
    """

    private = True

    def __init__(self) -> None:  # explicit: refuses any seed argument with a TypeError
        pass

    def words(self, n: int) -> np.ndarray:
        if n > _POOLED:
            return _os_words(n)
        with _POOL_LOCK:
            buf, at = _pooled(n)
            pos = int(at[0])
            at[0] = pos + n
        return buf[pos : pos + n]


def _os_words(n: int, head: np.ndarray = _NO_WORDS) -> np.ndarray:
    """``head`` followed by ``n`` fresh words of the operating system's CSPRNG, read at
    most ``CHUNK`` at a time into one writable array (compiled samplers take it as it is)."""
    out = np.empty(head.shape[0] + n, dtype=_U64)
    out[: head.shape[0]] = head
    dest = out[head.shape[0] :].view(np.uint8)
    for done in range(0, n, CHUNK):
        k = min(n - done, CHUNK)
        dest[8 * done : 8 * (done + k)] = np.frombuffer(_urandom(8 * k), dtype=np.uint8)
    return out


def _urandom(size: int) -> bytes:
    """``size`` bytes of the operating system's CSPRNG, or :class:`PrivacyError`."""
    try:
        return os.urandom(size)
    except (NotImplementedError, OSError) as exc:
        raise PrivacyError(
            "the operating system's random source failed; refusing to release without secure noise"
        ) from exc


def on_pool(need: int, kernel, out: np.ndarray, args: tuple) -> tuple[np.ndarray, tuple]:
    """``(pool, kernel(pool, at, out, *args))`` under the pool's lock, the pool holding
    at least ``need`` unused words from ``at[0]``: a compiled sampler drawing on the
    pooled words directly, which moves ``at[0]`` past every word it read."""
    with _POOL_LOCK:
        buf, at = _pooled(need)
        return buf, kernel(buf, at, out, *args)


def _pooled(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pool ``(words, [first word not handed out])`` holding at least ``n < CHUNK``
    unused words; when it does not, a new pool of its unused words (never handed out)
    followed by ``CHUNK`` fresh ones, so no OS byte is wasted. The caller holds
    ``_POOL_LOCK`` and moves the position past the words it takes."""
    buf, at = _POOL
    start = int(at[0])
    if start + n > buf.shape[0]:
        buf = _os_words(CHUNK, buf[start:])
        at = np.zeros(1, dtype=np.int64)
        _POOL[:] = buf, at
    return buf, at


def _drop_pool() -> None:
    """Forget the pooled words (in a forked child: they are its parent's) and make a
    fresh lock (another thread may have held the old one at the fork)."""
    global _POOL_LOCK
    _POOL[:] = _NO_WORDS, np.zeros(1, dtype=np.int64)
    _POOL_LOCK = threading.Lock()


class GeneratorBits(BitSource):
    """Uniform words from a numpy Generator: reproducible, for experiments only.

    A seed's PCG64 stream (:meth:`from_seed`, what ``rng=<int>`` gives) is drawn by
    compiled code from the generator's state (:func:`~dphist._kernel.seeding.pcg64_state`,
    numpy's words exactly), and unread words step it back; a Generator given by the
    caller is drawn from through numpy (so it advances) and its unread words are kept."""

    private = False
    keeps_unread = True

    def __init__(self, generator: np.random.Generator):
        self._bitgen = generator.bit_generator
        self._seed = None
        self._kind = type(self._bitgen)
        self._children = 0
        self._pending = _NO_WORDS
        self._state: np.ndarray | None = None

    @classmethod
    def from_seed(
        cls, seed: np.random.SeedSequence | tuple, kind: type = np.random.PCG64
    ) -> GeneratorBits:
        """The words of ``Generator(kind(seed))``, its state made on first use (a seed only
        spawned from costs no generator). ``seed`` is a SeedSequence or its
        ``(entropy, spawn_key)``, made when first needed (the same sequence)."""
        obj = cls.__new__(cls)
        obj._bitgen, obj._seed, obj._kind = None, seed, kind
        obj._children = 0
        obj._pending = _NO_WORDS
        obj._state = None
        return obj

    def pcg(self) -> np.ndarray | None:
        """The compiled PCG64 state of a seed's stream (made on first use), else None."""
        st = self._state
        if st is None and self._bitgen is None and self._kind is np.random.PCG64:
            seed = self._seed
            if type(seed) is tuple:
                st = pcg64_state(*seed)  # numpy's stream, built without its objects
            else:
                d = np.random.PCG64(seed).state["state"]
                st = np.array([d["state"] >> 64, d["state"] & _M64, d["inc"] >> 64,
                               d["inc"] & _M64], dtype=_U64)  # fmt: skip
            self._state = st
        return st

    def _generator(self) -> np.random.BitGenerator:
        """numpy's bit generator (a caller's, or a seed's of another kind, made once)."""
        if self._bitgen is None:
            seed = self._seed
            if type(seed) is tuple:
                seed = np.random.SeedSequence(seed[0], spawn_key=seed[1])
            self._bitgen = self._kind(seed)
        return self._bitgen

    def spawn(self) -> GeneratorBits:
        """An independent child stream: the words ``Generator.spawn`` would give (the
        ``k``-th child of a seed sequence has its entropy and its spawn key plus ``k``)."""
        seed = self._seed if self._seed is not None else self._bitgen.seed_seq
        if type(seed) is tuple:
            entropy, key = seed
            child = (entropy, (*key, self._children))
            self._children += 1
            return GeneratorBits.from_seed(child, self._kind)
        return GeneratorBits.from_seed(seed.spawn(1)[0], self._kind)

    def words(self, n: int) -> np.ndarray:
        st = self._state if self._state is not None else self.pcg()
        if st is not None:
            out = np.empty(n, dtype=_U64)
            pcg64_fill(st, out, 0, n)
            return out
        kept = self._pending
        if not kept.size:
            return self._generator().random_raw(n)
        if kept.size >= n:
            self._pending = kept[n:]
            return kept[:n]
        out = np.empty(n, dtype=np.uint64)
        out[: kept.size] = kept
        out[kept.size :] = self._generator().random_raw(n - kept.size)
        self._pending = _NO_WORDS
        return out

    def unread(self, words: np.ndarray) -> None:
        """Seeded streams take unused words back (the last ones drawn), so outputs never
        depend on chunk sizes."""
        if self._state is not None:
            pcg64_back(self._state, words.shape[0])
        elif words.size:
            self._pending = np.concatenate((words, self._pending)) if self._pending.size else words


if hasattr(os, "register_at_fork"):  # no fork, no inherited pool, elsewhere
    os.register_at_fork(after_in_child=_drop_pool)
