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
from .resources import check_bins
from .session import heaviest_candidate, publish
from .store import stored_cost

__all__ = ["histogram"]


def _check_method(method: object, params: dict[str, Any]) -> None:
    if isinstance(method, str) and method.strip().lower() == "auto":
        extra = sorted(set(params) - {"workload", "time_budget", "auto_share"})
        if extra:
            raise ValidationError(
                "method 'auto' chooses the parameters itself; it accepts only workload=, "
                f"time_budget= and auto_share= (got {', '.join(map(repr, extra))})"
            )
        return
    get_method(method).pipeline(**params)


def _unit_name(privacy_unit: object) -> str:
    name = getattr(privacy_unit, "name", None)
    return name if isinstance(name, str) and name else "privacy unit"


def _frame_columns(values: object, column: str | None, privacy_unit: object) -> tuple:
    """A pandas or polars DataFrame or an Arrow table: its ``column`` and, when
    ``privacy_unit`` names one, its unit column; anything else is returned as it is."""
    kind = type(values)
    frame = kind.__name__ in ("DataFrame", "Table") and kind.__module__.split(".")[0] in (
        "pandas", "polars", "pyarrow",
    )  # fmt: skip
    if not frame:
        if column is not None:
            raise ValidationError(
                "column= names a column of a DataFrame (pandas, polars, Arrow or Spark); "
                "pass the values themselves otherwise"
            )
        return values, privacy_unit
    names = [str(c) for c in getattr(values, "column_names", None) or list(values.columns)]
    wanted = [column, *([privacy_unit] if isinstance(privacy_unit, str) else [])]
    if column is None:
        raise ValidationError("a DataFrame needs column= naming the values to count")
    for name in wanted:
        if name not in names:
            listed = ", ".join(repr(c) for c in names[:20])
            raise ValidationError(f"no column {name!r} in the DataFrame; its columns are {listed}")
    unit = values[privacy_unit] if isinstance(privacy_unit, str) else privacy_unit
    return values[column], unit


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
    value_type: str | None = None,
    budget: object = None,
    **params: Any,
) -> Release:
    """Publish a histogram of raw records over public bins.

    Parameters
    ----------
    values : numpy array, list, pandas / polars Series or Arrow array, or a DataFrame
        One value per record; or a pandas, polars, Arrow or Spark table whose
        ``column`` holds them.
    epsilon, method, rng, **params
        As for :func:`dphist.publish`.
    edges, domain, categories
        Exactly one public binning (:func:`dphist.ingest.binning`): edges, a
        ``"lo:hi:width"`` domain or a list of labels.
    outside : "clip" or "drop"
        Values outside the bins: clipped into the end bins, which are then open
        (default for numbers), or dropped (the only choice for categories).
    privacy_unit, max_records
        Unit ids (a person per record) and the most records kept per unit (a random
        subset); the guarantee is then for adding or removing a unit.
    strict : bool
        Refuse invalid values instead of dropping them: not private.
    column : str, for a DataFrame
        The column of ``values`` to count; ``privacy_unit`` may then name a column of
        unit ids. A Spark frame is binned and counted in Spark; only counts come back
        (:mod:`dphist.ingest.spark`).
    value_type : "number" or "text"
        How to read the values (:mod:`dphist.ingest.types`); default: a typed column's
        own type, checked before any value is read, else what the bins imply.
    budget : a stored budget (``dh.BudgetStore(...).budget(name)``)
        Charged for ``epsilon`` after every check and before any record is counted;
        it records the release.

    Missing, invalid and (with ``outside="drop"``) out-of-domain values are dropped by
    the public rules of :mod:`dphist.ingest.count`, never reported. The release carries
    its binning (``rel.binning``: labels and bounds, open end bins included).

    Example
    -------
    >>> import dphist as dh
    >>> rel = dh.histogram([3, 17, 17, 42, None], domain="0:50:10", epsilon=1,
    ...                    method="identity", rng=0)
    >>> rel.n
    5
    """
    bins = ingest.binning(edges=edges, domain=domain, categories=categories).with_outside(outside)
    k = ingest.unit_bound(privacy_unit, max_records)
    _check_options(epsilon, rng, value_type, method, params)
    options = {"max_records": k, "rng": rng, "strict": strict, "value_type": value_type}
    unit = _unit_fields(privacy_unit, k)  # named before a frame's column replaces it
    spark = ingest.is_spark_frame(values)
    if not spark:
        values, privacy_unit = _frame_columns(values, column, privacy_unit)
    grant = None
    if budget is not None:  # every public fact checked before the durable charge
        _check_types(values, bins, spark, column, privacy_unit, value_type)
        grant = _charge_first(budget, epsilon, method, bins.n)
    counts = _count(values, bins, spark, column, privacy_unit, options)
    release = publish(counts, epsilon=epsilon, method=method, rng=rng, **unit, **params)
    # set in place (the release is new): dataclasses.replace would respread its variances
    object.__setattr__(release, "binning", bins)
    if grant is not None:
        grant.record(release)
    return release


def _check_options(epsilon: Any, rng: Any, value_type: Any, method: Any, params: dict) -> None:
    """Every option that needs no data, checked before a record is read."""
    validate_epsilon(epsilon)
    noise_source(rng)
    ingest.types.check_value_type(value_type)
    _check_method(method, params)


def _count(
    values: object, bins: Any, spark: bool, column: Any, privacy_unit: object, options: dict
) -> Any:
    """The public-bin counts: in Spark for a Spark frame, in this process otherwise."""
    if spark:
        return ingest.count(values, bins, column=column, privacy_unit=privacy_unit, **options)
    return ingest.count_values(values, bins, privacy_unit=privacy_unit, **options)


def _check_types(
    values: object, bins: Any, spark: bool, column: Any, privacy_unit: object, value_type: Any
) -> None:
    """Refuse a column whose declared type does not fit the bins (public metadata)."""
    if spark:
        ingest.check_frame(values, column, bins, privacy_unit=privacy_unit)
    else:
        ingest.values_value_type(values, bins, value_type)


def _unit_fields(privacy_unit: object, k: int | None) -> dict[str, Any]:
    """The ledger's privacy-unit fields: the unit's name and the records kept per unit."""
    if k is None:
        return {}
    name = privacy_unit if isinstance(privacy_unit, str) else _unit_name(privacy_unit)
    return {"privacy_unit": name, "max_records": k}


def _charge_first(budget: Any, epsilon: object, method: object, n: int) -> Any:
    """The stored budget's whole charge, committed before a record is counted, after
    the memory the method needs is checked (a public fact)."""
    stored_cost(budget, epsilon, None)
    auto = isinstance(method, str) and method.strip().lower() == "auto"
    name = "auto" if auto else get_method(method).name
    check_bins(n, heaviest_candidate(n) if auto else name)
    return budget.charge(epsilon=epsilon, method=name)
