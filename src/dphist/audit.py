"""Statistical privacy audit of histogram mechanisms (a testing tool, not a privacy tool).

This module *tests* implementations; it adds no privacy to anything. It runs a
mechanism many times in seeded (non-private) mode, with the production sampler, on
two neighbouring histograms ``x`` and ``x' = x +- e_i`` and looks for an event whose
probability differs by more than a factor ``exp(epsilon)`` between the two. A pass
is evidence, never proof: the audit only sees the inputs and events it tries.

One audit of one neighbour pair has two phases on disjoint random streams:

1. **Search.** ``n_search`` runs per side. Every event of a fixed catalogue is
   scored and the ``k`` (default 5) most promising ones, with the side they favour,
   are kept. The catalogue (privacy-assurance spec §1.2.3):

   * thresholds ``s >= t`` and ``s < t`` on scalar statistics ``s`` of the output:
     every coordinate, range sums and differences of coordinates (bin ``i`` against
     every other bin, every interval through ``i``, every prefix), the rank of bin
     ``i``, the number of distinct values, equality with a neighbour and with zero,
     two linear classifiers fitted on the search runs (mean difference and its
     whitened, Fisher-discriminant form), and joint-tail statistics on the
     coordinates that moved and on the windows and group around ``i``: the minimum
     and maximum of the standardised deviations and a clipped sum, which is the
     log-likelihood ratio of a claimed Laplace model (E3, E4); the output's
     orthonormal Fourier coefficients, how many of them are non-zero (a spectral
     method's released K) and the same joint-tail statistics on the coefficients
     that moved (E5);
   * thresholds are the pooled search quantiles, or every observed value for a
     statistic with few values (this includes the lattice points ``x_i`` and
     ``x_i + 1`` of integer outputs);
   * categorical events: the released grouping pattern, the index of the largest
     bin and, when the output takes few values, the whole output vector; each
     observed category and the unions of categories ranked by their search ratio.

   An event's score is the confirm-phase bound it would reach if its true
   probabilities were the one-sided 95% Clopper-Pearson bounds of the search
   counts; it only ranks events.

2. **Confirm.** ``n_confirm`` fresh runs per side. For each kept event ``E``
   favouring ``a`` over ``b``: ``eps_lb(E) = ln(CP_lower(p_a) / CP_upper(p_b))``,
   each bound exact Clopper-Pearson at level ``alpha / (2k)``. By the union bound
   the probability that *any* ``eps_lb(E)`` exceeds the true privacy loss of the
   mechanism on this pair is at most ``alpha`` (default ``1e-6``), whatever the
   mechanism does; a mechanism is flagged when ``max_E eps_lb(E) > epsilon``.

False alarms. A correct epsilon-DP mechanism is flagged on a given pair with
probability at most ``alpha``. A suite of ``P`` pair audits flags a correct
mechanism anywhere with probability at most ``P * alpha``
(:func:`suite_false_alarm_bound`); with a fixed audit seed the outcome is
deterministic, so a test suite built on it cannot be flaky.

White-box backstop. :func:`ledger_check` runs one release with a counting noise
source and checks that the ledger recomposes exactly to the claimed epsilon, that
every charge's noise scale is at least sensitivity/epsilon and certified, and that
every value drawn from the sampler was covered by a charge made before the draw.
Uncharged stages that sampling cannot see (spec §1.2.7) are caught here.

Mechanisms. A :class:`Mechanism` runs a batch: ``run(x, runs, seed)`` returns
:class:`Outputs` (one row per run, plus the released grouping if any).
:func:`method_mechanism` wraps a registered method (``dphist.publish`` in seeded
mode), :func:`pipeline_mechanism` a pipeline of blocks run through the kernel,
:func:`function_mechanism` a plain function; :func:`seeded_laplace` gives plain
functions the production sampler.

Neighbours. :func:`catalogue` and :func:`neighbours` give the default pairs (spec
§1.2.2); :func:`probe_boundaries` finds decision boundaries with common random
numbers, and :func:`decision_pairs` finds them exactly by running a registered
method noise-free: a neighbour only reveals a data-dependent decision (a threshold,
a clustering cut, a private choice) when it moves it, so methods whose decisions
are far from the default pairs need these.

Example
-------
>>> from dphist import audit
>>> report = audit.audit_method("identity", epsilon=1.0, n_search=500, n_confirm=2000,
...                             pairs=1, seed=1)
>>> report.flagged
False
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.stats import beta as _beta

from ._kernel import (
    Accountant,
    Charge,
    NoiseSource,
    Primitive,
    as_fraction,
    protect,
    validate_epsilon,
)
from ._kernel.noise import GeneratorBits, discrete_laplace, rational_scale
from ._numeric.tree import tree_layout
from .blocks import State
from .errors import ValidationError
from .methods import get_method
from .methods.run import run as run_method
from .session import publish

__all__ = [
    "ALPHA",
    "MEASUREMENT_PRIMITIVES",
    "SELECTION_PRIMITIVES",
    "AuditResult",
    "EventResult",
    "LedgerReport",
    "Mechanism",
    "Neighbour",
    "Outputs",
    "PairResult",
    "audit",
    "audit_method",
    "audit_pair",
    "catalogue",
    "clopper_pearson",
    "decision_pairs",
    "epsilon_lower_bound",
    "function_mechanism",
    "ledger_check",
    "method_catalogue",
    "method_mechanism",
    "neighbours",
    "pair",
    "pipeline_mechanism",
    "probe_boundaries",
    "seeded_laplace",
    "standard_histogram",
    "suite_false_alarm_bound",
]

ALPHA = 1e-6
"""Default false-alarm probability per audited neighbour pair."""

TOP_K = 5
"""Events kept from the search phase and confirmed."""

_SEARCH_LEVEL = 0.05  # one-sided level of the search-phase ranking bounds
_PER_STATISTIC = 2  # at most this many kept events share one statistic
_TAIL = np.array([0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4])
_QUANTILES = np.concatenate([_TAIL, [0.5], 1 - _TAIL[::-1]])
_FEW_VALUES = 64  # a statistic with at most this many values uses all of them
_MAX_CATEGORIES = 4096  # categorical statistics with more search categories are dropped
_MAX_SHIFTED = 8  # largest "moved coordinates" set for the joint-tail statistics
_TOL = 1e-9


# --------------------------------------------------------------------------- bounds


def clopper_pearson(k: Any, n: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided Clopper-Pearson bounds for ``k`` successes in ``n`` trials.

    Returns ``(lower, upper)``: ``P(p < lower) <= level`` and ``P(p > upper) <= level``
    (each bound on its own; a two-sided interval of coverage ``1 - 2 level``).
    ``lower = Beta(level; k, n-k+1)`` quantile (0 when ``k = 0``) and ``upper`` the
    ``1 - level`` quantile of ``Beta(k+1, n-k)`` (1 when ``k = n``). ``k`` may be
    fractional (used only to rank events).
    """
    if not 0 < level < 1:
        raise ValidationError(f"level must lie in (0, 1); got {level!r}")
    k = np.asarray(k, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), k.shape)
    k = np.clip(k, 0.0, n)
    lower = np.zeros(k.shape)
    upper = np.ones(k.shape)
    pos = k > 0
    if np.any(pos):
        lower[pos] = _beta.ppf(level, k[pos], n[pos] - k[pos] + 1)
    below = k < n
    if np.any(below):
        upper[below] = _beta.isf(level, k[below] + 1, n[below] - k[below])
    return lower, upper


