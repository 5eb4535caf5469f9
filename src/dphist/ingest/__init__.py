"""Raw records to histograms over public bins, through DuckDB.

* :mod:`~dphist.ingest.binning`: public binnings (:class:`Binning`, :func:`binning`);
* :mod:`~dphist.ingest.sources`: what a record is in a CSV or Parquet file or an
  in-memory column;
* :mod:`~dphist.ingest.types`: what a column's values are read as (numbers or text),
  checked against the binning before any value is read;
* :mod:`~dphist.ingest.count`: the record domain (which values count, where, and how
  many per privacy unit) and the counting query; :func:`check_file`, what the record
  domain does to a file, counted for its owner (not private; ``dphist check``);
* :mod:`~dphist.ingest.count2d`: the same for two columns, into a 2-D histogram;
* :mod:`~dphist.ingest.groups`: group sizes over a region hierarchy;
* :mod:`~dphist.ingest.stream`: streamed counting of large files;
* :mod:`~dphist.ingest.spark`: the same counts and group sizes computed in Spark,
  where the records live, with only the aggregates collected.

Nothing here refuses, warns or reports because of a record's value: invalid records
are dropped by public rules (``strict=True`` refuses them instead, and is not
private). Counts are returned as ``int64``; pass them to :func:`dphist.publish`,
which seals them in the kernel, or use :func:`dphist.histogram` for both steps.
"""

from . import types
from .binning import (
    MAX_BINS,
    OUTSIDE_POLICIES,
    PUBLIC_BINS_HINT,
    Binning,
    binning,
    outside_policy,
    parse_domain,
)
from .check import check_file
from .count import (
    count,
    count_file,
    count_values,
    file_value_type,
    unit_bound,
    values_value_type,
)
from .count2d import count_grid, file_value_types, grid_binnings, grid_outside, grid_value_types
from .groups import read_group_tables
from .sources import MAX_LINE_BYTES, file_format, split_line
from .spark import check_frame, check_grid_frame, is_spark_frame
from .types import VALUE_TYPES

__all__ = [
    "MAX_BINS",
    "MAX_LINE_BYTES",
    "OUTSIDE_POLICIES",
    "PUBLIC_BINS_HINT",
    "VALUE_TYPES",
    "Binning",
    "binning",
    "check_file",
    "check_frame",
    "check_grid_frame",
    "count",
    "count_file",
    "count_grid",
    "count_values",
    "file_format",
    "file_value_type",
    "file_value_types",
    "grid_binnings",
    "grid_outside",
    "grid_value_types",
    "is_spark_frame",
    "outside_policy",
    "parse_domain",
    "read_group_tables",
    "split_line",
    "types",
    "unit_bound",
    "values_value_type",
]
