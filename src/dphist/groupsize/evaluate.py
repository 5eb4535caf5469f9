"""Evaluation of group-size releases: EMD, the omniscient reference, private selection.

* :func:`emd`: earth mover's distance between two size histograms with equal totals,
  ``sum_i |Hc[i] - Ĥc[i]|`` after zero-padding (spec §4.1, Lemma 1 of Kuo et al.
  2018; :func:`dphist.metrics.emd` on equal lengths, exact in integers here).
* :func:`node_emds`, :func:`level_emds`: per region, and mean per level (spec §4.2).
* :func:`omniscient`: the non-private reference of spec §8.1 (noise only on the sizes
  that occur), analytic ``|S_r| sqrt(2)/eps_l`` and simulated.
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

from .._kernel import Accountant, GroupMeasurer, noise_source, validate_epsilon
from .._numeric.isotonic import largest_remainder, project_simplex
from ..errors import ValidationError
from .hierarchy import GroupSizeData
from .publish import DEFAULT_K, GroupSizeRelease, _plan, _release, _run, _seal

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
    """The non-private "omniscient" reference error per level (spec §8.1).

    Knows which sizes occur in each region (``S_r``) and adds Laplace noise of scale
    ``1/eps_l`` to those cells only. ``"analytic"``: mean over the level of
    ``|S_r| sqrt(2)/eps_l`` (our reconstruction of the lost formula);
    ``"simulated"``: mean EMD after noise on the occupied cells, projection onto
    ``{x >= 0, sum = G_r}`` and largest-remainder rounding, averaged over ``trials``.
    Reads the true data; not private.
    """
    h = data.hierarchy
    eps = validate_epsilon(epsilon)
    if level_epsilon is None:
        levels = [float(eps / h.n_levels)] * h.n_levels
    else:
        levels = [float(validate_epsilon(e, name="level_epsilon")) for e in level_epsilon]
    gen = np.random.default_rng(rng)
    analytic = np.zeros(h.n_levels)
    simulated = np.zeros(h.n_levels)
    counts = np.bincount(h.level).astype(np.float64)
    for r, true in enumerate(data.histograms()):
        lev = int(h.level[r])
        e = levels[lev]
        occ = np.flatnonzero(true)
        analytic[lev] += occ.shape[0] * math.sqrt(2.0) / e
        g = int(true.sum())
        if g == 0:
            continue
        total = 0
        for _ in range(trials):
            noisy = true[occ] + gen.laplace(0.0, 1.0 / e, occ.shape[0])
            est = np.zeros_like(true)
            est[occ] = largest_remainder(project_simplex(noisy, g), g)
            total += emd(true, est)
        simulated[lev] += total / trials
    return {"analytic": analytic / counts, "simulated": simulated / counts}


def select_private(
    data: GroupSizeData,
    candidates: Sequence[Mapping[str, object]],
    *,
    epsilon: object,
    selection_epsilon: object,
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
    """
    if isinstance(candidates, str | bytes) or len(candidates) == 0:
        raise ValidationError("candidates must be a non-empty sequence of parameter dicts")
    eps = validate_epsilon(epsilon)
    sel = validate_epsilon(selection_epsilon, name="selection_epsilon")
    noise = noise_source(rng)
    budget = Accountant(eps * len(candidates) + sel, label="selection")
    plans = []
    for i, cand in enumerate(candidates):
        if not isinstance(cand, Mapping):
            raise ValidationError(f"candidates[{i}] must be a dict of parameters")
        bad = set(cand) & {"data", "epsilon", "rng"}
        if bad:
            raise ValidationError(f"candidates[{i}] may not set {sorted(bad)}")
        plans.append(
            _plan(
                data,
                eps,
                cand.get("method", "cumulative"),
                cand.get("norm"),
                cand.get("level_epsilon"),
                cand.get("K", DEFAULT_K),
                cand.get("m0", 0),
                cand.get("merge", "weighted"),
            )
        )
    sealed = _seal(plans[0][0])
    measurer = GroupMeasurer(sealed, budget, noise)
    runs = []
    for i, (d, _, methods, norms, levels, k, m0) in enumerate(plans):
        merge = candidates[i].get("merge", "weighted")
        runs.append(
            _run(sealed, d, measurer, levels, methods, norms, k, m0, merge, tag=f"candidate {i}: ")
        )
    chosen = measurer.select_min_emd(
        [final for _, final, _ in runs], epsilon=sel, block="selection"
    )
    d, _, methods, norms, levels, k, m0 = plans[chosen]
    est, final, timings = runs[chosen]
    merge = candidates[chosen].get("merge", "weighted")
    rel = _release(
        d, est, final, methods, norms, k, m0, merge, levels, budget.ledger, noise, timings
    )
    return rel, chosen


def total_cost(n_candidates: int, epsilon: object, selection_epsilon: object) -> Fraction:
    """``m * epsilon + selection_epsilon``: the budget :func:`select_private` spends."""
    return n_candidates * validate_epsilon(epsilon) + validate_epsilon(
        selection_epsilon, name="selection_epsilon"
    )
