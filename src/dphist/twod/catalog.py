"""Every 2-D method, each as one short recipe of blocks (the 2-D counterpart of
:mod:`dphist.methods.catalog`). ``N`` in the complexities is the number of cells.

Methods run in the Hilbert order of the cells (``ORDERS``) are 1-D pipelines: the kernel
hands them the sealed cells along the curve (a public permutation) and the estimate is
put back in place; any registered 1-D method runs so as ``"hilbert:NAME"``.
"""

from __future__ import annotations

from ..blocks import REST, AbsoluteErrorGrouping, FixedQueries, Pipeline
from ..methods.registry import Registry
from .adaptive import GridMWEM, QuadDecomposition
from .blocks import GridHierarchy, GridTotal, GridWavelet, NoisyCells
from .grids import AdaptiveGrid, UniformGrid
from .privtree import LeafTotals

__all__ = ["GRID_METHODS", "ORDERS"]

GRID_METHODS = Registry()
"""The 2-D methods."""

ORDERS = {"DAWA": "hilbert"}
"""Methods that run along a public order of the cells."""

register = GRID_METHODS.register


@register(
    "identity",
    summary="discrete Laplace noise on every cell (the flat method)",
    cite="Dwork et al., TCC 2006; Qardaji, Yang, Li, PVLDB 2013 §5 ('Flat')",
    aliases=("lpa", "flat", "dp_base"),
    complexity="O(N)",
)
def identity() -> Pipeline:
    return Pipeline((NoisyCells(share=REST),))


@register(
    "uniform",
    summary="noisy total spread evenly over the cells",
    cite="Hay et al., DPBench, SIGMOD 2016 §5 ('Uniform'); total charged here",
    complexity="O(N)",
)
def uniform() -> Pipeline:
    return Pipeline((GridTotal(share=REST, publish=True),))


@register(
    "HB2D",
    summary="hierarchy with b x b children per node, Qardaji et al.'s branching b, "
    "least-squares consistency",
    cite="Qardaji, Yang, Li, PVLDB 2013, §5 (HB, 2-D); Hay et al., PVLDB 2010 (consistency)",
    aliases=("hb", "hb2d", "hierarchy"),
    complexity="O(N)",
)
def hb2d(*, branching: object = "hb", allocation: str = "uniform", root: bool = False) -> Pipeline:
    return Pipeline(
        (GridHierarchy(share=REST, branching=branching, allocation=allocation, root=root),)
    )


@register(
    "QuadTree",
    summary="full quadtree with geometric level budgets (leaves most), least squares",
    cite="Cormode, Procopiuc, Srivastava, Shen, Yu, ICDE 2012, §3-4 (geometric budget, "
    "OLS post-processing)",
    aliases=("quadtree", "quad"),
    complexity="O(N)",
)
def quadtree(*, allocation: str = "geometric", root: bool = True) -> Pipeline:
    return Pipeline((GridHierarchy(share=REST, branching=2, allocation=allocation, root=root),))


@register(
    "Privelet",
    summary="noisy 2-D Haar wavelet coefficients (standard decomposition), inverted",
    cite="Xiao, Wang, Gehrke, ICDE 2010, §5",
    aliases=("privelet", "privelet2d"),
    complexity="O(N)",
)
def privelet() -> Pipeline:
    return Pipeline((GridWavelet(share=REST),))


def _sized(block: object, total: object, total_share: object) -> Pipeline:
    """A grid sized from the public ``total`` or from a noisy total (``total_share``)."""
    if total is not None:
        return Pipeline((block,))
    return Pipeline((GridTotal(share=total_share), block))


@register(
    "UGrid",
    summary="uniform grid of about N epsilon / c equal cells, one noisy count each",
    cite="Qardaji, Yang, Li, ICDE 2013, §IV (Guideline 1, c = 10)",
    aliases=("ug", "ugrid"),
    complexity="O(N)",
)
def ugrid(*, c: float = 10.0, total: float | None = None, total_share: float = 0.01) -> Pipeline:
    return _sized(UniformGrid(share=REST, c=c, total=total), total, total_share)


@register(
    "AGrid",
    summary="coarse grid, each cell cut into a grid sized from its noisy count, "
    "constrained inference",
    cite="Qardaji, Yang, Li, ICDE 2013, §V (c = 10, c2 = 5, alpha = 0.5)",
    aliases=("ag", "agrid"),
    complexity="O(N)",
)
def agrid(
    *,
    c: float = 10.0,
    alpha: float = 0.5,
    total: float | None = None,
    total_share: float = 0.01,
) -> Pipeline:
    return _sized(AdaptiveGrid(share=REST, c=c, alpha=alpha, total=total), total, total_share)


@register(
    "PrivTree",
    summary="quadtree split top-down by biased noisy counts (no depth limit), one noisy "
    "count per leaf",
    cite="Zhang, Xiao, Xie, SIGMOD 2016, §3-4 (Algorithm 2, fan-out 4)",
    aliases=("privtree", "privtree2d"),
    complexity="O(N)",
)
def privtree(*, ratio: float = 0.5, threshold: float = 0.0, levels: str = "auto") -> Pipeline:
    # levels="leaves" is PrivTree as published (one noisy count per leaf); "auto" also
    # measures the coarser frontier of the decomposition that least squares serves best
    # (dphist.twod.privtree), chosen from public facts.
    return Pipeline(
        (QuadDecomposition(share=ratio, threshold=threshold), LeafTotals(share=REST, levels=levels))
    )


@register(
    "MWEM",
    summary="rounds of a privately chosen worst-answered rectangle, its noisy total and "
    "multiplicative-weights updates",
    cite="Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1 (DPBench's mwemND defaults)",
    aliases=("mwem", "mwemnd"),
    complexity="O(rounds N)",
)
def mwem(
    *,
    rounds: int = 10,
    ratio: float = 0.5,
    replays: int = 100,
    depth: int = 5,
    workload: object = None,
) -> Pipeline:
    return Pipeline(
        (
            GridMWEM(
                share=REST,
                rounds=rounds,
                ratio=ratio,
                replays=replays,
                depth=depth,
                workload=workload,
            ),
        )
    )


@register(
    "DAWA",
    summary="DAWA along the Hilbert curve: noisy L1 partition over power-of-two intervals "
    "(certified noise), then GreedyH for all ranges of the order",
    cite="Li, Hay, Miklau, Wang, PVLDB 2014, §3-§4 and §6 (2-D by a Hilbert curve)",
    aliases=("dawa", "dawa2d"),
    complexity="O(N log^2 N)",
)
def dawa(*, ratio: float = 0.25, workload: str = "all", split_fanout: int = 4) -> Pipeline:
    return Pipeline(
        (
            AbsoluteErrorGrouping(
                share=ratio, candidates="pow2", publisher="fixed_queries", split_fanout=split_fanout
            ),
            FixedQueries(share=REST, workload=workload),
        )
    )
