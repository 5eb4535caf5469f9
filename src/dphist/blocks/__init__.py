"""Building blocks of methods. A method is a short :class:`Pipeline` of them."""

from .base import REST, Block, Pipeline, State
from .group import GroupTotals
from .order import SortByNoisy
from .publish import NoisyBins, NoisyTotal
from .smoothing import SquaredErrorGrouping
from .tree import HierarchicalSmoothing, Hierarchy

__all__ = [
    "REST",
    "Block",
    "GroupTotals",
    "HierarchicalSmoothing",
    "Hierarchy",
    "NoisyBins",
    "NoisyTotal",
    "Pipeline",
    "SortByNoisy",
    "SquaredErrorGrouping",
    "State",
]
