"""Every published method, each as one short recipe of blocks.

Each recipe cites its paper and section; its keyword-only parameters are the
method's settings. ``complexity`` is the running time in the number of bins ``N``
with the default settings, as implemented here (the papers' bounds differ where a
faster exact algorithm is used; the block docstrings say which).
"""

from __future__ import annotations

from .._kernel import as_share
from ..blocks import (
    REST,
    AbsoluteErrorGrouping,
    AHPClustering,
    Block,
    CubeSplit,
    DensitySplit,
    FixedQueries,
    FixedSizeGroups,
    FourierRelease,
    FourierSize,
    FrontierRelease,
    GroupTotals,
    HaarCoefficients,
    HierarchicalPartition,
    Hierarchy,
    MultiplicativeWeights,
    NoisyBins,
    NoisyCells,
    NoisyMeans,
    NoisyTotal,
    OptimizedHierarchy,
    PartsLeastSquares,
    Pipeline,
    RelativeErrorGrouping,
    SortByNoisy,
    SquaredErrorGrouping,
    StructureFirstGrouping,
    Threshold,
    TreeCutAbsolute,
    TreeCutSquared,
)
from .registry import register
from .sortaki_configs import register_sortaki


@register(
    "identity",
    summary="discrete Laplace noise on every bin (LPA / DP_BASE)",
    cite="Dwork et al., TCC 2006; Kellaris et al. §4 (baseline)",
    aliases=("lpa", "dp_base", "base"),
    complexity="O(N)",
)
def identity() -> Pipeline:
    return Pipeline((NoisyBins(share=REST),))


@register(
    "uniform",
    summary="noisy total spread evenly over the bins",
    cite="Hay et al., DPBench, SIGMOD 2016 §5 ('Uniform'); total charged here",
    complexity="O(N)",
)
def uniform() -> Pipeline:
    return Pipeline((NoisyTotal(share=REST),))


# --- Kellaris, Papadopoulos, Papadias, "Differentially private histograms for range-sum
# queries: a modular approach" / "Engineering methods for differentially private
# histograms: efficiency beyond utility" (PVLDB 2017), Table 1: 15 schemes. Defaults
# follow its §7: epsilon1 = 0.25 epsilon for smoothing schemes, 0.65 epsilon for ordering
# schemes (split evenly between ordering and grouping where both read the data).
# ``noise="reference"`` on the S1/S~ schemes reproduces the public DAWA code's noise,
# which is not epsilon-DP; such releases say so (``private=False``).

_KELLARIS = "Kellaris et al., PVLDB 2017"


# Running time of each grouping step (AbsoluteErrorGrouping, SquaredErrorGrouping):
# With certified noise S1 and S~ split the binary tree top-down (O(N log N)); with
# noise="coupled" S1 samples each DP step's noisy minimum lazily over every interval
# (quadratic at worst) and S~ over power-of-two lengths. S2 is an exact PELT
# segmentation (linear on structured data, quadratic at worst), O(N log N) on a
# sorted domain.
_S1_TIME = "O(N log N); O(N^2 log N) worst case with noise='coupled'"
_GROUPING_TIME = {
    "S1": _S1_TIME,
    "S~": "O(N log^2 N)",
    "S2": "O(N^2) worst case, about O(N) typical (PELT)",
}
_ORDERED_TIME = {"S1": _S1_TIME, "S~": "O(N log^2 N)", "S2": "O(N log N)"}


def _smoothing(
    grouping: str,
    ratio: float,
    noise: str,
    noise_term: str,
    publisher: str = "group_totals",
    split_fanout: int = 2,
) -> tuple:
    """The grouping blocks of S1 / S~ / S2 spending ``ratio`` of epsilon."""
    if grouping == "S2":
        return (
            NoisyBins(share=ratio),
            SquaredErrorGrouping(noise_term=noise_term, publisher=publisher),
        )
    candidates = "all" if grouping == "S1" else "pow2"
    return (
        AbsoluteErrorGrouping(
            share=ratio,
            candidates=candidates,
            noise=noise,
            publisher=publisher,
            split_fanout=split_fanout,
        ),
    )


