"""Building blocks of methods. A method is a short :class:`Pipeline` of them."""

from .base import REST, Block, Pipeline, State, to_original_order
from .buckets import BucketPartition, WeightedAverage
from .clustering import (
    AHPClustering,
    FixedSizeGroups,
    NoisyMeans,
    RelativeErrorGrouping,
    Threshold,
)
from .cube import CubeSplit, NoisyCells, PartsLeastSquares
from .fixed import FixedQueries
from .group import GroupTotals
from .mwem import MultiplicativeWeights
from .order import SortByNoisy
from .publish import AutoFeatures, NoisyBins, NoisyTotal
from .smoothing import AbsoluteErrorGrouping, DensitySplit, SquaredErrorGrouping
from .structure import (
    FourierRelease,
    FourierSize,
    HierarchicalPartition,
    StructureFirstGrouping,
)
from .tree import (
    FrontierRelease,
    Hierarchy,
    OptimizedHierarchy,
    TreeCutAbsolute,
    TreeCutSquared,
)
from .wavelet import HaarCoefficients

__all__ = [
    "REST",
    "AHPClustering",
    "AbsoluteErrorGrouping",
    "AutoFeatures",
    "Block",
    "BucketPartition",
    "CubeSplit",
    "DensitySplit",
    "FixedQueries",
    "FixedSizeGroups",
    "FourierRelease",
    "FourierSize",
    "FrontierRelease",
    "GroupTotals",
    "HaarCoefficients",
    "HierarchicalPartition",
    "Hierarchy",
    "MultiplicativeWeights",
    "NoisyBins",
    "NoisyCells",
    "NoisyMeans",
    "NoisyTotal",
    "OptimizedHierarchy",
    "PartsLeastSquares",
    "Pipeline",
    "RelativeErrorGrouping",
    "SortByNoisy",
    "SquaredErrorGrouping",
    "State",
    "StructureFirstGrouping",
    "Threshold",
    "TreeCutAbsolute",
    "TreeCutSquared",
    "WeightedAverage",
    "to_original_order",
]
