"""Streamed counting: exact binning in compiled code, the same counts as DuckDB's
aggregation, and a progress report that tells how far the scan is and nothing else."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dphist import ingest
from dphist.ingest import stream


def oracle(x: np.ndarray, edges: np.ndarray, clip: bool) -> np.ndarray:
    """Counts by ``searchsorted`` on the public edges (the last bin closed)."""
    y = x[~np.isnan(x)]
    lo, hi = edges[0], edges[-1]
    y = np.clip(y, lo, hi) if clip else y[(y >= lo) & (y <= hi)]
    n = edges.size - 1
    return np.bincount(np.minimum(np.searchsorted(edges, y, side="right") - 1, n - 1), minlength=n)


@pytest.mark.parametrize(
    "binning",
    [
        ingest.binning(domain="0:1000:1"),
        ingest.binning(domain="-3.7:100:0.1"),  # widths not exact in binary
        ingest.binning(edges=np.sort(np.random.default_rng(3).random(301)) * 50),
        ingest.binning(edges=[0, 1e-300, 1, 1 + 2**-52, 1e6]),  # crowded cells
    ],
)
@pytest.mark.parametrize("clip", [True, False])
def test_binning_is_exact_at_and_beside_every_edge(binning, clip):
    e = binning.edges
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.uniform(e[0] - 1, e[-1] + 1, 20_000), e, np.nextafter(e, np.inf),
        np.nextafter(e, -np.inf), [np.nan, np.inf, -np.inf],
    ])  # fmt: skip
    out = np.zeros(binning.n + 1, dtype=np.int64)
    lo, hi = float(e[0]), float(e[-1])
    if binning.domain is not None:
        table = (float(binning.domain[2]), np.zeros(0), np.zeros(1, dtype=np.int64), 1.0)
    else:
        table = (0.0, *stream.edge_grid(e))
    stream.bin_tally(out, x, lo, hi, clip, *table)
    assert np.array_equal(out[:-1], oracle(x[np.isfinite(x)], e, clip))
    assert out.sum() == x.size


def _parquet(path, values) -> None:
    pq.write_table(pa.table({"v": pa.array(values, type=pa.float64())}), path, row_group_size=700)


def test_streamed_and_aggregated_counts_agree(tmp_path):
    """Parquet is streamed into a tally; a CSV counted with a progress bar goes through
    DuckDB's GROUP BY: the same records give the same counts, and those of numpy."""
    rng = np.random.default_rng(1)
    values = rng.normal(50, 40, 5000)
    values[::7] = np.nan
    binning = ingest.binning(domain="0:100:7")
    _parquet(tmp_path / "v.parquet", values)
    text = "\n".join("" if np.isnan(v) else repr(float(v)) for v in values)
    (tmp_path / "v.csv").write_text("v\n" + text + "\n")
    for outside in ("clip", "drop"):
        streamed = ingest.count_file(tmp_path / "v.parquet", "v", binning, outside=outside)
        grouped = ingest.count_file(
            tmp_path / "v.csv", "v", binning, outside=outside, progress=lambda f: None
        )
        assert np.array_equal(streamed, grouped)
        assert np.array_equal(streamed, oracle(values, binning.edges, outside == "clip"))


def test_categories_stream_too(tmp_path):
    pq.write_table(pa.table({"v": ["a", "b", None, "zz", "a"] * 300}), tmp_path / "c.parquet")
    counts = ingest.count_file(tmp_path / "c.parquet", "v", ingest.binning(categories=["a", "b"]))
    assert counts.tolist() == [600, 300]


def test_progress_tells_how_far_the_scan_is_and_nothing_about_values(tmp_path):
    """Two files with as many rows, one all valid and one mostly invalid or outside the
    bins: the progress reports are identical, rise and end at 1."""
    n = 3000
    good = np.linspace(1, 99, n)
    bad = good.copy()
    bad[: n // 2] = np.nan
    bad[n // 2 : n - 10] = 1e9
    reports = []
    for name, values in (("good", good), ("bad", bad)):
        _parquet(tmp_path / f"{name}.parquet", values)
        seen: list[float] = []
        ingest.count_file(
            tmp_path / f"{name}.parquet", "v", ingest.binning(domain="0:100:1"),
            outside="drop", progress=seen.append,
        )  # fmt: skip
        reports.append(seen)
    assert reports[0] == reports[1]
    assert reports[0][-1] == 1.0 and reports[0] == sorted(reports[0])


def test_numpy_arrow_and_polars_columns_are_counted_without_copies():
    """In a fresh process: counting a 160 MB column of each kind raises the peak
    resident memory by far less than the column (DuckDB scans it in place)."""
    import subprocess
    import sys

    code = r"""
import resource, numpy as np, polars as pl, pyarrow as pa, dphist as dh
x = np.random.default_rng(0).integers(0, 1000, 2 * 10**7).astype(np.float64)
bins = dh.ingest.binning(domain="0:1000:1")
dh.ingest.count_values(np.arange(10.0), bins)
for column in (x, pa.array(x), pl.Series("v", x)):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert dh.ingest.count_values(column, bins).sum() == x.size
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grew < 40 * 1024, grew  # kB: under a quarter of the column
"""
    subprocess.run([sys.executable, "-c", code], check=True)
