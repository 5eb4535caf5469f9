"""Privacy at the edges of the kernel: nothing refuses or changes because of one record.

Each test drives neighbouring inputs (one record, or one privacy unit, more) and checks
that both release, or that both fail the same public way: huge counts are clamped at
the public cap, group sizes below ``m0`` or beyond the size cap are kept, a privacy
unit's bound scales every sensitivity, and inputs whose *type* says they are not bin
counts in the public order are refused by type alone.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist import groupsize as gs
from dphist._kernel import NoisyPartition, count_cap, protect
from dphist._kernel.groups import _emd_to_truth
from dphist.errors import DphistError, InputTypeError, InternalError, ValidationError
from dphist.groupsize.publish import seal
from dphist.lab import audit

# --------------------------------------------------------------------------- count cap


def test_count_cap_keeps_every_sum_exact_in_float64():
    for n in (1, 2, 3, 1000, 10**6 + 1):
        cap = count_cap(n)
        assert cap * n <= 2**53 < (cap + 1) * n
        assert float(cap * n) == cap * n


@pytest.mark.parametrize(
    "counts",
    [
        np.array([2**64 - 1, 3], dtype=np.uint64),
        np.array([1e300, 2.0]),
        np.array([2.0**53 + 2, 2.0]),
        [2**70, 1],
        np.array([2**62, 1], dtype=np.int64),
    ],
)
def test_huge_counts_are_clamped_not_refused(counts):
    sealed = protect(counts)._read()
    assert sealed.tolist() == [count_cap(2), int(np.asarray(counts, dtype=object)[1])]


def test_clamping_is_one_stable():
    rng = np.random.default_rng(0)
    cap = count_cap(4)
    for _ in range(200):
        x = rng.integers(cap - 3, cap + 3, 4, dtype=np.int64)
        i = rng.integers(4)
        y = x.copy()
        y[i] += 1
        a, b = protect(x)._read(), protect(y)._read()
        assert np.abs(a - b).sum() <= 1


FLOAT_METHODS = ["S1", "S~", "S1+H", "DAWA", "EFPA", "P-HP", "SF", "AHP", "identity"]


@pytest.mark.parametrize("method", FLOAT_METHODS)
def test_methods_release_on_both_sides_of_the_cap(method):
    """Neighbours around the cap both release; before, S1, S~, S1+H and DAWA refused
    after charging and EFPA and P-HP lost their noise to float rounding."""
    info = dh.get_method(method)
    params = dict(info.example)
    if method == "SF":
        params["bound"] = 10
    for top in (count_cap(8) - 1, count_cap(8), 2**61, 2**63 - 1):
        x = np.array([top, 0, 5, top, 1, 2, 3, top], dtype=np.int64)
        y = x.copy()
        y[1] += 1
        for counts in (x, y):
            rel = dh.publish(counts, epsilon=1, method=method, rng=1, **params)
            assert np.all(np.isfinite(rel.estimate))


# --------------------------------------------------------------------------- privacy unit


def _sensitivities(method: str, k: int) -> list[Fraction]:
    info = dh.get_method(method)
    x = np.array([3, 0, 7, 1, 1, 9, 0, 4], dtype=np.int64)
    rel = dh.publish(x, epsilon=1, method=method, rng=0, max_records=k, **info.example)
    return [c.sensitivity for c in rel.ledger]


@pytest.mark.parametrize("method", [m.name for m in dh.list_methods()])
def test_every_sensitivity_scales_with_the_unit_bound(method):
    one, three = _sensitivities(method, 1), _sensitivities(method, 3)
    assert len(one) == len(three)
    for a, b in zip(one, three, strict=True):  # lattice rounding terms may differ by 1e-5
        assert abs(b / (3 * a) - 1) < 1e-5


def test_unit_noise_equals_record_noise_at_a_smaller_epsilon():
    x = np.zeros(20_000, dtype=np.int64)
    a = dh.publish(x, epsilon=1, method="identity", rng=4, max_records=3)
    b = dh.publish(x, epsilon=Fraction(1, 3), method="identity", rng=4)
    assert np.array_equal(a.estimate, b.estimate)  # same scale, same seed: same draws
    assert a.ledger[0].scale == b.ledger[0].scale == 3
    assert float(a.ledger[0].epsilon) == 1.0


def test_unit_terms_in_release_and_guarantee():
    rel = dh.publish([1, 2, 3], epsilon=1, method="identity", privacy_unit="patient",
                     max_records=4)  # fmt: skip
    assert rel.private and rel.privacy_unit == "patient" and rel.max_records == 4
    assert "privacy unit 'patient', at most 4 records each" in rel.guarantee
    plain = dh.publish([1, 2, 3], epsilon=1, method="identity")
    assert plain.privacy_unit == "record" and "one-record" in plain.guarantee
    assert rel.to_dict()["privacy_unit"] == "patient"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_bad_unit_bounds_are_refused_before_any_read(bad, monkeypatch):
    import dphist._kernel.data as data

    read = []
    monkeypatch.setattr(data.ProtectedCounts, "_read", lambda self: read.append(1))
    with pytest.raises(DphistError):
        dh.publish([1, 2], epsilon=1, method="identity", max_records=bad)
    assert read == []


def test_group_sizes_scale_with_the_unit_bound():
    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy.from_fanouts([[2]]), [[1, 2], [3]])
    one = gs.publish_group_sizes(data, epsilon=1, K=5, rng=0, method="ranked")
    three = gs.publish_group_sizes(data, epsilon=1, K=5, rng=0, method="ranked",
                                   privacy_unit="person", max_records=3)  # fmt: skip
    assert [c.sensitivity for c in three.ledger] == [3 * c.sensitivity for c in one.ledger]
    assert three.privacy_unit == "person" and three.max_records == 3


def _unit_pair(k: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([2, 0, 5, 1, 3, 0], dtype=np.int64)
    y = x.copy()
    y[2] += k  # one more unit, all of its K records in bin 2
    return x, y


@pytest.mark.parametrize("method", ["identity", pytest.param("S2", marks=pytest.mark.extended)])
def test_audit_of_a_unit_neighbour_at_the_claimed_epsilon(method):
    k = 3
    mech = audit.method_mechanism(method, epsilon=1.0, max_records=k)
    result = audit.audit_pair(mech, _unit_pair(k), n_search=400, n_confirm=2000, seed=5)
    assert not result.flagged, result.best


def test_audit_flags_a_kernel_that_ignores_the_unit_bound(monkeypatch):
    """The mutant: counts bounded to K records per unit, noise for one record."""
    import dphist._kernel.view as view

    k = 3
    real = view.PrivateView.__init__

    def ignoring(self, data, budget, noise, block, **kwargs):
        real(self, data, budget, noise, block, **kwargs)
        self._k = 1

    monkeypatch.setattr(view.PrivateView, "__init__", ignoring)
    mech = audit.method_mechanism("identity", epsilon=1.0, max_records=k)
    result = audit.audit_pair(mech, _unit_pair(k), n_search=300, n_confirm=1000, seed=5)
    assert result.flagged and result.eps_lb > 1.5


# --------------------------------------------------------------------------- group sizes


def _dense_emd(sizes: np.ndarray, counts: np.ndarray, estimate: np.ndarray) -> int:
    n = max(int(sizes.max()) + 1 if sizes.size else 1, estimate.size)
    truth = np.zeros(n, dtype=np.int64)
    truth[sizes] = counts
    est = np.zeros(n, dtype=np.int64)
    est[: estimate.size] = estimate
    return int(np.abs(np.cumsum(truth) - np.cumsum(est)).sum())


def test_emd_to_truth_equals_the_dense_formula():
    rng = np.random.default_rng(1)
    h = gs.Hierarchy.from_fanouts([[1]])
    for _ in range(300):
        sizes = rng.choice(rng.integers(1, 60), size=rng.integers(0, 12)).astype(np.int64)
        data = gs.GroupSizeData.from_leaf_sizes(h, [sizes])
        sealed = seal(data)
        groups = int(sizes.size)
        est = np.bincount(rng.integers(0, rng.integers(1, 40), groups), minlength=1)
        s, c = np.unique(sizes, return_counts=True)
        assert _emd_to_truth(sealed, 1, est) == _dense_emd(s, c, est)


def test_emd_to_truth_does_not_allocate_by_a_true_size():
    h = gs.Hierarchy.from_fanouts([[1]])
    sealed = seal(gs.GroupSizeData.from_leaf_sizes(h, [np.array([3, 2**39])]))
    assert _emd_to_truth(sealed, 1, np.array([0, 0, 0, 2])) == 2**39 - 3


def test_emd_scores_move_by_at_most_one_when_totals_are_public():
    """The sensitivity select_min_emd charges: one group one size larger or smaller moves
    a region's EMD to any candidate holding its G groups by at most one, also when the
    group becomes the largest (beyond the candidate's length)."""
    rng = np.random.default_rng(2)
    h = gs.Hierarchy.from_fanouts([[1]])
    for _ in range(300):
        sizes = rng.integers(0, rng.integers(1, 30), size=rng.integers(1, 10))
        est = np.bincount(rng.integers(0, rng.integers(1, 40), sizes.size), minlength=1)
        moved = sizes.copy()
        i = rng.integers(sizes.size)
        moved[i] = max(0, moved[i] + rng.choice([-1, 1]))
        a, b = (
            _emd_to_truth(seal(gs.GroupSizeData.from_leaf_sizes(h, [s])), 1, est)
            for s in (sizes, moved)
        )
        assert abs(a - b) <= 1


def _selection_candidates(data):
    from dphist._kernel import Accountant
    from dphist._kernel.noise import GeneratorBits, NoiseSource
    from dphist.groupsize.evaluate import estimate, measurer_for, plan

    p = plan(data, epsilon=1, method="ranked", K=10)
    budget = Accountant(Fraction(9), label="test")
    measurer = measurer_for(p, budget, NoiseSource(GeneratorBits(np.random.default_rng(0))))
    return measurer, budget, estimate(p, measurer).histograms


@pytest.mark.parametrize("fault", ["total", "float", "regions"])
def test_candidates_must_hold_each_region_s_public_number_of_groups(fault, monkeypatch):
    """Before any score, and before the selection is charged, the kernel checks every
    candidate histogram sums to its region's public G: otherwise a group growing past
    the largest true size would add |G - total| to the score, unbounded."""
    import dphist._kernel.groups as kernel_groups

    data = gs.GroupSizeData.from_leaf_sizes(
        gs.Hierarchy.from_fanouts([[2]]), [np.array([1, 2, 3]), np.array([4])]
    )
    measurer, budget, good = _selection_candidates(data)
    bad = [np.array(h) for h in good]
    if fault == "total":
        bad[1] = bad[1].copy()
        bad[1][0] += 1
    elif fault == "float":
        bad[2] = bad[2].astype(np.float64)
    else:
        bad = bad[:-1]
    charged = len(budget.ledger)
    scored = []
    monkeypatch.setattr(kernel_groups, "_emd_to_truth", lambda *a: scored.append(a) or 0)
    with pytest.raises(InternalError, match="candidate 1"):
        measurer.select_min_emd([good, bad], epsilon=1, block="selection")
    assert len(budget.ledger) == charged and scored == []
    assert measurer.select_min_emd([good, good], epsilon=1, block="selection") in (0, 1)


def test_group_sizes_beyond_the_cap_are_clamped():
    h = gs.Hierarchy.from_fanouts([[2]])
    big = gs.GroupSizeData.from_leaf_sizes(h, [np.array([2**45, 2**50, 3]), np.array([1])])
    rel = gs.publish_group_sizes(big, epsilon=1, K=5, method="ranked", rng=0)
    assert rel.histograms[0].sum() == 4


# --------------------------------------------------------------------------- hygiene


def test_a_bin_order_must_be_a_permutation():
    from dphist._kernel import Accountant, NoiseSource
    from dphist._kernel.noise import GeneratorBits
    from dphist._kernel.view import PrivateView

    data = protect([1, 2, 3, 4])
    view = PrivateView(
        data, Accountant(Fraction(9)), NoiseSource(GeneratorBits(np.random.default_rng(0))), "b"
    )
    for order in ([0, 1, 1, 3], [0, 1, 2, 4], [0, 1, 2], [-1, 1, 2, 3]):
        with pytest.raises(InternalError, match=r"permutation|integers"):
            view.select(NoisyPartition("all", penalty=1.0, order=np.array(order)), epsilon=1)


def test_seeded_mode_needs_64_bit_words():
    with pytest.raises(ValidationError, match="MT19937"):
        dh.publish([1, 2], epsilon=1, method="identity",
                   rng=np.random.Generator(np.random.MT19937(1)))  # fmt: skip
    for bits in (np.random.PCG64DXSM, np.random.Philox, np.random.SFC64):
        dh.publish([1, 2], epsilon=1, method="identity", rng=np.random.Generator(bits(1)))


@pytest.mark.parametrize("epsilon", ["1e30", 1e29, "123456789012345678901234567890"])
def test_extreme_epsilons_release(epsilon):
    for method in ("identity", "S~", "HB", "EFPA"):
        rel = dh.publish([1, 2, 3, 4], epsilon=epsilon, method=method, rng=0)
        assert np.all(np.isfinite(rel.estimate))


@pytest.mark.parametrize("epsilon", ["1e300", 10**400, 1e31])
def test_epsilon_beyond_the_cap_is_a_clear_error(epsilon):
    with pytest.raises(ValidationError, match="at most 1e30"):
        dh.publish([1, 2], epsilon=epsilon, method="identity")


def test_release_json_has_no_timings():
    rel = dh.publish([1, 2, 3], epsilon=1, method="S~", rng=0)
    assert rel.timings  # kept in memory for experiments
    assert "timings" not in rel.to_dict() and "timing" not in rel.to_json()


# --------------------------------------------------------------------------- counts vs records


class _Frame:  # stands in for a pandas DataFrame without importing pandas
    __module__ = "pandas.core.frame"


_Frame.__name__ = "DataFrame"


def test_tables_are_not_counts_even_without_pandas():
    with pytest.raises(InputTypeError, match=r"dh\.histogram"):
        dh.publish(_Frame(), epsilon=1, method="identity")


def test_labelled_series_are_refused_by_type():
    pd = pytest.importorskip("pandas")
    records = pd.Series([30, 41, 30, 52])
    with pytest.raises(InputTypeError, match=r"dh\.histogram"):
        dh.publish(records.value_counts(), epsilon=1, method="identity")
    with pytest.raises(InputTypeError, match="DataFrame"):
        dh.publish(records.to_frame(), epsilon=1, method="identity")
    shifted = pd.Series([1, 2], index=pd.RangeIndex(1, 3))
    with pytest.raises(InputTypeError, match="RangeIndex"):
        dh.publish(shifted, epsilon=1, method="identity")
    ok = pd.Series([4, 0, 2])  # the default index is the public bin order
    assert dh.publish(ok, epsilon=1, method="identity", rng=0).n == 3


def test_polars_and_arrow_tables_are_refused():
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(InputTypeError, match="DataFrame"):
        dh.publish(pl.DataFrame({"n": [1, 2]}), epsilon=1, method="identity")
    with pytest.raises(InputTypeError, match="Table"):
        dh.publish(pa.table({"n": [1, 2]}), epsilon=1, method="identity")
    assert dh.publish(pl.Series([1, 2]), epsilon=1, method="identity", rng=0).n == 2
