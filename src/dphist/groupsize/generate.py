"""Synthetic housing data in the spirit of Kuo et al. 2018, §6.1 (spec §10.3).

Households per state follow published household-size shares (sizes 1..6 and "7 or
more"), the "7 or more" count is spread over sizes 7, 8, ... by binomial draws that
keep one ratio between neighbouring sizes, and each state gets heavy-tailed
outliers that mimic group quarters (uniform sizes 1..10 000). Groups are assigned to
counties in proportion to county weights. State sizes, state shares and county
weights are drawn from fixed seeds (the real per-state tables are not shipped), so the
data are reproducible and of realistic shape, not a copy of any census table.

Everything is kept as counts per (county, size): 10**8 groups take a few MB and
generate in about a second. All randomness comes from one
``numpy.random.SeedSequence``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import ValidationError
from .hierarchy import GroupSizeData, Hierarchy

__all__ = ["NATIONAL_SHARES", "housing"]

# U.S. 2010 households by size 1..6 and 7+ (Summary File 1, national; spec §10.3),
# used only as shares.
_NATIONAL_2010 = np.array(
    [31_204_909, 38_243_049, 18_758_006, 15_687_954, 7_233_999, 2_957_221, 2_631_154],
    dtype=np.float64,
)
NATIONAL_SHARES = _NATIONAL_2010 / _NATIONAL_2010.sum()


def _positive_int(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _tail(n6: np.ndarray, n7: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Sizes 7, 8, ... per state: binomial splits of the 7+ count with ratio rho (§10.3).

    ``rho = n7 / (n6 + n7)``, capped at 0.95 so that the tail ends even when a small
    state has no households of size 6.
    """
    rho = np.minimum(n7 / np.maximum(n6 + n7, 1), 0.95)
    left = n7.astype(np.int64)
    cols = []
    while left.any():
        take = rng.binomial(left, 1.0 - rho)
        cols.append(take)
        left = left - take
    return cols


def housing(
    n_groups: int = 1_000_000,
    *,
    levels: int = 3,
    n_states: int = 52,
    n_counties: int = 3_200,
    outliers_per_state: int = 50,
    max_outlier: int = 10_000,
    seed: int = 0,
) -> GroupSizeData:
    """Nation / state / county group sizes with about ``n_groups`` groups.

    ``levels`` = 3 (nation, states, counties), 2 (nation, states) or 1 (nation).
    Household sizes are at least 1 (use ``m0=1``); outliers reach ``max_outlier``.
    The total is ``n_groups`` exactly. Vectorised over states and sizes: O(states *
    sizes + counties * sizes).
    """
    n_groups = _positive_int(n_groups, "n_groups")
    levels = _positive_int(levels, "levels")
    if levels > 3:
        raise ValidationError("levels must be 1, 2 or 3")
    n_states = _positive_int(n_states, "n_states")
    n_counties = _positive_int(n_counties, "n_counties", n_states)
    outliers_per_state = _positive_int(outliers_per_state, "outliers_per_state", 0)
    max_outlier = _positive_int(max_outlier, "max_outlier")
    body = n_groups - outliers_per_state * n_states
    if body < 0:
        raise ValidationError("n_groups is smaller than the number of outliers")
    ss = np.random.SeedSequence(_positive_int(seed, "seed", 0))
    r_state, r_size, r_tail, r_out, r_cty, r_assign = (
        np.random.default_rng(s) for s in ss.spawn(6)
    )

    # states: sizes (lognormal weights), household shares near the national ones
    w = r_state.lognormal(0.0, 1.0, n_states)
    totals = r_state.multinomial(body, w / w.sum())
    shares = r_size.dirichlet(2_000.0 * NATIONAL_SHARES, n_states)
    base = r_size.multinomial(totals, shares)  # (states, 7): sizes 1..6 and 7+
    tail = _tail(base[:, 5], base[:, 6], r_tail)
    width = max(max_outlier, 7 + len(tail)) + 1
    hist = np.zeros((n_states, width), dtype=np.int64)
    hist[:, 1:7] = base[:, :6]
    if tail:
        hist[:, 7 : 7 + len(tail)] = np.stack(tail, axis=1)
    if outliers_per_state:
        out = r_out.integers(1, max_outlier + 1, (n_states, outliers_per_state))
        rows = np.repeat(np.arange(n_states), outliers_per_state)
        np.add.at(hist, (rows, out.ravel()), 1)

    if levels == 1:
        h = Hierarchy(np.array([-1]))
        return GroupSizeData.from_leaf_histograms(h, [hist.sum(axis=0)])
    if levels == 2:
        h = Hierarchy.from_fanouts([[n_states]])
        return GroupSizeData.from_leaf_histograms(h, list(hist))

    # counties: number per state grows with the state's size; weights lognormal
    raw = np.sqrt(w / w.sum())
    per_state = np.maximum(1, np.floor(n_counties * raw / raw.sum())).astype(np.int64)
    short = n_counties - int(per_state.sum())
    if short > 0:
        per_state[np.argsort(-raw, kind="stable")[:short]] += 1
    h = Hierarchy.from_fanouts([[n_states], per_state.tolist()])
    offsets, sizes, counts = [0], [], []
    for s in range(n_states):  # states; each state's sizes and counties at once
        cw = r_cty.lognormal(0.0, 1.2, int(per_state[s]))
        occ = np.flatnonzero(hist[s])
        split = r_assign.multinomial(hist[s, occ], cw / cw.sum())  # (sizes, counties)
        cty, idx = np.nonzero(split.T)
        sizes.append(occ[idx])
        counts.append(split.T[cty, idx])
        offsets.extend((offsets[-1] + np.cumsum(np.bincount(cty, minlength=cw.shape[0]))).tolist())
    return GroupSizeData(h, offsets, np.concatenate(sizes), np.concatenate(counts))
