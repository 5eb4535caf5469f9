"""The record domain at its edges, in every source: the same records count the same way
whether they come as CSV, Parquet, a list, a numpy, pandas, polars or Arrow column (and
a Spark DataFrame, in ``test_spark.py``), and one record more moves the counts by at
most one record whatever it holds.

* values: ``-0.0``, ``+0.0``, the smallest subnormals, NaN and infinities at and beside
  every edge count as the exact rule ``bin(v) = #{interior e_i <= v}`` says;
"""

from __future__ import annotations

import numpy as np
import pytest

from dphist import ingest
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


def count_as(source, values, binning, tmp_path, units=None, spark=None, **options):
    data, columns = records.as_source(source, values, units, where=tmp_path, spark=spark)
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
