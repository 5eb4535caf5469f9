"""``method="auto"``: choose a method and its settings from noisy features and public facts.

:func:`choose` reads the number of bins ``N``, epsilon, the kind of queries the
release will answer, a time budget and, optionally, a noisy number of records and of
records in the fullest tenth of the bins, which ``auto`` measured through the kernel
with a declared share of the budget (default :data:`DEFAULT_SHARE`, from the trained
model; 0 uses public facts only). The model (:mod:`dphist.methods.selector`) ranks
the candidates for those features; the first whose predicted run time fits the time
budget is chosen. Data enter only through the two noisy counts, so the choice is
post-processing of a charged measurement.

Workload kinds (:data:`WORKLOAD_KINDS`) and what they mean in training:
``"point"`` single bins (also ``"categorical"``); ``"short"`` ranges of 1-10 bins
(SORTaki's small ranges); ``"long"`` ranges of N/8, N/4 and N/2 bins; ``"all"`` every
range (also ``"mixed"``, ``"medium"``, ``"ranges"`` and no workload at all);
``"prefix"`` the N prefixes. A typical length in bins, or a :mod:`dphist.workloads`
workload, is mapped to the nearest kind by its mean length.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .._kernel import validate_epsilon
from ..blocks import REST, AutoFeatures, Pipeline
from ..errors import InputTypeError, ValidationError
from .selector import (
    DEFAULT_SHARE,
    SMALL_DOMAIN,
    WORKLOADS,
    Candidate,
    Model,
    data_independent,
    feature_vector,
    load_model,
)

__all__ = [
    "DEFAULT_SHARE",
    "DEFAULT_TIME_BUDGET",
    "WORKLOAD_KINDS",
    "Choice",
    "choose",
    "features_pipeline",
    "predicted_seconds",
    "pure_equivalent",
    "workload_kind",
]

#: Seconds a release may take when no time budget is given.
DEFAULT_TIME_BUDGET = 60.0

WORKLOAD_KINDS: tuple[str, ...] = WORKLOADS

_ALIASES = {
    "point": "point",
    "points": "point",
    "identity": "point",
    "categorical": "point",
    "category": "point",
    "short": "short",
    "small": "short",
    "long": "long",
    "large": "long",
    "big": "long",
    "all": "all",
    "mixed": "all",
    "medium": "all",
    "ranges": "all",
    "prefix": "prefix",
    "prefixes": "prefix",
    "cdf": "prefix",
}


# Rough single-core seconds per N log2 N (from benchmarks/partitions.py and
# benchmarks/schemes.py at N = 10**6, rounded up); typical figures only, since run time
# varies with the data, which the choice never observes.
_PER_NLOGN = {"P-HP": 3e-7, "DPC": 2e-7, "sDPC": 2e-7, "NF": 1e-7, "S2": 1e-7, "O+S2": 1e-7}
_DEFAULT_PER_NLOGN = 5e-8


def predicted_seconds(method: str, n: int) -> float:
    """Rough run time of a candidate ``method`` on ``n`` bins."""
    return _PER_NLOGN.get(method, _DEFAULT_PER_NLOGN) * n * math.log2(max(n, 2))


def _kind_of_length(length: float, n: int) -> str:
    if length <= 1:
        return "point"
    if length <= max(10.0, n / 100):
        return "short"
    if length >= n / 8:
        return "long"
    return "all"


def _mean_length(workload: Any, n: int) -> float | None:
    """Mean query length of a :mod:`dphist.workloads` workload; None for all ranges."""
    from .. import workloads as wl

    if getattr(workload, "n", None) != n:
        raise ValidationError(
            f"workload is over {getattr(workload, 'n', '?')} bins; the histogram has {n}"
        )
    if isinstance(workload, wl.AllRanges):
        return None
    if isinstance(workload, wl.Prefix):
        return -1.0
    if isinstance(workload, wl.Windows):
        lengths = [int(x) for x in workload.lengths]
        counts = [n - x + 1 for x in lengths]
        return sum(x * c for x, c in zip(lengths, counts, strict=True)) / sum(counts)
    if isinstance(workload, wl.Intervals):
        return float((workload.hi - workload.lo).mean())
    raise InputTypeError(f"workload of type {type(workload).__name__} is not supported")


def workload_kind(n: int, workload: object = None) -> tuple[str, str]:
    """``(kind, description)`` of the expected queries; kind is one of WORKLOAD_KINDS.

    ``workload`` is None (every range: ``"all"``), a kind name or alias, a typical
    query length in bins, or a :mod:`dphist.workloads` workload over ``n`` bins (only
    its public bounds are read).
    """
    if workload is None:
        return "all", "ranges of every length (no workload given)"
    if isinstance(workload, str):
        kind = _ALIASES.get(workload.strip().lower())
        if kind is None:
            known = ", ".join(sorted(_ALIASES))
            raise ValidationError(f"unknown workload {workload!r}; use one of: {known}")
        return kind, f"{kind} queries"
    if isinstance(workload, bool):
        raise InputTypeError("workload must be a kind, a query length or a workload")
    if isinstance(workload, numbers.Real):
        length = float(workload)
        if not (math.isfinite(length) and 1 <= length <= n):
            raise ValidationError(f"a typical query length must lie in 1..{n}; got {workload!r}")
        kind = _kind_of_length(length, n)
        return kind, f"{kind} queries (typical length {length:g} of {n} bins)"
    mean = _mean_length(workload, n)
    if mean is None:
        return "all", f"ranges of every length ({type(workload).__name__} workload)"
    if mean < 0:
        return "prefix", "prefix queries (Prefix workload)"
    kind = _kind_of_length(mean, n)
    return kind, f"{kind} queries (mean length {mean:.3g} of {n} bins)"


def time_budget_seconds(time_budget: object) -> float:
    """A time budget in seconds, checked (None: :data:`DEFAULT_TIME_BUDGET`)."""
    if time_budget is None:
        return DEFAULT_TIME_BUDGET
    if isinstance(time_budget, bool) or not isinstance(time_budget, numbers.Real):
        raise InputTypeError(f"time_budget must be a number of seconds; got {time_budget!r}")
    t = float(time_budget)
    if not (math.isfinite(t) and t > 0):
        raise ValidationError(f"time_budget must be a positive number of seconds; got {t!r}")
    return t


def features_pipeline() -> Pipeline:
    """What ``auto`` measures before choosing: a noisy total and the noisy records in
    the fullest tenth of the bins, with its whole share
    (:class:`~dphist.blocks.AutoFeatures`)."""
    return Pipeline((AutoFeatures(share=REST),))


def feature_share(share: object) -> Fraction:
    """The share of epsilon ``auto`` spends on features, read exactly, in [0, 1/2]."""
    if share is None:
        return DEFAULT_SHARE
    if isinstance(share, bool):
        raise InputTypeError("auto_share must be a number in [0, 0.5]")
    try:
        value = Fraction(str(share)) if isinstance(share, float | str) else Fraction(share)
    except (TypeError, ValueError):
        raise InputTypeError(f"auto_share must be a number in [0, 0.5]; got {share!r}") from None
    if not 0 <= value <= Fraction(1, 2):
        raise ValidationError(f"auto_share must lie in [0, 0.5]; got {share!r}")
    return value


def pure_equivalent(budget: object, definition: str = "pure") -> float:
    """The epsilon the model reads for a method's budget: epsilon itself, or under
    zCDP ``2 sqrt(rho)``.

    The model reads epsilon as signal to noise
    (:func:`~dphist.methods.selector.feature_vector`): one count of sensitivity 1 gets
    variance ``2 / epsilon**2`` from Laplace noise and ``1 / (2 rho)`` from Gaussian
    noise at rho, equal at ``epsilon = 2 sqrt(rho)``. Under zCDP this is only the
    trees' coordinate: the model ranks zCDP releases with trees trained on errors
    measured under zCDP (the Gaussian versions gain where a record enters many
    measurements, hierarchies most, so a pure ranking read at ``2 sqrt(rho)`` loses
    to HB more often; ``benchmarks/auto_zcdp.py`` measures both).
    """
    if definition == "zcdp":
        return 2.0 * math.sqrt(float(budget))
    return float(budget)


@dataclass(frozen=True)
class Choice:
    """What ``auto`` chose: the method, its settings, and why (in words; ``leaf`` keeps
    the model's region with its thresholds for the JSON)."""

    method: str
    params: dict[str, Any]
    reason: str
    leaf: str = ""


def _percent(share: Fraction) -> str:
    return f"{float(share) * 100:.3g}%"


def choose(
    n: int,
    epsilon: object,
    workload: object = None,
    time_budget: object = None,
    *,
    noisy_total: float | None = None,
    noisy_top_tenth: float | None = None,
    model: Model | None = None,
    definition: str = "pure",
    share: object = None,
) -> Choice:
    """The method for ``n`` bins whose release spends ``epsilon`` (``rho`` with
    ``definition="zcdp"``, read through :func:`pure_equivalent`).

    ``noisy_total`` and ``noisy_top_tenth`` are the number of records and the records
    in the fullest tenth of the bins as ``auto`` measured them (None: public facts
    only), with ``share`` of the budget (for the reason's words); ``model`` replaces
    the shipped one (the held-out evaluation fits one per data set). Deterministic:
    the same inputs always give the same choice.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValidationError(f"n must be a positive number of bins; got {n!r}")
    if definition not in ("pure", "zcdp"):
        raise ValidationError(f"definition must be 'pure' or 'zcdp'; got {definition!r}")
    n = int(n)
    name = "rho" if definition == "zcdp" else "epsilon"
    budget = validate_epsilon(epsilon, name=name)
    eps = pure_equivalent(budget, definition)
    seconds = time_budget_seconds(time_budget)
    kind, about = workload_kind(n, workload)
    measured = noisy_total is not None
    model = load_model() if model is None else model
    features = feature_vector(n, eps, noisy_total, noisy_top_tenth)
    ranking = model.rank(features, kind, measured, definition)
    pool = ranking.candidates
    if n <= SMALL_DOMAIN:  # data-dependent candidates gain nothing here (SMALL_DOMAIN)
        pool = tuple(c for c in pool if data_independent(c))
    chosen: Candidate | None = None
    skipped = []
    for cand in pool:
        if predicted_seconds(cand.method, n) <= seconds:
            chosen = cand
            break
        skipped.append(cand.label)
    if chosen is None:
        chosen = min(pool, key=lambda c: predicted_seconds(c.method, n))
    first = ranking.candidates[0].label
    where = ranking.plain() or "every histogram"
    reason = f"{chosen.label}: {about} over {n} bins at {name} {float(budget):.3g}; "
    reason += f"trained on public data, the selector ranks {first} first for {where}"
    reason += f" (within {ranking.regret:.2f}x of the best there on average)"
    if measured:
        part = _percent(Fraction(str(share))) + " of " if share is not None else "a share of "
        reason += (
            f"; {part}the {name} measured the total and the fullest tenth of the bins "
            "(the noisy values are in the release's JSON)"
        )
    else:
        reason += "; chosen from public facts only"
    if n <= SMALL_DOMAIN:
        reason += (
            f"; on at most {SMALL_DOMAIN} bins auto keeps to data-independent methods "
            f"({chosen.label} is the first of them)"
        )
    if skipped:
        reason += f"; {', '.join(skipped)} predicted to exceed the {seconds:g} s time budget"
    if definition == "zcdp":
        trained = "trained under rho" if model.trained_for("zcdp") else "trained under epsilon"
        reason += (
            f"; under zCDP the selector ({trained}) reads rho as epsilon {eps:.3g} (2 sqrt(rho))"
        )
    leaf = " and ".join(ranking.path) or "every histogram"
    return Choice(chosen.method, dict(chosen.params), reason, leaf)
