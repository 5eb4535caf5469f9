"""dphist: histograms under epsilon-differential privacy.

>>> import dphist as dh
>>> rel = dh.publish([5, 0, 2, 9], epsilon=0.5, method="identity", rng=7)
>>> rel.range_sum(0, 2) == rel.estimate[0] + rel.estimate[1]
True
"""

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from . import errors
from .errors import BudgetExceededError, DphistError, UnknownMethodError

if TYPE_CHECKING:
    from ._kernel import REST
    from .accuracy import Accuracy, accuracy, epsilon_for, linear_methods
    from .definitions import PureDP, zCDP
    from .methods import MethodInfo, get_method, list_methods
    from .release import Release
    from .session import Session, publish, zcdp_methods
    from .uncertainty import NoErrorBarError

# Every name is imported on first use (``dh.publish``, ``dh.twod``, ...): ``import
# dphist`` alone loads nothing heavy, so the budget commands start without numpy.
_LAZY = {
    "REST": ("_kernel", "REST"),
    "Accuracy": ("accuracy", "Accuracy"),
    "accuracy": ("accuracy", "accuracy"),
    "epsilon_for": ("accuracy", "epsilon_for"),
    "linear_methods": ("accuracy", "linear_methods"),
    "PureDP": ("definitions", "PureDP"),
    "zCDP": ("definitions", "zCDP"),
    "methods": ("methods", None),
    "MethodInfo": ("methods", "MethodInfo"),
    "get_method": ("methods", "get_method"),
    "list_methods": ("methods", "list_methods"),
    "Release": ("release", "Release"),
    "Session": ("session", "Session"),
    "publish": ("session", "publish"),
    "zcdp_methods": ("session", "zcdp_methods"),
    "uncertainty": ("uncertainty", None),
    "NoErrorBarError": ("uncertainty", "NoErrorBarError"),
    "datasets": ("datasets", None),
    "export": ("export", None),
    "groupsize": ("groupsize", None),
    "ingest": ("ingest", None),
    "metrics": ("metrics", None),
    "store": ("store", None),
    "streams": ("streams", None),
    "synthetic": ("synthetic", None),
    "twod": ("twod", None),
    "workloads": ("workloads", None),
    "histogram": ("records", "histogram"),
    "histogram2d": ("records2d", "histogram2d"),
    "BudgetStore": ("store", "BudgetStore"),
    "stream": ("streams", "stream"),
    "stream_frames": ("streams", "stream_frames"),
    "Release2D": ("twod", "Release2D"),
    "list_grid_methods": ("twod", "list_grid_methods"),
}


def __getattr__(name: str) -> object:
    """The lazily imported submodules and names of :data:`_LAZY`."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'dphist' has no attribute {name!r}") from None
    value = import_module(f".{module}", __name__)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(ModuleType):
    """``dh.accuracy`` is the function, as when it was imported eagerly: importing the
    submodule of that name later (``from dphist.accuracy import ...``) must not rebind
    the package attribute to the module."""

    def __setattr__(self, name: str, value: object) -> None:
        if not (name == "accuracy" and isinstance(value, ModuleType)):
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__version__ = "0.1.0"

__all__ = [
    "REST",
    "Accuracy",
    "BudgetExceededError",
    "BudgetStore",
    "DphistError",
    "MethodInfo",
    "NoErrorBarError",
    "PureDP",
    "Release",
    "Release2D",
    "Session",
    "UnknownMethodError",
    "accuracy",
    "datasets",
    "epsilon_for",
    "errors",
    "export",
    "get_method",
    "groupsize",
    "histogram",
    "histogram2d",
    "ingest",
    "linear_methods",
    "list_grid_methods",
    "list_methods",
    "methods",
    "metrics",
    "publish",
    "store",
    "stream",
    "stream_frames",
    "streams",
    "synthetic",
    "twod",
    "uncertainty",
    "workloads",
    "zCDP",
    "zcdp_methods",
]
