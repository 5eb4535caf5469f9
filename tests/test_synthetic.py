"""Tests for dphist.synthetic: shapes, determinism, ground truth and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dphist import synthetic
from dphist.errors import InputTypeError, ValidationError

N = 4_096


def _all_generators():
    """(name, call(rng)) for every generator, at a moderate size."""
    shape = np.linspace(1.0, 5.0, 512)
    return [
        ("piecewise_constant", lambda rng: synthetic.piecewise_constant(N, rng=rng)[0]),
        ("spiky", lambda rng: synthetic.spiky(N, rng=rng)),
        ("sparse_power_law", lambda rng: synthetic.sparse_power_law(N, density=0.2, rng=rng)),
        ("bursts", lambda rng: synthetic.bursts(N, rng=rng)),
        ("resample", lambda rng: synthetic.resample(shape, 10_000, rng=rng)),
        ("demo_histogram", lambda rng: synthetic.demo_histogram(rng)),
    ]


GENERATORS = _all_generators()
GEN_IDS = [name for name, _ in GENERATORS]


# --------------------------------------------------------------------------- common contract


@pytest.mark.parametrize(("name", "call"), GENERATORS, ids=GEN_IDS)
def test_output_is_1d_nonnegative_int64(name, call):
    counts = call(0)
    assert isinstance(counts, np.ndarray)
    assert counts.dtype == np.int64
    assert counts.ndim == 1
    assert counts.min() >= 0
    assert counts.sum() > 0


@pytest.mark.parametrize(("name", "call"), GENERATORS, ids=GEN_IDS)
def test_same_seed_same_output_different_seed_differs(name, call):
    assert np.array_equal(call(7), call(7))
    assert np.array_equal(call(np.random.default_rng(7)), call(np.random.default_rng(7)))
    assert np.array_equal(call(np.random.SeedSequence(7)), call(7))
    assert not np.array_equal(call(7), call(8))


@pytest.mark.parametrize(("name", "call"), GENERATORS, ids=GEN_IDS)
@pytest.mark.parametrize("bad", [True, 1.5, "0", None, [1]])
def test_rng_type_is_checked(name, call, bad):
    with pytest.raises(InputTypeError, match="rng"):
        call(bad)


def test_negative_seed_is_rejected():
    with pytest.raises(ValidationError, match="rng"):
        synthetic.spiky(10, rng=-1)


def test_generator_state_advances():
    gen = np.random.default_rng(3)
    first = synthetic.spiky(1_000, rng=gen)
    second = synthetic.spiky(1_000, rng=gen)
    assert not np.array_equal(first, second)


def test_large_domains_are_fast_enough():
    n = 1_000_000
    counts, breaks = synthetic.piecewise_constant(n, segments=1_000, rng=1)
    assert counts.shape == (n,)
    assert breaks.shape == (999,)
    assert synthetic.spiky(n, rng=1).shape == (n,)
    assert synthetic.sparse_power_law(n, rng=1).shape == (n,)
    assert synthetic.bursts(n, clusters=1_000, rng=1).shape == (n,)
    assert int(synthetic.resample(np.ones(n), 7_500_000, rng=1).sum()) == 7_500_000


# --------------------------------------------------------------------------- piecewise_constant


def test_piecewise_breaks_are_sorted_distinct_interior():
    counts, breaks = synthetic.piecewise_constant(1_000, segments=20, rng=5)
    assert counts.shape == (1_000,)
    assert breaks.dtype == np.int64
    assert breaks.shape == (19,)
    assert np.all(np.diff(breaks) > 0)
    assert breaks[0] >= 1
    assert breaks[-1] <= 999


def test_piecewise_single_segment_has_no_breaks():
    counts, breaks = synthetic.piecewise_constant(50, segments=1, rng=0)
    assert breaks.shape == (0,)
    assert counts.shape == (50,)
    one, none = synthetic.piecewise_constant(1, segments=1, rng=0)
    assert one.shape == (1,)
    assert none.size == 0


def test_piecewise_every_bin_can_be_its_own_segment():
    counts, breaks = synthetic.piecewise_constant(10, segments=10, max_level=3, rng=0)
    assert np.array_equal(breaks, np.arange(1, 10))
    assert counts.shape == (10,)


def test_piecewise_counts_follow_a_step_function_with_those_breaks():
    n, segments, max_level = 20_000, 10, 1_000
    counts, breaks = synthetic.piecewise_constant(n, segments=segments, max_level=max_level, rng=11)
    starts = np.concatenate(([0], breaks))
    lengths = np.diff(np.concatenate((starts, [n])))
    sums = np.add.reduceat(counts, starts)
    means = sums / lengths
    # Levels are integers in [0, max_level]; neighbouring levels differ.
    assert np.all(means <= max_level + 5 * np.sqrt(max_level))
    fitted = np.repeat(means, lengths)
    long = lengths >= 30
    # Within each segment the counts scatter like Poisson around one level:
    # variance close to the mean, far below the variance around the global mean.
    for s, length, mean in zip(starts[long], lengths[long], means[long], strict=True):
        seg = counts[s : s + length]
        assert abs(seg.var() - mean) < 0.5 * mean + 5
    residual = np.sum((counts - fitted) ** 2)
    total = np.sum((counts - counts.mean()) ** 2)
    assert residual < 0.05 * total
    # Adjacent segments have different means at every break.
    assert np.all(np.abs(np.diff(means)) > 0)


def test_piecewise_level_range_respected():
    counts, _ = synthetic.piecewise_constant(5_000, segments=5, max_level=1, rng=2)
    # Levels are 0 or 1 and alternate; Poisson(1) rarely exceeds 8.
    assert counts.max() <= 10


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"n": 0}, ValidationError, "n"),
        ({"n": 10.0}, InputTypeError, "n"),
        ({"n": True}, InputTypeError, "n"),
        ({"segments": 0}, ValidationError, "segments"),
        ({"segments": 101}, ValidationError, "segments"),
        ({"segments": 2.5}, InputTypeError, "segments"),
        ({"max_level": 0}, ValidationError, "max_level"),
        ({"max_level": -3.0}, ValidationError, "max_level"),
        ({"max_level": float("nan")}, ValidationError, "max_level"),
        ({"max_level": "10"}, InputTypeError, "max_level"),
        ({"max_level": 0.5}, ValidationError, "max_level"),
    ],
)
def test_piecewise_bad_arguments(kwargs, error, needle):
    args = {"n": 100, "segments": 4, "max_level": 10, "rng": 0} | kwargs
    with pytest.raises(error, match=needle):
        synthetic.piecewise_constant(args.pop("n"), **args)


# --------------------------------------------------------------------------- spiky


def test_spiky_has_daily_cycle_and_rare_spikes():
    n, period = 16 * 2_000, 16
    counts = synthetic.spiky(n, base=20.0, spikes=0.002, height=30.0, period=period, rng=4)
    assert counts.shape == (n,)
    profile = counts.reshape(-1, period).mean(axis=0)
    assert profile.max() > 3 * profile.min()  # clear seasonal swing
    quiet = synthetic.spiky(n, base=20.0, spikes=0.0, period=period, rng=4)
    assert counts.max() > 2 * quiet.max()  # spikes tower over the seasonal peak
    extra = counts - quiet
    assert np.all(extra >= 0)
    spike_bins = np.count_nonzero(extra)
    assert 0 < spike_bins < 0.005 * n


def test_spiky_low_base_gives_zeros():
    counts = synthetic.spiky(10_000, base=1.0, rng=0)
    assert 0.1 < np.mean(counts == 0) < 0.9


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"n": -1}, ValidationError, "n"),
        ({"base": 0}, ValidationError, "base"),
        ({"base": None}, InputTypeError, "base"),
        ({"spikes": 1.5}, ValidationError, "spikes"),
        ({"spikes": -0.1}, ValidationError, "spikes"),
        ({"height": 0.0}, ValidationError, "height"),
        ({"height": float("inf")}, ValidationError, "height"),
        ({"period": 0}, ValidationError, "period"),
        ({"period": 16.0}, InputTypeError, "period"),
    ],
)
def test_spiky_bad_arguments(kwargs, error, needle):
    args = {"n": 100, "rng": 0} | kwargs
    with pytest.raises(error, match=needle):
        synthetic.spiky(args.pop("n"), **args)


# --------------------------------------------------------------------------- sparse_power_law


def test_sparse_power_law_is_sparse_and_heavy_tailed():
    n = 200_000
    counts = synthetic.sparse_power_law(n, density=0.03, exponent=1.2, scale=1.0, rng=9)
    nonzero = counts[counts > 0]
    assert 0.025 < nonzero.size / n < 0.035
    assert nonzero.min() >= 1
    # Heavy tail: the largest value dwarfs the median, and the tail index is near 1.2.
    assert nonzero.max() > 100 * np.median(nonzero)
    tail = np.mean(nonzero >= 10) / np.mean(nonzero >= 1)
    assert 10**-1.2 * 0.8 < tail < 10**-1.2 * 1.2


def test_sparse_power_law_full_density_has_no_zeros():
    counts = synthetic.sparse_power_law(1_000, density=1.0, rng=0)
    assert np.all(counts >= 1)


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"n": 0}, ValidationError, "n"),
        ({"density": 0.0}, ValidationError, "density"),
        ({"density": 1.01}, ValidationError, "density"),
        ({"density": "0.1"}, InputTypeError, "density"),
        ({"exponent": 0}, ValidationError, "exponent"),
        ({"exponent": True}, InputTypeError, "exponent"),
        ({"scale": -1.0}, ValidationError, "scale"),
    ],
)
def test_sparse_power_law_bad_arguments(kwargs, error, needle):
    args = {"n": 100, "rng": 0} | kwargs
    with pytest.raises(error, match=needle):
        synthetic.sparse_power_law(args.pop("n"), **args)


# --------------------------------------------------------------------------- bursts


def _runs(counts: np.ndarray) -> list[np.ndarray]:
    """The maximal runs of non-zero bins, as arrays of their counts."""
    nonzero = np.concatenate(([0], (counts > 0).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(nonzero))
    return [counts[a:b] for a, b in zip(edges[::2], edges[1::2], strict=True)]


@pytest.mark.parametrize(("n", "clusters", "coverage"), [(4_096, 6, 0.03), (10_000, 24, 0.2)])
def test_bursts_are_the_given_number_of_runs_over_the_given_coverage(n, clusters, coverage):
    for seed in range(5):
        counts = synthetic.bursts(n, clusters=clusters, coverage=coverage, rng=seed)
        runs = _runs(counts)
        assert len(runs) == clusters  # separated by at least one empty bin
        assert int(np.count_nonzero(counts)) == round(coverage * n)
        for run in runs:  # one order of magnitude within a burst: heights level * U[0.2, 1]
            assert run.max() <= 5 * run.min() + 5


def test_bursts_fill_a_tight_domain_exactly():
    # 5 one-bin bursts and 4 one-bin gaps fill 9 bins: no freedom left but the heights
    counts = synthetic.bursts(9, clusters=5, coverage=0.5, rng=1)
    assert np.array_equal(counts > 0, [1, 0, 1, 0, 1, 0, 1, 0, 1])


def test_bursts_levels_are_heavy_tailed():
    one = [synthetic.bursts(64, clusters=1, coverage=0.01, scale=1.0, rng=s) for s in range(4_000)]
    levels = np.array([x.max() for x in one])
    # one bin at floor(level * U), level = 1 + Pareto(1.2): the top 1% dwarfs the median
    assert np.quantile(levels, 0.99) > 20 * max(np.median(levels), 1)


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"n": 0}, ValidationError, "n"),
        ({"clusters": 0}, ValidationError, "clusters"),
        ({"clusters": 60}, ValidationError, "too small"),
        ({"coverage": 0.0}, ValidationError, "coverage"),
        ({"coverage": 1.5}, ValidationError, "coverage"),
        ({"exponent": -1}, ValidationError, "exponent"),
        ({"scale": "2"}, InputTypeError, "scale"),
    ],
)
def test_bursts_bad_arguments(kwargs, error, needle):
    args = {"n": 100, "rng": 0} | kwargs
    with pytest.raises(error, match=needle):
        synthetic.bursts(args.pop("n"), **args)


# --------------------------------------------------------------------------- resample


def test_resample_total_is_exact_and_proportions_match():
    shape = np.array([0, 1, 2, 3, 4, 0, 10], dtype=np.int64)
    scale = 1_000_000
    counts = synthetic.resample(shape, scale, rng=1)
    assert counts.shape == shape.shape
    assert int(counts.sum()) == scale
    assert np.all(counts[shape == 0] == 0)
    p = shape / shape.sum()
    assert np.allclose(counts / scale, p, atol=0.003)


def test_resample_accepts_float_shapes_and_small_scales():
    counts = synthetic.resample([0.25, 0.25, 0.5], 1, rng=0)
    assert int(counts.sum()) == 1
    assert counts.dtype == np.int64


@pytest.mark.parametrize(
    ("shape", "scale", "error", "needle"),
    [
        ([1, 2], 0, ValidationError, "scale"),
        ([1, 2], 10.0, InputTypeError, "scale"),
        ([1, 2], True, InputTypeError, "scale"),
        ([0, 0], 10, ValidationError, "shape"),
        ([1, -1, 3], 10, ValidationError, "shape"),
        ([1.0, float("nan")], 10, ValidationError, "shape"),
        ([], 10, ValidationError, "shape"),
        ([[1, 2], [3, 4]], 10, ValidationError, "shape"),
        (["a", "b"], 10, InputTypeError, "shape"),
        ([True, False], 10, InputTypeError, "shape"),
    ],
)
def test_resample_bad_arguments(shape, scale, error, needle):
    with pytest.raises(error, match=needle):
        synthetic.resample(shape, scale, rng=0)


# --------------------------------------------------------------------------- reduce_domain


def test_reduce_domain_sums_blocks():
    counts = np.arange(12, dtype=np.int64)
    reduced = synthetic.reduce_domain(counts, 3)
    assert np.array_equal(reduced, [0 + 1 + 2 + 3, 4 + 5 + 6 + 7, 8 + 9 + 10 + 11])
    assert reduced.dtype == np.int64


def test_reduce_domain_preserves_total_and_identity():
    counts = synthetic.sparse_power_law(4_096, rng=3)
    for n in (1, 2, 64, 4_096):
        reduced = synthetic.reduce_domain(counts, n)
        assert reduced.shape == (n,)
        assert int(reduced.sum()) == int(counts.sum())
    assert np.array_equal(synthetic.reduce_domain(counts, 4_096), counts)
    assert np.array_equal(
        synthetic.reduce_domain(synthetic.reduce_domain(counts, 256), 16),
        synthetic.reduce_domain(counts, 16),
    )


def test_reduce_domain_accepts_integral_floats():
    assert np.array_equal(synthetic.reduce_domain([1.0, 2.0, 3.0, 4.0], 2), [3, 7])


@pytest.mark.parametrize(
    ("counts", "n", "error", "needle"),
    [
        (np.arange(10), 3, ValidationError, "divide"),
        (np.arange(10), 0, ValidationError, "n"),
        (np.arange(10), 2.0, InputTypeError, "n"),
        (np.arange(10), 20, ValidationError, "divide"),
        ([1.5, 2.0], 1, ValidationError, "counts"),
        ([1, -2], 1, ValidationError, "counts"),
        ([], 1, ValidationError, "counts"),
    ],
)
def test_reduce_domain_bad_arguments(counts, n, error, needle):
    with pytest.raises(error, match=needle):
        synthetic.reduce_domain(counts, n)


# --------------------------------------------------------------------------- demo_histogram


def test_demo_histogram_is_small_fixed_and_mixed():
    counts = synthetic.demo_histogram()
    assert counts.shape == (96,)
    assert int(counts.sum()) == 2_000
    assert np.array_equal(counts, synthetic.demo_histogram(0))
    assert np.all(counts[:8] == 0)  # empty start
    assert np.all(counts[64:76] == 0)  # empty gap
    assert np.all(counts[92:] == 0)  # empty end
    peak = int(np.argmax(counts))
    assert 40 <= peak <= 47
    assert counts[peak] > 3 * np.median(counts[counts > 0])


def test_matching_has_the_exact_statistics_it_is_given():
    x = synthetic.matching(500, zeros=200, total=9_000, maximum=120, variance=900.0, rng=3)
    assert x.dtype == np.int64 and x.size == 500
    assert np.count_nonzero(x == 0) == 200 and int(x.sum()) == 9_000 and x.max() <= 120
    assert np.array_equal(x, synthetic.matching(500, zeros=200, total=9_000, maximum=120,
                                                variance=900.0, rng=3))  # fmt: skip


@pytest.mark.parametrize(
    "kwargs",
    [
        {"zeros": 2, "total": 5, "maximum": 3},  # fewer records than non-empty bins
        {"zeros": 0, "total": 100, "maximum": 3},  # 10 bins of at most 3 cannot hold 100
        {"zeros": 2, "total": 20, "maximum": 3, "variance": math.inf},
    ],
)
def test_matching_refuses_impossible_statistics(kwargs):
    kwargs = {"variance": 1.0, **kwargs}
    with pytest.raises(ValidationError):
        synthetic.matching(10, rng=0, **kwargs)