def _register_smoothing(grouping: str, number: int, section: str, aliases: tuple) -> None:
    def recipe(*, ratio: float = 0.25, noise: str = "certified", split_fanout: int = 2) -> Pipeline:
        blocks = _smoothing(grouping, ratio, noise, "", split_fanout=split_fanout)
        return Pipeline((*blocks, GroupTotals(share=REST)))

    def recipe_s2(*, ratio: float = 0.25, noise_term: str = "first_principles") -> Pipeline:
        return Pipeline((*_smoothing("S2", ratio, "", noise_term), GroupTotals(share=REST)))

    what = {
        "S1": "DAWA L1 partition over all intervals (certified noise)",
        "S~": "DAWA L1 partition over power-of-two intervals (certified noise)",
        "S2": "noisy counts, exact squared-error grouping (PELT)",
    }[grouping]
    register(
        grouping,
        summary=f"{what}, one noisy total per group",
        cite=f"{_KELLARIS}, {section} (scheme {number})",
        aliases=aliases,
        complexity=_GROUPING_TIME[grouping],
    )(recipe_s2 if grouping == "S2" else recipe)


def _register_ordered(grouping: str, number: int, aliases: tuple) -> None:
    def recipe(*, ratio: float = 0.65, noise: str = "certified") -> Pipeline:
        whole = as_share(ratio, name="ratio")  # exact, so the halves add up to ratio
        half = whole / 2
        return Pipeline(
            (
                NoisyBins(share=half),
                SortByNoisy(),
                AbsoluteErrorGrouping(
                    share=whole - half,
                    candidates="all" if grouping == "S1" else "pow2",
                    noise=noise,
                ),
                GroupTotals(share=REST),
            )
        )

    def recipe_s2(*, ratio: float = 0.65, noise_term: str = "first_principles") -> Pipeline:
        return Pipeline(
            (
                NoisyBins(share=ratio),
                SortByNoisy(),
                SquaredErrorGrouping(noise_term=noise_term),
                GroupTotals(share=REST),
            )
        )

    register(
        f"O+{grouping}",
        summary=f"noisy ordering, then {grouping} grouping of the sorted domain, "
        "one noisy total per group",
        cite=f"{_KELLARIS}, §4 (scheme {number})",
        aliases=aliases,
        complexity=_ORDERED_TIME[grouping],
    )(recipe_s2 if grouping == "S2" else recipe)


def _register_fixed(grouping: str, workload: str, number: int, aliases: tuple) -> None:
    def recipe(*, ratio: float = 0.25, noise: str = "certified") -> Pipeline:
        return Pipeline(
            (
                *_smoothing(grouping, ratio, noise, "", "fixed_queries"),
                FixedQueries(share=REST, workload=workload),
            )
        )

    def recipe_s2(*, ratio: float = 0.25, noise_term: str = "first_principles") -> Pipeline:
        return Pipeline(
            (
                *_smoothing("S2", ratio, "", noise_term, "fixed_queries"),
                FixedQueries(share=REST, workload=workload),
            )
        )

    kind = "MM" if workload == "all" else "PMM"
    register(
        f"{grouping}+{kind}",
        summary=f"{grouping} grouping, then GreedyH over the groups for the "
        f"{'all-range' if workload == 'all' else 'prefix'} workload",
        cite=f"{_KELLARIS}, §4, §5.2 (scheme {number}); Li et al. (DAWA), PVLDB 2014, §4",
        aliases=aliases,
        # GreedyH and least squares over |G| <= N groups add O(N log N)
        complexity=_GROUPING_TIME[grouping],
    )(recipe_s2 if grouping == "S2" else recipe)


for _g, _n, _sec, _al in (
    ("S1", 1, "§4", ("s1",)),
    ("S~", 2, "§4", ("stilde", "s~")),
    ("S2", 3, "§5.1", ("s2",)),
):
    _register_smoothing(_g, _n, _sec, _al)

