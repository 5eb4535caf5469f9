"""The white-box check: every noise draw covered by a charge made before it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..._kernel import (
    Accountant,
    Charge,
    NoiseSource,
    Primitive,
    protect,
    protect_grid,
    validate_epsilon,
)
from ..._kernel.noise import GeneratorBits
from ...methods import get_method
from ...methods.run import run as run_method
from ...twod import grid_method, is_grid


@dataclass(frozen=True)
class LedgerReport:
    """What :func:`ledger_check` found; ``ok`` when ``problems`` is empty."""

    claimed: Fraction
    charged: Fraction
    charges: tuple[Charge, ...]
    values_drawn: int
    values_charged: int
    uncharged_values: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


MEASUREMENT_PRIMITIVES = frozenset(p for p in Primitive if p.measures)
"""Kernel primitives that release one noisy value per value drawn (at most ``size``)."""

SELECTION_PRIMITIVES = frozenset(p for p in Primitive if not p.measures)
"""Kernel primitives that draw noise on candidate scores and release only a choice."""


class _CountingNoise(NoiseSource):
    """A noise source that records every sampler call and how many charges preceded it."""

    def __init__(self, bits: Any, charges_so_far: Callable[[], int], log: list):
        super().__init__(bits)
        self._charges_so_far = charges_so_far
        self._log = log

    def add_discrete_laplace(self, out: np.ndarray, t: int, s: int) -> None:
        self._log.append((self._charges_so_far(), Fraction(t, s), int(out.shape[0])))
        super().add_discrete_laplace(out, t, s)

    def add_discrete_gaussian(self, out: np.ndarray, a: int, b: int) -> None:
        self._log.append((self._charges_so_far(), Fraction(a, b), int(out.shape[0])))
        super().add_discrete_gaussian(out, a, b)

    def exponential_index(self, d: np.ndarray, p: int, q: int) -> int:
        self._log.append((self._charges_so_far(), Fraction(p, q), int(d.shape[0])))
        return super().exponential_index(d, p, q)

    def spawn(self) -> _CountingNoise:
        return self


def _charge_problems(charges: Sequence[Any]) -> list[str]:
    """Uncertified charges and noise scales below sensitivity / epsilon (under zCDP:
    Gaussian variances below squared sensitivity / (2 rho))."""
    problems = []
    for c in charges:
        if not c.certified:
            problems.append(f"{c.block}: uncertified {c.primitive} charge")
        if c.unit == "rho":
            if c.primitive in MEASUREMENT_PRIMITIVES and 2 * c.scale * c.epsilon < c.sensitivity:
                problems.append(
                    f"{c.block}: {c.primitive} variance {c.scale} below D2/(2 rho) "
                    f"{c.sensitivity / (2 * c.epsilon)}"
                )
            continue
        if c.scale * c.epsilon < c.sensitivity:
            problems.append(
                f"{c.block}: {c.primitive} scale {c.scale} below sensitivity/epsilon "
                f"{c.sensitivity / c.epsilon}"
            )
    return problems


def _coverage(
    charges: Sequence[Any], log: Sequence[tuple[int, Fraction, int]], problems: list[str]
) -> tuple[int, int]:
    """(uncharged, covered) noise values: each draw is owned by the last charge before it.

    A measurement covers at most its released ``size``; a selection covers all of its
    draws (its noisy scores are never released); draws before any charge are uncharged.
    """
    per_charge = [0] * (len(charges) + 1)
    for before, _, size in log:
        per_charge[before] += size
    uncharged = per_charge[0]
    covered = 0
    for j, c in enumerate(charges, start=1):
        got = per_charge[j]
        if c.primitive in SELECTION_PRIMITIVES:
            covered += got
        elif c.primitive not in MEASUREMENT_PRIMITIVES:
            problems.append(
                f"{c.block}: unknown primitive {c.primitive!r}; teach ledger_check whether it "
                "releases its noisy values (measurement) or only a choice (selection)"
            )
            uncharged += got
        elif got > c.size:
            uncharged += got - c.size
            covered += c.size
        else:
            covered += got
    if per_charge[0]:
        problems.append(f"{per_charge[0]} noise values drawn before any charge")
    if uncharged > per_charge[0]:
        problems.append(f"{uncharged - per_charge[0]} noise values beyond what was charged")
    return uncharged, covered


def ledger_check(
    method: str | Sequence[Any],
    counts: object,
    *,
    epsilon: object = 1.0,
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
    exact: bool = True,
    definition: str = "pure",
) -> LedgerReport:
    """White-box check of one seeded release: ledger against sampler calls.

    With ``definition="zcdp"`` ``epsilon`` is the release's rho and the Gaussian and
    exponential-mechanism draws are tagged too.

    ``method`` is a registered name (its recipe is built with ``params``) or a sequence
    of blocks. The blocks run through the kernel with a counting noise source; every
    sampler call is tagged with the number of charges committed before it. Checks:

    * the charges recompose exactly (sequential sum of exact rationals) to the
      claimed ``epsilon`` (``exact=False``: at most ``epsilon``);
    * every charge is certified and its noise scale is at least sensitivity/epsilon;
    * every drawn value is covered by a charge made before the draw: a noise draw
      before the first charge, or more values after a measurement charge than it
      released (its ``size``), is uncharged noise. Draws after a selection charge
      (noisy partition, report-noisy-min: the noisy scores are never released)
      belong to it; a primitive in neither list is reported.

    Noise drawn outside the kernel's noise source is not seen.
    """
    eps = validate_epsilon(epsilon)
    grid = is_grid(counts)  # a 2-D histogram: its methods and its sealed cells
    if isinstance(method, str):
        info = grid_method(method).info if grid else get_method(method)
        blocks = info.pipeline(**dict(params or {})).blocks
        label = info.name
    else:
        blocks = tuple(method)
        label = "pipeline"
    data = protect_grid(counts) if grid else protect(counts)
    root = Accountant(eps, label="ledger-check")
    log: list[tuple[int, Fraction, int]] = []
    noise = _CountingNoise(
        GeneratorBits(np.random.default_rng(seed)), lambda: len(root.ledger), log
    )
    run_method(
        blocks, data, epsilon=eps, budget=root.child(eps, label=label), noise=noise,
        definition=definition,
    )  # fmt: skip
    charges = root.ledger
    charged = sum((c.epsilon for c in charges), Fraction(0))
    problems: list[str] = []
    if charged > eps or (exact and charged != eps):
        problems.append(f"ledger recomposes to {charged}, claimed {eps}")
    problems += _charge_problems(charges)
    drawn = sum(size for _, _, size in log)
    uncharged, covered = _coverage(charges, log, problems)
    return LedgerReport(
        claimed=eps,
        charged=charged,
        charges=charges,
        values_drawn=drawn,
        values_charged=covered,
        uncharged_values=uncharged,
        problems=tuple(problems),
    )
