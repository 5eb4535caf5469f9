"""Exceptions and warnings raised by dphist.

Every error a user can cause is a subclass of :class:`DphistError`; input problems
are also :class:`ValueError` (or :class:`TypeError`) so generic handlers still work.
Messages name the offending argument and say how to fix the call. They never contain
a true count.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DphistError(Exception):
    """Base class of every error raised by dphist."""


class ValidationError(DphistError, ValueError):
    """An argument has an invalid value; the message names the argument."""


class InputTypeError(DphistError, TypeError):
    """An argument has the wrong type; the message names the argument."""


class DomainError(ValidationError):
    """Counts are not a non-empty 1-D array of non-negative integers, or a domain is invalid."""


class WorkloadError(ValidationError):
    """Query bounds lie outside the domain, or lo > hi."""


class CompositionError(DphistError):
    """Blocks that cannot be combined into one method (the message names the rule)."""


class PrivacyError(DphistError):
    """The request would weaken the privacy guarantee."""


class BudgetExceededError(PrivacyError):
    """A charge would take the spent privacy budget above its cap.

    Attributes name the block and primitive that asked, the requested epsilon and
    what remained, all as exact rationals.
    """

    def __init__(self, message: str, *, block: str, primitive: str, requested, remaining):
        super().__init__(message)
        self.block = block
        self.primitive = primitive
        self.requested = requested
        self.remaining = remaining


class StoreError(DphistError):
    """The budget store cannot be opened or used: missing, unreachable, or no budget of
    that name (the message names the store, never its password)."""


class StoreIntegrityError(StoreError):
    """The budget store fails its check (corrupted, truncated or edited): nothing is
    charged or published from it."""


class BudgetPlanError(PrivacyError, ValueError):
    """Budget shares do not resolve to a valid split of epsilon."""


class DataDependentParameterError(PrivacyError, ValueError):
    """A parameter that must be public (bin edges, domain, sizes) was missing or data-derived."""


class UnknownMethodError(DphistError, KeyError):
    """No method is registered under this name; the message suggests close matches."""

    def __init__(self, name: str, known: Iterable[str]):
        known = sorted(known)
        close = difflib.get_close_matches(str(name).lower(), known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(
            f"unknown method {name!r}.{hint} Run dphist.list_methods() or 'dphist methods' to "
            "list them."
        )
        self.name = name
        self.suggestions = close

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class DatasetUnavailableError(DphistError, FileNotFoundError):
    """A named real dataset could not be found on this machine."""


class InternalError(DphistError, RuntimeError):
    """A broken invariant inside dphist: this is a bug, please report it."""


class DphistWarning(UserWarning):
    """Base class of dphist warnings."""


class UtilityWarning(DphistWarning):
    """The release will be dominated by noise at this epsilon."""
