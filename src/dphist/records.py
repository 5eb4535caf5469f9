"""Publishing raw records: count them into public bins, then release the counts.

:func:`histogram` is :func:`dphist.ingest.count_values` followed by
:func:`dphist.publish`, with every option checked before a record is read. It is the
way in for a column of records (one value per record); :func:`dphist.publish` takes
counts that are already in the public bin order.
"""

from __future__ import annotations

from typing import Any

from . import ingest
from ._kernel import noise_source, validate_epsilon
from .errors import ValidationError
from .methods import get_method
from .release import Release
from .session import publish
from .store import stored_cost

__all__ = ["histogram"]


def _check_method(method: object, params: dict[str, Any]) -> None:
    if isinstance(method, str) and method.strip().lower() == "auto":
        extra = sorted(set(params) - {"workload", "time_budget"})
        if extra:
            raise ValidationError(
                "method 'auto' chooses the parameters itself; it accepts only workload= and "
                f"time_budget= (got {', '.join(map(repr, extra))})"
            )
        return
    get_method(method).pipeline(**params)


def _unit_name(privacy_unit: object) -> str:
    name = getattr(privacy_unit, "name", None)
    return name if isinstance(name, str) and name else "privacy unit"


def histogram(
    values: object,
    *,
    epsilon: object,
    method: str,
    edges: object = None,
    domain: object = None,
    categories: object = None,
    outside: object = None,
    privacy_unit: object = None,
    max_records: int | None = None,
    rng: object = None,
    strict: bool = False,
    column: str | None = None,
    budget: object = None,
    **params: Any,
) -> Release:
    """Publish a histogram of raw records over public bins.

    Parameters
    ----------
    values : numpy array, list, pandas / polars Series or Arrow array
        One value per record.
    epsilon, method, rng, **params
        As for :func:`dphist.publish`.
    edges, domain, categories
        Exactly one public binning (:func:`dphist.ingest.binning`): edges, a
        ``"lo:hi:width"`` domain or a list of labels.
    outside : "clip" or "drop"
        Values outside the bins: clipped into the end bins (default for numbers) or
        dropped (the only choice for categories).
    privacy_unit, max_records
        A column of unit ids (a person per record, say) and the most records one unit
        may contribute: at most ``max_records`` of each unit's records are kept (a
        uniformly random subset) and the guarantee is for adding or removing a unit.
    strict : bool
        Refuse data with invalid values instead of dropping them. Not private: the
        refusal depends on the data.
    column : str, for a Spark DataFrame
        ``values`` may be a PySpark DataFrame: ``column`` names the values and
        ``privacy_unit`` a column of unit ids; binning and counting run in Spark and
        only the counts reach this process (:mod:`dphist.ingest.spark`).
    budget : a stored budget (``dh.BudgetStore(...).budget(name)``)
        Charged for ``epsilon`` before any record is counted; it records the release.

    Missing, invalid and (with ``outside="drop"``) out-of-domain values are dropped by
    the public rules of :mod:`dphist.ingest.count`, never reported.

    Example
    -------
    >>> import dphist as dh
    >>> rel = dh.histogram([3, 17, 17, 42, None], domain="0:50:10", epsilon=1,
    ...                    method="identity", rng=0)
    >>> rel.n
    5
    """
    bins = ingest.binning(edges=edges, domain=domain, categories=categories)
    policy = ingest.outside_policy(bins, outside)
    k = ingest.unit_bound(privacy_unit, max_records)
    validate_epsilon(epsilon)
    noise_source(rng)
    _check_method(method, params)
    grant = _charge_first(budget, epsilon, method)
    if ingest.is_spark_frame(values):
        counts = ingest.count(
            values, bins, column=column, outside=policy, privacy_unit=privacy_unit,
            max_records=k, rng=rng, strict=strict,
        )  # fmt: skip
    else:
        counts = ingest.count_values(
            values, bins, outside=policy, privacy_unit=privacy_unit, max_records=k, rng=rng,
            strict=strict,
        )  # fmt: skip
    unit: dict[str, Any] = {}
    if k is not None:
        name = privacy_unit if isinstance(privacy_unit, str) else _unit_name(privacy_unit)
        unit = {"privacy_unit": name, "max_records": k}
    release = publish(counts, epsilon=epsilon, method=method, rng=rng, **unit, **params)
    return release if grant is None else _recorded(grant, release)


def _charge_first(budget: object, epsilon: object, method: object) -> Any:
    """The stored budget's whole charge, committed before a record is counted (None
    without a budget)."""
    if budget is None:
        return None
    stored_cost(budget, epsilon, None)
    auto = isinstance(method, str) and method.strip().lower() == "auto"
    return budget.charge(epsilon=epsilon, method="auto" if auto else get_method(method).name)


def _recorded(grant: Any, release: Release) -> Release:
    grant.record(release)
    return release
