"""Spark where the records live: the same counts and group sizes as DuckDB, computed
in Spark with only aggregates collected, and the per-unit bound applied there."""

from __future__ import annotations

import numpy as np
import pytest

from dphist import ingest
from dphist.errors import ValidationError

RNG = np.random.default_rng(7)
EDGES = ingest.binning(domain="-3.7:100:0.7").edges  # widths not exact in binary
N = 4000
VALUES = np.round(RNG.normal(50, 30, N), 1)
VALUES[::11] = np.nan
VALUES[::13] = 1e9
VALUES[1 : 3 * EDGES.size : 3] = EDGES  # exactly on, and beside, every edge
VALUES[2 : 3 * EDGES.size : 3] = np.nextafter(EDGES, -np.inf)
PERSON = RNG.integers(0, 900, N)


@pytest.fixture(scope="module")
def frame(spark):
    rows = [(None if np.isnan(v) else float(v), int(p), f"c{int(p) % 3}") for v, p in
            zip(VALUES, PERSON, strict=True)]  # fmt: skip
    return spark.createDataFrame(rows, "v double, person long, c string")


@pytest.mark.parametrize(
    ("binning", "outside"),
    [
        (ingest.binning(domain="0:100:3"), "clip"),
        (ingest.binning(domain="0:100:3"), "drop"),
        (ingest.binning(domain="-3.7:100:0.7"), "drop"),
        (ingest.binning(edges=[-5, 0, 0.5, 10, 99.9, 100]), "clip"),
    ],
)
def test_counts_in_spark_equal_duckdb(frame, binning, outside):
    spark_counts = ingest.count(frame, binning, column="v", outside=outside)
    duck = ingest.count_values(VALUES, binning, outside=outside)
    assert np.array_equal(spark_counts, duck)


def test_categories_and_the_histogram_api(frame):
    cats = ingest.binning(categories=["c0", "c2", "zz"])
    assert np.array_equal(
        ingest.count(frame, cats, column="c"),
        ingest.count_values(np.array([f"c{p % 3}" for p in PERSON]), cats),
    )
    import dphist as dh

    rel = dh.histogram(frame, column="v", domain="0:100:10", epsilon=1, method="identity",
                       privacy_unit="person", max_records=2, rng=0)  # fmt: skip
    assert rel.n == 10 and rel.privacy_unit == "person" and rel.max_records == 2


def test_at_most_k_records_per_unit_are_kept_in_spark(frame, spark):
    bins = ingest.binning(domain="0:100:5")
    counts = ingest.count(frame, bins, column="v", privacy_unit="person", max_records=2, rng=1)
    kept = np.isfinite(VALUES)  # clip keeps every value
    per_unit = np.bincount(PERSON[kept], minlength=900)
    assert counts.sum() == np.minimum(per_unit, 2).sum()
    # one unit more moves the counts by at most K in L1
    extra = spark.createDataFrame([(float(v), 10_000, "c0") for v in (1, 2, 3, 4, 5)],
                                  "v double, person long, c string")  # fmt: skip
    more = ingest.count(frame.union(extra), bins, column="v", privacy_unit="person",
                        max_records=2, rng=1)  # fmt: skip
    assert np.abs(more - counts).sum() <= 2


def test_text_values_with_numeric_bins_are_refused_by_schema(spark):
    df = spark.createDataFrame([("5",)], "v string")
    with pytest.raises(ValidationError, match="numeric columns"):
        ingest.count(df, ingest.binning(domain="0:10:1"), column="v")


def test_histogram_of_a_spark_column_checks_its_type_before_any_budget(spark, monkeypatch):
    import dphist as dh
    from dphist import records

    spent: list[int] = []
    monkeypatch.setattr(records, "publish", lambda *a, **k: spent.append(1))
    df = spark.createDataFrame([("5", 5)], "s string, n long")
    with pytest.raises(ValidationError, match="numeric columns"):
        dh.histogram(df, column="s", domain="0:10:1", epsilon=1, method="identity")
    with pytest.raises(ValidationError, match="not text"):
        dh.histogram(df, column="n", categories="a,b", epsilon=1, method="identity")
    assert not spent


def test_group_sizes_in_spark_equal_duckdb(spark, tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "census_data", Path(__file__).parents[1] / "benchmarks" / "census_data.py"
    )
    census = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(census)
    census.generate(tmp_path, 5_000, (52, 300, 1_000))
    levels = ["state", "county", "tract"]
    h, p = tmp_path / "households.parquet", tmp_path / "persons.parquet"
    duck = ingest.read_group_tables(h, levels, group_column="hid", entities=p)
    frames = ingest.read_group_tables(
        spark.read.parquet(str(h)), levels, group_column="hid",
        entities=spark.read.parquet(str(p)),
    )  # fmt: skip
    assert frames.hierarchy.labels == duck.hierarchy.labels
    for name in ("offsets", "sizes", "counts"):
        assert np.array_equal(getattr(frames, name), getattr(duck, name))
    assert duck.n_groups == 5_000 and duck.hierarchy.n_leaves == 1_000


# --------------------------------------------------------------------------- edges


