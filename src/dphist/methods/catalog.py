"""Every published method, each as one short recipe of blocks.

Each recipe cites its paper and section; its keyword-only parameters are the
method's settings.
"""

from __future__ import annotations

from ..blocks import (
    REST,
    GroupTotals,
    HierarchicalSmoothing,
    Hierarchy,
    NoisyBins,
    NoisyTotal,
    Pipeline,
    SortByNoisy,
    SquaredErrorGrouping,
)
from .registry import register


@register(
    "identity",
    summary="discrete Laplace noise on every bin (LPA / DP_BASE)",
    cite="Dwork et al., TCC 2006; Kellaris et al. §4 (baseline)",
    aliases=("lpa", "dp_base", "base"),
)
def identity() -> Pipeline:
    return Pipeline((NoisyBins(share=REST),))


@register(
    "uniform",
    summary="noisy total spread evenly over the bins",
    cite="Hay et al., DPBench, SIGMOD 2016 §5 ('Uniform'); total charged here",
)
def uniform() -> Pipeline:
    return Pipeline((NoisyTotal(share=REST),))


# --- Kellaris, Papadopoulos, Papadias: "Engineering methods for differentially private
# histograms: efficiency beyond utility" (PVLDB 2017), Table 1. Defaults follow §7:
# 0.25/0.75 for smoothing schemes, 0.65/0.35 for ordering schemes.


@register(
    "S2",
    summary="noisy counts, exact squared-error grouping (PELT), one noisy total per group",
    cite="Kellaris et al., PVLDB 2017, §5.1 (scheme 3)",
    aliases=("s2",),
)
def s2(*, ratio: float = 0.25, noise_term: str = "first_principles") -> Pipeline:
    return Pipeline(
        (
            NoisyBins(share=ratio),
            SquaredErrorGrouping(noise_term=noise_term),
            GroupTotals(share=REST),
        )
    )


@register(
    "O+S2",
    summary="noisy counts, sorted, exact squared-error grouping of the sorted domain",
    cite="Kellaris et al., PVLDB 2017, §4-§5.1 (scheme 6)",
    aliases=("o+s2", "os2"),
)
def o_s2(*, ratio: float = 0.65, noise_term: str = "first_principles") -> Pipeline:
    return Pipeline(
        (
            NoisyBins(share=ratio),
            SortByNoisy(),
            SquaredErrorGrouping(noise_term=noise_term),
            GroupTotals(share=REST),
        )
    )


@register(
    "H",
    summary="fan-out 16 tree of noisy interval counts with least-squares consistency",
    cite="Hay et al., PVLDB 2010; Kellaris et al., PVLDB 2017, §4 (scheme 13)",
    aliases=("h", "h16"),
)
def h(*, fanout: int = 16, allocation: str = "uniform") -> Pipeline:
    return Pipeline((Hierarchy(share=REST, fanout=fanout, allocation=allocation),))


@register(
    "HB",
    summary="tree with the branching factor chosen from N, consistency",
    cite="Qardaji, Yang, Li, PVLDB 2013, §4-§5 (Eq. 3)",
    aliases=("hb",),
)
def hb(*, allocation: str = "uniform") -> Pipeline:
    return Pipeline((Hierarchy(share=REST, fanout="hb", allocation=allocation),))


@register(
    "S2+H",
    summary="noisy counts, squared-error grouping restricted to tree nodes, "
    "averaged frontier release, consistency",
    cite="Kellaris et al., PVLDB 2017, §6 (scheme 15)",
    aliases=("s2+h", "s2h"),
)
def s2_h(*, ratio: float = 0.25, fanout: int = 16, allocation: str = "uniform") -> Pipeline:
    return Pipeline(
        (
            NoisyBins(share=ratio),
            HierarchicalSmoothing(share=REST, fanout=fanout, allocation=allocation),
        )
    )