def epsilon_lower_bound(hits_a: Any, hits_b: Any, runs: Any, level: float) -> np.ndarray:
    """``ln(CP_lower(hits_a) / CP_upper(hits_b))``: a lower confidence bound on epsilon.

    With probability at least ``1 - 2 level`` the true ratio ``P_a(E) / P_b(E)`` is at
    least ``exp`` of the result. ``-inf`` when ``hits_a`` is 0.
    """
    lo, _ = clopper_pearson(hits_a, runs, level)
    _, up = clopper_pearson(hits_b, runs, level)
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(up)


def suite_false_alarm_bound(pairs: int, alpha: float = ALPHA) -> float:
    """Probability bound that a suite of ``pairs`` pair audits flags a correct mechanism."""
    return min(1.0, pairs * alpha)


# --------------------------------------------------------------------------- mechanisms


@dataclass(frozen=True, eq=False)
class Outputs:
    """A batch of runs: ``values`` has one row per run; ``labels`` the released grouping
    (one row of bin labels per run) or None."""

    values: np.ndarray
    labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        if values.ndim != 2:
            raise ValidationError("outputs must be a (runs, m) array")
        object.__setattr__(self, "values", values)
        if self.labels is not None:
            labels = np.asarray(self.labels, dtype=np.int64)
            if labels.ndim != 2 or labels.shape[0] != values.shape[0]:
                raise ValidationError("labels must be a (runs, n) array")
            object.__setattr__(self, "labels", labels)

    @property
    def runs(self) -> int:
        return int(self.values.shape[0])


RunBatch = Callable[[np.ndarray, int, np.random.SeedSequence], Outputs]


@dataclass(frozen=True)
class Mechanism:
    """A mechanism under audit: a name, its claimed epsilon and a batch runner.

    ``run(x, runs, seed)`` returns :class:`Outputs` for ``runs`` independent runs on
    the count vector ``x``, all randomness derived from the ``SeedSequence`` ``seed``.
    """

    name: str
    epsilon: Fraction
    run: RunBatch = field(repr=False)


def _children(seed: np.random.SeedSequence, count: int) -> list[np.random.SeedSequence]:
    """The first ``count`` children of ``seed``, as ``seed.spawn`` would give them on a
    fresh sequence, without changing ``seed`` (so the same seed always means the same
    runs; :func:`probe_boundaries` relies on it)."""
    return [
        np.random.SeedSequence(
            seed.entropy, spawn_key=(*seed.spawn_key, k), pool_size=seed.pool_size
        )
        for k in range(count)
    ]


def _generators(seed: np.random.SeedSequence, runs: int) -> list[np.random.Generator]:
    return [np.random.Generator(np.random.PCG64(s)) for s in _children(seed, runs)]


def method_mechanism(
    name: str, *, epsilon: object = 1.0, max_records: int = 1, **params: Any
) -> Mechanism:
    """A registered method run through :func:`dphist.publish` in seeded mode.

    Each run is one ``publish`` call with its own child generator of the seed; the
    output is ``Release.estimate`` and the grouping ``Release.groups``. With
    ``max_records=K`` the privacy unit contributes up to K records (audit it on pairs
    that differ by K records, :func:`pair` with ``records=K``).
    """
    info = get_method(name)
    info.pipeline(**params)  # validate the parameters once, up front
    eps = validate_epsilon(epsilon)
    unit = {} if max_records == 1 else {"max_records": max_records}

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        values = np.empty((runs, len(x)))
        labels = None
        for r, gen in enumerate(_generators(seed, runs)):
            rel = publish(x, epsilon=eps, method=info.name, rng=gen, **unit, **params)
            values[r] = rel.estimate
            if rel.groups is not None:
                if labels is None:
                    labels = np.zeros((runs, len(x)), dtype=np.int64)
                labels[r] = rel.groups
        return Outputs(values, labels)

    shown = {**params, **unit}
    label = info.name if not shown else f"{info.name}{_fmt_params(shown)}"
    return Mechanism(label, eps, run)


