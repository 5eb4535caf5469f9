"""Evaluation of group-size releases: EMD, the omniscient reference, private selection.

* :func:`emd`: earth mover's distance between two size histograms with equal totals,
  ``sum_i |Hc[i] - Ĥc[i]|`` after zero-padding (spec §4.1, Lemma 1 of Kuo et al.
  2018; :func:`dphist.metrics.emd` on equal lengths, exact in integers here).
* :func:`node_emds`, :func:`level_emds`: per region, and mean per level (spec §4.2).
* :func:`omniscient`: the non-private reference of spec §8.1 (noise only on the counts
  of the sizes that occur): the analytic count error ``|S_r| sqrt(2)/eps_l``, the
  same count error simulated, and the EMD of the simulated estimate.
* :func:`select_private`: run several method combinations and release the one with
  the smallest noisy total EMD (spec §8.2), charged honestly: ``m`` candidates on the
  same data cost ``m * epsilon``, plus the selection's epsilon.

All helpers except :func:`select_private` compare with the true data and are *not*
private: they are for experiments on data the user owns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np

from .._kernel import Accountant, noise_source, validate_epsilon
from .._numeric.group_views import largest_remainder
from .._numeric.isotonic import project_simplex
from ..errors import ValidationError
from .hierarchy import GroupSizeData
from .publish import GroupSizeRelease, estimate, measurer_for, plan, release

__all__ = ["emd", "level_emds", "node_emds", "omniscient", "select_private"]


def emd(a: np.ndarray, b: np.ndarray) -> int:
    """EMD between two integer size histograms with equal totals (zero-padded). O(len)."""
    x = np.asarray(a, dtype=np.int64)
    y = np.asarray(b, dtype=np.int64)
    if x.ndim != 1 or y.ndim != 1:
        raise ValidationError("histograms must be 1-D")
    n = max(x.shape[0], y.shape[0], 1)
    xc = np.zeros(n, dtype=np.int64)
    yc = np.zeros(n, dtype=np.int64)
    xc[: x.shape[0]] = x
    yc[: y.shape[0]] = y
    if xc.sum() != yc.sum():
        raise ValidationError("both histograms must hold the same number of groups")
    return int(np.abs(np.cumsum(xc) - np.cumsum(yc)).sum())


def _hists(release: GroupSizeRelease | Sequence[np.ndarray], which: str) -> Sequence:
    if isinstance(release, GroupSizeRelease):
        return release.histograms if which == "final" else release.estimates
    return release


def node_emds(
    data: GroupSizeData, release: GroupSizeRelease | Sequence[np.ndarray], *, which="final"
) -> np.ndarray:
    """EMD of every region's release to its true histogram (``which``: "final" or "initial")."""
    hists = _hists(release, which)
    truth = data.histograms()
    if len(hists) != len(truth):
        raise ValidationError("the release must have one histogram per region")
    return np.array([emd(t, h) for t, h in zip(truth, hists, strict=True)], dtype=np.int64)


def level_emds(
    data: GroupSizeData, release: GroupSizeRelease | Sequence[np.ndarray], *, which="final"
) -> np.ndarray:
    """Mean EMD per level (root first), the paper's per-level error (spec §4.2)."""
    e = node_emds(data, release, which=which).astype(np.float64)
    lv = data.hierarchy.level
    return np.bincount(lv, weights=e) / np.bincount(lv)


def omniscient(
    data: GroupSizeData,
    *,
    epsilon: object,
    level_epsilon: Sequence[object] | None = None,
    trials: int = 10,
    rng: object = 0,
) -> dict[str, np.ndarray]:
    """The non-private "omniscient" reference error per level (Kuo et al. 2018, §6.2; spec §8.1).

    The reference knows which sizes occur in each region (``S_r``), so it only
    estimates the counts ``H_r[i]`` for ``i`` in ``S_r``: Laplace noise of scale
    ``1/eps_l`` (standard deviation ``sqrt(2)/eps_l``) on those cells, projection onto
    ``{x >= 0, sum = G_r}`` and largest-remainder rounding. The paper's expected error
    ``|S_r| sqrt(2)/eps_l`` counts one noise deviation per occupied cell, i.e. it is an
    error in *groups* on the count view, not an EMD. Returned per level (mean over the
    level's regions):

    * ``"analytic"``: ``|S_r| sqrt(2)/eps_l``, the paper's formula (our reconstruction);
    * ``"simulated"``: the same quantity simulated, the count error
      ``sum_i |Ĥ_r[i] - H_r[i]|`` of the reference's estimate, mean over ``trials``;
    * ``"simulated_emd"``: the EMD of that same estimate. On a sparse support it is far
      larger, because a misplaced count moves groups between distant sizes; it is the
      error of count noise, not a yardstick for the ranked and cumulative methods.

    Reads the true data; not private.
    """
    h = data.hierarchy
    eps = validate_epsilon(epsilon)
    if level_epsilon is None:
        levels = [float(eps / h.n_levels)] * h.n_levels
    else:
        levels = [float(validate_epsilon(e, name="level_epsilon")) for e in level_epsilon]
        if len(levels) != h.n_levels:
            raise ValidationError(f"level_epsilon must have one entry per level ({h.n_levels})")
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise ValidationError(f"trials must be an integer >= 1; got {trials!r}")
    gen = np.random.default_rng(rng)
    analytic = np.zeros(h.n_levels)
    counts_err = np.zeros(h.n_levels)
    emd_err = np.zeros(h.n_levels)
    for r, true in enumerate(data.histograms()):
        lev = int(h.level[r])
        occ = np.flatnonzero(true)
        analytic[lev] += occ.shape[0] * math.sqrt(2.0) / levels[lev]
        g = int(true.sum())
        if g == 0:
            continue
        c, m = _omniscient_node(true, occ, g, 1.0 / levels[lev], int(trials), gen)
        counts_err[lev] += c
        emd_err[lev] += m
    per_level = np.bincount(h.level).astype(np.float64)
    return {
        "analytic": analytic / per_level,
        "simulated": counts_err / per_level,
        "simulated_emd": emd_err / per_level,
    }


