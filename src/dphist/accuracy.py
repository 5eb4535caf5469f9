"""Accuracy before spending budget: the error a method will have, and the epsilon a target needs.

For a data-independent method (its estimate is unbiased and its noise does not depend
on the counts: identity, H, HB, Boost, OPT-H, Privelet) the error of every answer has
a law known in advance. :func:`accuracy` gives, for ``n`` bins, a budget and a
workload, the expected root-mean-square error over the workload's queries and the
half-width ``h`` such that a query drawn at random from the workload, answered by a
fresh release, errs by at most ``h`` with probability ``1 - alpha``. :func:`epsilon_for`
inverts it: the smallest budget (three significant digits, rounded up) whose half-width
(or RMSE, with ``alpha=None``) meets a target.

Both read the method's exact error model from a dry run on empty counts with seeded
noise (the model depends on public facts only, so it is the one a real release has);
no data is involved. Sums over all ranges use closed forms; the half-width is the
quantile of the mixture over the workload's queries of their error laws (exact tails
for one noisy count, the kurtosis-matched law otherwise), over every query when there
are at most 200,000 and over a fixed uniform sample of that many otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

import numpy as np

from . import workloads
from .errors import ValidationError
from .methods import get_method, list_methods
from .methods.selector import Candidate, data_independent
from .session import publish
from .uncertainty import check_alpha, mixed_tail, workload_total

__all__ = ["Accuracy", "accuracy", "epsilon_for", "linear_methods", "resolve_workload"]

SAMPLE = 200_000


@dataclass(frozen=True)
class Accuracy:
    """A method's error before release: per query of ``workload`` over ``n`` bins at
    ``budget`` (epsilon, or rho under zCDP), the RMSE and the ``1 - alpha`` half-width."""

    method: str
    n: int
    budget: float
    definition: str
    workload: str
    rmse: float
    half_width: float
    alpha: float


def linear_methods() -> list[str]:
    """The registered methods whose error is known before release (unbiased, linear)."""
    return [m.name for m in list_methods() if _linear(m)]


def _linear(info: Any) -> bool:
    return data_independent(Candidate(info.name, dict(info.example)))


def resolve_workload(workload: object, n: int) -> Any:
    """A :mod:`dphist.workloads` workload, or one named: ``"point"`` (the bins),
    ``"ranges"`` (all ranges), ``"prefix"``, or an integer range length."""
    if isinstance(workload, workloads.Workload):
        if workload.n != n:
            raise ValidationError(f"the workload is over {workload.n} bins, not n={n}")
        return workload
    named = {"point": workloads.identity, "bins": workloads.identity,
             "ranges": workloads.all_ranges, "all": workloads.all_ranges,
             "prefix": workloads.prefix}  # fmt: skip
    if isinstance(workload, str) and workload.strip().lower() in named:
        return named[workload.strip().lower()](n)
    if isinstance(workload, int) and not isinstance(workload, bool):
        return workloads.fixed_length(n, workload)
    raise ValidationError(
        f"workload must be 'point', 'ranges', 'prefix', a range length or a dphist.workloads "
        f"workload; got {workload!r}"
    )


def _model(method: str, n: int, budget: float, definition: str) -> Any:
    info = get_method(method)
    if not _linear(info):
        raise ValidationError(
            f"{info.name}'s error depends on the data (grouping or smoothing bias), so it "
            f"cannot be known before release; data-independent methods: "
            f"{', '.join(linear_methods())}"
        )
    amount = {"rho" if definition == "zcdp" else "epsilon": budget}
    release = publish(np.zeros(n, dtype=np.int64), method=info.name, rng=0, **amount)
    return release.uncertainty


def _queries(workload: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every query, or a fixed uniform sample of :data:`SAMPLE` of them."""
    if workload.size <= SAMPLE:
        return workload.intervals()
    rng = np.random.default_rng(0)
    n = workload.n
    if isinstance(workload, workloads.AllRanges):
        sample = workloads.random_ranges(n, SAMPLE, rng)
        return sample.lo, sample.hi
    if isinstance(workload, workloads.Prefix):
        hi = rng.integers(1, n + 1, SAMPLE)
        return np.zeros(SAMPLE, dtype=np.int64), hi
    if isinstance(workload, workloads.Windows):
        lengths = np.array(workload.lengths)
        count = n - lengths + 1
        pick = rng.choice(lengths.size, SAMPLE, p=count / count.sum())
        lo = (rng.random(SAMPLE) * count[pick]).astype(np.int64)
        return lo, lo + lengths[pick]
    pick = rng.integers(0, workload.size, SAMPLE)
    return workload.lo[pick], workload.hi[pick]


def _half_width(model: Any, workload: Any, alpha: float) -> float:
    lo, hi = _queries(workload)
    noise = model.noise
    var = noise.variance(lo, hi)
    k4 = noise.fourth_cumulant(lo, hi)
    kurtosis = np.where(var > 0, k4 / np.where(var > 0, var, 1.0) ** 2, 0.0)
    sd = np.sqrt(var)
    coef = noise.single(lo, hi)
    one = coef > 0

    def excess(h: float) -> float:
        tail = mixed_tail(h / np.where(sd > 0, sd, 1.0), kurtosis)
        if np.any(one):  # one noisy count: its exact tail
            tail[one] = _exceed(noise.tail, np.floor(h / coef[one] + 1e-9).astype(np.int64))
        return float(np.mean(tail)) - alpha

    top = float(sd.max()) * 50.0 + 1.0
    from scipy.optimize import brentq  # scipy on first use: not loaded by a publish

    root = brentq(excess, 0.0, top, xtol=1e-12 * top)
    # six significant digits, rounded up, and still within alpha (a step of the exact
    # tail of one noisy count sits exactly at an integer)
    h = _round_up(root, 6)
    while excess(h) > 0:
        h = _round_up(h * (1 + 1e-6), 6)
    return h