for _g, _n, _al in (
    ("S1", 4, ("o+s1",)),
    ("S~", 5, ("o+stilde", "o+s~")),
    ("S2", 6, ("o+s2",)),
):
    _register_ordered(_g, _n, _al)

for _g, _w, _n, _al in (
    ("S1", "all", 7, ("s1+mm",)),
    ("S~", "all", 8, ("stilde+mm", "s~+mm")),
    ("S2", "all", 9, ("s2+mm",)),
    ("S1", "prefix", 10, ("s1+pmm",)),
    ("S~", "prefix", 11, ("stilde+pmm", "s~+pmm")),
    ("S2", "prefix", 12, ("s2+pmm",)),
):
    _register_fixed(_g, _w, _n, _al)


@register(
    "H",
    summary="fan-out 16 tree of noisy interval counts with least-squares consistency",
    cite=f"Hay et al., PVLDB 2010; {_KELLARIS}, §4 (scheme 13)",
    aliases=("h", "h16"),
    complexity="O(N)",
)
def h(*, fanout: int = 16, allocation: str = "uniform") -> Pipeline:
    return Pipeline((Hierarchy(share=REST, fanout=fanout, allocation=allocation),))


@register(
    "S1+H",
    summary="DAWA L1 costs restricted to tree nodes (certified noise), averaged frontier "
    "release, consistency",
    cite=f"{_KELLARIS}, §6 (scheme 14)",
    aliases=("s1+h", "s1h"),
    complexity="O(N log^2 N)",
)
def s1_h(
    *,
    ratio: float = 0.25,
    fanout: int = 16,
    allocation: str = "uniform",
    noise: str = "certified",
) -> Pipeline:
    return Pipeline(
        (
            TreeCutAbsolute(share=ratio, fanout=fanout, allocation=allocation, noise=noise),
            FrontierRelease(share=REST, allocation=allocation),
        )
    )


@register(
    "S2+H",
    summary="noisy counts, squared-error grouping restricted to tree nodes, "
    "averaged frontier release, consistency",
    cite=f"{_KELLARIS}, §6 (scheme 15)",
    aliases=("s2+h", "s2h"),
    complexity="O(N log N)",
)
def s2_h(*, ratio: float = 0.25, fanout: int = 16, allocation: str = "uniform") -> Pipeline:
    return Pipeline(
        (
            NoisyBins(share=ratio),
            TreeCutSquared(fanout=fanout, allocation=allocation),
            FrontierRelease(share=REST, allocation=allocation),
        )
    )


# --- Other hierarchical methods compared in Kellaris et al. §2 and §7.


@register(
    "HB",
    summary="tree with the branching factor chosen from N, consistency",
    cite="Qardaji, Yang, Li, PVLDB 2013, §4-§5 (Eq. 3)",
    aliases=("hb",),
    complexity="O(N)",
)
def hb(*, allocation: str = "uniform") -> Pipeline:
    return Pipeline((Hierarchy(share=REST, fanout="hb", allocation=allocation),))


@register(
    "OPT-H",
    summary="tree whose fan-out and per-level budgets minimise the workload's exact "
    "expected error, least squares",
    cite="McKenna et al. (HDMM), PVLDB 2018, §4, over the weighted trees of Hay et al. "
    "2010 and Qardaji et al. 2013",
    aliases=("opt-h", "opth"),
    complexity="O(N log N)",
)
def opt_h(*, workload: str = "all") -> Pipeline:
    return Pipeline((OptimizedHierarchy(share=REST, workload=workload),))


@register(
    "Boost",
    summary="binary tree of noisy counts with constrained inference (H2)",
    cite="Hay, Rastogi, Miklau, Suciu, PVLDB 2010, §3-§4",
    aliases=("boost", "h2"),
    complexity="O(N)",
)
def boost() -> Pipeline:
    return Pipeline((Hierarchy(share=REST, fanout=2),))


