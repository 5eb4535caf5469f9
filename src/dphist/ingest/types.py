"""What a column's values are read as, checked against the binning before any is read.

Values are read as **numbers** (a numeric column, or text parsed as a number) or as
**text** (matched to category labels exactly). The binning says what it needs:
numeric bins need numbers, categories that are not all numbers need text; categories
that are all numbers take either.

* A **typed** column (Parquet's schema; the dtype of a numpy array, pandas, polars or
  Arrow column) is read as its type says. A text column with numeric bins, a numeric
  column with text categories, or a column of another type (dates, booleans) is
  refused with one line naming the column and its type, before any value is read or
  any budget spent: the type is schema, public and the same for every neighbouring
  dataset, so the refusal reveals nothing about a record. A text column may still be
  read as numbers on request (``value_type="number"``, ``--type number``: text that is
  not a number is then dropped).
* An **untyped** column (CSV; object arrays; Python lists, whose numpy type would be
  inferred from the values) has no type to check: its values are read as
  ``value_type`` says, by default as the binning implies. Whether they are numbers is a
  fact about each record, so it never refuses: a value that cannot be read is dropped
  like any invalid one (``dphist check`` shows the data owner how many).
"""

from __future__ import annotations

from typing import Literal

from ..errors import ValidationError
from .binning import Binning, label_number

__all__ = ["VALUE_TYPES", "check_value_type", "column_kind", "implied_type", "value_type"]

ValueType = Literal["number", "text"]
VALUE_TYPES: tuple[str, ...] = ("number", "text")

_NUMBERS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "REAL")
_UNSIGNED = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")


def check_value_type(value: object) -> ValueType | None:
    """``value_type`` as given: None, "number" or "text"."""
    if value is not None and value not in VALUE_TYPES:
        raise ValidationError(f"value type must be 'number' or 'text'; got {value!r}")
    return value  # type: ignore[return-value]


def column_kind(sql_type: str) -> ValueType | None:
    """ "number" or "text" for a DuckDB column type; None for any other type."""
    t = sql_type.upper()
    if t in _NUMBERS or t in _UNSIGNED or t.startswith("DECIMAL"):
        return "number"
    if t == "VARCHAR" or t.startswith("ENUM"):
        return "text"
    return None


def implied_type(binning: Binning) -> ValueType:
    """What the binning reads by default: numbers for numeric bins and for categories
    that are all numbers, text otherwise."""
    if binning.numeric:
        return "number"
    labels = binning.categories or ()
    return "number" if all(label_number(c) is not None for c in labels) else "text"


def value_type(
    binning: Binning, sql_type: str, *, typed: bool, declared: object = None, label: str = ""
) -> ValueType:
    """What a column's values are read as (module doc); a clear error when the column's
    type or ``declared`` cannot serve the binning. ``label`` names the column."""
    asked = check_value_type(declared)
    kind = column_kind(sql_type)
    if typed and kind is None:
        raise ValidationError(
            f"{label} has type {sql_type}: bins read numbers or text (cast the column first)"
        )
    if typed and asked == "text" and kind == "number":
        raise ValidationError(f"{label} holds numbers ({sql_type}); read it as numbers")
    chosen: ValueType = asked or (kind if typed and kind is not None else implied_type(binning))
    if chosen == "text" and binning.numeric:
        hint = "; ask to parse it as numbers (--type number, value_type='number')" if typed else ""
        raise ValidationError(
            f"{label} holds text ({sql_type}) but the bins are numeric{hint}"
            if typed
            else f"the bins are numeric; {label} cannot be read as text"
        )
    if chosen == "number" and implied_type(binning) == "text":
        what = f"holds numbers ({sql_type})" if typed and asked is None else "is read as numbers"
        raise ValidationError(f"{label} {what}, but some categories are not numbers")
    return chosen