def _fmt_params(params: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def pipeline_mechanism(
    name: str,
    blocks: Sequence[Any],
    *,
    epsilon: object = 1.0,
    output: Callable[[State], np.ndarray] | None = None,
) -> Mechanism:
    """Blocks run through the kernel's :func:`~dphist._kernel.run_pipeline` per run.

    The budget nests as in :class:`~dphist.Session` (a cap of ``epsilon`` with a
    release budget below it). By default the output is the estimate and grouping in
    the original bin order, as ``publish`` returns them; ``output(state)`` instead
    selects any vector from the final state (a stage audit, spec §1.2.4).
    """
    blocks = tuple(blocks)
    eps = validate_epsilon(epsilon)

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        data = protect(x)
        rows: list[np.ndarray] = []
        label_rows: list[np.ndarray] | None = None
        for gen in _generators(seed, runs):
            root = Accountant(eps, label="audit")
            outcome = run_method(
                blocks,
                data,
                epsilon=eps,
                budget=root.child(eps, label=name),
                noise=NoiseSource(GeneratorBits(gen)),
            )
            if output is not None:
                rows.append(np.asarray(output(outcome.state), dtype=np.float64).ravel())
                continue
            rows.append(outcome.estimate)
            if outcome.groups is not None:
                if label_rows is None:
                    label_rows = []
                label_rows.append(outcome.groups)
        labels = None if label_rows is None else np.array(label_rows)
        return Outputs(np.array(rows), labels)

    return Mechanism(name, eps, run)


def function_mechanism(
    name: str,
    f: Callable[..., Any],
    *,
    epsilon: object = 1.0,
    vectorized: bool = False,
) -> Mechanism:
    """A plain function as a mechanism.

    ``f(x, generator)`` returns one output vector (or ``(vector, labels)``); with
    ``vectorized=True``, ``f(x, runs, generator)`` returns the ``(runs, m)`` batch (or
    ``(batch, labels)``). Use :func:`seeded_laplace` for noise from the production
    sampler.
    """
    eps = validate_epsilon(epsilon)

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        if vectorized:
            out = f(x, runs, np.random.Generator(np.random.PCG64(seed)))
            return Outputs(*out) if isinstance(out, tuple) else Outputs(out)
        results = [f(x, gen) for gen in _generators(seed, runs)]
        if results and isinstance(results[0], tuple):
            return Outputs(np.array([r[0] for r in results]), np.array([r[1] for r in results]))
        return Outputs(np.array(results))

    return Mechanism(name, eps, run)


def seeded_laplace(generator: np.random.Generator, scale: object, size: int) -> np.ndarray:
    """``size`` exact discrete Laplace draws of scale ``>= scale`` from the production
    sampler, fed by ``generator`` (int64; for building audited test mechanisms)."""
    t, s = rational_scale(as_fraction(scale, name="scale"), Fraction(1))
    return discrete_laplace(GeneratorBits(generator), t, s, int(size))


# --------------------------------------------------------------------------- neighbours


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
        return _row_keys(_pattern_bits(out.labels))
    return _row_keys(_pattern_bits(np.round(out.values, 9)))


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
    seeds = _children(_as_seed(seed), probes)
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

    def discrete_laplace(self, t: int, s: int, size: int) -> np.ndarray:
        return np.zeros(int(size), dtype=np.int64)

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
        parts.append(_pattern_bits(outcome.groups[None, :]).tobytes())
    if y.shape[1] >= 2:
        parts.append(_retained(_fourier(y)).tobytes())
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


# --------------------------------------------------------------------------- statistics


def _row_keys(rows: np.ndarray) -> list[bytes]:
    rows = np.ascontiguousarray(rows)
    return [r.tobytes() for r in rows]


def _pattern_bits(labels: np.ndarray) -> np.ndarray:
    """Partition pattern of each row as packed bits of the pairwise equalities."""
    n = labels.shape[1]
    j, k = np.triu_indices(n, 1)
    return np.packbits(labels[:, j] == labels[:, k], axis=1)


class _Categorical:
    """A categorical statistic: codes learned on the search runs (unseen -> -1)."""

    def __init__(self, name: str, describe: Callable[[int], str]):
        self.name = name
        self.describe = describe
        self.index: dict[bytes, int] = {}

    def fit(self, keys: list[bytes]) -> np.ndarray:
        codes = np.empty(len(keys), dtype=np.int64)
        for r, key in enumerate(keys):
            codes[r] = self.index.setdefault(key, len(self.index))
        return codes

    def codes(self, keys: list[bytes]) -> np.ndarray:
        get = self.index.get
        return np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))