@register(
    "Privelet",
    summary="noisy Haar wavelet coefficients, inverted",
    cite="Xiao, Wang, Gehrke, ICDE 2010, §4",
    aliases=("privelet",),
    complexity="O(N)",
)
def privelet() -> Pipeline:
    return Pipeline((HaarCoefficients(share=REST),))


# --- Sorting and grouping family.


def _sorted_grouping(
    grouping: Block, *, ratio: float, descending: bool, threshold: float | None = None
) -> Pipeline:
    """Noisy counts (``ratio`` of epsilon), an optional AHP threshold, a noisy sort, a
    grouping of the sorted bins, one noisy total per group with the rest."""
    steps = [NoisyBins(share=ratio)]
    if threshold is not None:
        steps.append(Threshold(eta=threshold))
    steps += [SortByNoisy(descending=descending), grouping, GroupTotals(share=REST)]
    return Pipeline(tuple(steps))


@register(
    "AHP",
    summary="noisy counts, threshold, ascending noisy sort, clustering, one noisy total "
    "per cluster",
    cite="Zhang, Chen, Xu, Meng, Xie, SDM 2014, §4 (Algorithms 1-3)",
    aliases=("ahp",),
    complexity="O(N log N)",
)
def ahp(
    *, ratio: float = 0.85, eta: float = 0.35, clustering: str = "greedy", rule: str = "all"
) -> Pipeline:
    # Checked against DPBench's AHP (dpcomp_core commit 233cfcc, ahp/lib/ahp_fast.pyx).
    # Same design: ratio 0.85 and eta 0.35 (the paper gives neither), natural log in
    # the threshold, ascending sort, the greedy rule of Algorithm 3 with the exact
    # err*, clusters kept in sorted order and mapped back through the permutation (not
    # contiguous in the original order), one draw per cluster on its TRUE total spread
    # evenly, no rounding, clamping or zeroing afterwards. On the same thresholded,
    # sorted noisy vector both greedies give identical cuts (50/50 seeds on
    # nettrace_4096 and searchlogs_4096, eps2 = 0.15). DPBench's departures from the
    # paper do not change the output: it zeroes counts <= theta (paper: < theta), its
    # early-stop bound uses N-j+2 bins (paper N-j+1; the running minimum is the same),
    # unstable argsort (ties after thresholding are only the zeros, always one
    # cluster), floating-point Laplace (here discrete Laplace, stable sort).
    # Epsilon 1, mean (median) of 200 runs, seeds 0..199, metrics.interval_mse /
    # point_mse; ours dh.publish(x, epsilon=1, method="AHP", rng=s), DPBench's ahpr with
    # np.random.RandomState(s):
    #   nettrace_4096    ours 146 (102) / 0.66   DPBench 175 (125) / 0.68
    #   searchlogs_4096  ours 4330 (3080) / 2.58  DPBench 4350 (3200) / 2.69
    # All-range MSE is heavy-tailed here: a median of 5 runs spans 40-300 (nettrace)
    # and 1,000-8,000 (searchlogs) over 40 disjoint seed groups, so 3x-7x gaps between
    # a 10-run mean and a 5-run median are sampling noise, not a design difference.
    grouping = AHPClustering(clustering=clustering, rule=rule)
    return _sorted_grouping(grouping, ratio=ratio, descending=False, threshold=eta)


@register(
    "SReB_GCA",
    summary="noisy counts, ascending noisy sort, greedy grouping under relative error, "
    "one noisy total per group",
    cite="Chen et al., Algorithms 17(7):293, 2024, §4 (Algorithms 1-2)",
    aliases=("sreb_gca", "sreb", "sreb-gca"),
    complexity="O(N log N)",
)
def sreb_gca(*, ratio: float = 0.5, delta: float = 1.0) -> Pipeline:
    return _sorted_grouping(RelativeErrorGrouping(delta=delta), ratio=ratio, descending=False)


