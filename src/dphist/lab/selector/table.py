"""The error table behind ``method="auto"``: every candidate's expected error on
DPBench-style histograms, by shape, domain size, scale, epsilon and workload.

Histograms are generated as DPBench does (Hay et al., SIGMOD 2016, §5): a *shape* (a
real histogram or a synthetic one, normalised) is reduced to ``n`` bins by summing
adjacent bins and ``scale`` records are drawn from it (one multinomial draw,
:func:`dphist.synthetic.resample`). Each candidate publishes the histogram with
seeded noise ``seeds`` times; a cell of the table holds its mean squared error per
query for each workload kind of :data:`WORKLOADS`. The true answers of the
query ``auto`` measures (:class:`~dphist._kernel.TotalAndTop`: the total and the
records in the fullest tenth of the bins) are kept beside each histogram, so the
training can simulate the noisy features.

Everything here is the lab: public data only goes into the shipped model.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ... import datasets, metrics, synthetic, workloads
from ..._kernel import TotalAndTop
from ...errors import DatasetUnavailableError
from ...methods.selector import CANDIDATES, WORKLOADS, Candidate, data_independent
from ...session import publish
from ...uncertainty import workload_total

__all__ = [
    "EPSILONS",
    "RHOS",
    "SCALES",
    "SIZES",
    "Cell",
    "Table",
    "build_table",
    "cell_errors",
    "coarsen",
    "exact_errors",
    "seeds_for",
    "shapes",
    "workload_errors",
]

SIZES = (4, 16, 64, 256, 1024, 4096)
SCALES = (10**3, 10**4, 10**5, 10**6, 10**7)
EPSILONS = (0.01, 0.1, 1.0)
#: The rhos of the zCDP table: ``epsilon**2 / 4`` for each of :data:`EPSILONS` (one
#: count's Gaussian noise as large as its Laplace noise at that epsilon).
RHOS = (2.5e-5, 0.0025, 0.25)


def _synthetic_shapes() -> dict[str, np.ndarray]:
    """Shapes that no shared dataset has: steps, a seasonal series with spikes, a sparse
    heavy tail, a smooth bump, a Zipf law and a log-normal law over shuffled categories,
    activity in a few bursts (3% of the domain) or in many wider ones (20%), and two
    sparse spiky shapes where point queries go to partitions: isolated tall spikes on
    0.3% of the bins, and tall spikes over a floor of about one record per bin."""
    n = 4096
    t = np.arange(n, dtype=np.float64)
    zipf = 1.0 / np.arange(1, n + 1)
    return {
        "steps": synthetic.piecewise_constant(n, segments=12, max_level=60, rng=11)[0],
        "seasonal": synthetic.spiky(n, rng=12),
        "sparse_tail": synthetic.sparse_power_law(n, density=0.02, rng=13),
        "bump": np.exp(-0.5 * ((t - 1500.0) / 300.0) ** 2),
        "zipf_categories": np.random.default_rng(14).permutation(zipf),
        "lognormal_categories": np.random.default_rng(17).lognormal(0.0, 1.5, n),
        "bursts": synthetic.bursts(n, clusters=6, coverage=0.03, rng=15),
        "wide_bursts": synthetic.bursts(n, clusters=24, coverage=0.2, rng=16),
        "spikes": synthetic.sparse_power_law(n, density=0.003, exponent=0.8, rng=18),
        "spikes_on_floor": synthetic.spiky(n, base=1.0, spikes=0.01, height=300.0, rng=19),
    }


def shapes(data_dir: str | os.PathLike[str] | None = None) -> dict[str, np.ndarray]:
    """Every shape by name: the shared datasets present, then the synthetic ones."""
    out: dict[str, np.ndarray] = {}
    for name in datasets.DATASETS:
        try:
            out[name] = datasets.load(name, data_dir=data_dir)
        except DatasetUnavailableError:
            continue
    out.update(_synthetic_shapes())
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def coarsen(shape: np.ndarray, n: int) -> np.ndarray:
    """Sum ``shape`` into ``n`` bins of adjacent, near-equal runs (any ``n <= len``)."""
    edges = np.linspace(0, shape.size, n + 1).round().astype(np.int64)
    return np.add.reduceat(shape, edges[:-1])


def _long_lengths(n: int) -> list[int]:
    return sorted({max(1, n // 8), max(1, n // 4), max(1, n // 2)})


_WORKLOADS: dict[str, Callable[[int], workloads.Workload]] = {
    "point": workloads.identity,
    "short": workloads.small_ranges,
    "long": lambda n: workloads.windows(n, _long_lengths(n)),
    "all": workloads.all_ranges,
    "prefix": workloads.prefix,
}


_ERRORS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "point": metrics.point_mse,
    "short": lambda t, e: metrics.workload_mse(t, e, _WORKLOADS["short"](t.size)),
    "long": lambda t, e: metrics.workload_mse(t, e, _WORKLOADS["long"](t.size)),
    "all": metrics.interval_mse,
    "prefix": lambda t, e: metrics.workload_mse(t, e, _WORKLOADS["prefix"](t.size)),
}


def workload_errors(true: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """Mean squared error per query for each kind of :data:`WORKLOADS`, in order."""
    return np.array([_ERRORS[w](true, estimate) for w in WORKLOADS])


@dataclass(frozen=True)
class Cell:
    """One histogram of the table: a shape reduced to ``n`` bins with ``scale`` records."""

    shape: str
    n: int
    scale: int  # 0: the shape's own counts, unreduced and unsampled (a real dataset)

    def counts(self, all_shapes: dict[str, np.ndarray]) -> np.ndarray:
        base = all_shapes[self.shape]
        if self.scale == 0:
            return base.astype(np.int64)
        seed = int.from_bytes(hashlib.sha256(repr(self).encode()).digest()[:8], "little")
        return synthetic.resample(coarsen(base, self.n), self.scale, rng=seed)


@lru_cache(maxsize=4096)
def exact_errors(
    candidate: Candidate, n: int, epsilon: float, definition: str = "pure"
) -> np.ndarray | None:
    """A data-independent candidate's exact expected error per workload kind, or None
    (``epsilon`` is a rho with ``definition="zcdp"``).

    Identity, HB and OPT-H publish an unbiased linear function of noise whose law does
    not depend on the counts, so their expected squared error on any query is its noise
    variance (:mod:`dphist.uncertainty`), read from a dry run on empty counts. Using it
    instead of a mean over seeded runs removes the sampling noise from the labels and
    from the baseline that every regret is guarded against.
    """
    if not data_independent(candidate):
        return None
    zeros = np.zeros(n, dtype=np.int64)
    amount = {"rho" if definition == "zcdp" else "epsilon": epsilon}
    rel = publish(zeros, method=candidate.method, rng=0, **amount, **candidate.params)
    noise = rel.uncertainty.noise
    out = []
    for kind in WORKLOADS:
        work = _WORKLOADS[kind](n)
        out.append(workload_total(noise, work) / work.size)
    return np.array(out)


def cell_errors(
    x: np.ndarray,
    epsilon: float,
    candidates: Sequence[Candidate] = CANDIDATES,
    seeds: int = 3,
    first_seed: int = 0,
    definition: str = "pure",
) -> np.ndarray:
    """``errors[c, w]``: candidate ``c``'s mean error on workload ``w`` over ``seeds``
    seeded runs (``epsilon`` is a rho with ``definition="zcdp"``); a data-independent
    candidate's is its exact expectation (:func:`exact_errors`), so the baseline every
    regret is guarded against (the better of identity and HB) carries no sampling
    noise."""
    out = np.zeros((len(candidates), len(WORKLOADS)))
    amount = {"rho" if definition == "zcdp" else "epsilon": epsilon}
    for c, cand in enumerate(candidates):
        exact = exact_errors(cand, int(x.size), float(epsilon), definition)
        if exact is not None:
            out[c] = exact
            continue
        for s in range(first_seed, first_seed + seeds):
            est = publish(x, method=cand.method, rng=s, **amount, **cand.params).estimate
            out[c] += workload_errors(x, est) / seeds
    return out


@dataclass(frozen=True)
class Table:
    """``errors[cell, epsilon, candidate, workload]`` with each cell's true facts; under
    ``definition="zcdp"`` the epsilons are rhos."""

    cells: tuple[Cell, ...]
    epsilons: tuple[float, ...]
    candidates: tuple[Candidate, ...]
    errors: np.ndarray
    facts: np.ndarray  # [cell, 2]: true total and records in the fullest tenth of the bins
    definition: str = "pure"

    @property
    def sizes(self) -> np.ndarray:
        return np.array([c.n for c in self.cells])

    def noisy_facts(
        self, i: int | np.ndarray, epsilon: float, rng: np.random.Generator
    ) -> np.ndarray:
        """The facts of cell ``i`` (or of each cell of an index array, one row each) as
        ``auto`` would measure them with ``epsilon``: Laplace noise at the kernel
        query's sensitivity over epsilon or, under zCDP (``epsilon`` a rho), Gaussian
        noise of variance ``sensitivity2 / (2 rho)`` (continuous noise stands in for the
        kernel's discrete noise in training). The query's sensitivities do not depend
        on the number of bins."""
        query = TotalAndTop(int(self.cells[0].n))
        facts = self.facts[i]
        if self.definition == "zcdp":
            scale = float(np.sqrt(float(query.sensitivity2) / (2 * epsilon)))
            return facts + rng.normal(0.0, scale, facts.shape)
        return facts + rng.laplace(0.0, float(query.sensitivity) / epsilon, facts.shape)

    def pooled(self, other: Table) -> Table:
        """The table whose errors average this one's and ``other``'s (an independent
        replicate of the same cells: twice the seeds)."""
        if (other.cells, other.candidates, other.definition) != (
            self.cells,
            self.candidates,
            self.definition,
        ):
            raise ValueError("replicates must have the same cells and candidates")
        return replace(self, errors=(self.errors + other.errors) / 2)


def seeds_for(n: int, seeds: int) -> int:
    """Runs per candidate on ``n`` bins: ``seeds``, times up to 16 on small domains, where
    one run's error has few degrees of freedom (and runs cost next to nothing)."""
    return seeds * int(np.clip(256 // max(n, 1), 1, 16))


def _one(args: tuple) -> tuple[np.ndarray, np.ndarray]:
    cell, all_shapes, epsilons, candidates, seeds, first_seed, definition = args
    x = cell.counts(all_shapes)
    if not candidates:  # every column came from the cache
        return np.zeros((len(epsilons), 0, len(WORKLOADS))), TotalAndTop(x.size).apply(x)
    runs = seeds_for(x.size, seeds)
    errs = np.stack([cell_errors(x, e, candidates, runs, first_seed, definition) for e in epsilons])
    return errs, TotalAndTop(x.size).apply(x)


def build_table(
    cells: Sequence[Cell],
    all_shapes: dict[str, np.ndarray],
    *,
    epsilons: Sequence[float] = EPSILONS,
    candidates: Sequence[Candidate] = CANDIDATES,
    seeds: int = 3,
    first_seed: int = 0,
    workers: int = 2,
    cache: Path | None = None,
    definition: str = "pure",
) -> Table:
    """Measure every cell (in ``workers`` processes) with seeds from ``first_seed``
    (``seeds`` of them, more on small domains: :func:`seeds_for`); ``cache`` (an
    ``.npz`` path) keeps finished cells so an interrupted build resumes. A cache built
    for the same epsilons and seeds but other candidates lends the columns of the
    candidates both share (each candidate's runs are seeded alone, so a column does not
    depend on the others): a new candidate costs its own column only. With
    ``definition="zcdp"`` the epsilons are rhos and every candidate runs under zCDP."""
    labels = [c.label for c in candidates]
    key = _key(epsilons, seeds, first_seed, definition)
    done = _load(cache, key, labels) if cache is not None else {}
    todo = [c for c in cells if c not in done or np.isnan(done[c][0]).any()]
    jobs = []
    for c in todo:
        have = done[c][0] if c in done else np.full((len(epsilons), len(labels), 1), np.nan)
        need = tuple(candidates[k] for k in range(len(labels)) if np.isnan(have[0, k, 0]))
        jobs.append((c, all_shapes, tuple(epsilons), need, seeds, first_seed, definition))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for k, (cell, job, result) in enumerate(zip(todo, jobs, pool.map(_one, jobs), strict=True)):
            errs = (
                done[cell][0]
                if cell in done
                else np.full((len(epsilons), len(labels), len(WORKLOADS)), np.nan)
            )
            errs = errs.copy()
            errs[:, [labels.index(c.label) for c in job[3]]] = result[0]
            done[cell] = (errs, result[1])
            if cache is not None and (k % 20 == 19 or k == len(todo) - 1):
                _save(cache, done, key, epsilons, labels)
    rows = [done[c] for c in cells]
    return Table(
        tuple(cells),
        tuple(epsilons),
        tuple(candidates),
        np.stack([r[0] for r in rows]),
        np.stack([r[1] for r in rows]),
        definition,
    )


def _key(epsilons: Sequence[float], seeds: int, first: int, definition: str) -> str:
    """What a cached table was built for: epsilons (rhos under zCDP) and seeds."""
    budgets = f"rho={list(epsilons)}" if definition == "zcdp" else f"eps={list(epsilons)}"
    return f"{budgets};seeds={first}+{seeds}, more below 256 bins"


def _load(path: Path, key: str, labels: Sequence[str]) -> dict[Cell, tuple[np.ndarray, np.ndarray]]:
    """The cached cells with a column per label of ``labels`` (NaN where the cache has
    none); empty when the cache is absent or was built for other epsilons or seeds."""
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=True) as z:
        stored = str(z["key"]) if "key" in z else ""
        if "labels" in z:
            old = [str(v) for v in z["labels"]]
        else:  # caches written before the labels had their own entry
            parts = dict(p.split("=", 1) for p in stored.split(";") if "=" in p)
            old = parts.pop("candidates", "").split(",")
            stored = ";".join(f"{k}={v}" for k, v in parts.items())
        if stored != key:
            return {}
        cols = [old.index(label) if label in old else -1 for label in labels]
        out = {}
        for i, c in enumerate(z["cells"]):
            errs = z["errors"][i][:, [max(k, 0) for k in cols]].astype(np.float64)
            errs[:, [j for j, k in enumerate(cols) if k < 0]] = np.nan
            out[Cell(str(c[0]), int(c[1]), int(c[2]))] = (errs, z["facts"][i])
        return out


def _save(
    path: Path,
    done: dict[Cell, tuple[np.ndarray, np.ndarray]],
    key: str,
    epsilons: Sequence[float],
    labels: Sequence[str],
) -> None:
    cells = list(done)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(
        tmp,
        key=np.array(key),
        definition=np.array("zcdp" if key.startswith("rho=") else "pure"),
        labels=np.array(labels),
        epsilons=np.array(epsilons),
        cells=np.array([(c.shape, c.n, c.scale) for c in cells], dtype=object),
        errors=np.stack([done[c][0] for c in cells]),
        facts=np.stack([done[c][1] for c in cells]),
    )
    os.replace(tmp, path)
