"""The privacy kernel: the only package that reads true counts.

Everything outside it sees noisy measurements and public facts (the number of
bins, the ledger). See ``NOTES.md`` beside this file for the privacy argument of
each primitive.
"""

from .budget import (
    REST,
    Accountant,
    Charge,
    as_fraction,
    as_share,
    resolve_shares,
    validate_epsilon,
)
from .data import MAX_TOTAL, ProtectedCounts, count_cap, protect
from .groups import GroupMeasurer, ProtectedGroups, int_vector, protect_groups
from .noise import NoiseSource, noise_source, noise_variance
from .operators import GroupSums, Identity, IntervalSums, Query
from .view import Measurement, PrivateView, run_pipeline

__all__ = [
    "MAX_TOTAL",
    "REST",
    "Accountant",
    "Charge",
    "GroupMeasurer",
    "GroupSums",
    "Identity",
    "IntervalSums",
    "Measurement",
    "NoiseSource",
    "PrivateView",
    "ProtectedCounts",
    "ProtectedGroups",
    "Query",
    "as_fraction",
    "as_share",
    "count_cap",
    "int_vector",
    "noise_source",
    "noise_variance",
    "protect",
    "protect_groups",
    "resolve_shares",
    "run_pipeline",
    "validate_epsilon",
]