@register(
    "DAWA",
    summary="DAWA as published: noisy L1 partition over power-of-two intervals "
    "(certified noise), then GreedyH for the workload",
    cite="Li, Hay, Miklau, Wang, PVLDB 2014, §3-§4",
    aliases=("dawa",),
    complexity="O(N log^2 N)",
)
def dawa(
    *,
    ratio: float = 0.25,
    workload: str = "prefix",
    noise: str = "certified",
    split_fanout: int = 4,
) -> Pipeline:
    return Pipeline(
        (
            AbsoluteErrorGrouping(
                share=ratio,
                candidates="pow2",
                noise=noise,
                publisher="fixed_queries",
                split_fanout=split_fanout,
            ),
            FixedQueries(share=REST, workload=workload),
        )
    )


# --- SORTaki (Doudalis and Mehrotra), Table II configurations (recipes with the table).
register_sortaki()


# --- Xiao, Xiong, Fan, Goryczka, Li, "DPCube: Differentially private histogram release
# through multidimensional partitioning", TDP 7 (2014): the two-phase kd-tree
# partitioning in 1-D as DPBench's DPcube1D runs it: a share on noisy totals of cells of
# 11 bins, a top-down split judged on them, the rest on one noisy total per part. Where
# it departs from the paper (cells of 11 bins, not single bins: width=1 gives those; a
# 1/epsilon noise term against squared spreads; no least-squares mix of the two
# phases: DPCube-LS below adds it), it follows DPBench, whose figures it reproduces.


@register(
    "DPCube",
    summary="DPCube: noisy totals of cells of 11 bins, top-down splits judged on them, "
    "one noisy total per part",
    cite="Xiao, Xiong, Fan, Goryczka, Li, TDP 2014, kd-tree partitioning, as DPBench's "
    "DPcube1D (Hay et al., SIGMOD 2016)",
    aliases=("dpcube", "dpcube1d"),
    complexity="O(N d), d = split depth (O(N^2) worst case)",
)
def dpcube(*, ratio: float = 0.5, width: int = 11) -> Pipeline:
    return Pipeline((NoisyCells(share=ratio, width=width), CubeSplit(), GroupTotals(share=REST)))


# The paper's own last step, which DPcube1D leaves out: the cell histogram and the parts'
# noisy totals combined by least squares (the parts made of whole cells, as the paper
# partitions its cell histogram). The step is cited through Doudalis and Mehrotra's
# reading (SORTaki §IV-A: the finalizer combines the part averages with the noisy
# cells; §V: by least squares); the paper's own section numbers could not be checked
# (only its abstract was at hand). All-range error over DPBench's DPcube1D: 0.16-0.98 at
# epsilon 0.01 and 0.1 on six shared datasets, 0.98-1.05 at 1 but 11.8x on nettrace,
# whose long exact parts of empty cells get the cells' noise back; so DPCube keeps
# DPBench's form (benchmarks/cube.py, 10 seeds).


@register(
    "DPCube-LS",
    summary="DPCube with the paper's final least squares: noisy cells, splits between "
    "whole cells while they vary more than their noise, part totals mixed with the cells",
    cite="Xiao, Xiong, Fan, Goryczka, Li, TDP 7 (2014) 195-222 (two-phase kd-tree "
    "partitioning, least-squares estimate); the step as SORTaki §IV-A and §V describe it",
    aliases=("dpcube-ls", "dpcube_ls"),
    complexity="O(N + C d), C = N/width cells, d = split depth",
)
def dpcube_ls(*, ratio: float = 0.5, width: int = 11, rule: str = "variance") -> Pipeline:
    return Pipeline(
        (
            NoisyCells(share=ratio, width=width),
            CubeSplit(cuts="cells", rule=rule, publisher="part_totals"),
            PartsLeastSquares(share=REST),
        )
    )


# --- Older competitors compared in AHP §5 and SReB_GCA §6, in DP-correct form.


@register(
    "NF",
    summary="NoiseFirst: noisy counts, least-error grouping (exact), noisy group means",
    cite="Xu, Zhang, Xiao, Yang, Yu, ICDE 2012, §4 (NoiseFirst)",
    aliases=("nf", "noisefirst"),
    complexity="O(N^2) worst case, about O(N) typical (PELT)",
)
def noise_first() -> Pipeline:
    return Pipeline((NoisyBins(share=REST), NoisyMeans()))


