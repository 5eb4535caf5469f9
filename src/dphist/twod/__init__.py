"""Two-dimensional histograms: cross-tabulations and spatial counts.

A 2-D histogram is a ``rows x cols`` array of counts over two public binnings (row ``i``,
column ``j`` is the cell of the ``i``-th bin of the first attribute and the ``j``-th of
the second). :func:`dphist.publish` and :class:`dphist.Session` take one directly;
:func:`dphist.histogram2d` counts raw records into one. The kernel seals the cells in
row-major order with their public shape; methods (:func:`list_grid_methods`) are
recipes of blocks measured through the kernel's 2-D queries, and a
:class:`Release2D` answers rectangles in ``O(1)`` with exact error bars for the linear
methods.
"""

from __future__ import annotations

from .._kernel import is_grid
from ..methods.registry import MethodInfo
from .catalog import GRID_METHODS, ORDERS
from .release import Release2D
from .run import GridMethod, checked_grid, grid_method, release_grid

__all__ = [
    "GRID_METHODS",
    "ORDERS",
    "GridMethod",
    "Release2D",
    "checked_grid",
    "get_grid_method",
    "grid_method",
    "is_grid",
    "list_grid_methods",
    "release_grid",
]


def list_grid_methods() -> tuple[MethodInfo, ...]:
    """The registered 2-D methods, in registration order."""
    return GRID_METHODS.all()


def get_grid_method(name: object) -> MethodInfo:
    """The 2-D method registered under ``name`` or an alias (case-insensitive)."""
    return GRID_METHODS.get(name)