class _Features:
    """The statistic catalogue for one pair, with parameters frozen on the search runs."""

    def __init__(self, pair: Neighbour, a: Outputs, b: Outputs):
        self.pair = pair
        ya, yb = a.values, b.values
        self.m = ya.shape[1]
        self.per_bin = self.m == pair.x.size
        i = pair.bin
        pooled = np.vstack([ya, yb])
        self.mean = pooled.mean(axis=0)
        sd = np.sqrt(0.5 * (ya.var(axis=0) + yb.var(axis=0)))
        self.sd = np.where(sd > _TOL, sd, 1.0)
        diff = yb.mean(axis=0) - ya.mean(axis=0)
        se = np.sqrt((ya.var(axis=0) + yb.var(axis=0)) / ya.shape[0])
        moved = np.abs(diff) > 4 * np.maximum(se, _TOL)
        self.sign = np.where(diff != 0, np.sign(diff), float(pair.sign))
        self.half_shift = np.maximum(np.abs(diff) / 2, _TOL)
        self.mid = 0.5 * (ya.mean(axis=0) + yb.mean(axis=0))
        # sets for the joint-tail statistics
        sets: list[tuple[str, np.ndarray]] = []
        order = np.argsort(-np.abs(diff) / np.maximum(se, _TOL), kind="stable")
        shifted = np.sort(order[: min(_MAX_SHIFTED, int(moved.sum()))])
        if shifted.size >= 2:
            sets.append((f"moved {_idx(shifted)}", shifted))
        if self.per_bin:
            windows = [(lo, 2) for lo in (i - 1, i)] + [(lo, 3) for lo in (i - 1, i - 2, i)]
            windows.append((i - 2, 4))
            for lo, width in windows:
                if lo >= 0 and lo + width <= self.m:
                    sets.append((f"window {lo}:{lo + width}", np.arange(lo, lo + width)))
        labels = [lab for lab in (a.labels, b.labels) if lab is not None]
        if labels and self.per_bin:
            group = _modal_group(np.vstack(labels), i)
            if group.size >= 2:
                sets.append((f"group {_idx(group)}", group))
        unique_sets: dict[bytes, tuple[str, np.ndarray]] = {}
        for name, s in sets:
            unique_sets.setdefault(s.tobytes(), (name, s))
        self.sets = list(unique_sets.values())
        self.clip_sets = [(n_, s) for n_, s in self.sets if n_.startswith(("moved", "group"))]
        # linear classifiers (E2): mean difference and Fisher's discriminant
        self.directions: list[tuple[str, np.ndarray]] = []
        if self.m >= 2 and np.any(diff != 0):
            self.directions.append(("mean-difference projection", diff))
            live = sd > _TOL
            if live.sum() >= 2:
                cov = 0.5 * (np.cov(ya[:, live], rowvar=False) + np.cov(yb[:, live], rowvar=False))
                ridge = 1e-6 * np.trace(cov) / live.sum()
                w = np.zeros(self.m)
                w[live] = np.linalg.solve(cov + ridge * np.eye(int(live.sum())), diff[live])
                self.directions.append(("Fisher projection", w))
        # which structural indicators vary on the search runs
        self.eq_pairs = []
        self.zero_bins = []
        if self.per_bin:
            eq = np.isclose(pooled[:, 1:], pooled[:, :-1], rtol=_TOL, atol=_TOL)
            self.eq_pairs = [j for j in range(self.m - 1) if 0 < eq[:, j].mean() < 1]
            zero = np.isclose(pooled, 0.0, atol=_TOL)
            self.zero_bins = [j for j in range(self.m) if 0 < zero[:, j].mean() < 1]
        self.has_labels = bool(labels)
        self._fit_fourier(ya, yb)
        # categorical statistics
        self.categoricals: list[_Categorical] = []
        self._fit_categoricals(a, b)

    def _fit_fourier(self, ya: np.ndarray, yb: np.ndarray) -> None:
        """The Fourier view (E5): coefficients that moved, whether the number of
        retained coefficients varies (a spectral method's choice of K)."""
        self.fourier = self.per_bin and self.m >= 2
        self.f_sets: list[tuple[str, np.ndarray]] = []
        self.f_count = False
        if not self.fourier:
            return
        fa, fb = _fourier(ya), _fourier(yb)
        sd = np.sqrt(0.5 * (fa.var(axis=0) + fb.var(axis=0)))
        self.f_sd = np.where(sd > _TOL, sd, 1.0)
        diff = fb.mean(axis=0) - fa.mean(axis=0)
        se = np.maximum(np.sqrt((fa.var(axis=0) + fb.var(axis=0)) / fa.shape[0]), _TOL)
        self.f_sign = np.where(diff != 0, np.sign(diff), 1.0)
        self.f_half = np.maximum(np.abs(diff) / 2, _TOL)
        self.f_mid = 0.5 * (fa.mean(axis=0) + fb.mean(axis=0))
        moved = int((np.abs(diff) > 2 * se).sum())
        order = np.argsort(-np.abs(diff) / se, kind="stable")
        shifted = np.sort(order[: min(_MAX_SHIFTED, moved)])
        if shifted.size >= 2:
            self.f_sets.append((f"moved Fourier coefficients {_idx(shifted)}", shifted))
        kept = np.concatenate([_retained(fa), _retained(fb)])
        self.f_count = bool(np.any(kept != kept[0]))

    def _fourier_statistics(self, y: np.ndarray, add: Callable[[str, np.ndarray], None]) -> None:
        c = _fourier(y)
        for r in range(self.m):
            add(f"Fourier c[{r}]", c[:, r])
        if self.f_count:
            add("number of retained Fourier coefficients", _retained(c))
        for name, s in self.f_sets:
            z = self.f_sign[s] * (c[:, s] - self.f_mid[s]) / self.f_sd[s]
            add(f"min over {name} of signed z", z.min(axis=1))
            h = self.f_half[s]
            dev = np.clip(self.f_sign[s] * (c[:, s] - self.f_mid[s]), -h, h) / self.f_sd[s]
            add(f"clipped likelihood ratio over {name}", dev.sum(axis=1))

    # ---- numeric statistics
    def numeric(self, out: Outputs) -> tuple[list[str], np.ndarray]:
        y = out.values
        cols: list[np.ndarray] = []
        names: list[str] = []

        def add(name: str, values: np.ndarray) -> None:
            names.append(name)
            cols.append(np.asarray(values, dtype=np.float64))

        i = self.pair.bin
        for j in range(self.m):
            add(f"y[{j}]", y[:, j])
        if self.per_bin:
            n = self.m
            prefix = np.concatenate([np.zeros((y.shape[0], 1)), np.cumsum(y, axis=1)], axis=1)
            spans = set()
            for lo in range(i + 1):
                for hi in range(i + 1, n + 1):
                    if hi - lo >= 2:
                        spans.add((lo, hi))
            for hi in range(2, n + 1):
                spans.add((0, hi))
            for lo, hi in sorted(spans):
                add(f"sum y[{lo}:{hi}]", prefix[:, hi] - prefix[:, lo])
            for j in range(n):
                if j != i:
                    add(f"y[{i}] - y[{j}]", y[:, i] - y[:, j])
            add(f"rank of y[{i}]", (y > y[:, [i]]).sum(axis=1))
            srt = np.sort(y, axis=1)
            gaps = np.abs(np.diff(srt, axis=1)) > _TOL * np.maximum(1.0, np.abs(srt[:, 1:]))
            add("number of distinct values", 1 + gaps.sum(axis=1))
            for j in self.eq_pairs:
                add(f"[y[{j}] == y[{j + 1}]]", np.isclose(y[:, j], y[:, j + 1], _TOL, _TOL))
            for j in self.zero_bins:
                add(f"[y[{j}] == 0]", np.isclose(y[:, j], 0.0, atol=_TOL))
        for name, w in self.directions:
            add(name, y @ w)
        for name, s in self.sets:
            z = self.sign[s] * (y[:, s] - self.mid[s]) / self.sd[s]
            add(f"min over {name} of signed z", z.min(axis=1))
            add(f"max over {name} of signed z", z.max(axis=1))
        for name, s in self.clip_sets:
            h = self.half_shift[s]
            dev = np.clip(self.sign[s] * (y[:, s] - self.mid[s]), -h, h) / self.sd[s]
            add(f"clipped likelihood ratio over {name}", dev.sum(axis=1))
        if self.fourier:
            self._fourier_statistics(y, add)
        if out.labels is not None and self.per_bin:
            lab = out.labels
            add("number of groups", np.array([np.unique(r).size for r in lab]))
            add(f"size of the group of bin {i}", (lab == lab[:, [i]]).sum(axis=1))
        return names, np.column_stack(cols)

    # ---- categorical statistics
    def _fit_categoricals(self, a: Outputs, b: Outputs) -> None:
        both = [a, b]
        runs = a.runs + b.runs
        cands: list[tuple[_Categorical, Callable[[Outputs], list[bytes]]]] = []
        if self.has_labels and self.per_bin:

            def pattern(o: Outputs) -> list[bytes]:
                if o.labels is None:
                    return [b"none"] * o.runs
                return _row_keys(_pattern_bits(o.labels))

            cands.append((_Categorical("grouping", lambda c: f"grouping #{c}"), pattern))

        def full(o: Outputs) -> list[bytes]:
            return _row_keys(np.round(o.values, 9) + 0.0)

        cands.append((_Categorical("output", lambda c: f"output vector #{c}"), full))

        def top(o: Outputs) -> list[bytes]:
            return _row_keys(np.argmax(o.values, axis=1))

        if self.m >= 2:
            cands.append((_Categorical("argmax", lambda c: f"argmax #{c}"), top))
        self._keyers = []
        self._search_codes = []
        for cat, keyer in cands:
            keys = keyer(both[0]) + keyer(both[1])
            codes = cat.fit(keys)
            if len(cat.index) > min(_MAX_CATEGORIES, runs // 4) or len(cat.index) < 2:
                continue
            inverse = {v: k for k, v in cat.index.items()}
            if cat.name == "argmax":
                cat.describe = lambda c, inv=inverse: (
                    f"argmax = {int(np.frombuffer(inv[c], dtype=np.int64)[0])}"
                )
            self.categoricals.append(cat)
            self._keyers.append(keyer)
            self._search_codes.append((codes[: a.runs], codes[a.runs :]))

    def categorical_codes(self, out: Outputs) -> list[np.ndarray]:
        return [
            cat.codes(keyer(out))
            for cat, keyer in zip(self.categoricals, self._keyers, strict=True)
        ]


def _fourier(y: np.ndarray) -> np.ndarray:
    """Each row of ``y`` in the orthonormal real Fourier basis, by frequency: the
    constant row, then a cosine and a sine row per frequency, and for an even
    length the alternating row (the layout EFPA releases; Acs et al., ICDM 2012, §5)."""
    n = y.shape[1]
    f = np.fft.rfft(y, axis=1)
    out = np.empty(y.shape)
    out[:, 0] = f[:, 0].real / math.sqrt(n)
    half = (n - 1) // 2
    scale = math.sqrt(2.0 / n)
    out[:, 1 : 2 * half + 1 : 2] = f[:, 1 : half + 1].real * scale
    out[:, 2 : 2 * half + 2 : 2] = -f[:, 1 : half + 1].imag * scale
    if n % 2 == 0:
        out[:, n - 1] = f[:, n // 2].real / math.sqrt(n)
    return out


def _retained(c: np.ndarray) -> np.ndarray:
    """Number of leading Fourier coefficients up to the last non-zero one, per row
    (zero means rounding-level, relative to the row's largest coefficient)."""
    tol = 1e-9 * np.maximum(1.0, np.abs(c).max(axis=1, initial=0.0))
    nonzero = np.abs(c) > tol[:, None]
    last = c.shape[1] - np.argmax(nonzero[:, ::-1], axis=1)
    return np.where(nonzero.any(axis=1), last, 0)


def _idx(s: np.ndarray) -> str:
    return "{" + ",".join(str(int(v)) for v in s) + "}"


def _modal_group(labels: np.ndarray, i: int) -> np.ndarray:
    """Bins sharing bin i's group in the most frequent grouping pattern."""
    keys = _row_keys(_pattern_bits(labels))
    counts: dict[bytes, int] = {}
    first: dict[bytes, int] = {}
    for r, k in enumerate(keys):
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, r)
    best = max(counts, key=lambda k: counts[k])
    row = labels[first[best]]
    return np.flatnonzero(row == row[i])


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class _Event:
    kind: str  # "threshold" or "category"
    stat: int
    op: str = ">="
    threshold: float = 0.0
    codes: frozenset[int] = frozenset()
    description: str = ""

    def indicator(self, numeric: np.ndarray, codes: list[np.ndarray]) -> np.ndarray:
        if self.kind == "threshold":
            col = numeric[:, self.stat]
            return col >= self.threshold if self.op == ">=" else col < self.threshold
        return np.isin(codes[self.stat], np.fromiter(self.codes, dtype=np.int64))


@dataclass(frozen=True)
class EventResult:
    """One confirmed event: ``hits_x`` / ``hits_x2`` of ``runs`` confirm runs per side."""

    event: str
    favours: str  # "x" or "x'": the input under which the event is likelier
    hits_x: int
    hits_x2: int
    runs: int
    eps_lb: float
    search_score: float


def _candidates(
    numeric_a: np.ndarray,
    numeric_b: np.ndarray,
    names: list[str],
    feats: _Features,
) -> list[tuple[_Event, int, int]]:
    """Every catalogue event with its search counts (hits under x, hits under x')."""
    out: list[tuple[_Event, int, int]] = []
    runs = numeric_a.shape[0]
    for s, name in enumerate(names):
        a, b = numeric_a[:, s], numeric_b[:, s]
        pooled = np.concatenate([a, b])
        uniq = np.unique(pooled)
        if uniq.size < 2:
            continue
        if uniq.size <= _FEW_VALUES:
            thresholds = uniq[1:]
        else:
            thresholds = np.unique(np.quantile(pooled, _QUANTILES, method="inverted_cdf"))
            thresholds = thresholds[thresholds > uniq[0]]
        sa, sb = np.sort(a), np.sort(b)
        ge_a = runs - np.searchsorted(sa, thresholds, side="left")
        ge_b = runs - np.searchsorted(sb, thresholds, side="left")
        for t, ka, kb in zip(thresholds.tolist(), ge_a.tolist(), ge_b.tolist(), strict=True):
            out.append((_Event("threshold", s, ">=", t, description=f"{name} >= {t:.6g}"), ka, kb))
            out.append(
                (
                    _Event("threshold", s, "<", t, description=f"{name} < {t:.6g}"),
                    runs - ka,
                    runs - kb,
                )
            )
    for c, (cat, (ca, cb)) in enumerate(zip(feats.categoricals, feats._search_codes, strict=True)):
        size = len(cat.index)
        na = np.bincount(ca, minlength=size)
        nb = np.bincount(cb, minlength=size)
        for code in np.flatnonzero(na + nb >= 5).tolist():
            ev = _Event("category", c, codes=frozenset([code]), description=cat.describe(code))
            out.append((ev, int(na[code]), int(nb[code])))
        ratio = (na + 0.5) / (nb + 0.5)
        for order in (np.argsort(-ratio, kind="stable"), np.argsort(ratio, kind="stable")):
            ka = np.cumsum(na[order])
            kb = np.cumsum(nb[order])
            for j in _prefix_lengths(size):
                codes = frozenset(order[:j].tolist())
                desc = f"{cat.name} in a set of {j} search-ranked categories"
                out.append(
                    (_Event("category", c, codes=codes, description=desc), ka[j - 1], kb[j - 1])
                )
    return out


def _prefix_lengths(size: int) -> list[int]:
    """Union sizes tried for ranked categories: 2..16, then growing by a quarter."""
    lengths = list(range(2, min(size, 17)))
    j = 16
    while j < size - 1:
        j = max(j + 1, int(j * 1.25))
        if j < size:
            lengths.append(j)
    return lengths


def _project(hits_a, hits_b, n_search: int, n_confirm: int, level: float) -> np.ndarray:
    """Score: the confirm bound reached if the truth were the search 95% bounds."""
    lo, _ = clopper_pearson(hits_a, n_search, _SEARCH_LEVEL)
    _, up = clopper_pearson(hits_b, n_search, _SEARCH_LEVEL)
    return epsilon_lower_bound(lo * n_confirm, up * n_confirm, n_confirm, level)


# --------------------------------------------------------------------------- audits


@dataclass(frozen=True, eq=False)
class PairResult:
    """The audit of one neighbour pair."""

    mechanism: str
    pair: Neighbour
    epsilon: float
    eps_lb: float
    best: EventResult | None
    events: tuple[EventResult, ...]
    n_search: int
    n_confirm: int
    alpha: float
    seconds: float

    @property
    def flagged(self) -> bool:
        """True when the lower confidence bound exceeds the claimed epsilon."""
        return self.eps_lb > self.epsilon

    @property
    def runs(self) -> int:
        return 2 * (self.n_search + self.n_confirm)


@dataclass(frozen=True, eq=False)
class AuditResult:
    """Audits of one mechanism on several pairs; ``eps_lb`` is the largest bound."""

    mechanism: str
    epsilon: float
    pairs: tuple[PairResult, ...]

    @property
    def worst(self) -> PairResult:
        return max(self.pairs, key=lambda p: p.eps_lb)

    @property
    def eps_lb(self) -> float:
        return self.worst.eps_lb

    @property
    def flagged(self) -> bool:
        return any(p.flagged for p in self.pairs)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.pairs)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.pairs)

    def summary(self) -> str:
        w = self.worst
        best = w.best.event if w.best is not None else "-"
        verdict = "FLAGGED" if self.flagged else "pass"
        return (
            f"{self.mechanism}: claimed {self.epsilon:g}, eps_lb {self.eps_lb:.3f} ({verdict}); "
            f"worst pair {w.pair.describe()}, event {best}; {self.runs} runs, "
            f"{self.seconds:.1f} s"
        )


