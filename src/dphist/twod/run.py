"""One 2-D release: resolve the method, run its blocks on the sealed cells, build the
:class:`~dphist.twod.release.Release2D`.

:class:`~dphist.Session`, when its counts are 2-D, calls :func:`checked_grid`,
reserves the release's budget (and charges a stored one), then :func:`release_grid`;
methods run through :func:`dphist.methods.run.run`, so a 2-D release, an audited run
and a measured run are the same computation. A method along a public order of the
cells (``"hilbert:NAME"``, DAWA) runs its 1-D blocks on the cells in that order (the
kernel reorders the sealed counts) and its estimate and error model are put back on
the grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._kernel import Accountant, NoiseSource, ProtectedCounts
from .._numeric.grid2d import hilbert_order
from ..blocks import Pipeline
from ..errors import ValidationError
from ..methods import get_method
from ..methods.registry import MethodInfo
from ..methods.run import Outcome, run
from ..uncertainty import ErrorModel
from ..uncertainty.rectangles import OrderNoise, RectErrorModel
from .catalog import GRID_METHODS, ORDERS
from .release import Release2D

__all__ = ["GridMethod", "checked_grid", "grid_method", "release_grid", "run_grid"]

_PREFIX = "hilbert:"


@dataclass(frozen=True)
class GridMethod:
    """A resolved 2-D method: its registry entry and the public order of the cells it
    runs along (None: on the grid itself)."""

    info: MethodInfo
    order: str | None = None
    prefixed: bool = False  # a 1-D method named "order:NAME"

    @property
    def name(self) -> str:
        return f"{self.order}:{self.info.name}" if self.prefixed else self.info.name

    def pipeline(self, **params: Any) -> Pipeline:
        return self.info.pipeline(**params)


def grid_method(method: object) -> GridMethod:
    """The 2-D method named ``method``, or ``"hilbert:NAME"``: the 1-D method NAME along
    the Hilbert curve."""
    if isinstance(method, str) and method.strip().lower().startswith(_PREFIX):
        return GridMethod(get_method(method.strip()[len(_PREFIX) :]), "hilbert", prefixed=True)
    if isinstance(method, str) and method.strip().lower() == "auto":
        raise ValidationError(
            "method 'auto' chooses among 1-D methods; for a 2-D histogram name one of "
            + ", ".join(GRID_METHODS.methods)
        )
    info = GRID_METHODS.get(method)
    return GridMethod(info, ORDERS.get(info.name))


def _order(name: str, shape: tuple[int, int]) -> np.ndarray:
    if name == "hilbert":
        return hilbert_order(shape)
    raise ValidationError(f"unknown order of cells {name!r}")


def run_grid(
    method: GridMethod,
    pipeline: Pipeline,
    data: ProtectedCounts,
    *,
    epsilon: Fraction,
    budget: Accountant,
    noise: NoiseSource,
    definition: str = "pure",
) -> tuple[np.ndarray, Outcome, RectErrorModel | None]:
    """Run ``pipeline`` on the sealed cells: the ``rows x cols`` estimate, the outcome
    and the 2-D error model."""
    shape = data.shape
    if method.order is None:
        outcome = run(
            pipeline, data, epsilon=epsilon, budget=budget, noise=noise, definition=definition
        )
        return outcome.estimate.reshape(shape), outcome, outcome.uncertainty
    order = _order(method.order, shape)
    outcome = run(
        pipeline, data.reordered(order), epsilon=epsilon, budget=budget, noise=noise,
        definition=definition,
    )  # fmt: skip
    cells = np.empty(data.n)
    cells[order] = outcome.estimate
    return (
        cells.reshape(shape),
        outcome,
        _ordered_model(outcome.uncertainty, shape, order),
    )


def _ordered_model(model: Any, shape, order) -> RectErrorModel | None:
    """A 1-D error model along ``order`` as a 2-D one: exact noise when it is unbiased.

    An estimate spread over groups along the curve states no error bar in 2-D: the
    bracket of its groups covered about half of the rectangles for DAWA on the shared
    2-D datasets (``benchmarks/twod.py``), far from the 95% it would claim."""
    if not isinstance(model, ErrorModel) or model.withheld is not None:
        reason = getattr(model, "withheld", None) or "the method states no error model"
        return RectErrorModel.without(reason)
    if model.bias.kind == "none":
        return RectErrorModel(OrderNoise(shape, model.noise, order))
    return RectErrorModel.without(
        "the estimate is spread over groups along the Hilbert curve; their bracket does not "
        "hold rectangles at the stated rate, so no error bar is stated"
    )


def checked_grid(
    method: object, params: dict[str, Any], definition: str
) -> tuple[GridMethod, Pipeline]:
    """The 2-D method and its pipeline, checked: nothing read, nothing spent."""
    resolved = grid_method(method)
    pipeline = resolved.pipeline(**params)
    if definition == "zcdp" and not all(b.zcdp for b in pipeline.blocks):
        raise ValidationError(f"method {resolved.name!r} has no zero-concentrated DP version yet")
    return resolved, pipeline


def release_grid(
    data: ProtectedCounts,
    method: GridMethod,
    pipeline: Pipeline,
    params: dict[str, Any],
    *,
    epsilon: Fraction,
    budget: Accountant,
    noise: NoiseSource,
    definition: str,
    guarantee: Any,
    private_noise: bool,
    unit: str,
) -> Release2D:
    """Publish the sealed 2-D counts with ``method`` and its checked ``pipeline``
    (:func:`checked_grid`) under ``budget``, already reserved for ``epsilon``;
    ``guarantee(certified)`` gives the guarantee text."""
    cells, outcome, model = run_grid(
        method, pipeline, data, epsilon=epsilon, budget=budget, noise=noise, definition=definition
    )
    return Release2D(
        estimate=cells,
        method=method.name,
        params={**method.info.defaults, **params},
        epsilon=epsilon,
        ledger=outcome.ledger,
        private=private_noise and outcome.certified,
        guarantee=guarantee(outcome.certified),
        uncertainty=model,
        timings=outcome.timings,
        privacy_unit=unit,
        max_records=data.max_records,
        definition=definition,
    )
