"""SORTaki's Table II configurations (Doudalis and Mehrotra): the method table.

Each configuration names its thresholds, sorts, partitioner, error, finalizer and
parameter grid; :func:`sortaki_config` looks one up. The numerics they use are in
:mod:`dphist._numeric.bucketing`; the recipes in :mod:`dphist.methods.catalog`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from .._kernel import as_fraction
from ..errors import InputTypeError, ValidationError

__all__ = ["SORTAKI_CONFIGS", "SortakiConfig", "sortaki_config"]


def _share(value: object, name: str) -> Fraction:
    """An exact share, read like every budget number (``as_fraction``): floats through
    their shortest decimal form, decimal strings and ``Decimal`` exactly."""
    try:
        return as_fraction(value, name=name)
    except InputTypeError as exc:
        raise ValidationError(str(exc)) from None


_GRID = (Fraction(3, 10), Fraction(1, 2), Fraction(7, 10), Fraction(9, 10))
_DEFAULT_GAMMA_IN = Fraction(9, 10)


@dataclass(frozen=True)
class SortakiConfig:
    """One row of Doudalis and Mehrotra, Table II (methods-data-aware.md §7.3).

    ``thresholds``: AHP's thresholding initializer (``t``). ``sorts``: bins sorted by
    the noisy counts, descending (``s``). ``partitioner``: ``"greedy"`` (GP),
    ``"dp"`` (DPP), ``"dpcube"`` (``xi = 2/eps_in**2``), ``"dawa_l1"`` (DAWA's L1
    partition on true counts with ``eps_p``) or None. ``error``: the GP/DPP formula
    (``"ahp"``, ``"uee"``) or None. ``finalizer``: ``"laplace"`` (per-bin Laplace),
    ``"ahp"`` (bucket mean of a fresh noisy total), ``"waf"`` or ``"greedyh"``.
    ``gamma_in_values``: the initializer shares of Tables III, V and VIII (0.9 in the
    other tables). Budget shares: ``shares(gamma_in)``. Data only.
    """

    name: str
    thresholds: bool
    sorts: bool
    partitioner: str | None
    error: str | None
    finalizer: str
    gamma_in_values: tuple[Fraction, ...]
    partition_part: Fraction  # share of 1 - gamma_in given to the partitioner

    def shares(self, gamma_in: object = None) -> tuple[Fraction, Fraction, Fraction]:
        """Exact ``(gamma_in, gamma_p, gamma_f)``, summing to 1.

        ``gamma_in`` defaults to 0.9 (0 for Identity and DAWA, which have no
        initializer); then ``gamma_p = partition_part*(1 - gamma_in)`` and
        ``gamma_f`` is the rest.
        """
        fixed = self.gamma_in_values == (Fraction(0),)
        if gamma_in is None:
            g = Fraction(0) if fixed else _DEFAULT_GAMMA_IN
        else:
            g = _share(gamma_in, "gamma_in")
        if fixed and g != 0:
            raise ValidationError(f"{self.name} has no initializer: gamma_in must be 0")
        if not fixed and not 0 < g < 1:
            why = "sorting needs gamma_in > 0" if self.sorts else "the initializer needs a share"
            raise ValidationError(
                f"{self.name}: gamma_in must lie strictly between 0 and 1 ({why}; "
                f"the finalizer needs the rest); got {gamma_in!r}"
            )
        gamma_p = self.partition_part * (1 - g)
        return g, gamma_p, 1 - g - gamma_p


def _row(name, thresholds, sorts, partitioner, error, finalizer, grid, part=Fraction(0)):
    return name, SortakiConfig(name, thresholds, sorts, partitioner, error, finalizer, grid, part)


_NONE = (Fraction(0),)
_QUARTER = Fraction(1, 4)

SORTAKI_CONFIGS = MappingProxyType(
    dict(
        [
            _row("Identity", False, False, None, None, "laplace", _NONE),
            _row("GAHP", False, False, "greedy", "ahp", "ahp", _GRID),
            _row("sGAHP", False, True, "greedy", "ahp", "ahp", _GRID),
            _row("stGAHP", True, True, "greedy", "ahp", "ahp", _GRID),
            _row("sDAHP", False, True, "dp", "ahp", "ahp", _GRID),
            _row("sDWF", False, True, "dp", "uee", "waf", _GRID),
            _row("DPC", False, False, "dpcube", None, "waf", _GRID),
            _row("sDPC", False, True, "dpcube", None, "waf", _GRID),
            _row("DAWA", False, False, "dawa_l1", None, "greedyh", _NONE, _QUARTER),
            _row("sDAWA", False, True, "dawa_l1", None, "waf", _GRID, _QUARTER),
        ]
    )
)
"""Table II of Doudalis and Mehrotra, read-only: name -> :class:`SortakiConfig`."""


def sortaki_config(name: str) -> SortakiConfig:
    """The Table II configuration called ``name`` (case-insensitive)."""
    if isinstance(name, str):
        for key, cfg in SORTAKI_CONFIGS.items():
            if key.lower() == name.lower():
                return cfg
    raise ValidationError(
        f"unknown SORTaki configuration {name!r}; known: {', '.join(SORTAKI_CONFIGS)}"
    )
