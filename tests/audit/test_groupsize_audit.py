"""Statistical privacy audit of the group-size estimators (Kuo et al. 2018; spec §5, §7.7).

The audit's neighbour relation is "one bin changes by one": here a bin is a *group*
and its count is the group's size, so ``x -> x + e_i`` adds one entity to group ``i``
(the hierarchy and the number of groups per region stay fixed), which is exactly the
neighbour relation of spec §5.1. Every mechanism outputs, per region, the released
ranked sizes and the histogram (cells above ``WIDTH - 1`` pooled).

* Node estimators (naive, ranked, cumulative) run through the kernel's measurement
  and the library's estimator. One batch of ``runs`` runs is one level of ``runs``
  identical regions: the regions of a level are measured with independent noise, so
  each region's estimate is one independent run of the node mechanism at epsilon.
* The full top-down pipeline and the private selection run once per output, so the
  default audits use two leaves with one group each; the extended ones use more.
* Pairs are the worst cases of each view's sensitivity (spec §5.2): a group of size
  ``i < K`` grows by one (two cells of ``H_K`` move, one cell of ``Hc``, one entry of
  ``Hg``) or shrinks by one.
* Mutants: a truncated histogram charged with sensitivity 1 (noise scale 1/eps for a
  query of sensitivity 2), and two levels each given the whole epsilon. Each has a
  correct twin run with the same pairs and sample sizes.

A correct mechanism is flagged on a pair with probability at most alpha = 1e-6.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest

from dphist import groupsize as gs
from dphist._kernel import Accountant, GroupMeasurer, PrivateGroupsMeasurer, noise_source
from dphist.groupsize.estimators import DEFAULT_NORM, cumulative_estimate, naive_estimate
from dphist.groupsize.publish import _estimate_level, seal
from dphist.lab import audit
from dphist.lab.audit import pair

EPS = 1
WIDTH = 8
K = 5
SEED = 20_180_400
N_SEARCH, N_CONFIRM = 500, 2_500

# sizes of four groups; the size-2 group (index 2) grows or the size-1 group shrinks
SIZES = [1, 1, 2, 3]
GROW = pair(SIZES, 2, +1, "size 2 -> 3: H_K moves two cells, Hc and Hg one")
SHRINK = pair(SIZES, 0, -1, "size 1 -> 0: H_K moves two cells, Hc and Hg one")
# two leaves with one group each: the change is seen by the leaf and by the root
SMALL = pair([1, 2], 1, +1, "leaf group 2 -> 3, root group 2 -> 3")


def encode(hists, groups) -> np.ndarray:
    """One row per run: each region's ranked sizes then its histogram (WIDTH cells)."""
    hists = list(hists)
    n_regions = len(groups)
    width = int(sum(groups)) + WIDTH * n_regions
    runs = len(hists) // n_regions
    out = np.zeros((runs, width))
    for j in range(runs):
        col = 0
        for r in range(n_regions):
            h = np.asarray(hists[j * n_regions + r], dtype=np.int64)
            g = int(groups[r])
            out[j, col : col + g] = np.repeat(np.arange(h.shape[0]), h)
            col += g
            cells = h[:WIDTH].copy()
            cells[-1] += h[WIDTH:].sum()
            out[j, col : col + cells.shape[0]] = cells
            col += WIDTH
    return out


def level_batch(x, runs: int, depth: int) -> gs.GroupSizeData:
    """``runs`` copies of a chain of ``depth`` regions holding the groups ``x``, under a root."""
    fanouts = [[runs]] + [[1] * runs for _ in range(depth - 1)]
    h = gs.Hierarchy.from_fanouts(fanouts)
    return gs.GroupSizeData.from_leaf_sizes(h, [np.asarray(x)] * runs)


def node_mechanism(method: str, *, per_level=(Fraction(EPS),), claimed=EPS, name=None):
    """The node estimator ``method`` measured at levels 1.. of a batch (see module docs).

    With one entry in ``per_level`` this is the node mechanism at that epsilon; with
    more, the same groups are measured once per level with the epsilons given.
    """
    depth = len(per_level)

    def f(x, runs, gen):
        data = level_batch(x, runs, depth)
        budget = Accountant(sum(per_level, Fraction(0)), label="audit")
        meas = GroupMeasurer(seal(data), budget, noise_source(gen))
        est = {}
        for lev, e in enumerate(per_level, start=1):
            est.update(
                _estimate_level(
                    meas, meas.data.groups, lev, method, DEFAULT_NORM[method], e, K, 0, "node"
                )
            )
        assert sum(c.epsilon for c in budget.ledger) == sum(per_level)
        # run j's regions: its node at each level, root side first
        order = [r for j in range(runs) for r in (1 + j + runs * d for d in range(depth))]
        return encode([est[r] for r in order], [len(x)] * depth)

    label = name or f"groupsize {method} node"
    return audit.function_mechanism(label, f, epsilon=claimed, vectorized=True)


