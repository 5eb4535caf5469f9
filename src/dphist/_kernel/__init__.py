"""The privacy kernel: the only package that reads true counts.

Everything outside it sees noisy measurements and public facts (the number of
bins, the ledger). See ``NOTES.md`` beside this file for the privacy argument of
each primitive.
"""

from .biased_split import BiasedSplit
from .budget import (
    REST,
    Accountant,
    Charge,
    Primitive,
    as_fraction,
    as_share,
    resolve_shares,
    validate_epsilon,
)
from .data import (
    MAX_TOTAL,
    ProtectedCounts,
    count_cap,
    is_grid,
    protect,
    protect_grid,
    records_per_unit,
)
from .gaussian import gaussian_noise_variance
from .grid import GridHaar, GridSums, RectangleSums, WorstRectangle
from .grid_split import QuadSplit
from .group_counts import PrivateGroupsMeasurer
from .groups import GroupMeasurer, ProtectedGroups, int_vector, protect_groups
from .l1_partition import NoisyPartition
from .noise import NoiseSource, noise_source, noise_variance
from .operators import BlockSums, GroupSums, Identity, IntervalSums, Query, TotalAndTop
from .selection import EFPASize, PHPClusters, Selection, SFBoundaries, WorstQuery
from .view import Measurement, PrivateView, run_pipeline

__all__ = [
    "MAX_TOTAL",
    "REST",
    "Accountant",
    "BiasedSplit",
    "BlockSums",
    "Charge",
    "EFPASize",
    "GridHaar",
    "GridSums",
    "GroupMeasurer",
    "GroupSums",
    "Identity",
    "IntervalSums",
    "Measurement",
    "NoiseSource",
    "NoisyPartition",
    "PHPClusters",
    "Primitive",
    "PrivateGroupsMeasurer",
    "PrivateView",
    "ProtectedCounts",
    "ProtectedGroups",
    "QuadSplit",
    "Query",
    "RectangleSums",
    "SFBoundaries",
    "Selection",
    "TotalAndTop",
    "WorstQuery",
    "WorstRectangle",
    "as_fraction",
    "as_share",
    "count_cap",
    "gaussian_noise_variance",
    "int_vector",
    "is_grid",
    "noise_source",
    "noise_variance",
    "protect",
    "protect_grid",
    "protect_groups",
    "records_per_unit",
    "resolve_shares",
    "run_pipeline",
    "validate_epsilon",
]
