"""Counting two columns of records into a 2-D histogram: against numpy's histogram2d,
per-column record domains, files, privacy units, and every option checked first."""

from __future__ import annotations

import numpy as np
import pytest

import dphist as dh
from dphist.errors import DataDependentParameterError, UnknownMethodError, ValidationError
from dphist.ingest import binning, count_grid

AGE = binning(domain="0:90:10")
REGION = binning(categories=["n", "s", "e", "w"])


def records(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(45, 25, n)  # some below 0 and above 90
    y = rng.choice(["n", "s", "e", "x"], n)  # "x" is not a category
    return x, y


def test_numeric_pair_equals_numpy_histogram2d_with_clipping():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-5, 95, 3000), rng.uniform(0, 50, 3000)
    counts = count_grid((x, y), (AGE, binning(edges=[0, 10, 25, 50])))
    expect, _, _ = np.histogram2d(
        np.clip(x, 0, 90), y, bins=[np.arange(0, 91, 10), [0, 10, 25, 50]]
    )
    np.testing.assert_array_equal(counts, expect)


def test_each_column_keeps_its_own_record_domain():
    x, y = records()
    counts = count_grid((x, y), (AGE, REGION), outside=("drop", "drop"))
    inside = (x >= 0) & (x <= 90) & np.isin(y, ["n", "s", "e", "w"])
    assert counts.shape == (9, 4) and counts.sum() == inside.sum()
    assert counts[:, 3].sum() == 0  # no "w" records; "x" records are dropped
    clipped = count_grid((x, y), (AGE, REGION), outside=("clip", "drop"))
    assert clipped.sum() == np.isin(y, ["n", "s", "e", "w"]).sum()


def test_missing_and_invalid_values_drop_their_record():
    x = np.array([1.0, np.nan, 15.0, np.inf, 25.0])
    y = ["n", "s", None, "e", "e"]
    counts = count_grid((x, np.array(y, dtype=object)), (AGE, REGION))
    assert counts.sum() == 2 and counts[0, 0] == 1 and counts[2, 2] == 1


@pytest.mark.parametrize("kind", ["pandas", "polars", "pyarrow"])
def test_frame_columns(kind):
    lib = pytest.importorskip(kind)
    x, y = records(500, 2)
    if kind == "pandas":
        cols = (lib.Series(x), lib.Series(y))
    elif kind == "polars":
        cols = (lib.Series("x", x), lib.Series("y", y))
    else:
        cols = (lib.array(x), lib.array(y))
    np.testing.assert_array_equal(
        count_grid(cols, (AGE, REGION)), count_grid((x, y), (AGE, REGION))
    )


def test_csv_and_parquet_files_count_alike(tmp_path):
    pd = pytest.importorskip("pandas")
    x, y = records(800, 3)
    frame = pd.DataFrame({"age": x, "region": y, "person": np.arange(800) % 100})
    csv, parquet = tmp_path / "r.csv", tmp_path / "r.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet)
    with open(csv, "a") as f:
        f.write('12,"n\n')  # a malformed line: dropped
    a = count_grid(csv, (AGE, REGION), columns=("age", "region"))
    b = count_grid(parquet, (AGE, REGION), columns=("age", "region"))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, count_grid((x, y), (AGE, REGION)))
    bounded = count_grid(csv, (AGE, REGION), columns=("age", "region"), privacy_unit="person",
                         max_records=3, rng=0)  # fmt: skip
    per_unit = frame[frame.region.isin(["n", "s", "e", "w"])].groupby("person").size()
    assert bounded.sum() == np.minimum(per_unit, 3).sum()
    with pytest.raises(ValidationError, match="no column 'agee'"):
        count_grid(csv, (AGE, REGION), columns=("agee", "region"))


def test_histogram2d_checks_everything_before_reading(tmp_path):
    missing = tmp_path / "absent.csv"
    with pytest.raises(UnknownMethodError):
        dh.histogram2d(missing, columns=("a", "b"), domain=("0:9:1", "0:9:1"), epsilon=1,
                       method="nope")  # fmt: skip
    with pytest.raises(ValidationError, match="either epsilon"):
        dh.histogram2d(missing, columns=("a", "b"), domain=("0:9:1", "0:9:1"), method="identity")
    with pytest.raises(DataDependentParameterError):
        dh.histogram2d(missing, columns=("a", "b"), domain=("0:9:1", None), epsilon=1,
                       method="identity")  # fmt: skip
    with pytest.raises(ValidationError, match="pair"):
        dh.histogram2d(missing, columns=("a", "b"), domain="0:9:1", epsilon=1, method="identity")
    with pytest.raises(ValidationError, match="max_records"):
        dh.histogram2d(missing, columns=("a", "b"), domain=("0:9:1", "0:9:1"), epsilon=1,
                       method="identity", privacy_unit="p")  # fmt: skip


def test_histogram2d_publishes_the_counted_cells():
    x, y = records(1000, 4)
    rel = dh.histogram2d(x, y, binnings=(AGE, REGION), epsilon=10**7, method="identity", rng=0)
    np.testing.assert_allclose(rel.estimate, count_grid((x, y), (AGE, REGION)), atol=0.01)
    unit = np.arange(1000) % 50
    rel = dh.histogram2d(x, y, binnings=(AGE, REGION), epsilon=1, method="HB2D", rng=0,
                         privacy_unit=unit, max_records=2)  # fmt: skip
    assert rel.max_records == 2 and rel.ledger[0].sensitivity == 2
