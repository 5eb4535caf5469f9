"""The record domain at its edges, in every source: the same records count the same way
whether they come as CSV, Parquet, a list, a numpy, pandas, polars or Arrow column (and
a Spark DataFrame, in ``test_spark.py``), and one record more moves the counts by at
most one record whatever it holds.

* values: ``-0.0``, ``+0.0``, the smallest subnormals, NaN and infinities at and beside
  every edge count as the exact rule ``bin(v) = #{interior e_i <= v}`` says;
* unit ids: NULL, NaN and None ids are missing and their records dropped, in every
  source, whatever the salt of the per-unit bound;
"""

from __future__ import annotations

import numpy as np
import pytest

from dphist import ingest
from dphist.errors import ValidationError
from dphist.lab.audit import records

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("polars")

SOURCES = records.FILES + records.IN_MEMORY

BINNINGS = {
    "0 first": ingest.binning(edges=[0, 10, 50, 100]),
    "0 interior": ingest.binning(edges=[-5, 0, 0.5, 10]),
    "0 last": ingest.binning(edges=[-10, -1, 0]),
    "-0.0 first, crowded": ingest.binning(edges=[-0.0, 1e-300, 1, 1 + 2**-52, 2]),
    "0 among 23": ingest.binning(edges=[-3 + 0.25 * i for i in range(25)]),
    "20 in one cell": ingest.binning(edges=[0, *(k * 1e-300 for k in range(1, 21)), 1, 2]),
    "domain from 0": ingest.binning(domain="0:100:10"),
    "domain to 0": ingest.binning(domain="-3.7:0:0.7"),
}


def edge_values(edges: np.ndarray) -> list[float]:
    """Every edge, its neighbours on both sides, signed zeros, subnormals, NaN, +-inf."""
    special = [-0.0, 0.0, 5e-324, -5e-324, np.nan, np.inf, -np.inf, 1e308, -1e308, -0.0]
    x = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf), special])
    return [float(v) for v in x]


def oracle(values: list[float], edges: np.ndarray, outside: str) -> np.ndarray:
    """Counts by ``searchsorted`` on the public edges (the last bin closed)."""
    x = np.array(values)
    y = x[np.isfinite(x)]
    lo, hi = edges[0], edges[-1]
    y = np.clip(y, lo, hi) if outside == "clip" else y[(y >= lo) & (y <= hi)]
    n = edges.size - 1
    return np.bincount(np.minimum(np.searchsorted(edges, y, side="right") - 1, n - 1), minlength=n)


def count_as(source, values, binning, tmp_path, units=None, spark=None, text_units=False,
             **options):  # fmt: skip
    data, columns = records.as_source(source, values, units, text_units=text_units,
                                      where=tmp_path, spark=spark)  # fmt: skip
    return ingest.count(data, binning, **columns, **options)


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", list(BINNINGS))
def test_signed_zeros_nan_and_infinities_at_and_beside_every_edge(source, name, tmp_path):
    binning = BINNINGS[name]
    values = edge_values(binning.edges)
    for outside in ("clip", "drop"):
        counts = count_as(source, values, binning, tmp_path, outside=outside)
        assert np.array_equal(counts, oracle(values, binning.edges, outside)), (source, outside)


def test_zero_and_non_values_spelled_as_text(tmp_path):
    """CSV text: every spelling of zero is the number 0; NaN and infinities are not
    values; all in the bin of 0 or dropped, at a first edge 0 as at an interior one."""
    zeros = ["-0", "-0.0", "+0", "0e0", "-0e-5", " -0 ", "-0.000"]
    others = ["nan", "NaN", "-nan", "inf", "-Infinity", "+inf"]
    path = tmp_path / "z.csv"
    path.write_text("v\n" + "".join(f"{v}\n" for v in zeros + others))
    for bins in (BINNINGS["0 first"], BINNINGS["0 interior"]):
        counts = ingest.count_file(path, "v", bins, outside="drop")
        at_zero = int(np.searchsorted(bins.edges, 0.0, side="right")) - 1
        assert counts[at_zero] == len(zeros) == counts.sum()


# --------------------------------------------------------------------------- unit ids

UNIT_VALUES = [5.0, 15.0, 25.0, 35.0, 45.0, 55.0, 65.0]
KNOWN = [1.0, 2.0, 1.0, 3.0]  # ids of the first four records; the last three lack one
BINS = ingest.binning(domain="0:100:10")


def missing_ids(kind: str) -> tuple[list, bool]:
    """The unit column: four ids, then three missing ones of ``kind`` (and text or not)."""
    if kind == "none":
        return ["p1", "p2", "p1", "p3", None, None, None], True
    missing = float("nan") if kind == "nan" else None
    return [*KNOWN, missing, missing, missing], False


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("kind", records.UNIT_KINDS)
def test_records_with_a_missing_unit_id_are_dropped_in_every_source(source, kind, tmp_path):
    """NULL, NaN and None ids are all missing: their records are dropped, whatever the
    salt, exactly as if they were not there (before, Arrow, polars, Parquet and CSV
    made every NaN id one unit that kept K of their records)."""
    units, text = missing_ids(kind)
    known = len(KNOWN)
    for salt in range(6):
        counts = count_as(source, UNIT_VALUES, BINS, tmp_path, units=units, text_units=text,
                          max_records=1, rng=salt)  # fmt: skip
        alone = count_as(source, UNIT_VALUES[:known], BINS, tmp_path, units=units[:known],
                         text_units=text, max_records=1, rng=salt)  # fmt: skip
        assert np.array_equal(counts, alone), (source, kind, salt)
        assert counts.sum() == 3  # units 1, 2 and 3, one record each


