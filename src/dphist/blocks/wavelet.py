"""Privelet: noisy Haar coefficients (Xiao, Wang, Gehrke)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernel import PrivateView
from .._kernel.operators import SignedIntervalSums
from .._numeric.wavelet import haar_intervals, haar_inverse, privelet_range_variance
from ..uncertainty import ErrorModel, HaarNoise
from .base import Block, State
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
        lo, mid, hi = haar_intervals(state.n)
        m = view.measure(SignedIntervalSums(state.n, lo, mid, hi))
        estimate = haar_inverse(m.values.astype(np.float64), state.n)
        lam = float(np.sqrt(m.variance / 2.0))
        bins = np.arange(state.n)
        variance = privelet_range_variance(state.n, bins, bins + 1, lam)
        model = ErrorModel(HaarNoise(state.n, m.variance, law_of(view)))
        return state.with_(estimate=estimate, variance=variance, uncertainty=model)
