"""Publishing raw records as a 2-D histogram: two columns, each over its own public
binning, counted (:func:`dphist.ingest.count_grid`) and published (:func:`dphist.publish`)
with every option checked before a record is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import ingest
from ._kernel import noise_source, validate_epsilon
from .errors import ValidationError
from .session import publish
from .store import stored_cost
from .twod import Release2D, grid_method

__all__ = ["grid_binnings_of", "histogram2d"]


def _pair(value: object, name: str) -> tuple[object, object]:
    if value is None:
        return None, None
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValidationError(f"{name} must be a pair: one entry per column (None where unused)")
    return value[0], value[1]


def grid_binnings_of(
    edges: object = None, domain: object = None, categories: object = None, binnings: object = None
) -> tuple[ingest.Binning, ingest.Binning]:
    """The two public binnings: ``binnings`` (a pair of :class:`~dphist.ingest.Binning`),
    or per column exactly one of ``edges``, ``domain``, ``categories`` (each a pair with
    None where a column uses another kind)."""
    if binnings is not None:
        if any(v is not None for v in (edges, domain, categories)):
            raise ValidationError("give binnings= or edges=/domain=/categories=, not both")
        return ingest.grid_binnings(binnings)
    e, d, c = _pair(edges, "edges"), _pair(domain, "domain"), _pair(categories, "categories")
    return tuple(  # type: ignore[return-value]
        ingest.binning(edges=e[k], domain=d[k], categories=c[k]) for k in range(2)
    )


def histogram2d(
    x: object,
    y: object = None,
    *,
    method: str,
    epsilon: object = None,
    rho: object = None,
    edges: object = None,
    domain: object = None,
    categories: object = None,
    binnings: object = None,
    outside: object = None,
    columns: tuple[str, str] | None = None,
    privacy_unit: object = None,
    max_records: int | None = None,
    rng: object = None,
    value_type: object = None,
    budget: object = None,
    **params: Any,
) -> Release2D:
    """Publish a 2-D histogram of raw records over two public binnings.

    Parameters
    ----------
    x, y : two columns of records (numpy, lists, pandas, polars or Arrow; one value per
        record), or ``x`` a CSV or Parquet file or a Spark DataFrame and ``columns`` its
        two column names (a frame is counted in Spark; only the cells' counts return).
    method, epsilon (or rho), rng, **params : as for :func:`dphist.publish` with a 2-D
        method (:func:`dphist.twod.list_grid_methods`).
    edges, domain, categories : pairs, one entry per column (rows first), None where the
        column uses another kind; or ``binnings``, a pair of :class:`~dphist.ingest.Binning`.
    outside : ``"clip"`` or ``"drop"`` for both columns, or a pair.
    privacy_unit, max_records : as for :func:`dphist.histogram` (for a file or a Spark
        DataFrame, the unit is a column name).
    value_type : "number" or "text" for both columns, or a pair (default: each column's
        type; see :func:`dphist.histogram`). Each column's type is checked against its
        binning before any value is read.
    budget : a stored budget (``dh.BudgetStore(...).budget(name)``), charged durably
        after every public check and before any record is counted.

    Example
    -------
    >>> import numpy as np, dphist as dh
    >>> rng = np.random.default_rng(0)
    >>> age, income = rng.integers(0, 90, 1000), rng.gamma(2, 20_000, 1000)
    >>> rel = dh.histogram2d(age, income, domain=("0:90:10", "0:200000:20000"),
    ...                      epsilon=1, method="PrivTree", rng=0)
    >>> rel.shape
    (9, 10)
    """
    bins = grid_binnings_of(edges, domain, categories, binnings)
    policies = ingest.grid_outside(outside)
    for b, o in zip(bins, policies, strict=True):
        ingest.outside_policy(b, o)
    k = ingest.unit_bound(privacy_unit, max_records)
    if (epsilon is None) == (rho is None):
        raise ValidationError("give either epsilon= (pure DP) or rho= (zCDP)")
    validate_epsilon(epsilon if rho is None else rho, name="epsilon" if rho is None else "rho")
    noise_source(rng)
    vtypes = ingest.grid_value_types(value_type)
    resolved = grid_method(method)
    resolved.pipeline(**params)
    source = x if y is None else (x, y)
    amount = {"epsilon": epsilon} if rho is None else {"rho": rho}
    grant = None
    if budget is not None:  # every public fact checked before the durable charge
        stored_cost(budget, epsilon, rho)
        _check_types(source, bins, columns, vtypes)
        grant = budget.charge(**amount, method=resolved.name)  # type: ignore[attr-defined]
    counts = ingest.count_grid(
        source, bins, columns=columns, outside=policies, privacy_unit=privacy_unit,
        max_records=k, rng=rng, value_type=vtypes,
    )  # fmt: skip
    unit = _unit_terms(privacy_unit, k)
    release = publish(counts, method=method, rng=rng, **amount, **unit, **params)
    if grant is not None:
        grant.record(release)
    return release  # type: ignore[return-value]


def _unit_terms(privacy_unit: object, k: int | None) -> dict[str, Any]:
    """What the release says of the privacy unit (nothing for one record per unit)."""
    if k is None:
        return {}
    name = privacy_unit if isinstance(privacy_unit, str) else "privacy unit"
    return {"privacy_unit": name, "max_records": k}


def _check_types(source: object, bins: Any, columns: Any, vtypes: tuple[object, object]) -> None:
    """Refuse a column whose type does not fit its bins (public metadata, no value read)."""
    if ingest.is_spark_frame(source):
        if columns is None or len(columns) != 2:
            raise ValidationError("columns must name the frame's two columns (rows first)")
        ingest.check_grid_frame(source, (str(columns[0]), str(columns[1])), bins)
    elif isinstance(source, str | Path):
        if columns is None or len(columns) != 2:
            raise ValidationError("columns must name the two columns of the file (rows first)")
        ingest.file_value_types(source, (str(columns[0]), str(columns[1])), bins, vtypes)
    elif isinstance(source, tuple | list) and len(source) == 2:
        for k in range(2):
            ingest.values_value_type(source[k], bins[k], vtypes[k])