def pipeline_mechanism(method, split: int):
    """``publish_group_sizes`` on a root with two leaves (groups ``x[:split]`` and the
    rest; 2 levels, eps/2 each). Outputs the final and the initial histograms."""
    h = gs.Hierarchy.from_fanouts([[2]])

    def f(x, gen):
        data = gs.GroupSizeData.from_leaf_sizes(h, [x[:split], x[split:]])
        rel = gs.publish_group_sizes(data, epsilon=EPS, method=method, K=K, rng=gen)
        groups = data.groups
        return np.concatenate([encode(rel.histograms, groups)[0], encode(rel.estimates, groups)[0]])

    return audit.function_mechanism(f"groupsize pipeline {method}", f, epsilon=EPS)


def selection_mechanism(split: int):
    """``select_private`` between HgHg and HcHc: 2 x 0.45 + 0.1 = 1."""
    h = gs.Hierarchy.from_fanouts([[2]])
    cands = [{"method": "ranked"}, {"method": "cumulative", "K": K}]

    def f(x, gen):
        data = gs.GroupSizeData.from_leaf_sizes(h, [x[:split], x[split:]])
        rel, idx = gs.select_private(
            data, cands, epsilon=Fraction(45, 100), selection_epsilon=Fraction(1, 10), rng=gen
        )
        assert rel.epsilon == EPS
        return np.concatenate([[idx], encode(rel.histograms, data.groups)[0]])

    return audit.function_mechanism("groupsize selection", f, epsilon=EPS)


def truncated_mechanism(scale: Fraction, name: str):
    """Noisy ``H_K`` with the given noise scale, then the naive post-processing (§6.1)."""

    def f(x, runs, gen):
        hk = np.bincount(np.minimum(np.asarray(x), K), minlength=K + 1)
        noisy = hk + audit.seeded_laplace(gen, scale, runs * (K + 1)).reshape(runs, K + 1)
        return encode([naive_estimate(row, len(x)) for row in noisy], [len(x)])

    return audit.function_mechanism(name, f, epsilon=EPS, vectorized=True)


def run_audit(mech, pairs, audit_row, *, seed, n_search=N_SEARCH, n_confirm=N_CONFIRM):
    start = time.perf_counter()
    res = audit.audit(mech, pairs, n_search=n_search, n_confirm=n_confirm, seed=seed)
    worst = res.worst
    audit_row(
        mech.name,
        res.epsilon,
        res.eps_lb,
        "FLAGGED" if res.flagged else "pass",
        worst.best.event if worst.best else "-",
        res.runs,
        time.perf_counter() - start,
    )
    return res


# --------------------------------------------------------------------------- correct


@pytest.mark.parametrize("method", ["naive", "ranked", "cumulative"])
def test_node_estimators_pass_with_power(method, audit_row):
    res = run_audit(node_mechanism(method), [GROW, SHRINK], audit_row, seed=SEED)
    assert not res.flagged, res.summary()
    assert res.eps_lb > 0.2, res.summary()  # the audit sees the change


def test_naive_measurement_is_charged_sensitivity_two():
    """White-box: the twin below uses the kernel's own calibration (scale 2/eps)."""
    h = gs.Hierarchy(np.array([-1]))
    data = gs.GroupSizeData.from_leaf_sizes(h, [SIZES])
    rel = gs.publish_group_sizes(data, epsilon=EPS, method="naive", K=K, rng=0)
    (charge,) = rel.ledger
    assert charge.sensitivity == 2 and charge.scale == 2 / Fraction(EPS)


@pytest.mark.extended
def test_full_pipeline_passes_with_power(audit_row):
    res = run_audit(
        pipeline_mechanism("ranked", 1),
        [SMALL],
        audit_row,
        seed=SEED + 1,
        n_search=300,
        n_confirm=2_500,
    )
    assert not res.flagged, res.summary()
    assert res.eps_lb > 0.1, res.summary()


@pytest.mark.extended
def test_selection_passes(audit_row):
    res = run_audit(
        selection_mechanism(1), [SMALL], audit_row, seed=SEED + 2, n_search=150, n_confirm=600
    )
    assert not res.flagged, res.summary()


# --------------------------------------------------------------------------- mutants

MUTANTS = {
    "truncated H_K charged with sensitivity 1": (
        truncated_mechanism(Fraction(1, EPS), "mutant: H_K at scale 1/eps"),
        truncated_mechanism(Fraction(2, EPS), "twin: H_K at scale 2/eps"),
    ),
    "two levels each given the whole epsilon": (
        node_mechanism(
            "ranked", per_level=(Fraction(EPS),) * 2, name="mutant: eps per level not divided"
        ),
        node_mechanism("ranked", per_level=(Fraction(EPS, 2),) * 2, name="twin: eps/2 per level"),
    ),
}


