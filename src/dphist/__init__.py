"""dphist: histograms under epsilon-differential privacy.

>>> import dphist as dh
>>> rel = dh.publish([5, 0, 2, 9], epsilon=0.5, method="identity", rng=7)
>>> rel.range_sum(0, 2) == rel.estimate[0] + rel.estimate[1]
True
"""

from . import (
    datasets,
    errors,
    export,
    groupsize,
    ingest,
    methods,
    metrics,
    store,
    streams,
    synthetic,
    twod,
    uncertainty,
    workloads,
)
from ._kernel import REST
from .accuracy import Accuracy, accuracy, epsilon_for, linear_methods
from .definitions import PureDP, zCDP
from .errors import BudgetExceededError, DphistError, UnknownMethodError
from .methods import MethodInfo, get_method, list_methods
from .records import histogram
from .records2d import histogram2d
from .release import Release
from .session import Session, publish, zcdp_methods
from .store import BudgetStore
from .streams import stream, stream_frames
from .twod import Release2D, list_grid_methods
from .uncertainty import NoErrorBarError

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
