"""The privacy definitions a session can run under: pure epsilon-DP or rho-zCDP.

``PureDP(epsilon)`` is the default (``epsilon=`` everywhere means it). ``zCDP(rho)`` is
zero-concentrated DP (Bun and Steinke, TCC 2016), the definition of the US Census
Bureau's 2020 disclosure avoidance system: measurements add exact discrete Gaussian
noise, rhos add up under composition, and a release that is rho-zCDP is also
(epsilon, delta)-DP for every delta (:meth:`zCDP.epsilon_at`). Linear strategies that
measure overlapping queries (trees, wavelets) gain most: their L2 sensitivity is the
square root of their L1 one.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ._exact import validate_epsilon
from .errors import InputTypeError

__all__ = ["PureDP", "budget_of", "zCDP"]


@dataclass(frozen=True, init=False)
class PureDP:
    """Pure epsilon-differential privacy with budget ``epsilon`` (read exactly)."""

    epsilon: Fraction
    definition: ClassVar[str] = "pure"
    name: ClassVar[str] = "epsilon"

    def __init__(self, epsilon: object):
        object.__setattr__(self, "epsilon", validate_epsilon(epsilon))

    @property
    def amount(self) -> Fraction:
        return self.epsilon

    def epsilon_at(self, delta: float) -> float:
        """Pure epsilon-DP is (epsilon, delta)-DP for every delta."""
        return float(self.epsilon)


@dataclass(frozen=True, init=False)
class zCDP:
    """Zero-concentrated DP with budget ``rho`` (read exactly, like epsilon)."""

    rho: Fraction
    definition: ClassVar[str] = "zcdp"
    name: ClassVar[str] = "rho"

    def __init__(self, rho: object):
        object.__setattr__(self, "rho", validate_epsilon(rho, name="rho"))

    @property
    def amount(self) -> Fraction:
        return self.rho

    def epsilon_at(self, delta: float) -> float:
        """The smallest epsilon with rho-zCDP => (epsilon, delta)-DP (Canonne, Kamath,
        Steinke 2020, Corollary 13)."""
        from ._kernel.zcdp import approx_dp_epsilon

        return approx_dp_epsilon(float(self.rho), delta)


def budget_of(epsilon: object, budget: object) -> PureDP | zCDP:
    """The session's definition from ``epsilon=`` or ``budget=`` (exactly one)."""
    if budget is None:
        return PureDP(epsilon)
    if epsilon is not None:
        raise InputTypeError("give either epsilon= or budget=, not both")
    if not isinstance(budget, PureDP | zCDP):
        raise InputTypeError(
            f"budget must be dh.PureDP(epsilon) or dh.zCDP(rho); got {type(budget).__name__}"
        )
    return budget