@pytest.mark.parametrize("bug", sorted(MUTANTS))
def test_mutant_is_caught_and_twin_passes(bug, audit_row):
    mutant, twin = MUTANTS[bug]
    bad = run_audit(mutant, [GROW], audit_row, seed=SEED + 3, n_confirm=4_000)
    assert bad.flagged, bad.summary()
    good = run_audit(twin, [GROW], audit_row, seed=SEED + 3, n_confirm=4_000)
    assert not good.flagged, good.summary()


# --------------------------------------------------------------------------- extended


@pytest.mark.exhaustive
@pytest.mark.parametrize("method", ["naive", "ranked", "cumulative"])
def test_node_estimators_extended(method, audit_row):
    pairs = [GROW, SHRINK, pair(SIZES, 3, +1, "size 3 -> 4"), pair([4, 4, 1, 5], 0, +1, "to K")]
    res = run_audit(
        node_mechanism(method), pairs, audit_row, seed=SEED + 4, n_search=2_000, n_confirm=20_000
    )
    assert not res.flagged, res.summary()


@pytest.mark.exhaustive
@pytest.mark.parametrize("method", ["ranked", "cumulative", ["cumulative", "ranked"]])
def test_pipeline_extended(method, audit_row):
    res = run_audit(
        pipeline_mechanism(method, 2),
        [GROW, SHRINK],
        audit_row,
        seed=SEED + 5,
        n_search=1_000,
        n_confirm=8_000,
    )
    assert not res.flagged, res.summary()
    assert res.eps_lb > 0, res.summary()


@pytest.mark.exhaustive
def test_selection_extended(audit_row):
    sel = run_audit(
        selection_mechanism(2),
        [GROW, SHRINK],
        audit_row,
        seed=SEED + 6,
        n_search=1_000,
        n_confirm=5_000,
    )
    assert not sel.flagged, sel.summary()


# --------------------------------------------------------------------------- private counts
# With private group counts (spec §7.9) neighbours may also add or remove an empty group.
# The harness moves one coordinate by one, so a coordinate is a group *slot*: 0 is no
# group, v >= 1 a group of v - 1 entities. Then +1 on an empty slot adds an empty group
# and +1 on a used one adds an entity: exactly the wider relation.

SLOTS = [0, 1, 2, 3]  # no group, an empty group, groups of one and two entities
K_COUNTS = 16  # the literal reading moves all K cells: a larger K makes it plain
ADD_GROUP = pair(SLOTS, 0, +1, "one empty group more")
ADD_ENTITY = pair(SLOTS, 2, +1, "an entity joins a group of one")


def private_counts_mechanism(literal: bool, name: str):
    """Level 1 of a batch (one region per run, independent noise): a noisy group count
    (eps/2, rounded at 0 and above) and groups of size >= i (eps/2), the cumulative
    estimate from them; outputs the count and the histogram. ``literal``: the mutant,
    §7.9 read literally, measures the usual cumulative ``Hc`` instead, whose cells count
    every group of size <= i (one empty group moves them all), with the noisy count as
    its total."""

    def f(x, runs, gen):
        sizes = [v - 1 for v in x if v > 0]
        data = level_batch(sizes, runs, 1)
        budget = Accountant(Fraction(EPS), label="audit")
        meas = PrivateGroupsMeasurer(seal(data), budget, noise_source(gen))
        half = Fraction(EPS, 2)
        counts = {r: max(int(v[0]), 0) for r, v in meas.group_counts(1, epsilon=half, block="c")}
        if literal:
            est = {
                r: cumulative_estimate(hc, counts[r], k=K_COUNTS, norm="l1")
                for r, hc in meas.cumulative(1, K_COUNTS, 0, epsilon=half, block="Hc")
            }
        else:
            est = _estimate_level(meas, counts, 1, "cumulative", "l1", half, K_COUNTS, 0, "R")
        out = np.zeros((runs, 1 + WIDTH))
        for j in range(runs):
            h = np.asarray(est[1 + j], dtype=np.int64)
            cells = np.zeros(WIDTH)
            cells[: min(h.size, WIDTH)] = h[:WIDTH]
            cells[-1] += h[WIDTH:].sum()
            out[j] = [counts[1 + j], *cells]
        assert sum(c.epsilon for c in budget.ledger) == EPS
        return out

    return audit.function_mechanism(name, f, epsilon=EPS, vectorized=True)


@pytest.mark.extended
def test_private_counts_pass_and_the_literal_reading_is_caught(audit_row):
    good = run_audit(
        private_counts_mechanism(False, "groupsize private counts"),
        [ADD_GROUP, ADD_ENTITY], audit_row, seed=SEED + 7, n_confirm=4_000,
    )  # fmt: skip
    assert not good.flagged, good.summary()
    assert good.eps_lb > 0.1, good.summary()
    bad = run_audit(
        private_counts_mechanism(True, "mutant: counts private, Hc measured"),
        [ADD_GROUP], audit_row, seed=SEED + 7, n_confirm=4_000,
    )  # fmt: skip
    assert bad.flagged, bad.summary()