def test_text_ids_that_are_blank_or_spell_nan_are_missing(tmp_path):
    path = tmp_path / "ids.csv"
    ids = ["", " ", "NaN", "nan", " -NaN ", "+nan", "a", "nana", "null"]
    path.write_text("v,pid\n" + "".join(f"5,{i}\n" for i in ids))
    counts = ingest.count_file(path, "v", BINS, privacy_unit="pid", max_records=1, rng=0)
    assert counts[0] == 3  # "a", "nana" and "null" are ids
    with pytest.raises(ValidationError, match="without a privacy unit"):
        ingest.count_file(path, "v", BINS, privacy_unit="pid", max_records=1, strict=True)


def test_group_entities_with_missing_person_ids(tmp_path):
    (tmp_path / "g.csv").write_text("gid,state\na,S\nb,S\n")
    (tmp_path / "e.csv").write_text("pid,gid\n1,a\nNaN,a\n,a\nnan,b\n2,b\n")
    data = ingest.read_group_tables(
        tmp_path / "g.csv", ["state"], group_column="gid", entities=tmp_path / "e.csv",
        privacy_unit="pid", max_records=1, rng=0,
    )  # fmt: skip
    assert data.histograms()[0][1] == 2  # each group keeps its one identified person


def test_parquet_statistics_that_leave_nan_out(tmp_path):
    """Parquet's min and max leave NaN out, and DuckDB folds ``isnan`` to false from them:
    NaN values and NaN ids in such a file must still be no value and no id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    nan = float("nan")
    path = tmp_path / "stats.parquet"
    table = pa.table({"v": [5.0, 15.0, 25.0, 35.0, 45.0, 55.0, nan],
                      "u": [1.0, 2.0, 1.0, 3.0, nan, nan, nan]})  # fmt: skip
    pq.write_table(table, path)
    assert pq.read_metadata(path).row_group(0).column(1).statistics.max == 3.0
    assert ingest.count_file(path, "v", BINS).tolist() == [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    for salt in range(6):
        kept = ingest.count_file(path, "v", BINS, privacy_unit="u", max_records=1, rng=salt)
        assert kept.sum() == 3 and kept[4:].sum() == 0


# --------------------------------------------------------------------------- ragged records

RAGGED = [[3.0, 4.0], (5,), {"v": 7}, np.array([1.0, 2.0]), [[1], [2, 3]], b"7", []]


@pytest.mark.parametrize("source", records.RAGGED_SOURCES)
@pytest.mark.parametrize("element", RAGGED, ids=lambda e: type(e).__name__)
def test_a_ragged_record_is_dropped_not_refused(source, element, tmp_path):
    """An element that is not a scalar holds no value: its record is dropped, in the value
    column and in the unit column alike; before, a list raised with the data's shape."""
    base = count_as(source, [1.0, 2.0], BINS, tmp_path)
    assert np.array_equal(count_as(source, [1.0, 2.0, element], BINS, tmp_path), base)
    units = count_as(source, [1.0, 2.0, 3.0], BINS, tmp_path, units=[1.0, 2.0, element],
                     max_records=1, rng=0)  # fmt: skip
    assert np.array_equal(units, base)


def test_lists_of_equal_lists_are_records_too():
    """``[[1, 2], [3, 4]]`` is two records that hold no value, not a 2-D array."""
    assert ingest.count_values([[1, 2], [3, 4]], BINS).sum() == 0
    assert ingest.count_values([[1], [2], 3.0], BINS).tolist()[0] == 1


def test_a_list_is_typed_by_rule_not_by_its_elements():
    """One record never changes how the others are read: numbers in a list match text
    categories as their text (they were refused as a numeric column until a text
    element made the list text), booleans are text, and ids are text."""
    words = ingest.binning(categories=["1", "2.5", "x", "True"])
    assert ingest.count_values([1, 2.5], words).tolist() == [1, 1, 0, 0]
    assert ingest.count_values([1, 2.5, "x"], words).tolist() == [1, 1, 1, 0]
    assert ingest.count_values([True, 1], words).tolist() == [1, 0, 0, 1]
    assert (
        ingest.count_values([True, 15.0], BINS).tolist()
        == ingest.count_values([15.0], BINS).tolist()
    )
    for scalars in (  # read as numbers; with 2**70, as text: as the "x" makes them anyway
        [np.float16(1.5), np.float32(12.5), np.int8(25), np.longdouble(35.5)],
        [np.float16(1.5), np.float32(12.5), np.int8(25), 2**70],
    ):
        as_text = ingest.count_values([*scalars, "x"], BINS)
        assert np.array_equal(ingest.count_values(scalars, BINS), as_text)
    for salt in range(8):
        a = ingest.count_values([5, 15], BINS, privacy_unit=[1, 1], max_records=1, rng=salt)
        b = ingest.count_values([5, 15, 25], BINS, privacy_unit=[1, 1, "x"], max_records=1,
                                rng=salt)  # fmt: skip
        diff = b - a
        assert diff.min() >= 0 and diff.sum() == 1


def test_errors_about_columns_carry_no_data_shape():
    with pytest.raises(ValidationError) as err:
        ingest.count_values(list(range(1234)), BINS, privacy_unit=list(range(1235)),
                            max_records=1)  # fmt: skip
    assert "123" not in str(err.value) and "same length" in str(err.value)
    with pytest.raises(ValidationError, match="1-D array, not 2-D") as err:
        ingest.count_values(np.zeros((3, 1234)), BINS)
    assert "1234" not in str(err.value)
