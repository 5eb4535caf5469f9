"""Mechanisms under audit: batches of seeded runs of a method, a pipeline or a function."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..._kernel import (
    Accountant,
    NoiseSource,
    as_fraction,
    protect,
    protect_grid,
    validate_epsilon,
)
from ..._kernel.noise import GeneratorBits, discrete_laplace, rational_scale
from ..._kernel.zcdp import approx_dp_epsilon
from ...blocks import State
from ...errors import ValidationError
from ...methods import get_method
from ...methods.run import run as run_method
from ...session import publish


@dataclass(frozen=True, eq=False)
class Outputs:
    """A batch of runs: ``values`` has one row per run; ``labels`` the released grouping
    (one row of bin labels per run) or None."""

    values: np.ndarray
    labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        if values.ndim != 2:
            raise ValidationError("outputs must be a (runs, m) array")
        object.__setattr__(self, "values", values)
        if self.labels is not None:
            labels = np.asarray(self.labels, dtype=np.int64)
            if labels.ndim != 2 or labels.shape[0] != values.shape[0]:
                raise ValidationError("labels must be a (runs, n) array")
            object.__setattr__(self, "labels", labels)

    @property
    def runs(self) -> int:
        return int(self.values.shape[0])


RunBatch = Callable[[np.ndarray, int, np.random.SeedSequence], Outputs]


@dataclass(frozen=True)
class Mechanism:
    """A mechanism under audit: a name, its claimed epsilon and a batch runner.

    ``run(x, runs, seed)`` returns :class:`Outputs` for ``runs`` independent runs on
    the count vector ``x``, all randomness derived from the ``SeedSequence`` ``seed``.
    ``delta > 0`` makes the claim (epsilon, delta)-DP (a zCDP mechanism at the epsilon
    its rho implies for that delta).
    """

    name: str
    epsilon: Fraction
    run: RunBatch = field(repr=False)
    delta: float = 0.0


def zcdp_claim(rho: object, delta: float) -> Fraction:
    """The epsilon that rho-zCDP implies at ``delta`` (Canonne, Kamath, Steinke 2020,
    Cor. 13), rounded up to six decimals: the claim a zCDP audit checks."""
    rho = validate_epsilon(rho, name="rho")
    if not 0 < delta < 1:
        raise ValidationError(f"a zCDP audit needs delta in (0, 1); got {delta!r}")
    eps = approx_dp_epsilon(float(rho), delta)
    return Fraction(int(eps * 10**6) + 1, 10**6)


def children(seed: np.random.SeedSequence, count: int) -> list[np.random.SeedSequence]:
    """The first ``count`` children of ``seed``, as ``seed.spawn`` would give them on a
    fresh sequence, without changing ``seed`` (so the same seed always means the same
    runs; :func:`probe_boundaries` relies on it)."""
    return [
        np.random.SeedSequence(
            seed.entropy, spawn_key=(*seed.spawn_key, k), pool_size=seed.pool_size
        )
        for k in range(count)
    ]


def _generators(seed: np.random.SeedSequence, runs: int) -> list[np.random.Generator]:
    return [np.random.Generator(np.random.PCG64(s)) for s in children(seed, runs)]


def method_mechanism(
    name: str,
    *,
    epsilon: object = 1.0,
    max_records: int = 1,
    rho: object = None,
    delta: float | None = None,
    **params: Any,
) -> Mechanism:
    """A registered method run through :func:`dphist.publish` in seeded mode.

    Each run is one ``publish`` call with its own child generator of the seed; the
    output is ``Release.estimate`` and the grouping ``Release.groups``. With
    ``max_records=K`` the privacy unit contributes up to K records (audit it on pairs
    that differ by K records, :func:`pair` with ``records=K``). With ``rho`` (and
    ``delta``) the method runs under zCDP and the claim is (epsilon, delta)-DP at the
    epsilon ``rho`` implies (:func:`zcdp_claim`).
    """
    info = get_method(name)
    info.pipeline(**params)  # validate the parameters once, up front
    if rho is None:
        eps, claim_delta, amount = validate_epsilon(epsilon), 0.0, {}
    else:
        eps, claim_delta = zcdp_claim(rho, delta), float(delta)
        amount = {"rho": validate_epsilon(rho, name="rho")}
    budget = amount or {"epsilon": eps}
    unit = {} if max_records == 1 else {"max_records": max_records}

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        values = np.empty((runs, len(x)))
        labels = None
        for r, gen in enumerate(_generators(seed, runs)):
            rel = publish(x, method=info.name, rng=gen, **budget, **unit, **params)
            values[r] = rel.estimate
            if rel.groups is not None:
                if labels is None:
                    labels = np.zeros((runs, len(x)), dtype=np.int64)
                labels[r] = rel.groups
        return Outputs(values, labels)

    shown = {**params, **unit, **amount}
    label = info.name if not shown else f"{info.name}{_fmt_params(shown)}"
    return Mechanism(label, eps, run, claim_delta)


def _fmt_params(params: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def pipeline_mechanism(
    name: str,
    blocks: Sequence[Any],
    *,
    epsilon: object = 1.0,
    output: Callable[[State], np.ndarray] | None = None,
    rho: object = None,
    delta: float | None = None,
    max_records: int = 1,
    shape: tuple[int, int] | None = None,
) -> Mechanism:
    """Blocks run through the kernel's :func:`~dphist._kernel.run_pipeline` per run
    (on the cells of a ``shape`` grid, given flattened, when ``shape`` is set).

    The budget nests as in :class:`~dphist.Session` (a cap of ``epsilon`` with a
    release budget below it). By default the output is the estimate and grouping in
    the original bin order, as ``publish`` returns them; ``output(state)`` instead
    selects any vector from the final state (a stage audit, spec §1.2.4). With
    ``rho`` and ``delta`` the blocks run under zCDP, claimed as in
    :func:`method_mechanism`; ``max_records`` as there.
    """
    blocks = tuple(blocks)
    if rho is None:
        eps, claim_delta, cap, definition = validate_epsilon(epsilon), 0.0, None, "pure"
    else:
        eps, claim_delta = zcdp_claim(rho, delta), float(delta)
        cap, definition = validate_epsilon(rho, name="rho"), "zcdp"
    cap = eps if cap is None else cap

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        if shape is None:
            data = protect(x, max_records=max_records)
        else:
            data = protect_grid(np.asarray(x).reshape(shape), max_records=max_records)
        rows: list[np.ndarray] = []
        label_rows: list[np.ndarray] | None = None
        for gen in _generators(seed, runs):
            root = Accountant(cap, label="audit")
            outcome = run_method(
                blocks,
                data,
                epsilon=cap,
                budget=root.child(cap, label=name),
                noise=NoiseSource(GeneratorBits(gen)),
                definition=definition,
            )
            if output is not None:
                rows.append(np.asarray(output(outcome.state), dtype=np.float64).ravel())
                continue
            rows.append(outcome.estimate)
            if outcome.groups is not None:
                if label_rows is None:
                    label_rows = []
                label_rows.append(outcome.groups)
        labels = None if label_rows is None else np.array(label_rows)
        return Outputs(np.array(rows), labels)

    return Mechanism(name, eps, run, claim_delta)


def function_mechanism(
    name: str,
    f: Callable[..., Any],
    *,
    epsilon: object = 1.0,
    vectorized: bool = False,
    delta: float = 0.0,
) -> Mechanism:
    """A plain function as a mechanism.

    ``f(x, generator)`` returns one output vector (or ``(vector, labels)``); with
    ``vectorized=True``, ``f(x, runs, generator)`` returns the ``(runs, m)`` batch (or
    ``(batch, labels)``). Use :func:`seeded_laplace` for noise from the production
    sampler. ``delta > 0`` claims (epsilon, delta)-DP.
    """
    eps = validate_epsilon(epsilon)

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        if vectorized:
            out = f(x, runs, np.random.Generator(np.random.PCG64(seed)))
            return Outputs(*out) if isinstance(out, tuple) else Outputs(out)
        results = [f(x, gen) for gen in _generators(seed, runs)]
        if results and isinstance(results[0], tuple):
            return Outputs(np.array([r[0] for r in results]), np.array([r[1] for r in results]))
        return Outputs(np.array(results))

    return Mechanism(name, eps, run, float(delta))


def seeded_laplace(generator: np.random.Generator, scale: object, size: int) -> np.ndarray:
    """``size`` exact discrete Laplace draws of scale ``>= scale`` from the production
    sampler, fed by ``generator`` (int64; for building audited test mechanisms)."""
    t, s = rational_scale(as_fraction(scale, name="scale"), Fraction(1))
    return discrete_laplace(GeneratorBits(generator), t, s, int(size))


def as_seed(seed: object) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)  # type: ignore[arg-type]