def _as_seed(seed: object) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)  # type: ignore[arg-type]


def audit_pair(
    mechanism: Mechanism,
    pair: Neighbour | tuple[object, object],
    *,
    epsilon: object = None,
    n_search: int = 2_000,
    n_confirm: int = 10_000,
    alpha: float = ALPHA,
    k: int = TOP_K,
    seed: object = 0,
) -> PairResult:
    """Two-phase audit of ``mechanism`` on one neighbour pair (see the module docs).

    ``epsilon`` defaults to the mechanism's claim. ``seed`` (int or SeedSequence) fixes
    every run: the four streams (search/confirm x two inputs) are distinct children.
    The probability of ``flagged`` for an epsilon-DP mechanism is at most ``alpha``.
    """
    if not isinstance(pair, Neighbour):
        x, x2 = (np.array(v, dtype=np.int64) for v in pair)
        diff = np.flatnonzero(x2 != x)
        if diff.size != 1:
            raise ValidationError(
                "a neighbour pair differs in one bin (by one record, or by a unit's records)"
            )
        i = int(diff[0])
        step = int(x2[i] - x[i])
        pair = Neighbour(x, x2, i, 1 if step > 0 else -1, "given", abs(step))
    if n_search < 10 or n_confirm < 10 or k < 1 or not 0 < alpha < 1:
        raise ValidationError("need n_search, n_confirm >= 10, k >= 1 and 0 < alpha < 1")
    claimed = float(validate_epsilon(mechanism.epsilon if epsilon is None else epsilon))
    start = time.perf_counter()
    s_a, s_b, c_a, c_b = _children(_as_seed(seed), 4)
    out_a = mechanism.run(pair.x, n_search, s_a)
    out_b = mechanism.run(pair.x2, n_search, s_b)
    feats = _Features(pair, out_a, out_b)
    names, num_a = feats.numeric(out_a)
    _, num_b = feats.numeric(out_b)
    cands = _candidates(num_a, num_b, names, feats)
    level = alpha / (2 * k)
    hits_a = np.array([c[1] for c in cands], dtype=np.float64)
    hits_b = np.array([c[2] for c in cands], dtype=np.float64)
    score_a = _project(hits_a, hits_b, n_search, n_confirm, level)  # favours x
    score_b = _project(hits_b, hits_a, n_search, n_confirm, level)  # favours x'
    scores = np.concatenate([score_a, score_b])
    chosen: list[tuple[_Event, bool, float]] = []
    per_stat: dict[tuple[str, int], int] = {}
    for idx in np.argsort(-scores, kind="stable"):
        if len(chosen) == k or not np.isfinite(scores[idx]):
            break
        ev = cands[idx % len(cands)][0]
        favours_x = idx < len(cands)
        key = (ev.kind, ev.stat)
        if per_stat.get(key, 0) >= _PER_STATISTIC:
            continue
        per_stat[key] = per_stat.get(key, 0) + 1
        chosen.append((ev, favours_x, float(scores[idx])))

    results: list[EventResult] = []
    if chosen:
        conf_a = mechanism.run(pair.x, n_confirm, c_a)
        conf_b = mechanism.run(pair.x2, n_confirm, c_b)
        _, cn_a = feats.numeric(conf_a)
        _, cn_b = feats.numeric(conf_b)
        cc_a = feats.categorical_codes(conf_a)
        cc_b = feats.categorical_codes(conf_b)
        for ev, favours_x, score in chosen:
            ka = int(ev.indicator(cn_a, cc_a).sum())
            kb = int(ev.indicator(cn_b, cc_b).sum())
            top, bottom = (ka, kb) if favours_x else (kb, ka)
            lb = float(epsilon_lower_bound(top, bottom, n_confirm, level))
            results.append(
                EventResult(
                    ev.description, "x" if favours_x else "x'", ka, kb, n_confirm, lb, score
                )
            )
    best = max(results, key=lambda r: r.eps_lb) if results else None
    return PairResult(
        mechanism=mechanism.name,
        pair=pair,
        epsilon=claimed,
        eps_lb=best.eps_lb if best is not None else -math.inf,
        best=best,
        events=tuple(results),
        n_search=n_search,
        n_confirm=n_confirm,
        alpha=alpha,
        seconds=time.perf_counter() - start,
    )


