"""Public binnings: the bins of a histogram, fixed before any record is read.

A histogram's bins must be public: chosen by the publisher before the data is read,
never derived from it (data-derived bin edges, quantiles or category lists leak the
data outside the privacy budget). A :class:`Binning` holds such a domain in one of
three forms:

* **edges** ``e_0 < e_1 < ... < e_n`` (finite): bin ``i`` is ``[e_i, e_{i+1})`` and the
  last bin is closed, ``[e_{n-1}, e_n]`` (the numpy.histogram convention);
* **domain** ``lo:hi:width``: edges ``lo, lo + width, lo + 2 width, ...`` with
  ``ceil((hi - lo) / width)`` bins, the last one ending at ``hi`` (and closed);
* **categories**: a public list of non-empty labels; a value falls in the bin whose
  label it equals (as a number when every label is a number, else as exact text).

:func:`binning` builds one from keyword options (exactly one of ``edges``,
``domain``, ``categories``); :func:`outside_policy` settles what happens to values
outside the bins and :meth:`Binning.with_outside` records it in the binning. When
values outside are clipped into the end bins (``"clip"``), those bins are **open**:
the first holds every value below its upper edge, the last every value from its
lower edge up. Labels say so, ``(-inf, 1)`` and ``[19, inf)`` (ASCII, the interval
notation of the other labels), and :meth:`Binning.bounds` gives ``-inf`` and ``inf``.
How records become counts is in :mod:`dphist.ingest.count`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import numpy as np

from .. import resources
from ..errors import DataDependentParameterError, InputTypeError, ValidationError

__all__ = [
    "MAX_BINS", "OUTSIDE_POLICIES", "PUBLIC_BINS_HINT", "Binning", "binning", "label_number",
    "outside_policy", "parse_domain",
]  # fmt: skip

Outside = Literal["clip", "drop"]
OUTSIDE_POLICIES: tuple[str, ...] = ("clip", "drop")
MAX_BINS = 1 << 31
"""Hard limit on the number of bins (their edges alone take 16 GiB); the command line
also checks the memory a method needs for the bins asked for before reading data."""

PUBLIC_BINS_HINT = (
    "bins must be public: choose edges, a domain lo:hi:width or a list of categories "
    "before looking at the data (bins derived from the data, such as 'auto' or "
    "quantiles, reveal it outside the privacy budget)"
)


def _finite_float(value: object, name: str) -> float:
    if isinstance(value, bool | np.bool_):
        raise InputTypeError(f"{name} must be a number; got a boolean")
    if isinstance(value, str):
        try:
            out = float(value.strip())
        except ValueError:
            raise ValidationError(f"{name} must be a number; got {value!r}") from None
    elif isinstance(value, numbers.Real):
        out = float(value)
    else:
        raise InputTypeError(f"{name} must be a number; got {type(value).__name__}")
    if not math.isfinite(out):
        raise ValidationError(f"{name} must be finite; got {value!r}")
    return out


def label_number(label: str) -> float | None:
    """The label as a finite number, or None when it is not one."""
    try:
        d = Decimal(label.strip())
    except InvalidOperation:
        return None
    return float(d) if d.is_finite() else None


@dataclass(frozen=True, eq=False)
class Binning:
    """A public binning: numeric ``edges`` or ``categories`` (exactly one is set).

    Build it with :meth:`from_edges`, :meth:`from_domain` or :meth:`from_categories`.
    ``kind`` records which; ``spec`` is a short description for output files.
    ``outside`` is what happens to values outside the bins once settled
    (:meth:`with_outside`; None before): with ``"clip"`` the end bins are open.
    """

    kind: Literal["edges", "domain", "categories"]
    edges: np.ndarray | None = None
    categories: tuple[str, ...] | None = None
    spec: str = ""
    domain: tuple[float, float, float] | None = None
    outside: Outside | None = None

    @classmethod
    def from_edges(cls, edges: object) -> Binning:
        """Bins ``[e_i, e_{i+1})``, the last closed; edges finite, strictly increasing."""
        if edges is None or isinstance(edges, str):
            raise refuse_data_derived(edges)
        try:
            raw = list(edges)  # type: ignore[call-overload]
        except TypeError:
            raise InputTypeError("edges must be a sequence of numbers") from None
        try:
            if any(isinstance(v, bool | np.bool_) for v in raw[:1]):
                raise TypeError
            arr = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError):  # find the offending edge for the message
            arr = np.array([_finite_float(v, "each edge") for v in raw], dtype=np.float64)
        if arr.ndim != 1:
            raise ValidationError(
                f"edges must be a flat sequence of numbers; got shape {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValidationError("each edge must be finite")
        if arr.size < 2:
            raise ValidationError(f"edges needs at least 2 values (one bin); got {arr.size}")
        if arr.size - 1 > MAX_BINS:
            raise ValidationError(f"at most {MAX_BINS:,} bins are supported")
        if np.any(np.diff(arr) <= 0):
            raise ValidationError("edges must be strictly increasing")
        arr.flags.writeable = False
        return cls("edges", edges=arr, spec=f"edges ({arr.size - 1} bins)")

    @classmethod
    def from_domain(cls, lo: object, hi: object, width: object) -> Binning:
        """Equal-width bins from ``lo`` to ``hi``: ``ceil((hi - lo) / width)`` of them."""
        a = _finite_float(lo, "domain lo")
        b = _finite_float(hi, "domain hi")
        w = _finite_float(width, "domain width")
        if not a < b:
            raise ValidationError(f"domain needs lo < hi; got lo={a:g}, hi={b:g}")
        if not w > 0:
            raise ValidationError(f"domain width must be > 0; got {w:g}")
        n = math.ceil((b - a) / w)
        if n > MAX_BINS:
            raise ValidationError(f"domain {a:g}:{b:g}:{w:g} has {n:,} bins; at most {MAX_BINS:,}")
        resources.check_domain(n)
        edges = a + np.arange(n + 1, dtype=np.float64) * w
        edges[-1] = b
        if n > 1 and edges[-2] >= b:  # (hi - lo) / width rounded up past an exact multiple
            n -= 1
            edges = np.append(edges[:n], b)
        edges.flags.writeable = False
        spec = f"domain {a:g}:{b:g}:{w:g} ({n} bins)"
        return cls("domain", edges=edges, spec=spec, domain=(a, b, w))

    @classmethod
    def from_categories(cls, categories: object) -> Binning:
        """One bin per public label, in the given order; labels must be distinct."""
        if categories is None or isinstance(categories, str):
            raise refuse_data_derived(categories)
        try:
            labels = tuple(str(c) for c in categories)  # type: ignore[union-attr]
        except TypeError:
            raise InputTypeError("categories must be a sequence of labels") from None
        if not labels:
            raise ValidationError("categories is empty; give at least one label")
        if any(label == "" for label in labels):
            raise ValidationError(
                "category labels must be non-empty (an empty field is a missing value)"
            )
        if len(set(labels)) != len(labels):
            raise ValidationError("categories must be distinct")
        return cls("categories", categories=labels, spec=f"categories ({len(labels)} bins)")

    @property
    def n(self) -> int:
        """Number of bins."""
        return len(self.categories) if self.edges is None else int(self.edges.size - 1)

    @property
    def numeric(self) -> bool:
        return self.edges is not None

    @property
    def open_ends(self) -> bool:
        """True when the end bins are open: values outside are clipped into them."""
        return self.edges is not None and self.outside == "clip"

    def with_outside(self, policy: object = None) -> Binning:
        """This binning with the treatment of values outside it settled
        (:func:`outside_policy`: default clip for numbers, drop for categories)."""
        return replace(self, outside=outside_policy(self, policy))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each bin's left and right edge (float64; ``-inf`` and ``inf`` at open ends,
        NaN for categories)."""
        if self.edges is None:
            nan = np.full(self.n, np.nan)
            return nan, nan
        left, right = self.edges[:-1], self.edges[1:]
        if not self.open_ends:
            return left, right
        left, right = left.copy(), right.copy()
        left[0], right[-1] = -np.inf, np.inf
        return left, right

    def labels(self) -> list[str]:
        """One label per bin: the category, or ``[lo, hi)`` (``[lo, hi]`` for the last;
        ``(-inf, hi)`` and ``[lo, inf)`` at open ends)."""
        return [self.label(i) for i in range(self.n)]

    def label(self, i: int) -> str:
        """Bin ``i``'s label; numbers in their shortest round-trip form (as in files)."""
        if self.edges is None:
            return (self.categories or ())[i]
        i = range(self.n)[i]
        lo, hi = (_number_text(float(v)) for v in self.edges[i : i + 2])
        first = "(-inf" if self.open_ends and i == 0 else f"[{lo}"
        if self.open_ends and i == self.n - 1:
            return f"{first}, inf)"
        return f"{first}, {hi}{']' if i == self.n - 1 else ')'}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe description (public by construction); ``outside`` and
        ``open_ends`` once settled."""
        settled = {} if self.outside is None else {"outside": self.outside}
        if self.edges is None:
            return {"kind": self.kind, "categories": list(self.categories or ()), **settled}
        if self.outside is not None:
            settled["open_ends"] = self.open_ends
        if self.domain is not None:
            lo, hi, width = self.domain
            return {
                "kind": "domain", "lo": lo, "hi": hi, "width": width, "bins": self.n, **settled
            }  # fmt: skip
        return {
            "kind": self.kind, "edges": self.edges.tolist(), "last_bin_closed": True, **settled
        }  # fmt: skip


def _number_text(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def refuse_data_derived(value: object) -> DataDependentParameterError:
    what = "no binning" if value is None else f"bins {value!r}"
    return DataDependentParameterError(f"{what}: {PUBLIC_BINS_HINT}")


def parse_domain(text: str) -> Binning:
    """A domain binning from ``"lo:hi:width"`` (e.g. ``"0:100:5"``: 20 bins)."""
    parts = str(text).split(":")
    if len(parts) != 3:
        raise ValidationError(f"domain must be lo:hi:width (e.g. 0:100:5); got {text!r}")
    return Binning.from_domain(*parts)


def outside_policy(binning: Binning, policy: object = None) -> Outside:
    """``"clip"`` or ``"drop"`` for values outside the bins (default: the binning's own
    once settled, else clip numbers and drop categories); categories cannot be clipped."""
    if policy is None:
        return binning.outside or ("clip" if binning.numeric else "drop")
    if binning.outside is not None and policy != binning.outside:
        raise ValidationError(
            f"outside={policy!r}, but the binning was settled with outside={binning.outside!r}"
        )
    if policy not in OUTSIDE_POLICIES:
        raise ValidationError(f"outside must be 'clip' or 'drop'; got {policy!r}")
    if policy == "clip" and not binning.numeric:
        raise ValidationError(
            "outside='clip' needs numeric bins; with categories, values matching no "
            "label are dropped (outside='drop')"
        )
    return policy  # type: ignore[return-value]


def binning(*, edges: object = None, domain: object = None, categories: object = None) -> Binning:
    """The one public binning named by exactly one of ``edges``, ``domain`` (a
    ``"lo:hi:width"`` string or a ``(lo, hi, width)`` tuple) or ``categories``.

    ``edges`` and ``categories`` may be sequences or comma-separated strings.

    A missing binning, or a request for bins from the data (``"auto"``), raises
    :class:`~dphist.errors.DataDependentParameterError`.
    """
    given = {k: v for k, v in (("edges", edges), ("domain", domain), ("categories", categories))}
    named = [k for k, v in given.items() if v is not None]
    if len(named) > 1:
        raise ValidationError(f"give one binning, not {' and '.join(named)}")
    if not named:
        raise DataDependentParameterError(f"no binning given; {PUBLIC_BINS_HINT}")
    kind = named[0]
    value = given[kind]
    if isinstance(value, str) and value.strip().lower() == "auto":
        raise DataDependentParameterError(
            f"{kind}='auto' derives bins from the data; {PUBLIC_BINS_HINT}"
        )
    if kind == "edges":
        if isinstance(value, str):  # "0,10,20" as typed on a command line
            value = [e for e in value.split(",") if e.strip()]
        return Binning.from_edges(value)
    if kind == "categories":
        if isinstance(value, str):
            value = [c.strip() for c in value.split(",")]
        return Binning.from_categories(value)
    if isinstance(value, str):
        return parse_domain(value)
    try:
        lo, hi, width = value  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValidationError("domain must be 'lo:hi:width' or a (lo, hi, width) tuple") from None
    return Binning.from_domain(lo, hi, width)
