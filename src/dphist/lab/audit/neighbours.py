"""Neighbouring histograms: the default catalogue, probed and exact decision boundaries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..._kernel import (
    Accountant,
    NoiseSource,
    protect,
    validate_epsilon,
)
from ..._kernel.noise import GeneratorBits
from ..._numeric.tree import tree_layout
from ...errors import ValidationError
from ...methods import get_method
from ...methods.run import run as run_method
from .features import fourier, pattern_bits, retained, row_keys
from .mechanisms import Mechanism, Outputs, as_seed, children


@dataclass(frozen=True, eq=False)
class Neighbour:
    """A neighbouring pair: ``x2 = x + sign * records * e_bin``, and why it was chosen.

    ``records`` is 1 for record neighbours and ``K`` for one privacy unit whose ``K``
    records fall in one bin (the largest move a unit bounded to ``K`` records makes).
    """

    x: np.ndarray
    x2: np.ndarray
    bin: int
    sign: int
    reason: str
    records: int = 1

    def __post_init__(self) -> None:
        for name in ("x", "x2"):
            arr = np.array(getattr(self, name), dtype=np.int64)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def describe(self) -> str:
        step = f"{'+' if self.sign > 0 else '-'}{self.records}"
        return f"bin {self.bin} {step} ({self.reason})"


def _pair(x: np.ndarray, i: int, sign: int, reason: str, records: int = 1) -> Neighbour:
    x = np.array(x, dtype=np.int64)
    x2 = x.copy()
    x2[i] += sign * records
    if sign not in (-1, 1) or records < 1 or x2[i] < 0:
        raise ValidationError(
            f"bin {i} cannot change by {sign * records}: counts stay non-negative"
        )
    return Neighbour(x, x2, i, sign, reason, records)


def pair(
    x: object, i: int, sign: int = +1, reason: str = "given", *, records: int = 1
) -> Neighbour:
    """The neighbour ``x + sign * records * e_i`` of ``x`` (``sign`` is +1 or -1;
    ``records`` > 1 for a privacy unit of that many records)."""
    return _pair(np.asarray(x), int(i), int(sign), reason, int(records))


def _structure(out: Outputs) -> list[bytes]:
    """Released structure of each run: the grouping, else the pattern of equal outputs."""
    if out.labels is not None:
        return row_keys(pattern_bits(out.labels))
    return row_keys(pattern_bits(np.round(out.values, 9)))


def probe_boundaries(
    mechanism: Mechanism,
    x: object,
    *,
    bins: Iterable[int] | None = None,
    span: int = 10,
    probes: int = 3,
    seed: object = 0,
    limit: int = 2,
) -> tuple[Neighbour, ...]:
    """Decision-boundary pairs (spec §1.2.2, N2) found with common random numbers.

    For each bin ``i`` (default: all) and each value ``v`` within ``span`` of ``x_i``,
    run the mechanism ``probes`` times on ``x`` with ``x_i = v`` and on its ``+1``
    neighbour *with the same seeds*, and count the runs whose released structure
    (the grouping, else the pattern of equal output values) differs. Pairs are
    returned by that count, largest first, at most ``limit``. A mechanism whose
    structure follows the raw counts differs in every probe at its boundary.
    """
    x = np.array(x, dtype=np.int64)
    seeds = children(as_seed(seed), probes)
    found: list[tuple[int, int, int]] = []
    for i in range(x.size) if bins is None else bins:
        for v in range(max(0, int(x[i]) - span), int(x[i]) + span + 1):
            lo = x.copy()
            lo[i] = v
            hi = lo.copy()
            hi[i] += 1
            differ = 0
            for s in seeds:
                a = _structure(mechanism.run(lo, 1, s))
                b = _structure(mechanism.run(hi, 1, s))
                differ += a != b
            if differ:
                found.append((differ, i, v))
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    out = []
    for differ, i, v in found[:limit]:
        base = x.copy()
        base[i] = v
        out.append(_pair(base, i, +1, f"decision boundary ({differ}/{probes} probes)"))
    return tuple(out)


class _ZeroNoise(NoiseSource):
    """A noise source whose sampler returns zeros: the method's decisions on exact
    values, at the claimed epsilon (its thresholds and costs unchanged)."""

    def add_discrete_laplace(self, out: np.ndarray, t: int, s: int) -> None:
        """Adds nothing."""

    def spawn(self) -> _ZeroNoise:
        return self


def _noise_free_key(name: str, blocks: Sequence[Any], eps: Fraction, x: np.ndarray) -> bytes:
    """The decisions visible in one noise-free release: the grouping and the number
    of retained Fourier coefficients."""
    outcome = run_method(
        blocks,
        protect(x),
        epsilon=eps,
        budget=Accountant(eps, label="noise-free").child(eps, label=name),
        noise=_ZeroNoise(GeneratorBits(np.random.default_rng(0))),
    )
    y = outcome.estimate[None, :]
    parts: list[bytes] = []
    if outcome.groups is not None:
        parts.append(pattern_bits(outcome.groups[None, :]).tobytes())
    if y.shape[1] >= 2:
        parts.append(retained(fourier(y)).tobytes())
    return b"|".join(parts)


def decision_pairs(
    method: str,
    x: object,
    *,
    bins: Iterable[int] | None = None,
    span: int = 20,
    epsilon: object = 1.0,
    params: Mapping[str, Any] | None = None,
    limit: int | None = 2,
) -> tuple[Neighbour, ...]:
    """Decision-boundary pairs (spec §1.2.2, N2) of a registered method, found noise-free.

    The method runs with a sampler that returns zeros, so every data-dependent
    decision (a threshold, a clustering cut, a private selection) is taken on exact
    values at the claimed ``epsilon``. For each bin ``i`` (default: all) and each
    value ``v`` within ``span`` of ``x_i``, the pair ``x_i = v`` / ``v + 1`` is kept
    when the released decisions (the grouping, the number of retained Fourier
    coefficients) differ between the two. For a decision "noisy value >= c" this is
    the pair ``c - 1 -> c``: the event has probabilities ``P(Z >= 1)`` and
    ``P(Z >= 0)`` for the noise ``Z``, whose ratio is the whole budget behind the
    noisy value when nothing else moves the cut. Pairs are ordered by distance from
    ``x_i``, at most ``limit`` (None: all). Primitives that draw their own bits
    instead of calling the sampler (the certified L1 partition) still run with noise.
    """
    info = get_method(method)
    blocks = info.pipeline(**dict(params or {})).blocks
    eps = validate_epsilon(epsilon)
    x = np.array(x, dtype=np.int64)
    found: list[tuple[int, int, int]] = []
    for i in range(x.size) if bins is None else bins:
        values = range(max(0, int(x[i]) - span), int(x[i]) + span + 2)
        keys = [_noise_free_key(info.name, blocks, eps, _with(x, i, v)) for v in values]
        for v, a, b in zip(values, keys, keys[1:], strict=False):
            if a != b:
                found.append((abs(v - int(x[i])), int(i), v))
    found.sort()
    chosen = found if limit is None else found[:limit]
    return tuple(_pair(_with(x, i, v), i, +1, "noise-free decision boundary") for _, i, v in chosen)


def _with(x: np.ndarray, i: int, v: int) -> np.ndarray:
    out = x.copy()
    out[i] = v
    return out


def standard_histogram(n: int) -> np.ndarray:
    """The default audit input of ``n`` bins: a flat run of 20s (ties, interior bins),
    then alternating 0 and 3 (zero and low bins), then a large last bin (60)."""
    if n < 2:
        raise ValidationError(f"audit inputs need at least 2 bins; got {n}")
    x = np.empty(n, dtype=np.int64)
    half = max(1, n // 2)
    x[:half] = 20
    x[half:] = np.where(np.arange(n - half) % 2 == 0, 0, 3)
    x[-1] = 60
    return x


def _runs_of_equal(x: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(x[1:] != x[:-1])))


def neighbours(
    x: object,
    *,
    groups: object = None,
    fanout: int | None = None,
    limit: int | None = None,
) -> tuple[Neighbour, ...]:
    """The neighbour catalogue of ``x`` (spec §1.2.2), most informative first.

    +1 and -1 (where the count allows) at: both bins of the first boundary of
    ``groups`` (default: the runs of equal counts of ``x``), the first zero bin (+1
    only), the smallest positive bin, the middle, first, last and largest bins, a bin
    inside a run of equal counts (a tie, +1), both bins of the largest boundary and,
    for a fan-out tree, the two leaves on either side of the root's first split.
    A pair chosen for several reasons appears once, with its reasons joined.
    """
    x = np.array(x, dtype=np.int64)
    if x.ndim != 1 or x.size < 2 or np.any(x < 0):
        raise ValidationError("x must be a 1-D array of at least 2 non-negative counts")
    n = x.size
    labels = _runs_of_equal(x) if groups is None else np.asarray(groups, dtype=np.int64)
    candidates: list[tuple[int, int, str]] = []

    def both(i: int, reason: str) -> None:
        candidates.append((i, +1, reason))
        candidates.append((i, -1, reason))

    boundaries = np.flatnonzero(labels[1:] != labels[:-1]) + 1
    if boundaries.size:
        b = int(boundaries[0])
        both(b - 1, "group boundary (last bin of a group)")
        both(b, "group boundary (first bin of a group)")
    zeros = np.flatnonzero(x == 0)
    if zeros.size:
        candidates.append((int(zeros[0]), +1, "zero bin"))
    positive = np.flatnonzero(x > 0)
    if positive.size:
        both(int(positive[np.argmin(x[positive])]), "low bin")
    both(n // 2, "middle bin")
    both(0, "first bin")
    both(n - 1, "last bin")
    ties = np.flatnonzero((x[1:-1] == x[:-2]) & (x[1:-1] == x[2:])) + 1
    if ties.size:
        candidates.append((int(ties[0]), +1, "tie inside a flat run"))
    both(int(np.argmax(x)), "largest bin")
    if boundaries.size:
        jumps = np.abs(np.diff(x))[boundaries - 1]
        b = int(boundaries[np.argmax(jumps)])
        both(b - 1, "largest group boundary")
        both(b, "largest group boundary")
    if fanout is not None and n > 1:
        layout = tree_layout(n, fanout)
        level1 = slice(int(layout.level_offsets[1]), int(layout.level_offsets[2]))
        splits = layout.lo[level1][1:]
        if splits.size:
            split = int(splits[0])
            both(split - 1, "tree split (left leaf)")
            both(split, "tree split (right leaf)")
    reasons: dict[tuple[int, int], list[str]] = {}
    for i, sign, reason in candidates:
        if sign > 0 or x[i] > 0:
            found = reasons.setdefault((i, sign), [])
            if reason not in found:
                found.append(reason)
    out = [_pair(x, i, sign, "; ".join(r)) for (i, sign), r in reasons.items()]
    return tuple(out[:limit] if limit is not None else out)


def catalogue(n: int = 8, *, fanout: int | None = 2) -> tuple[Neighbour, ...]:
    """Default neighbour pairs for inputs of ``n`` bins: :func:`neighbours` of
    :func:`standard_histogram`, then the empty histogram against one record (N8) and
    a huge last bin of 10**6 records, +1 (N5: magnitude-dependent paths)."""
    x = standard_histogram(n)
    pairs = list(neighbours(x, fanout=fanout))
    pairs.append(_pair(np.zeros(n, dtype=np.int64), n // 2, +1, "empty vs one record"))
    huge = x.copy()
    huge[-1] = 10**6
    pairs.append(_pair(huge, n - 1, +1, "huge bin (10**6)"))
    return tuple(pairs)