def _omniscient_node(
    true: np.ndarray, occ: np.ndarray, g: int, scale: float, trials: int, gen: np.random.Generator
) -> tuple[float, float]:
    """Mean count error and mean EMD of the reference on one region over ``trials`` draws."""
    cells = true[occ]
    count_total = emd_total = 0
    est = np.zeros_like(true)
    for _ in range(trials):
        fit = largest_remainder(
            project_simplex(cells + gen.laplace(0.0, scale, occ.shape[0]), g), g
        )
        count_total += int(np.abs(fit - cells).sum())
        est[occ] = fit
        emd_total += emd(true, est)
    return count_total / trials, emd_total / trials


def select_private(
    data: GroupSizeData,
    candidates: Sequence[Mapping[str, object]],
    *,
    epsilon: object = None,
    selection_epsilon: object = None,
    rho: object = None,
    selection_rho: object = None,
    rng: object = None,
) -> tuple[GroupSizeRelease, int]:
    """Private choice among method combinations by their error (spec §8.2).

    Every candidate (keyword arguments of ``publish_group_sizes`` except ``data``,
    ``epsilon`` and ``rng``, e.g. ``{"method": ["ranked", "cumulative"]}``) is run on
    the same data with the full ``epsilon``; then the kernel adds noise to each
    candidate's total EMD over all regions and returns the smallest
    (report-noisy-min, sensitivity = number of levels, see
    ``GroupMeasurer.select_min_emd``).

    Cost (basic composition): ``len(candidates) * epsilon + selection_epsilon``. The
    cited procedure (Chaudhuri, Monteleoni, Sarwate 2011) costs only ``epsilon`` when
    candidates see disjoint parts of the data; here every candidate sees all groups,
    so that argument does not apply and the ledger charges every candidate in full.
    Returns the chosen release (its ledger holds every charge) and its index.

    With ``rho=`` and ``selection_rho=`` instead, every candidate is a rho-zCDP release
    and the choice is the exponential mechanism at the epsilon with
    ``epsilon**2 / 8 <= selection_rho`` (bounded range); the rhos add up the same way.
    """
    if isinstance(candidates, str | bytes) or len(candidates) == 0:
        raise ValidationError("candidates must be a non-empty sequence of parameter dicts")
    zcdp = rho is not None or selection_rho is not None
    if zcdp and (epsilon is not None or selection_epsilon is not None):
        raise ValidationError("give epsilon= and selection_epsilon=, or rho= and selection_rho=")
    name = "rho" if zcdp else "epsilon"
    eps = validate_epsilon(rho if zcdp else epsilon, name=name)
    sel = validate_epsilon(selection_rho if zcdp else selection_epsilon, name=f"selection_{name}")
    noise = noise_source(rng)
    budget = Accountant(eps * len(candidates) + sel, label="selection")
    plans = []
    for i, cand in enumerate(candidates):
        if not isinstance(cand, Mapping):
            raise ValidationError(f"candidates[{i}] must be a dict of parameters")
        bad = set(cand) & {"data", "epsilon", "rho", "rng"}
        if bad:
            raise ValidationError(f"candidates[{i}] may not set {sorted(bad)}")
        plans.append(plan(data, **{name: eps}, **cand))
    measurer = measurer_for(plans[0], budget, noise)
    runs = [estimate(p, measurer, tag=f"candidate {i}: ") for i, p in enumerate(plans)]
    chosen = measurer.select_min_emd(
        [run.histograms for run in runs], epsilon=sel, block="selection"
    )
    rel = release(plans[chosen], runs[chosen], budget.ledger, noise)
    return rel, chosen


def total_cost(n_candidates: int, epsilon: object, selection_epsilon: object) -> Fraction:
    """``m * epsilon + selection_epsilon``: the budget :func:`select_private` spends."""
    return n_candidates * validate_epsilon(epsilon) + validate_epsilon(
        selection_epsilon, name="selection_epsilon"
    )
