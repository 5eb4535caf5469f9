"""Every published method, each as one short recipe of blocks.

Each recipe cites its paper and section; its keyword-only parameters are the
method's settings.
"""

from __future__ import annotations

from ..blocks import REST, NoisyBins, NoisyTotal, Pipeline
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
