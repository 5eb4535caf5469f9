"""Building blocks of methods. A method is a short :class:`Pipeline` of them."""

from .base import REST, Block, Pipeline, State
from .publish import NoisyBins, NoisyTotal

__all__ = ["REST", "Block", "NoisyBins", "NoisyTotal", "Pipeline", "State"]