def _round_up(x: float, digits: int) -> float:
    if x <= 0:
        return 0.0
    step = Decimal(1).scaleb(math.floor(math.log10(x)) - digits + 1)
    return float(Decimal(x).quantize(step, rounding=ROUND_CEILING))


def _exceed(tail: Any, k: np.ndarray) -> np.ndarray:
    values, inverse = np.unique(k, return_inverse=True)
    return np.array([tail.exceed(int(v)) for v in values])[inverse]


def accuracy(
    method: str,
    n: int,
    epsilon: float | None = None,
    workload: object = "ranges",
    alpha: float = 0.05,
    *,
    rho: float | None = None,
) -> Accuracy:
    """The error ``method`` will have on ``n`` bins at ``epsilon`` (or ``rho`` under
    zCDP) for the queries of ``workload`` (see the module docstring).

    >>> import dphist as dh
    >>> a = dh.accuracy("identity", 100, epsilon=1.0, workload="point")
    >>> round(a.rmse, 3), a.half_width
    (1.357, 3.0)
    """
    if (epsilon is None) == (rho is None):
        raise ValidationError("give exactly one of epsilon= (pure DP) or rho= (zCDP)")
    a = check_alpha(alpha)
    definition = "pure" if rho is None else "zcdp"
    budget = float(epsilon if rho is None else rho)
    work = resolve_workload(workload, n)
    if isinstance(method, str) and method.strip().lower() == "auto":
        raise ValidationError(_auto_accuracy(n, budget, definition, workload, work, a))
    model = _model(method, n, budget, definition)
    rmse = math.sqrt(workload_total(model.noise, work) / work.size)
    return Accuracy(
        get_method(method).name, n, budget, definition, _name(workload),
        rmse, _half_width(model, work, a), a,
    )  # fmt: skip


def _auto_accuracy(
    n: int, budget: float, definition: str, workload: object, work: Any, alpha: float
) -> str:
    """Why ``auto`` has no accuracy before release, with its data-independent
    candidates' accuracy at the budget its chosen method gets."""
    from .methods.selector import CANDIDATES, DEFAULT_SHARE, SMALL_DOMAIN

    left = budget * (1 - float(DEFAULT_SHARE)) if n > SMALL_DOMAIN else budget
    name = "rho" if definition == "zcdp" else "epsilon"
    amount = {"rho" if definition == "zcdp" else "epsilon": left}
    names = dict.fromkeys(c.method for c in CANDIDATES if data_independent(c))
    lines = []
    for m in names:
        acc = accuracy(m, n, workload=workload, alpha=alpha, **amount)
        lines.append(f"{m}: RMSE {acc.rmse:.4g}, {1 - alpha:.0%} within {acc.half_width:.4g}")
    return (
        "method 'auto' has no accuracy known before release: which method it picks, and "
        "the error of most of its candidates, depend on the data. Its data-independent "
        f"candidates on {_name(workload)} queries over {n} bins at the {name} {left:.4g} "
        f"left after auto's features -- {'; '.join(lines)}. auto is trained to stay "
        "within 1.2x of the better of identity and HB; name one of these methods for an "
        "accuracy that holds before release."
    )


def _name(workload: object) -> str:
    return workload if isinstance(workload, str) else repr(workload)


def epsilon_for(
    method: str,
    n: int,
    target: float,
    workload: object = "ranges",
    alpha: float | None = 0.05,
    *,
    definition: str = "pure",
) -> float:
    """The smallest budget, rounded up to three significant digits, at which ``method``
    on ``n`` bins answers ``workload`` within ``target``: the ``1 - alpha`` half-width,
    or the RMSE when ``alpha`` is None. ``definition="zcdp"`` returns a rho.

    >>> import dphist as dh
    >>> dh.epsilon_for("identity", 100, 3.0, "point")
    1.0
    """
    if not (isinstance(target, int | float) and math.isfinite(target) and target > 0):
        raise ValidationError(f"target must be a positive number; got {target!r}")
    if definition not in ("pure", "zcdp"):
        raise ValidationError(f"definition must be 'pure' or 'zcdp'; got {definition!r}")
    if alpha is not None:
        check_alpha(alpha)
    power = 1.0 if definition == "pure" else 2.0  # error ~ 1/epsilon, or 1/sqrt(rho)

    def error(budget: float) -> float:
        kw = {"epsilon": budget} if definition == "pure" else {"rho": budget}
        acc = accuracy(method, n, workload=workload, alpha=alpha or 0.05, **kw)
        return acc.rmse if alpha is None else acc.half_width

    budget = 1.0
    for _ in range(8):  # the error scales almost exactly as budget**(-1/power)
        step = (error(budget) / target) ** power
        budget *= step
        if abs(step - 1.0) < 1e-6:
            break
    rounded = _round_up(budget, 3)
    while error(rounded) > target:
        rounded = _round_up(rounded * 1.001, 3)
    return rounded
