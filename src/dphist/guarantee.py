"""What a release guarantees, in words: one place for every guarantee text.

A release's guarantee depends on public facts only: the noise mode (secure or
seeded), whether every step was certified, and the privacy unit (one record, or one
named unit with at most ``K`` records).
"""

from __future__ import annotations

from ._kernel import records_per_unit
from .errors import InputTypeError

__all__ = [
    "GROUPS_SECURE",
    "GROUPS_ZCDP_SECURE",
    "SECURE",
    "SEEDED",
    "UNCERTIFIED",
    "ZCDP_SECURE",
    "group_guarantee",
    "histogram_guarantee",
    "unit_terms",
]

SECURE = (
    "epsilon-DP for add/remove-one-record neighbours, with epsilon as in the ledger: exact "
    "discrete Laplace noise on integer statistics, random bits from the operating system's "
    "CSPRNG (timing side channels and code in the same process are not covered)"
)
UNCERTIFIED = (
    "none: a reference-mode step reproduces a published noise scale that is not "
    "epsilon-DP (for reproducing published numbers only)"
)
SEEDED = (
    "none: seeded noise is a reproducible simulation for experiments; anyone who knows the "
    "seed can remove it"
)
ZCDP_SECURE = (
    "rho-zCDP (zero-concentrated DP) for add/remove-one-record neighbours, with rho as in "
    "the ledger, hence (epsilon, delta)-DP for every delta (Release.epsilon_at): exact "
    "discrete Gaussian noise on integer statistics, random bits from the operating system's "
    "CSPRNG (timing side channels and code in the same process are not covered)"
)
GROUPS_SECURE = (
    "epsilon-DP for neighbours that add or remove one entity (the hierarchy and the "
    "number of groups per region are public), with epsilon as in the ledger: exact "
    "discrete Laplace noise from the operating system's CSPRNG (timing side channels and "
    "code in the same process are not covered)"
)
GROUPS_ZCDP_SECURE = (
    "rho-zCDP (zero-concentrated DP) for neighbours that add or remove one entity (the "
    "hierarchy and the number of groups per region are public), with rho as in the "
    "ledger, hence (epsilon, delta)-DP for every delta (GroupSizeRelease.epsilon_at): "
    "exact discrete Gaussian noise from the operating system's CSPRNG (timing side "
    "channels and code in the same process are not covered)"
)


def unit_terms(privacy_unit: object, max_records: object) -> tuple[str, int]:
    """The privacy unit's name and its public record bound, checked.

    ``privacy_unit=None`` with ``max_records=1`` is the record itself; a bound above 1
    needs no name (it is then called "privacy unit").
    """
    k = records_per_unit(max_records)
    if privacy_unit is not None and not (isinstance(privacy_unit, str) and privacy_unit):
        raise InputTypeError("privacy_unit must name the unit (a non-empty string) or be None")
    if privacy_unit is None:
        privacy_unit = "record" if k == 1 else "privacy unit"
    return privacy_unit, k


def _for_unit(text: str, one: str, unit: str, max_records: int, what: str) -> str:
    return text.replace(
        one,
        f"{what} (privacy unit {unit!r}, at most {max_records} "
        f"{'records' if max_records > 1 else 'record'} each; every sensitivity is "
        f"{max_records} times a record's)",
    )


def histogram_guarantee(
    private: bool, certified: bool, unit: str, max_records: int, definition: str = "pure"
) -> str:
    """The guarantee of a histogram release (``definition``: "pure" or "zcdp")."""
    if not private:
        return SEEDED
    if not certified:
        return UNCERTIFIED
    text = ZCDP_SECURE if definition == "zcdp" else SECURE
    if unit == "record" and max_records == 1:
        return text
    return _for_unit(
        text, "add/remove-one-record neighbours", unit, max_records,
        "add/remove-one-unit neighbours",
    )  # fmt: skip


def group_guarantee(private: bool, unit: str, max_records: int, definition: str = "pure") -> str:
    """The guarantee of a group-size release (the unit is an entity by default)."""
    if not private:
        return SEEDED
    text = GROUPS_ZCDP_SECURE if definition == "zcdp" else GROUPS_SECURE
    if unit == "entity" and max_records == 1:
        return text
    return _for_unit(
        text, "add or remove one entity", unit, max_records,
        "add or remove one privacy unit",
    )  # fmt: skip
