"""What blocks say about the error of what they publish (see :mod:`dphist.uncertainty`).

Publishing blocks state the exact noise of their estimate; a publication of groups
adds the grouping's bias, accounted for with the best information the method released
(:func:`grouping_model`): intervals from the method's first-stage noisy counts (exact;
much tighter than a split's bound when the groups are scattered by a sort), else a
bound from the split that chose the groups, else the bracket that non-negative counts
give contiguous groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernel import Measurement, PrivateView, Selection
from ..uncertainty import (
    Bracket,
    ErrorModel,
    FirstStage,
    Groups,
    NoiseModel,
    SplitBound,
    Tail,
)
from .base import State

__all__ = ["grouping_model", "law_of", "select_groups", "tail_of"]


def law_of(view: PrivateView) -> str:
    """The kernel's noise in ``view``: ``"laplace"``, or ``"gaussian"`` under zCDP."""
    return "gaussian" if view.definition == "zcdp" else "laplace"


def tail_of(m: Measurement, view: PrivateView) -> Tail:
    """The law of one noisy answer of ``m``."""
    return Tail(law_of(view), m.scale)


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


def grouping_model(state: State, noise: NoiseModel, labels: np.ndarray) -> ErrorModel:
    """The error model of a publication of the groups ``labels`` (original bin order)
    with noise ``noise``: first-stage intervals, else the split's bound, else the
    bracket (see the module docstring). A method whose estimate reuses its first-stage
    counts (NoiseFirst, SORTaki's weighted average) has those, so nothing of its
    estimate's noise needs to be exact given the groups."""
    groups = Groups(labels)
    split = state.notes.get("split_bound")
    first = state.notes.get("first_stage")
    if first is not None:
        values, model = first
        return ErrorModel(noise, FirstStage(values, model, groups))
    if split is not None:
        return ErrorModel(noise, SplitBound(groups, **split))
    if groups.contiguous:
        return ErrorModel(noise, Bracket(groups))
    return ErrorModel.without("the groups are scattered and nothing released bounds their bias")