def audit(
    mechanism: Mechanism,
    pairs: Iterable[Neighbour | tuple[object, object]],
    *,
    epsilon: object = None,
    n_search: int = 2_000,
    n_confirm: int = 10_000,
    alpha: float = ALPHA,
    k: int = TOP_K,
    seed: object = 0,
) -> AuditResult:
    """:func:`audit_pair` on every pair, each with its own child of ``seed``.

    The probability that a correct mechanism is flagged on any pair is at most
    ``len(pairs) * alpha``.
    """
    pairs = list(pairs)
    if not pairs:
        raise ValidationError("audit needs at least one neighbour pair")
    seeds = _children(_as_seed(seed), len(pairs))
    results = tuple(
        audit_pair(
            mechanism,
            p,
            epsilon=epsilon,
            n_search=n_search,
            n_confirm=n_confirm,
            alpha=alpha,
            k=k,
            seed=s,
        )
        for p, s in zip(pairs, seeds, strict=True)
    )
    claimed = float(validate_epsilon(mechanism.epsilon if epsilon is None else epsilon))
    return AuditResult(mechanism.name, claimed, results)


def method_catalogue(
    name: str, n: int = 8, params: Mapping[str, Any] | None = None
) -> tuple[Neighbour, ...]:
    """:func:`catalogue` for a registered method: tree-split pairs use the method's
    fan-out when it has one (``fanout`` parameter; 2 otherwise)."""
    info = get_method(name)
    fanout = dict(params or {}).get("fanout", info.defaults.get("fanout", 2))
    return catalogue(n, fanout=fanout if isinstance(fanout, int) else 2)


