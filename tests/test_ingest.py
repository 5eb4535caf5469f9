"""The record domain of :mod:`dphist.ingest`: what a record is, which values count, how
many per privacy unit, and that nothing refuses because of a record.

The central property is additivity: the counts of a file are the sum of the counts of
its lines read one by one, whatever the lines hold, so one record can never change how
another is read (a malformed line, a stray quote or line break, bad UTF-8). Neighbouring
inputs (one record more) are counted on both sides and differ by at most one record.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from dphist import ingest
from dphist.errors import DataDependentParameterError, InputTypeError, ValidationError

BINS = ingest.binning(domain="0:100:10")
HEADER = b"v,w\n"


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def count_bytes(path, content: bytes, binning=BINS, **options) -> np.ndarray:
    path.write_bytes(content)
    return ingest.count_file(path, "v", binning, **options)


# --------------------------------------------------------------------------- CSV records

# Pieces of lines: values, separators, quotes, line breaks, control and non-UTF-8 bytes.
PIECES = [b"5", b"15", b"-3", b"1e1", b"99.5", b" 42 ", b"x", b"", b",", b'"', b'""', b"\r",
          b"\x1e", b"\xff", b"\xc3\xa9", b"a,b", b'"7"', b'"1,2"', b"nan", b"inf"]  # fmt: skip
LINES = st.lists(st.sampled_from(PIECES), min_size=0, max_size=5).map(b"".join)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(LINES, min_size=1, max_size=6),
    header=st.sampled_from([b"v,w\n", b"v,w\r\n", b"\xef\xbb\xbfv,w\n"]),
    end=st.sampled_from([b"\n", b"\r\n"]),
)
def test_counts_are_additive_over_lines(workdir, lines, header, end):
    """counts(all lines) == sum of counts(each line alone): no line affects another."""
    whole = count_bytes(workdir / "all.csv", header + end.join(lines) + end)
    parts = sum(count_bytes(workdir / "one.csv", header + line + end) for line in lines)
    assert np.array_equal(whole, parts)


@pytest.mark.parametrize(
    "bad",
    [
        b"7,1,extra",  # a field too many
        b"7",  # a field too few
        b'7,"unbalanced',  # a quote never closed (DuckDB's reader would swallow the rest)
        b'"7"x,1',  # text after a closing quote
        b"7\xff,1",  # not UTF-8
        b"7,\x1e",  # a control character
        b"7," + b"9" * (ingest.MAX_LINE_BYTES + 10),  # a line beyond the limit
        b"abc,1",  # not a number
        b",1",  # missing
        b"inf,1",  # not finite
        b"nan,1",
        b"",  # an empty line is not a record
    ],
)
def test_a_bad_record_is_dropped_and_changes_nothing_else(workdir, bad):
    good = b'5,a\n15,b\n"25",c\n95,d\n'
    base = count_bytes(workdir / "a.csv", HEADER + good)
    for position in (0, 2, 4):  # first, middle, last (with and without a final newline)
        rows = good.splitlines()
        rows.insert(position, bad)
        content = HEADER + b"\n".join(rows) + (b"\n" if position < 4 else b"")
        assert np.array_equal(count_bytes(workdir / "b.csv", content), base), position


def test_line_endings_and_quoting():
    path = pytest.importorskip("pathlib").Path("e.csv")
    content = b'v,w\r\n5,"a, b"\r\n15,"say ""hi"""\n"25",x\r"35",\n'
    assert count_bytes(path, content).tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_split_line_reference():
    assert ingest.split_line('a,"b,c","d""e",') == ["a", "b,c", 'd"e', ""]
    assert ingest.split_line('"a') is None
    assert ingest.split_line('"a"b') is None
    assert ingest.split_line("") == [""]
    assert ingest.split_line("a\tb", "\t") == ["a", "b"]


def test_header_is_public_schema(workdir):
    (workdir / "empty.csv").write_bytes(b"")
    with pytest.raises(ValidationError, match="empty: a CSV file starts with a header"):
        ingest.count_file("empty.csv", "v", BINS)
    (workdir / "h.csv").write_bytes(b"id,v\n")
    assert ingest.count_file("h.csv", "v", BINS).sum() == 0  # no records: zeros, no refusal
    (workdir / "x.csv").write_bytes(b"id,age\n1,2,3\n")
    with pytest.raises(ValidationError, match="its columns are 'id', 'age'"):
        ingest.count_file("x.csv", "v", BINS)
    (workdir / "u.csv").write_bytes(b"\xff\xfe,v\n1,2\n")
    with pytest.raises(ValidationError, match="not UTF-8"):
        ingest.count_file("u.csv", "v", BINS)
    (workdir / "t.tsv").write_bytes(b"v\tw\n5\ta\n15\tb,c\n")
    assert ingest.count_file("t.tsv", "v", BINS).tolist()[:2] == [1, 1]


