"""dphist: histograms under epsilon-differential privacy.

>>> import dphist as dh
>>> rel = dh.publish([5, 0, 2, 9], epsilon=0.5, method="identity", rng=7)
>>> rel.range_sum(0, 2) == rel.estimate[0] + rel.estimate[1]
True
"""

from importlib import import_module

from . import errors
from ._kernel import REST
from .accuracy import Accuracy, accuracy, epsilon_for, linear_methods
from .definitions import PureDP, zCDP
from .errors import BudgetExceededError, DphistError, UnknownMethodError
from .methods import MethodInfo, get_method, list_methods
from .release import Release
from .session import Session, publish, zcdp_methods
from .uncertainty import NoErrorBarError

# Imported on first use (``dh.twod``, ``dh.histogram``, ...): ``import dphist`` loads
# only what a publication of counts needs.
_LAZY = {
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