def audit_method(
    name: str,
    *,
    epsilon: object = 1.0,
    n_search: int = 2_000,
    n_confirm: int = 10_000,
    pairs: int | Iterable[Neighbour | tuple[object, object]] | None = None,
    params: Mapping[str, Any] | None = None,
    seed: object = 0,
    n: int = 8,
    alpha: float = ALPHA,
) -> AuditResult:
    """Audit the registered method ``name`` at ``epsilon`` (seeded mode).

    ``pairs``: explicit neighbour pairs; an int ``p`` for the first ``p`` pairs of
    :func:`method_catalogue` over ``n`` bins; or None for one decision boundary found
    by :func:`probe_boundaries` (bins around the first group boundary and the low
    bin of :func:`standard_histogram`) followed by the whole catalogue.
    """
    params = dict(params or {})
    mech = method_mechanism(name, epsilon=epsilon, **params)
    if pairs is None or isinstance(pairs, int):
        pool = method_catalogue(name, n, params)
        if pairs is None:
            half = n // 2
            probed = probe_boundaries(
                mech, standard_histogram(n), bins=[half - 1, half, half + 1], seed=seed, limit=1
            )
            pairs = probed + pool
        else:
            pairs = pool[: max(1, pairs)]
    return audit(
        mech,
        pairs,
        n_search=n_search,
        n_confirm=n_confirm,
        alpha=alpha,
        seed=seed,
    )


