"""When to use each method, in one line: what ``dphist methods`` prints.

Every registered method has an entry (a test checks it): a short name of what it does
and the data and queries it suits, from its paper and from the measured comparisons in
``docs/accuracy.md`` and ``docs/auto.md``. ``method="auto"`` makes this choice from
public facts and two noisy counts; ``dphist plan`` gives the epsilon the
data-independent methods need for a target accuracy.
"""

from __future__ import annotations

__all__ = ["GUIDE", "when_to_use"]

GUIDE: dict[str, tuple[str, str]] = {
    "identity": ("Laplace noise per bin", "point queries; unbiased, exact error bars"),
    "uniform": ("noisy total spread evenly", "a baseline: right only for flat data"),
    "S1": ("best contiguous grouping", "point queries on piecewise-flat data"),
    "S~": ("fast contiguous grouping", "as S1 on large domains"),
    "S2": ("squared-error grouping", "piecewise-flat data with larger counts"),
    "O+S1": ("noisy sort, then S1", "equal counts scattered over the domain"),
    "O+S~": ("noisy sort, then S~", "as O+S1 on large domains"),
    "O+S2": ("noisy sort, then S2", "scattered equal counts, larger counts"),
    "S1+MM": ("S1, then a range strategy", "all-range queries on piecewise-flat data"),
    "S~+MM": ("S~, then a range strategy", "as S1+MM on large domains"),
    "S2+MM": ("S2, then a range strategy", "all-range queries, larger counts"),
    "S1+PMM": ("S1, then a prefix strategy", "prefix (CDF) queries on flat data"),
    "S~+PMM": ("S~, then a prefix strategy", "as S1+PMM on large domains"),
    "S2+PMM": ("S2, then a prefix strategy", "prefix queries, larger counts"),
    "H": ("fan-out 16 tree", "range queries; error known in advance"),
    "S1+H": ("grouping on tree nodes", "ranges on piecewise-flat data"),
    "S2+H": ("squared-error tree grouping", "ranges and points on flat stretches"),
    "HB": ("tree, fan-out from N", "range queries, any data; error known"),
    "OPT-H": ("tree tuned to the workload", "a known workload (all ranges or prefixes)"),
    "Boost": ("binary tree, consistency", "range queries; a classic baseline"),
    "Privelet": ("Haar wavelet coefficients", "long range queries; unbiased"),
    "AHP": ("noisy sort and clustering", "sparse or skewed data, point queries"),
    "SReB_GCA": ("grouping by relative error", "many small counts, relative error"),
    "DAWA": ("L1 partition, then ranges", "range workloads on data with flat regions"),
    "GAHP": ("greedy contiguous grouping", "point queries on smooth data, fast"),
    "sGAHP": ("sort, greedy grouping", "skewed point queries, fast"),
    "stGAHP": ("threshold, sort, grouping", "sparse data with many zeros"),
    "sDAHP": ("sort, optimal grouping", "skewed point queries"),
    "sDWF": ("sort, optimal grouping, WAF", "skewed point queries"),
    "DPC": ("DPCube splits", "point queries on blocky data"),
    "sDPC": ("sort, DPCube splits", "skewed point queries"),
    "sDAWA": ("sort, DAWA partition", "skewed point queries"),
    "DPCube": ("noisy cells, then splits", "range queries on large blocky domains"),
    "DPCube-LS": ("DPCube, cells mixed back in", "range queries at small epsilon"),
    "NF": ("NoiseFirst grouping", "a published competitor, for comparisons"),
    "GS": ("fixed-width groups, sorted", "a published competitor, for comparisons"),
    "SF": ("StructureFirst buckets", "comparisons; needs a public count bound"),
    "PrivTree": ("adaptive binary splits", "sparse data over a large domain"),
    "MWEM": ("multiplicative weights", "a small workload, few bins; no error bars"),
    "P-HP": ("private recursive bisection", "a published competitor, for comparisons"),
    "EFPA": ("Fourier coefficients", "smooth, periodic data; no error bars"),
}


def when_to_use(name: str) -> tuple[str, str]:
    """``(what it does, what it suits)`` for a registered method name."""
    return GUIDE[name]
