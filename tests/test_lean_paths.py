"""The lean 1-D paths: the same results as the general ones, without the copies."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import dphist as dh
from dphist._kernel import BlockSums, protect
from dphist._numeric.tree import consistency, level_consistency, tree_layout


@pytest.mark.parametrize(("n", "width"), [(1, 1), (10, 1), (10, 3), (17, 4), (16, 16), (5, 9)])
def test_block_sums_answers_and_sensitivity_by_brute_force(n, width):
    q = BlockSums(n, width)
    x = np.arange(n, dtype=np.int64) * 3 + 1
    expected = [x[j : j + width].sum() for j in range(0, n, width)]
    assert q.apply(x).tolist() == expected and q.size == len(expected)
    moves = [np.abs(q.apply(x + np.eye(n, dtype=np.int64)[i]) - q.apply(x)).sum() for i in range(n)]
    assert max(moves) == q.sensitivity == q.sensitivity2 == 1


@pytest.mark.parametrize(("n", "f"), [(1, 2), (7, 2), (20, 4), (100, 3), (1000, 16), (2345, 7)])
@pytest.mark.parametrize("unmeasured", [False, True])
def test_level_consistency_equals_the_general_one(n, f, unmeasured):
    rng = np.random.default_rng(n + f)
    layout = tree_layout(n, f)
    var = rng.uniform(0.5, 3, layout.n_levels)
    if unmeasured and layout.n_levels > 1:
        var[:-1][rng.random(layout.n_levels - 1) < 0.5] = np.inf
    y = rng.normal(0, 5, layout.n_nodes)
    per_node = np.repeat(var, layout.level_counts)
    est, post = consistency(layout, np.where(np.isinf(per_node), np.nan, y), per_node,
                            return_var=True)  # fmt: skip
    leaf_var = level_consistency(layout, y, var, return_var=True)
    assert np.allclose(y, est, rtol=1e-10, atol=1e-9)
    assert np.allclose(leaf_var, post[layout.leaf_slice], rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.uint64, np.float64])
def test_protect_clamps_in_one_pass_for_every_dtype(dtype):
    x = np.array([0, 1, 100, np.iinfo(np.int8).max], dtype=dtype)
    sealed = protect(x)
    assert repr(sealed) == "ProtectedCounts(n=4, max_records=1)"
    big = protect(np.array([2**60, 5], dtype=np.uint64))
    assert big.n == 2


def test_releases_adopt_read_only_arrays_and_build_prefixes_lazily():
    rel = dh.publish(np.arange(50, dtype=np.int64), epsilon=1, method="identity", rng=0)
    assert not rel.estimate.flags.writeable
    assert rel.noise_variance.strides == (0,)  # one number, viewed per bin
    assert "_prefix" not in rel.__dict__
    assert rel.range_sum(3, 9) == pytest.approx(rel.estimate[3:9].sum())
    mine = np.ones(4)
    copied = dh.Release(estimate=mine, method="identity", params={}, epsilon=1, ledger=(),
                        private=False, guarantee="")  # fmt: skip
    mine[0] = 7  # a writable input is copied, never adopted
    assert copied.estimate[0] == 1


@pytest.mark.parametrize("method", ["S2+H", "AHP", "S2", "GS", "NF"])
def test_group_labels_are_int32_end_to_end(method):
    from dphist._numeric.compact import label_dtype, label_sizes

    x = np.random.default_rng(3).integers(0, 30, 500)
    rel = dh.publish(x, epsilon=1.0, method=method, rng=0)
    assert label_dtype(500) is np.int32 and label_dtype(2**31) is np.int64
    assert rel.groups.dtype == np.int32 and not rel.groups.flags.writeable
    assert np.array_equal(label_sizes(rel.groups), np.bincount(rel.groups))
    labels = rel.uncertainty.bias.groups
    assert labels is None or labels.labels is rel.groups  # the error model shares them
    kept = dataclasses.replace(rel, groups=rel.groups)
    assert kept.groups is rel.groups  # read-only int32: not widened, not copied
    wide = dataclasses.replace(rel, groups=rel.groups.astype(np.int16))
    assert wide.groups.dtype == np.int64 and np.array_equal(wide.groups, rel.groups)


@pytest.mark.parametrize("method", ["AHP", "S2+H", "S1+H", "S2"])
def test_grouping_releases_spread_one_variance_per_group_when_read(method):
    """No per-bin variance is held until noise_variance is read: then it is each
    group's variance spread over its bins (as the error model states it per bin),
    read-only float64, built once."""
    from dphist.uncertainty import PerGroup

    x = np.random.default_rng(5).integers(0, 40, 777)
    rel = dh.publish(x, epsilon=0.5, method=method, rng=1)
    lazy = rel.__dict__["_noise_variance"]
    assert isinstance(lazy, PerGroup) and lazy.labels is rel.groups
    assert lazy.values.size == rel.groups.max() + 1 < rel.n
    variance = rel.noise_variance
    assert variance.dtype == np.float64 and not variance.flags.writeable
    assert rel.noise_variance is variance and rel.__dict__["_noise_variance"] is variance
    assert np.array_equal(variance, lazy.values[rel.groups])
    bins = np.arange(rel.n)
    assert np.allclose(variance, rel.uncertainty.noise.variance(bins, bins + 1), rtol=1e-12)
    given = dh.Release(estimate=rel.estimate, method=method, params={}, epsilon=1, ledger=(),
                       private=False, guarantee="", noise_variance=lazy)  # fmt: skip
    assert np.array_equal(given.noise_variance, variance)
    assert given.to_dict()["noise_variance"] == rel.to_dict()["noise_variance"]


@pytest.mark.parametrize(
    ("entropy", "key"),
    [(0, ()), (7, ()), (7, (0,)), (7, (3, 1)), (2**32, (5,)), (2**200 + 11, (2**40, 0)),
     (123456789, (0, 1, 2, 3, 4, 5))],
)  # fmt: skip
def test_fast_pcg64_is_numpys_seeded_stream(entropy, key):
    from dphist._kernel.seeding import pcg64_fill, pcg64_state, pcg64_words

    seq = np.random.SeedSequence(entropy, spawn_key=key)
    assert pcg64_words(entropy, key).tolist() == seq.generate_state(4, np.uint64).tolist()
    words = np.empty(8, dtype=np.uint64)
    pcg64_fill(pcg64_state(entropy, key), words, 0, 8)
    assert np.array_equal(words, np.random.PCG64(seq).random_raw(8))


def test_seeded_releases_draw_from_the_spawned_numpy_stream():
    from dphist._kernel.noise import GeneratorBits

    bits = GeneratorBits.from_seed((11, ())).spawn()
    child = np.random.SeedSequence(11).spawn(1)[0]
    assert np.array_equal(bits.words(5), np.random.PCG64(child).random_raw(5))


@pytest.mark.parametrize("n", [1, 5, 4096])
def test_protect_compiled_clamp_equals_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 2**62, n) >> rng.integers(0, 62, n)  # int64, some above the cap
    cap = 2**53 // n
    assert np.array_equal(protect(x)._read(), np.minimum(x, cap))
    assert np.array_equal(protect(x[::-1])._read(), np.minimum(x[::-1], cap))  # strided
    bad = x.copy()
    bad[-1] = -3
    where = f"1 entries are negative .first at index {n - 1}"
    with pytest.raises(dh.errors.DomainError, match=where):
        protect(bad)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_a_total_query_reads_the_total_summed_at_sealing(dtype):
    from fractions import Fraction

    from dphist._kernel import Accountant, noise_source, protect_grid
    from dphist._kernel.view import PrivateView

    x = np.array([3, 0, 2**60 if dtype == np.int64 else 9, 4], dtype=dtype)
    for sealed in (protect(x), protect(x).reordered(np.array([3, 2, 1, 0])),
                   protect_grid(x.reshape(2, 2))):  # fmt: skip
        assert sealed._total() == int(sealed._read().sum())
        view = PrivateView(sealed, Accountant(Fraction(10**9)), noise_source(0), "b")
        m = view.measure(BlockSums(4, 4), epsilon=10**9)  # noise below 2**-1000: none
        assert m.values.tolist() == [sealed._total()] and BlockSums(4, 9).whole
