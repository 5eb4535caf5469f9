"""What blocks say about the error of what they publish (see :mod:`dphist.uncertainty`).

Publishing blocks state the exact noise of their estimate; a publication of groups
adds the grouping's bias, accounted for with the best information the method released
(:func:`grouping_model`): a bound from the split that chose the groups, else an
estimate from the method's first-stage noisy counts, else the bracket that
non-negative counts give contiguous groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernel import Measurement, PrivateView, Selection
from ..uncertainty import (
    Bracket,
    ErrorModel,
    Groups,
    NoiseModel,
    SplitBound,
    Tail,
    WithinGroups,
    within_variance,
)
from .base import State

__all__ = ["grouping_model", "select_groups", "tail_of"]


def tail_of(m: Measurement, view: PrivateView) -> Tail:
    """The law of one noisy answer of ``m`` (discrete Laplace, or Gaussian under zCDP)."""
    return Tail("gaussian" if view.definition == "zcdp" else "laplace", m.scale)


def select_groups(view: PrivateView, selection: Selection, tree: Any) -> tuple[np.ndarray, dict]:
    """Run a biased-split selection of ``tree``'s nodes; return the chosen node mask and
    the note :func:`grouping_model` turns into a bound (the split's public noise plan
    and the level of each chosen node, in the order of their first bins)."""
    plan = selection.plan(view.selection_epsilon())
    chosen = view.select(selection)
    nodes = np.flatnonzero(chosen)
    levels = tree.level[nodes][np.argsort(tree.lo[nodes], kind="stable")]
    note = {
        "level": levels,
        "theta": plan.theta,
        "delta": plan.delta,
        "tail": Tail("laplace", plan.scale),
        "unit": plan.d_units,
    }
    return chosen, note


def grouping_model(
    state: State, noise: NoiseModel, labels: np.ndarray, *, reused: str | None = None
) -> ErrorModel:
    """The error model of a publication of the groups ``labels`` (original bin order,
    groups numbered as in ``state.labels``) with noise ``noise``.

    ``reused`` names the first-stage values the estimate itself reuses (their noise
    is then not exact given the groups, which were chosen from them); the bias is
    then always estimated from the first-stage noisy counts.
    """
    groups = Groups(labels)
    split = state.notes.get("split_bound")
    first_stage = state.noisy is not None and state.variance is not None
    if split is not None and reused is None:
        return ErrorModel(noise, SplitBound(groups, **split))
    if first_stage:
        sigma2 = float(np.max(state.variance))
        within = within_variance(state.noisy, state.labels, sigma2, state.order is not None)
        source = "the first-stage noisy counts"
        if reused is not None:
            source += f" ({reused} reuses them: its noise is approximate)"
        return ErrorModel(noise, WithinGroups(groups, within, source))
    if groups.contiguous:
        return ErrorModel(noise, Bracket(groups))
    return ErrorModel.without("the groups are scattered and nothing released bounds their bias")