def test_gzip_csv(workdir):
    import gzip

    (workdir / "z.csv.gz").write_bytes(gzip.compress(b"v\n5\n15\nx\n15\n"))
    assert ingest.count_file("z.csv.gz", "v", BINS).tolist()[:2] == [1, 2]


# --------------------------------------------------------------------------- values


def test_value_rules_in_memory():
    values = [1.5, "x", None, np.nan, 95, "12", " 12 ", 1e9, -3, float("inf"), "", "1e1"]
    # 1.5 and -3 (clipped) -> bin 0; "12", " 12 ", "1e1" -> bin 1; 95 and 1e9 (clipped) -> 9
    assert ingest.count_values(values, BINS).tolist() == [2, 3, 0, 0, 0, 0, 0, 0, 0, 2]
    assert ingest.count_values(values, BINS, outside="drop").tolist() == [1, 3] + [0] * 7 + [1]


def test_categories_match_text_exactly_or_numbers_by_value():
    words = ingest.binning(categories="north,south")
    assert ingest.count_values(
        ["north", "south", "south ", None, "x", "North"], words
    ).tolist() == [1, 1]
    numbers = ingest.binning(categories="1,2,3")
    assert ingest.count_values(["1", "2.0", 3, "x", None, 2, 2.5], numbers).tolist() == [1, 2, 1]
    with pytest.raises(ValidationError, match="not numbers"):
        ingest.count_values(np.array([1, 2]), words)  # the dtype is public schema


@pytest.mark.parametrize("seed", [1, 2])
def test_file_and_memory_paths_agree(workdir, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-20, 120, 2000).round(3).astype(object)
    x[rng.integers(0, x.size, 100)] = None
    x[rng.integers(0, x.size, 50)] = "oops"
    lines = [("" if v is None else str(v)) + ",w" for v in x]
    path = workdir / "v.csv"
    path.write_text("v,w\n" + "\n".join(lines) + "\n")
    for outside in ("clip", "drop"):
        assert np.array_equal(
            ingest.count_file(path, "v", BINS, outside=outside),
            ingest.count_values(x, BINS, outside=outside),
        )


def test_numpy_dtypes_and_schema_refusals():
    assert ingest.count_values(np.array([5, 15], dtype=np.uint8), BINS)[:2].tolist() == [1, 1]
    text = np.array(["5", "15", "x"])  # typed text: parsed as numbers only on request
    with pytest.raises(ValidationError, match=r"holds text .* but the bins are numeric"):
        ingest.count_values(text, BINS)
    assert ingest.count_values(text, BINS, value_type="number")[:2].tolist() == [1, 1]
    assert ingest.count_values(["5", "15", "x"], BINS)[:2].tolist() == [1, 1]  # a list: untyped
    with pytest.raises(InputTypeError, match="dtype"):
        ingest.count_values(np.array(["2020-01-01"], dtype="datetime64[D]"), BINS)
    with pytest.raises(ValidationError, match="BOOLEAN"):
        ingest.count_values(np.array([True, False]), BINS)
    with pytest.raises(InputTypeError, match="single value"):
        ingest.count_values(5, BINS)


def test_columns_that_convert_themselves():
    class Column:
        def to_numpy(self):
            return np.array(["5", None, "15"], dtype=object)

    assert ingest.count_values(Column(), BINS)[:2].tolist() == [1, 1]


@pytest.mark.parametrize("library", ["pandas", "polars", "pyarrow"])
def test_dataframe_libraries(library):
    lib = pytest.importorskip(library)
    values = [5.0, None, 15.0, 95.0]
    if library == "pandas":
        col = lib.Series(values)
    elif library == "polars":
        col = lib.Series("v", values)
    else:
        col = lib.array(values)
    assert ingest.count_values(col, BINS).tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 0, 1]


def test_bins_are_public():
    with pytest.raises(DataDependentParameterError, match="public"):
        ingest.binning()
    with pytest.raises(DataDependentParameterError, match="public"):
        ingest.binning(edges="auto")
    with pytest.raises(ValidationError, match="one binning"):
        ingest.binning(edges=[0, 1], domain="0:1:1")
    with pytest.raises(ValidationError, match="non-empty"):
        ingest.binning(categories=["a", ""])
    assert ingest.binning(domain=(0, 1, 0.25)).n == 4
    assert ingest.binning(edges="0, 1 ,5").n == 2


