"""Publishing raw records as a 2-D histogram: two columns, each over its own public
binning, counted (:func:`dphist.ingest.count_grid`) and published (:func:`dphist.publish`)
with every option checked before a record is read."""

from __future__ import annotations

from typing import Any

from . import ingest
from ._kernel import noise_source, validate_epsilon
from .errors import ValidationError
from .session import publish
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
    **params: Any,
) -> Release2D:
    """Publish a 2-D histogram of raw records over two public binnings.

    Parameters
    ----------
    x, y : two columns of records (numpy, lists, pandas, polars or Arrow; one value per
        record), or ``x`` a CSV or Parquet file and ``columns`` its two column names.
    method, epsilon (or rho), rng, **params : as for :func:`dphist.publish` with a 2-D
        method (:func:`dphist.twod.list_grid_methods`).
    edges, domain, categories : pairs, one entry per column (rows first), None where the
        column uses another kind; or ``binnings``, a pair of :class:`~dphist.ingest.Binning`.
    outside : ``"clip"`` or ``"drop"`` for both columns, or a pair.
    privacy_unit, max_records : as for :func:`dphist.histogram` (for a file, the unit is
        a column name).

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
    grid_method(method).pipeline(**params)
    source = x if y is None else (x, y)
    counts = ingest.count_grid(
        source, bins, columns=columns, outside=policies, privacy_unit=privacy_unit,
        max_records=k, rng=rng,
    )  # fmt: skip
    unit: dict[str, Any] = {}
    if k is not None:
        name = privacy_unit if isinstance(privacy_unit, str) else "privacy unit"
        unit = {"privacy_unit": name, "max_records": k}
    budget = {"epsilon": epsilon} if rho is None else {"rho": rho}
    return publish(counts, method=method, rng=rng, **budget, **unit, **params)  # type: ignore[return-value]