# --------------------------------------------------------------------------- white box


@dataclass(frozen=True)
class LedgerReport:
    """What :func:`ledger_check` found; ``ok`` when ``problems`` is empty."""

    claimed: Fraction
    charged: Fraction
    charges: tuple[Charge, ...]
    values_drawn: int
    values_charged: int
    uncharged_values: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


MEASUREMENT_PRIMITIVES = frozenset(p for p in Primitive if p.measures)
"""Kernel primitives that release one noisy value per value drawn (at most ``size``)."""

SELECTION_PRIMITIVES = frozenset(p for p in Primitive if not p.measures)
"""Kernel primitives that draw noise on candidate scores and release only a choice."""


class _CountingNoise(NoiseSource):
    """A noise source that records every sampler call and how many charges preceded it."""

    def __init__(self, bits: Any, charges_so_far: Callable[[], int], log: list):
        super().__init__(bits)
        self._charges_so_far = charges_so_far
        self._log = log

    def discrete_laplace(self, t: int, s: int, size: int) -> np.ndarray:
        self._log.append((self._charges_so_far(), Fraction(t, s), int(size)))
        return super().discrete_laplace(t, s, size)

    def spawn(self) -> _CountingNoise:
        return self


def ledger_check(
    method: str | Sequence[Any],
    counts: object,
    *,
    epsilon: object = 1.0,
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
    exact: bool = True,
) -> LedgerReport:
    """White-box check of one seeded release: ledger against sampler calls.

    ``method`` is a registered name (its recipe is built with ``params``) or a sequence
    of blocks. The blocks run through the kernel with a counting noise source; every
    sampler call is tagged with the number of charges committed before it. Checks:

    * the charges recompose exactly (sequential sum of exact rationals) to the
      claimed ``epsilon`` (``exact=False``: at most ``epsilon``);
    * every charge is certified and its noise scale is at least sensitivity/epsilon;
    * every drawn value is covered by a charge made before the draw: a noise draw
      before the first charge, or more values after a measurement charge than it
      released (its ``size``), is uncharged noise. Draws after a selection charge
      (noisy partition, report-noisy-min: the noisy scores are never released)
      belong to it; a primitive in neither list is reported.

    Noise drawn outside the kernel's noise source is not seen.
    """
    eps = validate_epsilon(epsilon)
    if isinstance(method, str):
        blocks = get_method(method).pipeline(**dict(params or {})).blocks
        label = get_method(method).name
    else:
        blocks = tuple(method)
        label = "pipeline"
    data = protect(counts)
    root = Accountant(eps, label="ledger-check")
    log: list[tuple[int, Fraction, int]] = []
    noise = _CountingNoise(
        GeneratorBits(np.random.default_rng(seed)), lambda: len(root.ledger), log
    )
    run_method(blocks, data, epsilon=eps, budget=root.child(eps, label=label), noise=noise)
    charges = root.ledger
    charged = sum((c.epsilon for c in charges), Fraction(0))
    problems: list[str] = []
    if charged > eps or (exact and charged != eps):
        problems.append(f"ledger recomposes to {charged}, claimed {eps}")
    for c in charges:
        if not c.certified:
            problems.append(f"{c.block}: uncertified {c.primitive} charge")
        if c.scale * c.epsilon < c.sensitivity:
            problems.append(
                f"{c.block}: {c.primitive} scale {c.scale} below sensitivity/epsilon "
                f"{c.sensitivity / c.epsilon}"
            )
    drawn = sum(size for _, _, size in log)
    per_charge = [0] * (len(charges) + 1)
    for before, _, size in log:
        per_charge[before] += size
    uncharged = per_charge[0]
    covered = 0
    for j, c in enumerate(charges, start=1):
        got = per_charge[j]
        if c.primitive in SELECTION_PRIMITIVES:
            covered += got
        elif c.primitive not in MEASUREMENT_PRIMITIVES:
            problems.append(
                f"{c.block}: unknown primitive {c.primitive!r}; teach ledger_check whether it "
                "releases its noisy values (measurement) or only a choice (selection)"
            )
            uncharged += got
        elif got > c.size:
            uncharged += got - c.size
            covered += c.size
        else:
            covered += got
    if per_charge[0]:
        problems.append(f"{per_charge[0]} noise values drawn before any charge")
    if uncharged > per_charge[0]:
        problems.append(f"{uncharged - per_charge[0]} noise values beyond what was charged")
    return LedgerReport(
        claimed=eps,
        charged=charged,
        charges=charges,
        values_drawn=drawn,
        values_charged=covered,
        uncharged_values=uncharged,
        problems=tuple(problems),
    )