def test_labels_match_the_files():
    b = ingest.binning(edges=[0, 0.1, 1 / 3, 100])
    assert b.labels() == ["[0, 0.1)", "[0.1, 0.3333333333333333)", "[0.3333333333333333, 100]"]


# --------------------------------------------------------------------------- privacy unit


def test_at_most_k_records_per_unit_and_missing_units_dropped():
    values = [5, 5, 5, 15, 15, 95, 95]
    units = ["a", "a", "a", "b", None, "c", ""]
    counts = ingest.count_values(values, BINS, privacy_unit=units, max_records=2, rng=0)
    assert counts.tolist() == [2, 1, 0, 0, 0, 0, 0, 0, 0, 1]


def test_the_kept_records_are_a_uniform_subset():
    """Each of 3,000 units has five records in bin 0 and one in bin 1; keeping K = 2 at
    random keeps the bin-1 record with probability 1 - C(5,2)/C(6,2) = 1/3."""
    units = np.repeat(np.arange(3000), 6)
    values = np.tile([5, 5, 5, 5, 5, 15], 3000)
    kept = ingest.count_values(values, BINS, privacy_unit=units, max_records=2, rng=11)
    assert kept.sum() == 6000
    assert stats.binomtest(int(kept[1]), 3000, 1 / 3).pvalue > 1e-4
    again = ingest.count_values(values, BINS, privacy_unit=units, max_records=2, rng=11)
    assert np.array_equal(kept, again)  # seeded: reproducible


@pytest.mark.parametrize("extra", [1, 5])
def test_neighbours_through_a_capped_unit(workdir, extra):
    """More records of a unit that is already at its cap move at most K of its records."""
    k = 2
    base = "v,pid\n" + "".join(f"{5 + 10 * (i % 9)},p{i % 40}\n" for i in range(200))
    path = workdir / "u.csv"
    path.write_text(base)
    a = ingest.count_file(path, "v", BINS, privacy_unit="pid", max_records=k, rng=3)
    path.write_text(base + "95,p1\n" * extra)
    b = ingest.count_file(path, "v", BINS, privacy_unit="pid", max_records=k, rng=3)
    assert a.sum() == b.sum() == 80
    assert np.abs(a - b).sum() <= 2 * k


def test_unit_bound_is_checked():
    with pytest.raises(ValidationError, match="max-records"):
        ingest.count_values([1], BINS, privacy_unit=["a"])
    with pytest.raises(ValidationError, match="privacy-unit"):
        ingest.count_values([1], BINS, max_records=2)
    for bad in (0, -1):
        with pytest.raises(ValidationError, match=">= 1"):
            ingest.count_values([1], BINS, privacy_unit=["a"], max_records=bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(InputTypeError):
            ingest.count_values([1], BINS, privacy_unit=["a"], max_records=bad)
    with pytest.raises(ValidationError, match="one entry per record"):
        ingest.count_values([1, 2], BINS, privacy_unit=["a"], max_records=1)


# --------------------------------------------------------------------------- strict mode


def test_strict_mode_refuses_bad_records_and_says_it_is_not_private(workdir):
    (workdir / "s.csv").write_bytes(b"v,w\n5,a\n7,b,c\n")
    with pytest.raises(ValidationError, match="not private"):
        ingest.count_file("s.csv", "v", BINS, strict=True)
    (workdir / "s.csv").write_bytes(b"v,w\n5,a\nseven,b\n")
    with pytest.raises(ValidationError, match="strict"):
        ingest.count_file("s.csv", "v", BINS, strict=True)
    (workdir / "s.csv").write_bytes(b"v,w\n5,a\n,b\n")  # a missing value is not bad
    assert ingest.count_file("s.csv", "v", BINS, strict=True)[0] == 1
    (workdir / "s.csv").write_bytes(b"v,pid\n5,a\n6,\n")
    with pytest.raises(ValidationError, match="without a privacy unit"):
        ingest.count_file("s.csv", "v", BINS, strict=True, privacy_unit="pid", max_records=1)


# --------------------------------------------------------------------------- group tables


def test_group_entities_bounded_per_person(workdir):
    (workdir / "g.csv").write_text("gid,state\na,S\nb,S\n")
    (workdir / "e.csv").write_text("pid,gid\n1,a\n1,a\n1,a\n2,b\n,b\n")
    data = ingest.read_group_tables(
        "g.csv", ["state"], group_column="gid", entities="e.csv", privacy_unit="pid",
        max_records=2, rng=0,
    )  # fmt: skip
    hist = data.histograms()[0]
    assert hist[1] == 1 and hist[2] == 1  # a keeps 2 of person 1's 3 rows; b keeps 1
