"""Methods whose structure is chosen by private selection on the true counts.

StructureFirst, P-HPartition and EFPA choose bucket boundaries or a number of
Fourier coefficients from the true data; the kernel does the choosing by
report-noisy-min (see ``dphist._kernel.selection``) and releases only the choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernel import EFPASize, PHPClusters, PrivateView, SFBoundaries
from .._kernel.operators import FourierCoefficients
from .._kernel.selection import inverse_fourier
from .._numeric.compact import labels_from_starts
from ..errors import CompositionError, DataDependentParameterError
from ..uncertainty import ErrorModel
from .base import Block, State, mean_absolute_noise
from .constraints import Interval, rules

__all__ = ["FourierRelease", "FourierSize", "HierarchicalPartition", "StructureFirstGrouping"]


@dataclass(frozen=True, kw_only=True)
class StructureFirstGrouping(Block):
    """StructureFirst: ``k`` V-optimal buckets chosen privately on clipped true counts.

    Xu, Zhang, Xiao, Yang, Yu, ICDE 2012, §5 (data-aware spec §3.2). ``bound`` is a
    PUBLIC upper bound F on any count (the scores' sensitivity is ``2F + 1``); it is
    required, never derived from the data. ``k`` defaults to ``ceil(N/10)`` (the
    authors' code). Privacy: the kernel's selection spends this block's share; the
    release of the buckets happens in a later block.

    The private design is weak when F is large: each boundary is drawn with scale
    ``2(2F+1)/eps1``. Measured on searchlogs_4096 (F = max + 1 = 3,795, epsilon = 1,
    median of 3): point MSE 2.9e4 with the defaults and 2.2e4 with ``k = 400``,
    ``ratio = 0.5``, against 319 and 83 for the same buckets chosen almost without
    noise (epsilon = 10**4) and 1.8 for identity; the choice of buckets, not their
    number, costs the accuracy.
    """

    label = "structure"
    zcdp = True
    spends = True
    constraints = rules(k=Interval(int, 1), bound=Interval(int, 1))
    optional = frozenset({"k"})
    k: int | None = None
    bound: int | None = None

    def __post_init__(self) -> None:
        if self.bound is None:
            raise DataDependentParameterError(
                "StructureFirst needs bound=F, a public upper bound on any count "
                "(it sets the noise of the structure choice; it must not come from the data)"
            )
        super().__post_init__()

    def run(self, state: State, view: PrivateView | None) -> State:
        k = min(self.k or math.ceil(state.n / 10), state.n)
        starts = view.select(SFBoundaries(k, self.bound))
        return state.with_(labels=labels_from_starts(starts, state.n))


@dataclass(frozen=True, kw_only=True)
class HierarchicalPartition(Block):
    """P-HPartition: private recursive bisection under the L1 error, then a private
    choice of the number of clusters.

    Acs, Castelluccia, Chen, ICDM 2012, §4 (as in the authors' code; data-aware spec
    §4.1). ``max_clusters`` caps the search (2000 in DPBench's wrapper). The cluster
    error uses the expected absolute noise of the publishing block (``publisher``).
    """

    label = "partition"
    zcdp = True
    constraints = rules(max_clusters=Interval(int, 1))
    spends = True
    max_clusters: int = 2000
    publisher: str = "group_totals"

    def run(self, state: State, view: PrivateView | None) -> State:
        eps_n = state.budgets.get(self.publisher)
        if eps_n is None:
            raise CompositionError(f"partition: no block named {self.publisher!r} publishes")
        if state.definition == "zcdp":  # the costs' noise term is 1/eps_n = E|noise|
            eps_n = Fraction(1) / Fraction(repr(mean_absolute_noise(state, eps_n)))
        starts = view.select(PHPClusters(eps_n, self.max_clusters))
        return state.with_(labels=labels_from_starts(starts, state.n))


@dataclass(frozen=True, kw_only=True)
class FourierSize(Block):
    """EFPA step 1: choose how many Fourier coefficients to keep (report-noisy-min).

    Acs, Castelluccia, Chen, ICDM 2012, §5 (orthonormal form of the data-aware spec
    §4.2). The score weighs the discarded energy against the noise the publishing
    block (``publisher``) will add to the kept coefficients, both as L2 norms of a
    bin-space error (the basis is orthonormal).

    The published private design suits smooth histograms only: every kept coefficient
    carries noise of scale ``K/(sqrt(N) eps2)`` and a spiky histogram needs a large
    ``K``. Measured (median of 3, ``python benchmarks/partitions.py``): on
    searchlogs_4096 at epsilon = 1 all-range MSE 1.3e6 and point MSE 2.5e3 (identity
    780 and 1.8); with the paper's ``sqrt(K)`` sensitivity it was 7.1e6. DPBench's
    EFPA (1.1e5 on search_logs) leaves the phases without noise and is not DP.
    """

    label = "fourier_size"
    zcdp = True
    spends = True
    publisher: str = "fourier"

    def run(self, state: State, view: PrivateView | None) -> State:
        eps2 = state.budgets.get(self.publisher)
        if eps2 is None:
            raise CompositionError(f"fourier_size: no block named {self.publisher!r} publishes")
        k = view.select(EFPASize(eps2, gaussian=state.definition == "zcdp"))
        return state.with_(notes={**state.notes, "fourier_k": k})


@dataclass(frozen=True, kw_only=True)
class FourierRelease(Block):
    """EFPA step 2: the kept Fourier coefficients with noise, inverted to bins.

    Privacy: the first ``K`` orthonormal coefficients have L1 sensitivity at most
    ``K/sqrt(N)`` for odd ``K`` (kernel query ``FourierCoefficients``), released by the
    lattice Laplace mechanism with this block's share; the inverse transform is
    post-processing. Under zCDP the lattice Gaussian mechanism releases them, with the
    squared L2 sensitivity ``k/N`` (odd ``k``).
    """

    label = "fourier"
    zcdp = True
    spends = True

    def run(self, state: State, view: PrivateView | None) -> State:
        k = state.notes.get("fourier_k")
        if k is None:
            raise CompositionError("fourier needs fourier_size before it")
        m = view.measure_real(FourierCoefficients(state.n, k))
        coeffs = np.zeros(state.n)
        coeffs[:k] = m.values
        # independent noise of variance m.variance on each kept coefficient: a bin's
        # variance is that times the sum over kept rows of phi[r, j]^2
        phi_sq = _kept_row_energy(state.n, k)
        return state.with_(
            estimate=inverse_fourier(coeffs),
            variance=m.variance * phi_sq,
            uncertainty=ErrorModel.without(
                "EFPA drops the Fourier coefficients past a number chosen from the data; "
                "nothing released bounds the error of the dropped ones"
            ),
        )


def _kept_row_energy(n: int, k: int) -> np.ndarray:
    """For each bin j, sum over the first k basis rows of phi[r, j]**2."""
    pairs = (k - 1) // 2  # full cosine + sine pairs: cos^2 + sin^2 = 1 each
    energy = np.full(n, (1.0 + 2.0 * pairs) / n)
    if (k - 1) % 2 == 1:  # one more row: the alternating row (k = n even) or a cosine
        if n % 2 == 0 and k == n:
            energy += 1.0 / n
        else:
            energy += (2.0 / n) * np.cos(2 * np.pi * (pairs + 1) * np.arange(n) / n) ** 2
    return energy