@pytest.fixture(scope="module")
def edge_cases():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "ingest_edges", Path(__file__).parent / "test_ingest_edges.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_signed_zeros_nan_and_infinities_at_and_beside_every_edge(spark, edge_cases, tmp_path):
    """The exact rule of the DuckDB and streamed paths, no Bucketizer: -0.0 at a first
    edge 0 used to abort the job (Java's ordering puts it below 0.0)."""
    for name, binning in edge_cases.BINNINGS.items():
        values = edge_cases.edge_values(binning.edges)
        for outside in ("clip", "drop"):
            counts = edge_cases.count_as("spark", values, binning, tmp_path, spark=spark,
                                         outside=outside)  # fmt: skip
            expected = edge_cases.oracle(values, binning.edges, outside)
            assert np.array_equal(counts, expected), (name, outside)


def test_negative_zero_at_the_first_edge_releases(spark):
    import dphist as dh

    for outside in ("clip", "drop"):
        for values in ([3.0, 20.0], [3.0, 20.0, -0.0]):
            df = spark.createDataFrame([(v,) for v in values], "v double")
            rel = dh.histogram(df, column="v", edges=[0, 10, 50, 100], outside=outside,
                               epsilon=1, method="identity", rng=0)  # fmt: skip
            assert rel.n == 3


@pytest.mark.parametrize("kind", ["nan", "null", "none"])
def test_records_with_a_missing_unit_id_are_dropped(spark, edge_cases, tmp_path, kind):
    """NULL, NaN and None ids are missing, as in DuckDB (Spark's NaN = NaN made every
    NaN id one unit)."""
    units, text = edge_cases.missing_ids(kind)
    values, known = edge_cases.UNIT_VALUES, len(edge_cases.KNOWN)
    options = {"text_units": text, "spark": spark, "max_records": 1, "rng": 0}
    counts = edge_cases.count_as("spark", values, edge_cases.BINS, tmp_path, units=units,
                                 **options)  # fmt: skip
    alone = edge_cases.count_as("spark", values[:known], edge_cases.BINS, tmp_path,
                                units=units[:known], **options)  # fmt: skip
    assert np.array_equal(counts, alone) and counts.sum() == 3  # one NaN unit made it 4


def test_grid_counts_in_spark_equal_duckdb(frame, spark):
    """Two columns in Spark: numeric (clipped, with the edge cases above) by text
    categories (dropped when unmatched), and both numeric with one dropped; the cells
    equal DuckDB's on the same records."""
    text = np.array([f"c{p % 3}" for p in PERSON])
    bins = (ingest.binning(domain="-3.7:100:0.7"), ingest.binning(categories=["c0", "c2", "zz"]))
    counts = ingest.count_grid(frame, bins, columns=("v", "c"), outside=("clip", None))
    assert counts.shape == (bins[0].n, 3) and counts.sum() > 0
    duck = ingest.count_grid((VALUES, text), bins, outside=("clip", None))
    assert np.array_equal(counts, duck)
    both = (ingest.binning(domain="0:100:10"), ingest.binning(edges=[0, 300, 600, 899.5]))
    frame2 = frame.withColumn("p", frame["person"].cast("double"))
    counts = ingest.count_grid(frame2, both, columns=("v", "p"), outside=("drop", "clip"))
    duck = ingest.count_grid((VALUES, PERSON.astype(float)), both, outside=("drop", "clip"))
    assert np.array_equal(counts, duck)


def test_grid_counts_keep_at_most_k_records_per_unit_in_spark(frame, spark):
    bins = (ingest.binning(domain="0:100:20"), ingest.binning(categories=["c0", "c1", "c2"]))
    counts = ingest.count_grid(frame, bins, columns=("v", "c"), privacy_unit="person",
                               max_records=2, rng=1)  # fmt: skip
    kept = np.isfinite(VALUES)
    assert counts.sum() == np.minimum(np.bincount(PERSON[kept], minlength=900), 2).sum()
    extra = spark.createDataFrame([(float(v), 10_000, "c0") for v in (1, 2, 3, 4, 5)],
                                  "v double, person long, c string")  # fmt: skip
    more = ingest.count_grid(frame.union(extra), bins, columns=("v", "c"),
                             privacy_unit="person", max_records=2, rng=1)  # fmt: skip
    assert np.abs(more - counts).sum() <= 2


def test_histogram2d_of_a_spark_frame_checks_both_columns_before_any_budget(frame, spark,
                                                                          monkeypatch):  # fmt: skip
    import dphist as dh
    from dphist import records2d

    rel = dh.histogram2d(frame, columns=("v", "c"), domain=("0:100:10", None),
                         categories=(None, "c0,c1,c2"), epsilon=1, method="AGrid",
                         privacy_unit="person", max_records=2, rng=0)  # fmt: skip
    assert rel.shape == (10, 3) and rel.privacy_unit == "person" and rel.max_records == 2
    spent: list[int] = []
    monkeypatch.setattr(records2d, "publish", lambda *a, **k: spent.append(1))
    with pytest.raises(ValidationError, match="numeric columns"):
        dh.histogram2d(frame, columns=("v", "c"), domain=("0:100:10", "0:3:1"), epsilon=1,
                       method="identity")  # fmt: skip
    with pytest.raises(ValidationError, match="two columns"):
        dh.histogram2d(frame, domain=("0:100:10", "0:3:1"), epsilon=1, method="identity")
    assert not spent