@register(
    "GS",
    summary="noisy ordering, groups of a fixed public width, one noisy total per group",
    cite="Kellaris and Papadopoulos, PVLDB 6(5) 2013, §4 (Grouping and Smoothing)",
    aliases=("gs",),
    complexity="O(N log N)",
)
def grouping_smoothing(*, width: int = 100, ratio: float = 0.5) -> Pipeline:
    return _sorted_grouping(FixedSizeGroups(width=width), ratio=ratio, descending=True)


@register(
    "SF",
    summary="StructureFirst: k V-optimal buckets chosen privately on counts clipped at a "
    "public bound, one noisy total per bucket",
    cite="Xu, Zhang, Xiao, Yang, Yu, ICDE 2012, §5 (StructureFirst)",
    aliases=("sf", "structurefirst"),
    example={"bound": 1000},
    complexity="O(k N^2) worst case (pruned exact DP), k = N/10 by default",
)
def structure_first(
    *, bound: int | None = None, k: int | None = None, ratio: float = 0.05
) -> Pipeline:
    return Pipeline(
        (StructureFirstGrouping(share=ratio, k=k, bound=bound), GroupTotals(share=REST))
    )


@register(
    "PrivTree",
    summary="PrivTree: biased top-down splitting of the binary tree by noisy counts "
    "(budget independent of the depth), one noisy total per leaf",
    cite="Zhang, Xiao, Xie, SIGMOD 2016, §3 (Algorithm 2)",
    aliases=("privtree",),
    complexity="O(N log N)",
)
def privtree(*, ratio: float = 0.25, fanout: int = 2, threshold: float = 0.0) -> Pipeline:
    # ratio: the decomposition's share. A quarter beats an even split on every shared
    # dataset but one cell (geometric mean of the all-range error 0.31x over 11 datasets
    # x epsilon 0.01/0.1/1, worst 1.35x on nettrace at 0.01; benchmarks/partitions.py).
    return Pipeline(
        (DensitySplit(share=ratio, fanout=fanout, threshold=threshold), GroupTotals(share=REST))
    )


@register(
    "MWEM",
    summary="MWEM: rounds of a privately chosen worst-answered interval query, its noisy "
    "answer and multiplicative-weights updates of a uniform start",
    cite="Hardt, Ligett, McSherry, NIPS 2012, Algorithm 1 (DPBench's 1-D defaults)",
    aliases=("mwem",),
    complexity="O(rounds N)",
)
def mwem(
    *, rounds: int = 10, ratio: float = 0.5, replays: int = 100, queries: str = "prefix"
) -> Pipeline:
    return Pipeline(
        (
            MultiplicativeWeights(
                share=REST, rounds=rounds, ratio=ratio, replays=replays, queries=queries
            ),
        )
    )


@register(
    "P-HP",
    summary="P-HPartition: private recursive bisection under L1 error, private choice of "
    "the clustering, one noisy total per cluster",
    cite="Acs, Castelluccia, Chen, ICDM 2012, §4",
    aliases=("php", "p-hp", "p-hpartition"),
    complexity="O(N log^2 N)",
)
def p_hpartition(*, ratio: float = 0.5, max_clusters: int = 2000) -> Pipeline:
    return Pipeline(
        (HierarchicalPartition(share=ratio, max_clusters=max_clusters), GroupTotals(share=REST))
    )


@register(
    "EFPA",
    summary="private choice of K, noisy first K orthonormal Fourier coefficients, inverted",
    cite="Acs, Castelluccia, Chen, ICDM 2012, §5 (EFPA)",
    aliases=("efpa",),
    complexity="O(N log N)",
)
def efpa(*, ratio: float = 0.5) -> Pipeline:
    return Pipeline((FourierSize(share=ratio), FourierRelease(share=REST)))
