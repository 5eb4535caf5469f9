"""Privelet: noisy Haar coefficients (Xiao, Wang, Gehrke)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._kernel import PrivateView
from .._kernel.operators import HaarSums
from .._numeric.wavelet import haar_inverse, privelet_bin_variance
from ..uncertainty import ErrorModel, HaarNoise
from .base import Block, State, constant
from .error_bars import law_of

__all__ = ["HaarCoefficients"]


@dataclass(frozen=True, kw_only=True)
class HaarCoefficients(Block):
    """Privelet: noisy unnormalised Haar coefficients, inverted to bin estimates.

    Xiao, Wang, Gehrke, ICDE 2010, §4 (1-D); methods framework B.4. The coefficients
    are the total and, per node of the implicit binary tree over the padded domain,
    the difference of its two halves. One record changes the total and one
    difference per level by one, so the kernel finds sensitivity ``m + 1``
    (``m = ceil(log2 N)``) and adds uniform noise of scale ``(m+1)/epsilon``, which is
    the weighted Haar mechanism of the paper in unnormalised form. Inversion is
    post-processing.
    """

    label = "haar"
    zcdp = True
    unbiased = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        n = state.n
        m = view.measure(HaarSums(n))
        estimate = haar_inverse(m.values.astype(np.float64), n)
        # a bin lies in one node per level: every bin's estimate has the same variance
        lam = math.sqrt(m.variance / 2.0)
        variance = constant(n, privelet_bin_variance(n, lam))
        model = ErrorModel(HaarNoise(n, m.variance, law_of(view)))
        return state.with_(estimate=estimate, variance=variance, uncertainty=model)
