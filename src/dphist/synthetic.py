"""Synthetic histograms, so examples, tests and benchmarks run without real data.

Every generator takes ``rng``: an ``int`` seed, a :class:`numpy.random.SeedSequence`
or a :class:`numpy.random.Generator`. The same seed always gives the same
histogram. Outputs are 1-D ``int64`` arrays of non-negative counts; all work is
vectorized, so domains of a million bins take well under a second.

* :func:`piecewise_constant` - Poisson counts around a step function, with the true
  breakpoints returned as ground truth for partitioning methods.
* :func:`spiky` - a seasonal time series with rare tall spikes (like Search Log).
* :func:`sparse_power_law` - mostly zeros, heavy-tailed non-zero counts, scattered.
* :func:`bursts` - mostly zeros, the activity in a few contiguous bursts of heavy-tailed
  heights (traffic or event logs over time).
* :func:`resample` - the DPBench generator: ``scale`` records drawn i.i.d. from the
  shape of a source histogram.
* :func:`reduce_domain` - sum equal-width blocks of consecutive bins.
* :func:`matching` - a stand-in with published summary statistics (bins, empty bins,
  total, maximum, variance) when the data itself is not available.
* :func:`demo_histogram` - a small fixed example used by the command-line demo.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InputTypeError, ValidationError

__all__ = [
    "bursts",
    "demo_histogram",
    "matching",
    "piecewise_constant",
    "reduce_domain",
    "resample",
    "sparse_power_law",
    "spiky",
]

# Heavy-tailed draws are capped here so that sums of many bins stay far from int64 overflow.
_MAX_COUNT = 2**40


# --------------------------------------------------------------------------- validation


def _generator(rng: object) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ValidationError(f"rng must be a non-negative int seed, got {int(rng)}")
        return np.random.default_rng(int(rng))
    raise InputTypeError(
        "rng must be an int seed, a numpy.random.SeedSequence or a numpy.random.Generator, "
        f"got {type(rng).__name__}"
    )


def _positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputTypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValidationError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def _real(value: object, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValidationError(f"{name} must be finite, got {value}")
    return value


def _positive_real(value: object, name: str) -> float:
    value = _real(value, name)
    if value <= 0:
        raise ValidationError(f"{name} must be > 0, got {value}")
    return value


def _probability(value: object, name: str, *, allow_zero: bool) -> float:
    value = _real(value, name)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1):
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValidationError(f"{name} must be a probability in {interval}, got {value}")
    return value


def _vector(values: object, name: str) -> np.ndarray:
    """A non-empty 1-D array of finite non-negative reals (integer or float dtype)."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"{name} must be a 1-D array of numbers") from exc
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise InputTypeError(f"{name} must hold integers or floats, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-D, got an array with {arr.ndim} dimensions")
    if arr.size == 0:
        raise ValidationError(f"{name} must have at least one bin")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} must hold finite values (found NaN or infinity)")
    if np.any(arr < 0):
        raise ValidationError(f"{name} must be non-negative")
    return arr


# --------------------------------------------------------------------------- generators


