"""The privacy kernel: the only package that reads true counts.

Everything outside it sees noisy measurements and public facts (the number of
bins, the ledger). See ``NOTES.md`` beside this file for the privacy argument of
each primitive.
"""

from .budget import REST, Accountant, Charge, as_fraction, resolve_shares, validate_epsilon
from .data import ProtectedCounts, protect
from .noise import NoiseSource, noise_source, noise_variance
from .operators import GroupSums, Identity, IntervalSums, Query
from .view import Measurement, PrivateView, run_pipeline

__all__ = [
    "REST",
    "Accountant",
    "Charge",
    "GroupSums",
    "Identity",
    "IntervalSums",
    "Measurement",
    "NoiseSource",
    "PrivateView",
    "ProtectedCounts",
    "Query",
    "as_fraction",
    "noise_source",
    "noise_variance",
    "protect",
    "resolve_shares",
    "run_pipeline",
    "validate_epsilon",
]
