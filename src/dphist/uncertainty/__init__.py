"""Error bars: the exact noise of a release, its bias, standard errors and intervals.

Blocks describe the error of what they publish with an :class:`ErrorModel`, built from
public facts and released values only (:mod:`.noise`, :mod:`.bias`); a
:class:`~dphist.Release` answers ``stderr``, ``range_stderr`` and ``interval`` from it.
"""

from .._numeric.compact import PerGroup
from .bias import (
    Bias,
    Bracket,
    FirstStage,
    Groups,
    NoBias,
    SplitBound,
)
from .model import ErrorModel, NoErrorBarError, workload_total
from .noise import (
    BinNoise,
    GroupNoise,
    HaarNoise,
    NoiseModel,
    ScatteredNoise,
    TreeNoise,
    layout_tree,
)
from .tails import Tail, check_alpha, mixed_tail, normal_quantile

__all__ = [
    "Bias",
    "BinNoise",
    "Bracket",
    "ErrorModel",
    "FirstStage",
    "GroupNoise",
    "Groups",
    "HaarNoise",
    "NoBias",
    "NoErrorBarError",
    "NoiseModel",
    "PerGroup",
    "ScatteredNoise",
    "SplitBound",
    "Tail",
    "TreeNoise",
    "check_alpha",
    "layout_tree",
    "mixed_tail",
    "normal_quantile",
    "workload_total",
]