def piecewise_constant(
    n: int,
    *,
    segments: int = 8,
    max_level: float = 100.0,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Poisson counts around a random step function.

    The domain ``0..n-1`` is cut at ``segments - 1`` distinct random positions.
    Each segment gets an integer level drawn uniformly from ``0..floor(max_level)``,
    with neighbouring levels always different, so every break is a real change of
    the mean. Each bin's count is Poisson with its segment's level as mean.

    Returns:
        ``(counts, breaks)``: ``counts`` is an ``int64`` array of length ``n``;
        ``breaks`` is the sorted ``int64`` array of segment starts other than 0
        (length ``segments - 1``), so segment ``i`` covers
        ``[starts[i], starts[i+1])`` with ``starts = [0, *breaks, n]``.
    """
    n = _positive_int(n, "n")
    segments = _positive_int(segments, "segments")
    max_level = _positive_real(max_level, "max_level")
    if segments > n:
        raise ValidationError(f"segments must be <= n ({n}), got {segments}")
    top = math.floor(max_level)
    if segments > 1 and top < 1:
        raise ValidationError(
            f"max_level must be >= 1 when segments > 1 (neighbouring levels differ), "
            f"got {max_level}"
        )
    gen = _generator(rng)
    breaks = np.sort(gen.choice(n - 1, size=segments - 1, replace=False)).astype(np.int64) + 1
    # First level uniform on 0..top; each next one shifted by a non-zero amount
    # modulo top + 1, so it is again uniform on 0..top but differs from its neighbour.
    levels = np.empty(segments, dtype=np.int64)
    levels[0] = gen.integers(0, top + 1)
    if segments > 1:
        shifts = gen.integers(1, top + 1, size=segments - 1)
        levels[1:] = (levels[0] + np.cumsum(shifts)) % (top + 1)
    lengths = np.diff(np.concatenate(([0], breaks, [n])))
    counts = gen.poisson(np.repeat(levels, lengths)).astype(np.int64, copy=False)
    return counts, breaks


def spiky(
    n: int,
    *,
    base: float = 8.0,
    spikes: float = 0.002,
    height: float = 20.0,
    period: int = 16,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> np.ndarray:
    """A seasonal count series with Poisson noise and rare tall spikes.

    The mean of bin ``t`` is ``base`` times a daily cycle of ``period`` bins (16
    ninety-minute slots by default, swinging between 10% and 190% of ``base``)
    times a slow random drift over the whole series. Counts are Poisson around that
    mean, so quiet stretches hold zeros. Each bin independently carries a spike with
    probability ``spikes``; a spike adds a Poisson count whose mean is
    ``height * base`` times an exponential factor of mean 1.
    """
    n = _positive_int(n, "n")
    base = _positive_real(base, "base")
    spikes = _probability(spikes, "spikes", allow_zero=True)
    height = _positive_real(height, "height")
    period = _positive_int(period, "period")
    gen = _generator(rng)
    t = np.arange(n, dtype=np.float64)
    phase, drift_phase = gen.uniform(0.0, 2.0 * np.pi, size=2)
    daily = 1.0 + 0.9 * np.sin(2.0 * np.pi * t / period + phase)
    cycles = gen.uniform(1.0, 4.0)  # slow drift: a few cycles over the whole series
    drift = np.exp(0.6 * np.sin(2.0 * np.pi * cycles * t / n + drift_phase))
    counts = gen.poisson(base * daily * drift)
    where = np.flatnonzero(gen.random(n) < spikes)
    if where.size:
        spike_mean = height * base * gen.exponential(1.0, size=where.size)
        counts[where] += gen.poisson(spike_mean)
    return counts.astype(np.int64, copy=False)


def sparse_power_law(
    n: int,
    *,
    density: float = 0.03,
    exponent: float = 1.2,
    scale: float = 2.0,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> np.ndarray:
    """Mostly-zero counts whose non-zero values are heavy-tailed.

    Each bin is non-zero independently with probability ``density``. A non-zero
    bin holds ``max(1, floor(scale * X))`` with ``X`` Pareto distributed on
    ``[1, inf)`` with tail index ``exponent`` (``P(X > x) = x**-exponent``); smaller
    exponents give heavier tails. Values are capped at 2**40.
    """
    n = _positive_int(n, "n")
    density = _probability(density, "density", allow_zero=False)
    exponent = _positive_real(exponent, "exponent")
    scale = _positive_real(scale, "scale")
    gen = _generator(rng)
    counts = np.zeros(n, dtype=np.int64)
    where = np.flatnonzero(gen.random(n) < density)
    if where.size:
        draws = scale * (1.0 + gen.pareto(exponent, size=where.size))
        counts[where] = np.clip(np.floor(draws), 1, _MAX_COUNT).astype(np.int64)
    return counts


def bursts(
    n: int,
    *,
    clusters: int = 6,
    coverage: float = 0.03,
    exponent: float = 1.2,
    scale: float = 2.0,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> np.ndarray:
    """Mostly-zero counts whose activity sits in a few contiguous bursts.

    ``clusters`` runs of non-zero bins, covering ``max(clusters, round(coverage * n))``
    bins in all (run widths drawn uniformly on the simplex, at least one bin each), are
    placed at random with gaps between them. Every run has a level, ``scale`` times a
    Pareto draw of tail index ``exponent``, and each of its bins holds
    ``max(1, floor(level * U))`` with ``U`` uniform on ``[0.2, 1]``: heavy-tailed between
    bursts, of one order within a burst. Values are capped at 2**40.
    """
    n = _positive_int(n, "n")
    clusters = _positive_int(clusters, "clusters")
    coverage = _probability(coverage, "coverage", allow_zero=False)
    exponent = _positive_real(exponent, "exponent")
    scale = _positive_real(scale, "scale")
    width = max(clusters, round(coverage * n))
    if width + clusters - 1 > n:
        raise ValidationError(
            f"{clusters} bursts over {width} bins need gaps between them; n = {n} is too small"
        )
    gen = _generator(rng)
    # run widths: 1 + a uniform composition of the remaining bins into `clusters` parts
    cuts = np.sort(gen.choice(width - 1, size=clusters - 1, replace=False)) + 1
    widths = np.diff(np.concatenate(([0], cuts, [width])))
    # gaps: at least one empty bin between runs, the remaining empty bins spread at random
    free = n - width - (clusters - 1)
    spread = np.bincount(gen.integers(0, clusters + 1, size=free), minlength=clusters + 1)
    gaps = spread + np.concatenate(([0], np.ones(clusters - 1, dtype=np.int64), [0]))
    starts = gaps[:-1].cumsum() + np.concatenate(([0], widths[:-1].cumsum()))
    levels = scale * (1.0 + gen.pareto(exponent, size=clusters))
    heights = np.repeat(levels, widths) * gen.uniform(0.2, 1.0, size=width)
    counts = np.zeros(n, dtype=np.int64)
    where = np.repeat(starts - np.concatenate(([0], widths[:-1].cumsum())), widths)
    counts[where + np.arange(width)] = np.clip(np.floor(heights), 1, _MAX_COUNT).astype(np.int64)
    return counts


def resample(
    shape: object,
    scale: int,
    *,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> np.ndarray:
    """Draw ``scale`` records i.i.d. from the shape of a histogram (DPBench generator).

    ``shape`` (non-negative, positive total) is normalized to probabilities
    ``p = shape / shape.sum()`` and the result is one multinomial draw: an ``int64``
    array of the same length whose total is exactly ``scale``. Its expectation is
    ``scale * p``.
    """
    arr = _vector(shape, "shape").astype(np.float64)
    scale = _positive_int(scale, "scale")
    total = arr.sum()
    if not total > 0:
        raise ValidationError("shape must have a positive total (at least one non-zero bin)")
    if not math.isfinite(total):
        raise ValidationError("shape is too large: its total overflows float64")
    gen = _generator(rng)
    return gen.multinomial(scale, arr / total).astype(np.int64, copy=False)


def reduce_domain(counts: object, n: int) -> np.ndarray:
    """Sum equal-width blocks of consecutive bins, giving ``n`` bins.

    ``n`` must divide ``len(counts)``; bin ``i`` of the result is the sum of bins
    ``i*w .. (i+1)*w - 1`` with ``w = len(counts) // n``. ``counts`` must hold
    non-negative integers (an integer array, or floats with integral values).
    """
    arr = _vector(counts, "counts")
    n = _positive_int(n, "n")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(arr == np.floor(arr)):
        raise ValidationError("counts must hold integers (found non-integral values)")
    if arr.dtype != np.int64 and np.any(arr > _MAX_COUNT * 2**20):
        raise ValidationError("counts must fit comfortably in a 64-bit integer")
    arr = arr.astype(np.int64)
    if arr.size % n:
        raise ValidationError(
            f"n must divide the number of bins ({arr.size}) to sum equal-width blocks, got {n}"
        )
    return arr.reshape(n, arr.size // n).sum(axis=1, dtype=np.int64)


def matching(
    bins: int,
    *,
    zeros: int,
    total: int,
    maximum: int,
    variance: float,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> np.ndarray:
    """A histogram with the given bins, empty bins, total and maximum, and about the variance.

    For data known only by a table of statistics (e.g. AHP's *Location*, Table 1).
    The ``bins - zeros`` non-empty bins are log-normal, scaled to the exact ``total``
    and clipped to ``[1, maximum]``; the log-normal width is the one (from the moment
    match up to 2.5 times it) whose clipped values come closest to ``variance``. The
    non-empty bins sit at random positions, so the histogram is not sorted.
    """
    bins = _positive_int(bins, "bins")
    zeros = _positive_int(zeros, "zeros", minimum=0)
    total = _positive_int(total, "total")
    maximum = _positive_int(maximum, "maximum")
    variance = _real(variance, "variance")
    k = bins - zeros
    if not 1 <= k <= total <= k * maximum:
        raise ValidationError(
            "need 1 <= bins - zeros <= total <= (bins - zeros) * maximum, got "
            f"bins={bins}, zeros={zeros}, total={total}, maximum={maximum}"
        )
    gen = _generator(rng)
    mean_nz = total / k
    second = (variance + (total / bins) ** 2) * bins / k
    cv2 = max(second / mean_nz**2 - 1.0, 1e-9)
    z = gen.standard_normal(k)
    target = second - mean_nz**2
    best = None
    for sigma in math.sqrt(math.log1p(cv2)) * np.linspace(1.0, 2.5, 31):
        cand = _fit_total(np.exp(sigma * z), total, maximum)
        miss = abs(float(cand.var()) - target)
        if best is None or miss < best[0]:
            best = (miss, cand)
    counts = np.zeros(bins, dtype=np.int64)
    counts[gen.choice(bins, size=k, replace=False)] = best[1]
    return counts


def _fit_total(raw: np.ndarray, total: int, top: int) -> np.ndarray:
    """Integers in ``[1, top]`` proportional to ``raw`` (up to clipping) summing to ``total``.

    The multiplier is found by bisection (the clipped, rounded sum grows with it);
    the last few units go to the bins with the largest rounding remainders.
    """
    lo, hi = 0.0, float(total) / float(raw.min())
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.clip(np.floor(mid * raw), 1, top).sum() > total:
            hi = mid
        else:
            lo = mid
    vals = np.clip(np.floor(lo * raw), 1, top).astype(np.int64)
    gap = total - int(vals.sum())
    room = np.flatnonzero(vals < top)
    if gap > 0 and room.size:
        rem = lo * raw[room] - np.floor(lo * raw[room])
        vals[room[np.argsort(-rem, kind="stable")[:gap]]] += 1
    return vals


def demo_histogram(rng: int | np.random.SeedSequence | np.random.Generator = 0) -> np.ndarray:
    """A small fixed example: 96 bins, exactly 2,000 records.

    The shape mixes empty stretches, flat plateaus at several levels and one sharp
    peak; :func:`resample` draws 2,000 records from it, so the result is the same
    for the same ``rng``.
    """
    shape = np.zeros(96, dtype=np.float64)
    shape[8:24] = 10.0  # low plateau
    shape[24:36] = 25.0  # higher plateau
    x = np.arange(36, 52, dtype=np.float64)
    shape[36:52] = 5.0 + 90.0 * np.exp(-0.5 * ((x - 43.5) / 2.0) ** 2)  # peak
    shape[52:64] = 4.0  # tail plateau
    # 64..75 stay empty
    shape[76:92] = 15.0  # last plateau, then empty to the end
    return resample(shape, 2_000, rng=rng)
