"""Held-out evaluation of ``method="auto"``: leave one shape out, run the mechanism.

For each family of shapes (a shared dataset with its coarser cut, e.g. NetTrace and its
4,096-bin version, or one synthetic shape) a model is fitted on the table cells of every
*other* family (:func:`~dphist.lab.selector.fit.fit_model`), so a dataset never trains
the model scored on it, nor do histograms resampled from it. Every cell of the held-out
family is then published by ``dh.publish(x, method="auto", auto_model=...)`` itself
(:func:`auto_errors`; seeded noise). Its regret is its
mean error over the best candidate's at the *full* epsilon -- the features' budget is
counted against ``auto`` -- cross-fitted over two replicates (:class:`Evaluation`).

:func:`proxy_regrets` scores a model on table cells without running anything (the
chosen candidate's table error, scaled by ``1 / (1 - share)**2``); it is used to pick
the tree size and the share before the real evaluation. :func:`table_only` is the
same held-out protocol from the tables alone, cross-fitted like the real one: fast
enough to map what the guard's hinge costs in regret, with noisy or exact features.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...errors import InternalError
from ...methods.advisor import choose, pure_equivalent
from ...methods.selector import SMALL_DOMAIN, WORKLOADS, Candidate, Model, feature_matrix
from ...release import Release
from ...session import publish
from .fit import Settings, fit_model, simulated_facts
from .table import Table, exact_errors, seeds_for, workload_errors

__all__ = [
    "FAMILIES",
    "Evaluation",
    "auto_errors",
    "families",
    "held_out",
    "proxy_errors",
    "proxy_regrets",
    "table_only",
]


#: Shapes cut from the same data, held out together.
FAMILIES = {"nettrace_4096": "nettrace", "searchlogs_4096": "search_logs"}


def families(table: Table) -> dict[str, np.ndarray]:
    """``{family: mask of its cells}`` (see :data:`FAMILIES`), in name order."""
    names = np.array([FAMILIES.get(c.shape, c.shape) for c in table.cells])
    return {f: names == f for f in sorted(set(names))}


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(list(key)))


def auto_errors(
    x: np.ndarray, epsilon: float, model: Model, share: Fraction, seeds: int, salt: int = 0
) -> tuple[np.ndarray, list[str]]:
    """``auto``'s mean error per workload kind over ``seeds`` releases made exactly as
    a user's (``dh.publish(x, method="auto", ...)``, with ``model``), and its most
    frequent pick per kind.

    Where a release picked a data-independent method, its error is replaced by that
    method's exact expectation at the epsilon it ran with (:func:`exact_errors`): its
    noise is independent of the features' noise that made the pick, so this is the
    conditional expectation of the same error (an unbiased, less noisy estimate).
    A seed's releases for the five kinds measure the same noisy features (same
    generator), so one release gives them and :func:`~dphist.methods.advisor.choose`
    the other kinds' picks; a data-dependent pick is published once per seed and its
    estimate scored on every kind that picked it (the release does not depend on the
    workload asked, only on the pick)."""
    eps = Fraction(str(epsilon))
    errors = np.zeros(len(WORKLOADS))
    picks: list[Counter] = [Counter() for _ in WORKLOADS]
    for s in range(seeds):
        first = _auto_release(x, eps, model, share, salt, s, WORKLOADS[0])
        notes = first.params["auto"]
        used = Fraction(notes["share"])
        spent = eps * (1 - used)  # the method's
        scored: dict[str, np.ndarray] = {}
        for w, kind in enumerate(WORKLOADS):
            choice = choose(
                int(x.size), spent, kind, noisy_total=notes["noisy_total"],
                noisy_top_tenth=notes["noisy_top_tenth"], model=model, share=used,
            )  # fmt: skip
            pick = Candidate(choice.method, choice.params)
            exact = exact_errors(pick, int(x.size), float(spent))
            if exact is not None:
                errors[w] += exact[w]
            else:
                if pick.label not in scored:
                    rel = first if w == 0 else _auto_release(x, eps, model, share, salt, s, kind)
                    if Candidate(rel.method, rel.params["auto"]["params"]) != pick:
                        raise InternalError(f"auto picked {rel.method}, choose() {pick.label}")
                    scored[pick.label] = workload_errors(x, rel.estimate)
                errors[w] += scored[pick.label][w]
            picks[w][pick.label] += 1
    return errors / seeds, [p.most_common(1)[0][0] for p in picks]


def _auto_release(
    x: np.ndarray, eps: Fraction, model: Model, share: Fraction, salt: int, seed: int, kind: str
) -> Release:
    """One release made as a user's, seeded by ``(salt, seed)``."""
    return publish(
        x, method="auto", epsilon=eps, rng=_rng(salt, seed), workload=kind,
        auto_share=share, auto_model=model,
    )  # fmt: skip


def proxy_errors(
    table: Table,
    rows: np.ndarray,
    model: Model,
    rng: np.random.Generator,
    draws: int = 1,
    exact: bool = False,
) -> np.ndarray:
    """``error[cell, epsilon, workload]`` of ``model`` from the table alone: the chosen
    candidate's table error, scaled by ``1 / (1 - share)**2`` (``1 / (1 - share)`` on a
    zCDP table, where errors go as ``1 / rho``), averaged over ``draws`` simulated
    feature measurements (``exact``: the true features, once)."""
    share = float(model.share)
    labels = [c.label for c in table.candidates]
    index = {label: k for k, label in enumerate(labels)}
    draws = 1 if exact or not share else draws
    cells = np.repeat(np.asarray(rows), draws)  # draws rows per cell, in cell order
    sizes = table.sizes[cells]
    out = np.zeros((rows.size, len(table.epsilons), len(WORKLOADS)))
    for j, eps in enumerate(table.epsilons):
        total = top = None
        if share:
            total, top = simulated_facts(table, cells, share * eps, rng, exact).T
        budget = pure_equivalent(eps * (1 - share), table.definition)
        f = feature_matrix(sizes, budget, total, top)
        for w, kind in enumerate(WORKLOADS):
            first = model.firsts(f, kind, share > 0, table.definition)
            chosen = np.array([index[label] for label in first], dtype=np.int64)
            err = table.errors[cells, j, chosen, w]
            out[:, j, w] = err.reshape(rows.size, draws).mean(axis=1)
    power = 1 if table.definition == "zcdp" else 2
    return out / (1 - share) ** power


