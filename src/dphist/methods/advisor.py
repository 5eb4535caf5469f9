"""``method="auto"``: choose a method and its settings from public facts only.

:func:`choose` sees the number of bins ``N``, epsilon, the kind of queries the
release will answer and an optional time budget, never the counts, so the choice
itself reveals nothing and costs no budget. The rules follow the two papers that
compare the registered methods:

Kellaris, Papadopoulos, Papadias, PVLDB 2017, §7.4 ("Takeaways"), adapted to
dphist's certified noise:

* point and short range queries favour standalone smoothing (item 1). The paper
  names S~, measured with DAWA's published partition noise; dphist's S1 and S~ use
  the larger certified noise (see ``PrivateView.noisy_partition``), and S2, whose
  grouping noise needs no such surcharge, is the better standalone smoother here:
  about half of S~'s error on point and short-range queries in every cell of the
  ``dphist reproduce auto`` report. So S2 is chosen;
* S2+H wins for long ranges and is the method for time-critical use (item 3);
* for mixed or medium ranges the paper's balanced choice is S1+PMM (item 2); under
  certified noise hierarchical smoothing does better (S1+H: the paper's second most
  frequent skyline member, Table 2), so S1+H is chosen;
* H and O+S~ are dominated (item 4) and never chosen.

The adaptation was made with the evaluation report's data (an in-sample check, not
an independent one).

Doudalis and Mehrotra, SORTaki, §VII: sorting pays off for identity (point)
workloads over categorical domains, where neighbouring bins have no relation; with
the dynamic-programming partitioner (sDAHP) and ``gamma_in = 0.9`` on large domains
(§VII-A, Tables III-IV); on small domains the best ``gamma_in`` falls with epsilon
and the WAF finalizer is the better one at larger epsilon (§VII-C, Tables VIII-IX).
For range queries over ordered domains sorting does not help (§VII-B, Table VII), so
it is used for categorical workloads only.

Thresholds, stated once here: a "large" categorical
domain has at least 16,384 bins; ranges are "short" up to ``max(10, N/100)`` bins
(SORTaki's small-range workload is lengths 1-10) and "long" beyond ``N/16``
(Kellaris et al. Figs. 15-18: from r of about 4-16 % the fixed-query and
hierarchical combinations overtake smoothing).

Time: each candidate's run time is predicted from its complexity with a rough
per-core constant (measured with ``benchmarks/schemes.py``); a candidate predicted
to exceed the time budget (default :data:`DEFAULT_TIME_BUDGET` seconds) gives way to
the next, faster one in the rule's list.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .._kernel import validate_epsilon
from ..errors import InputTypeError, ValidationError

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "WORKLOAD_KINDS",
    "choose",
    "predicted_seconds",
    "workload_kind",
]

#: Seconds a release may take when no time budget is given.
DEFAULT_TIME_BUDGET = 60.0

WORKLOAD_KINDS: tuple[str, ...] = ("point", "categorical", "short", "medium", "long", "mixed")
_ALIASES = {
    "point": "point",
    "points": "point",
    "identity": "point",
    "categorical": "categorical",
    "category": "categorical",
    "short": "short",
    "small": "short",
    "medium": "medium",
    "long": "long",
    "large": "long",
    "big": "long",
    "mixed": "mixed",
    "all": "mixed",
    "prefix": "mixed",
    "ranges": "mixed",
}

LARGE_CATEGORICAL = 16384


def _log2(n: int) -> float:
    return math.log2(max(n, 2))


# Rough single-core seconds as a function of N (constants from benchmarks/schemes.py
# and ``dphist bench`` at N = 4,096 to 65,536, rounded up). Run time varies with the
# data, which the choice never observes: these are typical figures only.
_COST: dict[str, Callable[[int], float]] = {
    "identity": lambda n: 2e-7 * n,
    "H": lambda n: 1e-6 * n,
    "S2+H": lambda n: 2e-8 * n * _log2(n),
    "sDAHP": lambda n: 1e-7 * n * _log2(n),
    "sDWF": lambda n: 1e-7 * n * _log2(n),
    "S2": lambda n: 4e-8 * n * _log2(n),
    "S1+H": lambda n: 5e-8 * n * _log2(n),
}


def predicted_seconds(method: str, n: int) -> float:
    """Rough run time of ``method`` (one of the candidates of :func:`choose`) on N bins."""
    try:
        return _COST[method](int(n))
    except KeyError:
        raise ValidationError(f"no time model for method {method!r}") from None


def _classify_length(length: float, n: int) -> str:
    if length <= 1:
        return "point"
    if length <= max(10, n / 100):
        return "short"
    if length <= n / 16:
        return "medium"
    return "long"


def _mean_length(workload: Any, n: int) -> float | None:
    """Mean query length of a :mod:`dphist.workloads` workload; None for all ranges
    or prefixes (every length)."""
    from .. import workloads as wl

    if getattr(workload, "n", None) != n:
        raise ValidationError(
            f"workload is over {getattr(workload, 'n', '?')} bins; the histogram has {n}"
        )
    if isinstance(workload, wl.AllRanges | wl.Prefix):
        return None
    if isinstance(workload, wl.Windows):
        lengths = [int(x) for x in workload.lengths]
        counts = [n - x + 1 for x in lengths]
        return sum(x * c for x, c in zip(lengths, counts, strict=True)) / sum(counts)
    if isinstance(workload, wl.Intervals):
        return float((workload.hi - workload.lo).mean())
    raise InputTypeError(f"workload of type {type(workload).__name__} is not supported")


def workload_kind(n: int, workload: object = None) -> tuple[str, str]:
    """``(kind, description)`` of the expected queries; kind is one of WORKLOAD_KINDS.

    ``workload`` is None (all range lengths: ``"mixed"``), a kind name (``"point"``,
    ``"categorical"``, ``"short"``, ``"medium"``, ``"long"``, ``"mixed"``, or
    ``"identity"``, ``"prefix"``, ``"all"``), a typical query length in bins, or a
    :mod:`dphist.workloads` workload over ``n`` bins (only its public bounds are read).
    """
    if workload is None:
        return "mixed", "ranges of every length (no workload given)"
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
        kind = _classify_length(length, n)
        return kind, f"{kind} queries (typical length {length:g} of {n} bins)"
    mean = _mean_length(workload, n)
    if mean is None:
        return "mixed", f"ranges of every length ({type(workload).__name__} workload)"
    kind = _classify_length(mean, n)
    return kind, f"{kind} queries (mean length {mean:.3g} of {n} bins)"


def _gamma_in(epsilon: Fraction, n: int) -> float:
    """SORTaki's initializer share: 0.9 on large domains (§VII-A); on small ones it
    falls with epsilon (§VII-C, Table VIII)."""
    if n >= LARGE_CATEGORICAL or epsilon >= 1:
        return 0.9
    return 0.7 if epsilon >= Fraction(1, 2) else 0.5


_KELLARIS = "Kellaris et al. 2017 §7.4"
_SORTAKI = "SORTaki §VII"


def _candidates(kind: str, n: int, epsilon: Fraction) -> list[tuple[str, dict[str, Any], str]]:
    """Methods in order of preference for this setting, each with params and why."""
    fast = [
        ("S2+H", {}, f"S2+H, the fastest competitive method ({_KELLARIS}, item 3 and point iv)"),
        ("identity", {}, "identity, the linear-time baseline (nothing else fits the time budget)"),
    ]
    if kind == "categorical":
        g = _gamma_in(epsilon, n)
        if n >= LARGE_CATEGORICAL:
            first = (
                "sDAHP",
                {"gamma_in": g},
                f"sorting with the DP partitioner wins on large "
                f"categorical domains, gamma_in = {g} ({_SORTAKI}-A, Tables III-IV)",
            )
        else:
            first = (
                "sDWF",
                {"gamma_in": g},
                f"sorting with the WAF finalizer on a small "
                f"categorical domain, gamma_in = {g} for this epsilon ({_SORTAKI}-C, "
                "Tables VIII-IX)",
            )
        return [first, fast[1]]
    if kind in ("point", "short"):
        why = (
            "standalone smoothing wins for point and short range queries; S2 rather than "
            "the paper's S~, whose certified partition noise is larger than DAWA's"
        )
        return [("S2", {}, f"{why} ({_KELLARIS}, item 1; dphist reproduce auto)"), *fast]
    if kind == "long":
        return [("S2+H", {}, f"S2+H wins for long ranges ({_KELLARIS}, item 3)"), *fast]
    balanced = (
        "S1+H",
        {},
        "hierarchical smoothing balances every range length; S1+H rather than the "
        f"paper's S1+PMM under certified partition noise ({_KELLARIS}, items 2-3 and "
        "Table 2; dphist reproduce auto)",
    )
    return [balanced, *fast]


def _budget(time_budget: object) -> float:
    if time_budget is None:
        return DEFAULT_TIME_BUDGET
    if isinstance(time_budget, bool) or not isinstance(time_budget, numbers.Real):
        raise InputTypeError(f"time_budget must be a number of seconds; got {time_budget!r}")
    t = float(time_budget)
    if not (math.isfinite(t) and t > 0):
        raise ValidationError(f"time_budget must be a positive number of seconds; got {t!r}")
    return t


def choose(
    n: int, epsilon: object, workload: object = None, time_budget: object = None
) -> tuple[str, dict[str, Any], str]:
    """``(method name, parameters, reason)`` for ``n`` bins under ``epsilon``.

    Reads public facts only (the number of bins, epsilon, the workload's kind or
    public bounds, a time budget in seconds), so the same inputs always give the same
    choice whatever the data. See the module docstring for the rules and sources.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValidationError(f"n must be a positive number of bins; got {n!r}")
    n = int(n)
    eps = validate_epsilon(epsilon)
    seconds = _budget(time_budget)
    kind, about = workload_kind(n, workload)
    options = _candidates(kind, n, eps)
    skipped = []
    for name, params, why in options:
        t = predicted_seconds(name, n)
        if t <= seconds or name == options[-1][0]:
            note = f"; predicted {t:.2g} s, time budget {seconds:g} s"
            if skipped:
                note += f" ({', '.join(skipped)} predicted to take longer)"
            return name, dict(params), f"{about}, epsilon {float(eps):g}: {why}{note}"
        skipped.append(name)
    raise AssertionError("unreachable: the last candidate is always returned")
