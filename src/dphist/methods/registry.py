"""The method registry: every method is one recipe function, registered by name.

A recipe is a function with keyword-only parameters (its tunable settings, with
defaults) that returns a :class:`~dphist.blocks.Pipeline`. :func:`register` records
its name, aliases, one-line summary, citation and time complexity; the registry is an
explicit dict, so listing, lookup, the command line and the tests all read the same
table. A method's blocks and budget split are read from its default pipeline
(:meth:`MethodInfo.budget_split`), never written down twice.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from .._kernel import as_share, resolve_shares
from ..blocks import Pipeline
from ..errors import BudgetPlanError, CompositionError, UnknownMethodError, ValidationError

__all__ = ["SHARE_PARAMETERS", "MethodInfo", "get_method", "list_methods", "register"]

SHARE_PARAMETERS = frozenset({"ratio"})
"""Method settings passed to blocks as a share of epsilon, checked here so that errors
name the setting and not the block (SORTaki's ``gamma_in`` is checked by its recipe)."""


_DEFAULT_PIPELINES: dict[tuple, Pipeline] = {}


@dataclass(frozen=True)
class MethodInfo:
    """A registered method: name, summary, citation, aliases, default parameters and
    time complexity (in the number of bins ``N``, for the default parameters)."""

    name: str
    summary: str
    cite: str
    aliases: tuple[str, ...]
    recipe: Callable[..., Pipeline] = field(repr=False)
    defaults: Mapping[str, Any] = field(repr=False)
    example: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """Public parameters a caller must supply (e.g. a count bound), with example values
    used by the method listing, the contract tests and the benchmarks."""
    complexity: str = ""

    def pipeline(self, **params: Any) -> Pipeline:
        """Build the method's blocks for ``params``; unknown names are refused. The
        defaults' pipeline is built once (blocks are immutable)."""
        if not params:
            key = (self.name, self.recipe)
            built = _DEFAULT_PIPELINES.get(key)
            if built is None:
                built = _DEFAULT_PIPELINES[key] = self._build()
            return built
        return self._build(**params)

    def _build(self, **params: Any) -> Pipeline:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            allowed = ", ".join(self.defaults) or "none"
            raise ValidationError(
                f"method {self.name!r} has no parameter(s) {', '.join(map(repr, unknown))}; "
                f"its parameters are: {allowed}"
            )
        for name in SHARE_PARAMETERS.intersection(params):
            q = as_share(params[name], name=name)
            if not 0 < q < 1:
                raise BudgetPlanError(
                    f"{name} is the share of epsilon spent before the last step and must lie "
                    f"strictly between 0 and 1; got {params[name]!r}"
                )
        pipeline = self.recipe(**params)
        if not isinstance(pipeline, Pipeline):
            raise CompositionError(f"recipe {self.name!r} did not return a Pipeline")
        return pipeline

    def budget_split(self, **params: Any) -> tuple[tuple[str, Fraction], ...]:
        """``(block, share of epsilon)`` for each block of the pipeline for ``params``
        (default: the defaults and the example values), shares resolved exactly.

        Blocks that only post-process released values have share 0.
        """
        pipeline = self.pipeline(**{**self.example, **params})
        shares = resolve_shares(Fraction(1), {b.name: b.share for b in pipeline.blocks})
        return tuple(shares.items())

    def __str__(self) -> str:
        return f"{self.name}: {self.summary} [{self.cite}]"


_REGISTRY: dict[str, MethodInfo] = {}
_LOOKUP: dict[str, str] = {}


def _key(name: str) -> str:
    return name.strip().lower()


def register(
    name: str,
    *,
    summary: str,
    cite: str,
    aliases: tuple[str, ...] = (),
    example: Mapping[str, Any] | None = None,
    complexity: str = "",
) -> Callable[[Callable[..., Pipeline]], Callable[..., Pipeline]]:
    """Decorator adding a recipe to the registry under ``name`` and ``aliases``.

    ``complexity`` is the method's running time in ``N`` with its default parameters
    (e.g. ``"O(N log N)"``), as implemented here, for listings and the ``auto`` rules.
    """

    def decorate(recipe: Callable[..., Pipeline]) -> Callable[..., Pipeline]:
        sig = inspect.signature(recipe)
        defaults = {}
        for p in sig.parameters.values():
            if p.kind is not inspect.Parameter.KEYWORD_ONLY or p.default is inspect.Parameter.empty:
                raise CompositionError(
                    f"recipe {name!r}: parameter {p.name!r} must be keyword-only with a default"
                )
            defaults[p.name] = p.default
        info = MethodInfo(
            name,
            summary,
            cite,
            tuple(aliases),
            recipe,
            MappingProxyType(defaults),
            MappingProxyType(dict(example or {})),
            complexity,
        )
        for k in dict.fromkeys(_key(key) for key in (name, *aliases)):
            if k in _LOOKUP:
                raise CompositionError(f"method name {k!r} is registered twice")
            _LOOKUP[k] = name
        _REGISTRY[name] = info
        return recipe

    return decorate


def get_method(name: object) -> MethodInfo:
    """The method registered under ``name`` or one of its aliases (case-insensitive)."""
    if isinstance(name, MethodInfo):
        return name
    if not isinstance(name, str):
        raise UnknownMethodError(repr(name), _LOOKUP)
    canonical = _LOOKUP.get(_key(name))
    if canonical is None:
        raise UnknownMethodError(name, _LOOKUP)
    return _REGISTRY[canonical]


def list_methods() -> tuple[MethodInfo, ...]:
    """All registered methods, in registration order."""
    return tuple(_REGISTRY.values())