def proxy_regrets(table: Table, rows: np.ndarray, model: Model, rng: np.random.Generator):
    """``regret[cell, epsilon, workload]`` of ``model`` from the table alone, against the
    table's least mean (one feature draw per cell and epsilon)."""
    return proxy_errors(table, rows, model, rng) / table.errors[rows].min(axis=2)


@dataclass(frozen=True)
class Evaluation:
    """Per cell, epsilon and workload: auto's error and pick, against two independent
    replicates ``a`` and ``b`` of the candidates' errors.

    The least of noisy means is biased low (the all-range and prefix errors of one run
    are dominated by a few noise directions), so :attr:`regret` is cross-fitted: the
    best candidate of one replicate is scored by the other, both ways, and the two
    ratios are averaged geometrically. :attr:`naive_regret` divides by the least
    pooled mean instead (biased high).
    """

    a: Table
    b: Table
    auto: np.ndarray  # [cell, epsilon, workload]
    picks: list[list[list[str]]]

    @property
    def table(self) -> Table:
        return self.a.pooled(self.b)

    @property
    def regret(self) -> np.ndarray:
        ea, eb = self.a.errors, self.b.errors
        best_a = np.take_along_axis(eb, ea.argmin(axis=2)[:, :, None], 2)[:, :, 0]
        best_b = np.take_along_axis(ea, eb.argmin(axis=2)[:, :, None], 2)[:, :, 0]
        return self.auto / np.sqrt(best_a * best_b)

    @property
    def naive_regret(self) -> np.ndarray:
        return self.auto / self.table.errors.min(axis=2)

    @property
    def baseline(self) -> np.ndarray:
        labels = [c.label for c in self.a.candidates]
        e = self.table.errors
        return np.minimum(e[:, :, labels.index("identity")], e[:, :, labels.index("HB")])

    def best_label(self, i: int, j: int, w: int) -> str:
        e = self.table.errors
        return self.a.candidates[int(np.argmin(e[i, j, :, w]))].label


def _cell_job(args: tuple) -> tuple[np.ndarray, list[list[str]]]:
    x, epsilons, model, share, seeds, salt = args
    # up to SMALL_DOMAIN bins auto measures nothing and runs a data-independent method:
    # its error is the exact expectation, the same for every seed
    runs = 1 if x.size <= SMALL_DOMAIN else seeds_for(x.size, seeds)
    rows = [auto_errors(x, e, model, share, runs, salt) for e in epsilons]
    return np.stack([r[0] for r in rows]), [r[1] for r in rows]


def held_out(
    a: Table,
    b: Table,
    counts: Sequence[np.ndarray],
    settings: Settings,
    *,
    seeds: int = 3,
    workers: int = 2,
) -> Evaluation:
    """Leave-one-shape-out evaluation of ``auto`` over every cell of the replicates
    ``a`` and ``b`` (``counts[i]`` is cell ``i``'s histogram); models are fitted on the
    pooled table of the other shapes."""
    pooled = a.pooled(b)
    jobs, order = [], []
    for held in families(pooled).values():
        model = fit_model(pooled, np.flatnonzero(~held), settings)
        for i in np.flatnonzero(held):
            jobs.append((counts[i], pooled.epsilons, model, settings.share, seeds, int(i)))
            order.append(int(i))
    auto = np.zeros((len(pooled.cells), len(pooled.epsilons), len(WORKLOADS)))
    picks: list[list[list[str]]] = [[] for _ in pooled.cells]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for i, (err, pick) in zip(order, pool.map(_cell_job, jobs), strict=True):
            auto[i], picks[i] = err, pick
    return Evaluation(a, b, auto, picks)


def table_only(
    a: Table,
    b: Table,
    settings: Settings,
    *,
    draws: int = 8,
    seed: int = 7,
    fit_on: Table | None = None,
) -> Evaluation:
    """Leave-one-shape-out evaluation from the tables alone: as :func:`held_out`, but
    auto's error is :func:`proxy_errors` (``draws`` simulated measurements per cell, or
    the exact features with :attr:`Settings.exact_features`) instead of runs of the
    mechanism. Seconds instead of minutes, so it can compare many settings; on the
    shipped settings it lands within 1% of :func:`held_out`'s regret. ``fit_on`` (a
    table of the same cells, e.g. the pure one when ``a`` and ``b`` are zCDP tables)
    trains the models instead of the pooled replicates."""
    pooled = a.pooled(b)
    train = pooled if fit_on is None else fit_on
    if train.cells != pooled.cells:
        raise ValueError("fit_on must hold the same cells")
    rng = np.random.default_rng(seed)
    auto = np.zeros((len(pooled.cells), len(pooled.epsilons), len(WORKLOADS)))
    for held in families(pooled).values():
        model = fit_model(train, np.flatnonzero(~held), settings)
        rows = np.flatnonzero(held)
        auto[rows] = proxy_errors(pooled, rows, model, rng, draws, settings.exact_features)
    return Evaluation(a, b, auto, [[] for _ in pooled.cells])
