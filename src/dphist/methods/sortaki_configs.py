"""SORTaki's Table II configurations (Doudalis and Mehrotra): the method table.

Each configuration names its thresholds, sorts, partitioner, error, finalizer and
parameter grid; :func:`sortaki_config` looks one up; :func:`register_sortaki` adds a
recipe for each to the method catalog. The numerics they use are in
:mod:`dphist._numeric.bucketing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from .._kernel import REST, as_fraction
from ..blocks import (
    AbsoluteErrorGrouping,
    BucketPartition,
    GroupTotals,
    NoisyBins,
    Pipeline,
    SortByNoisy,
    Threshold,
    WeightedAverage,
)
from ..errors import InputTypeError, ValidationError
from .registry import register

__all__ = ["SORTAKI_CONFIGS", "SortakiConfig", "register_sortaki", "sortaki_config"]


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


# gamma_in is the initializer's share (0.9 in most of the paper's tables); the
# partitioner's share is 0 except for sDAWA, whose L1 partition takes a quarter of the
# rest.

_SORTAKI = "Doudalis and Mehrotra, SORTaki, §IV-§VI, Table II"
# Greedy partition O(N); the exact DP on a sorted domain uses the O(N log N) Monge
# solver; DPCube's recursive split costs O(N) per level of recursion.
_SORTAKI_TIME = {
    "GAHP": "O(N)",
    "sGAHP": "O(N log N)",
    "stGAHP": "O(N log N)",
    "sDAHP": "O(N log N)",
    "sDWF": "O(N log N)",
    "DPC": "O(N d), d = split depth (O(N^2) worst case)",
    "sDPC": "O(N log N + N d), d = split depth (O(N^2) worst case)",
    "sDAWA": "O(N log^2 N)",
}


def _register_one(name: str) -> None:
    cfg = SORTAKI_CONFIGS[name]

    def recipe(*, gamma_in: float = 0.9, error: str = cfg.error or "ahp") -> Pipeline:
        g_in, g_p, _ = cfg.shares(gamma_in)
        blocks: list = [NoisyBins(share=g_in)]
        if cfg.thresholds:
            blocks.append(Threshold())
        if cfg.sorts:
            blocks.append(SortByNoisy(descending=True))
        publisher = "finalizer" if cfg.finalizer == "waf" else "group_totals"
        if cfg.partitioner == "dawa_l1":
            blocks.append(AbsoluteErrorGrouping(share=g_p, candidates="pow2", publisher=publisher))
        else:
            blocks.append(
                BucketPartition(partitioner=cfg.partitioner, error=error, publisher=publisher)
            )
        blocks.append(
            WeightedAverage(share=REST) if cfg.finalizer == "waf" else GroupTotals(share=REST)
        )
        return Pipeline(tuple(blocks))

    parts = [
        "thresholded" if cfg.thresholds else "",
        "sorted" if cfg.sorts else "",
        f"{cfg.partitioner} partition",
        f"{cfg.finalizer.upper()} finalizer",
    ]
    register(
        name,
        summary="SORTaki: noisy counts, " + ", ".join(p for p in parts if p),
        cite=_SORTAKI,
        aliases=(name.lower(),),
        complexity=_SORTAKI_TIME[name],
    )(recipe)


def register_sortaki() -> None:
    """Register SORTaki's Table II configurations as methods (the catalog calls this
    where they belong in its listing)."""
    for name in ("GAHP", "sGAHP", "stGAHP", "sDAHP", "sDWF", "DPC", "sDPC", "sDAWA"):
        _register_one(name)
