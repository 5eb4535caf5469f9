"""Error readings the reproductions use to explain why a figure differs from a paper's.

* :func:`kld_conventions` - KLD under every plausible reading of the papers' formula;
* :func:`convention_fit` - how well values under one reading match a paper's column;
* :func:`error_inflation` - range error over what independent bin errors would give;
* :func:`sorted_range_mse` - range error over the histogram sorted by true count;
* :func:`seeded_release` - one seeded release for these diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ... import metrics
from ...errors import ValidationError
from ...session import publish
from .. import experiments as ex

__all__ = [
    "KLD_CONVENTIONS",
    "convention_fit",
    "error_inflation",
    "kld_conventions",
    "seeded_release",
    "sorted_range_mse",
]

#: KLD conventions tried against the papers' magnitudes (labels of :func:`kld_conventions`).
KLD_CONVENTIONS = ("τ=1e-3", "τ=1", "τ=1e-6", "zero bins dropped", "log2, τ=1e-3")


def kld_conventions(true: np.ndarray, estimate: np.ndarray) -> dict[str, float]:
    """KLD of ``estimate`` against ``true`` under the plausible readings of AHP §3.3.

    The papers write ``sum H ln(H / H~)`` with ``0 ln 0 = 0`` and leave zero and
    negative estimates open. Readings: normalised with a pseudo-count ``τ`` per bin
    (1e-3, 1, 1e-6; :func:`dphist.metrics.kld`); only the bins where both the truth
    and the clipped estimate are positive, renormalised over them; and base-2
    logarithms with ``τ = 1e-3``.
    """
    h = np.asarray(true, dtype=np.float64)
    g = np.maximum(np.asarray(estimate, dtype=np.float64), 0.0)
    taus = (1e-3, 1.0, 1e-6)
    out = {lab: metrics.kld(h, g, t) for lab, t in zip(KLD_CONVENTIONS, taus, strict=False)}
    both = (h > 0) & (g > 0)
    if np.any(both):
        p, q = h[both] / h[both].sum(), g[both] / g[both].sum()
        out["zero bins dropped"] = max(float(np.dot(p, np.log(p / q))), 0.0)
    else:
        out["zero bins dropped"] = math.nan
    out["log2, τ=1e-3"] = out["τ=1e-3"] / math.log(2)
    return out


def convention_fit(ours: Sequence[float], paper: Sequence[float]) -> dict[str, float]:
    """How well values under one KLD reading match the paper's: a scale-free summary.

    ``median ratio`` is the median of ours / paper, ``spread`` the factor between the
    largest and smallest ratio, ``within 3x`` the number of cells within a factor 3.
    A reading that explains the paper has a median ratio near 1 and a small spread.
    """
    q = np.asarray(ours, dtype=np.float64) / np.asarray(paper, dtype=np.float64)
    q = q[np.isfinite(q) & (q > 0)]
    if q.size == 0:
        return {"median ratio": math.nan, "spread": math.nan, "within 3x": 0}
    return {
        "median ratio": float(np.median(q)),
        "spread": float(q.max() / q.min()),
        "within 3x": int(np.count_nonzero((q >= 1 / 3) & (q <= 3))),
    }


def sorted_range_mse(true: np.ndarray, estimate: np.ndarray, r: float) -> float:
    """Range MSE (ranges of ``r``% of the domain) after ordering bins by true count.

    The alternative reading of AHP's Figs 2 and 4: ranges taken over the sorted
    histogram (where AHP's clusters are contiguous) instead of the public bin order.
    """
    h = np.asarray(true, dtype=np.float64)
    order = np.argsort(h, kind="stable")
    est = np.asarray(estimate, dtype=np.float64)[order]
    return ex.metric("range_pct_mse", r=r)(h[order], est)


def error_inflation(true: np.ndarray, estimate: np.ndarray, length: int) -> float:
    """Mean squared error of all ranges of ``length`` bins over ``length`` x the bin MSE.

    About 1 when the bin errors are independent and zero-mean (Laplace per bin); far
    above 1 when neighbouring bins err in the same direction, as when they share a
    cluster whose mean is off, so the range error grows like ``length**2``.
    """
    err = np.asarray(estimate, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    if not 1 <= length <= err.size:
        raise ValidationError(f"length must be in [1, {err.size}], got {length}")
    per_bin = float(np.mean(err**2))
    if per_bin == 0:
        return math.nan
    csum = np.concatenate(([0.0], np.cumsum(err)))
    ranges = csum[length:] - csum[:-length]
    return float(np.mean(ranges**2)) / (length * per_bin)


def seeded_release(counts: np.ndarray, method: ex.Method, eps: float, seed: int) -> np.ndarray:
    """One seeded release (diagnostics only; the tables come from the grid)."""
    rng = np.random.default_rng([seed, 2014])
    return publish(counts, epsilon=eps, method=method.name, rng=rng, **dict(method.params)).estimate
