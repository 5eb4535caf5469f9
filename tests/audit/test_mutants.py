"""The mutant zoo: deliberately broken mechanisms the audit must flag.

Each mutant is test-only code (privacy-assurance spec §1.2.6 T3, §6.B3): a block,
recipe or kernel patch that breaks one privacy rule. It must be flagged by the
black-box audit, or -- where sampling has no power -- by the white-box ledger check;
an escaped mutant fails its test. Each mutant has a correct twin (``CONTROLS``) run
on the same pairs with the same sample sizes, which must pass, so a flag is evidence
about the bug and not about the harness.

``ZOO`` and ``CONTROLS`` are also used by ``benchmarks/audit.py`` to print the table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
import dphist._kernel.view as kernel_view
from dphist._kernel import BiasedSplit, GroupSums, Identity, IntervalSums, WorstQuery
from dphist._kernel.noise import GeneratorBits, NoiseSource, rational_scale
from dphist._kernel.selection import report_noisy_min
from dphist._numeric.compact import labels_from_starts
from dphist._numeric.segment import segment
from dphist._numeric.tree import consistency, tree_layout
from dphist.blocks import (
    REST,
    AHPClustering,
    Block,
    CubeSplit,
    GroupTotals,
    NoisyBins,
    NoisyCells,
    PartsLeastSquares,
    Pipeline,
    SortByNoisy,
    SquaredErrorGrouping,
    Threshold,
)
from dphist.lab import audit
from dphist.methods import register, registry

# --------------------------------------------------------------------------- outcome


@dataclass(frozen=True)
class Outcome:
    claimed: float
    eps_lb: float | None
    flagged: bool
    evidence: str
    runs: int
    pairs: int
    seconds: float


def from_audit(result: audit.AuditResult, extra: str = "", flagged: bool | None = None) -> Outcome:
    worst = result.worst
    event = worst.best.event if worst.best is not None else "no event"
    evidence = f"{event} [{worst.pair.describe()}]" + (f"; {extra}" if extra else "")
    return Outcome(
        claimed=result.epsilon,
        eps_lb=result.eps_lb,
        flagged=result.flagged if flagged is None else flagged,
        evidence=evidence,
        runs=result.runs,
        pairs=len(result.pairs),
        seconds=result.seconds,
    )


@dataclass(frozen=True)
class Mutant:
    name: str
    true_epsilon: str
    run: Callable[[], Outcome]


# --------------------------------------------------------------------------- helpers


@contextmanager
def temporary_method(name: str, recipe: Callable[..., Pipeline]) -> Iterator[str]:
    """Register ``recipe`` under ``name`` for the duration; always unregister."""
    register(name, summary="test-only mutant", cite="tests/audit/test_mutants.py")(recipe)
    try:
        yield name
    finally:
        registry._REGISTRY.pop(name, None)
        for key in [k for k, v in registry._LOOKUP.items() if v == name]:
            del registry._LOOKUP[key]


@contextmanager
def halved_noise_scale() -> Iterator[None]:
    """Every kernel measurement uses half the noise scale it should (and records it)."""
    original = kernel_view.rational_scale

    def half(sensitivity, epsilon):
        t, s = original(sensitivity, epsilon)
        return t, 2 * s

    kernel_view.rational_scale = half
    try:
        yield
    finally:
        kernel_view.rational_scale = original


@contextmanager
def unbiased_split() -> Iterator[None]:
    """PrivTree's floor kept but its per-level bias dropped (delta = 0)."""
    original = BiasedSplit.plan

    def plan(self, epsilon):
        return replace(original(self, epsilon), delta=0)

    BiasedSplit.plan = plan
    try:
        yield
    finally:
        BiasedSplit.plan = original


def pair(x, i, sign=+1, reason="given") -> audit.Neighbour:
    return audit.pair(np.array(x), i, sign, reason)


# --------------------------------------------------------------------------- test-only blocks


@dataclass(frozen=True, kw_only=True)
class PairGroups(Block):
    """A public, data-independent partition into groups of two adjacent bins."""

    label = "pair_groups"

    def run(self, state, view):
        return state.with_(labels=np.arange(state.n, dtype=np.int64) // 2)


class _GroupTotalPerBin(IntervalSums):
    """Each bin's group total (|g| answers per group) declared as sensitivity 1."""

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(1)


@dataclass(frozen=True, kw_only=True)
class CopiesPerBin(Block):
    """MUTANT: one noisy group total *per bin*, averaged: |g| independent copies."""

    label = "copies_per_bin"
    spends = True

    def run(self, state, view):
        labels = state.labels
        sizes = np.bincount(labels)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        lo = starts[labels]
        m = view.measure(_GroupTotalPerBin(state.n, lo, lo + sizes[labels]))
        return state.with_(estimate=m.values / sizes[labels])


class _Exact(Identity):
    """The identity query with a declared sensitivity of 10**-12: no noise at all."""

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(1, 10**12)


@dataclass(frozen=True, kw_only=True)
class RawCounts(Block):
    """MUTANT: 'noisy' counts that are the raw counts (a grouping stage charged, but
    with a noise scale of 10**-12), handed to the grouping like AHP's first stage."""

    label = "noisy_bins"
    spends = True

    def run(self, state, view):
        values = view.measure(_Exact(view.n)).values.astype(np.float64)
        return state.with_(noisy=values, estimate=values, variance=np.full(state.n, 2.0))


class _TreeQuery(IntervalSums):
    """All nodes of a tree as one interval query with a declared sensitivity."""

    def __init__(self, n, lo, hi, declared):
        super().__init__(n, lo, hi)
        object.__setattr__(self, "declared", Fraction(declared))

    @property
    def sensitivity(self) -> Fraction:
        return self.declared


@dataclass(frozen=True, kw_only=True)
class TreeCounts(Block):
    """A binary tree of noisy counts, made consistent; ``levels`` says how many
    levels the noise is calibrated for: "all" (correct), "one too few" (MUTANT: a
    level is left out of the sensitivity) or "one" (MUTANT: every level gets the
    whole epsilon). The raw node values go to ``notes`` for stage audits."""

    label = "tree"
    spends = True
    levels: str = "all"

    def run(self, state, view):
        layout = tree_layout(state.n, 2)
        height = layout.n_levels
        declared = {"all": height, "one too few": height - 1, "one": 1}[self.levels]
        m = view.measure(_TreeQuery(state.n, layout.lo, layout.hi, declared))
        nodes = m.values.astype(np.float64)
        est = consistency(layout, nodes, np.full(nodes.size, float(m.variance)))
        return state.with_(estimate=est[layout.leaf_slice], notes={"nodes": nodes})


class _Overlap(IntervalSums):
    """Two overlapping intervals declared as sensitivity 1 (the true value is 2)."""

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(1)


@dataclass(frozen=True, kw_only=True)
class OverlapSums(Block):
    """Stand-in for the truncated size histogram H_K (one entity moves two of its
    cells): noisy sums over [0, n/2+1) and [n/2-1, n). ``declared_one`` is the MUTANT."""

    label = "size_histogram"
    spends = True
    declared_one: bool = True

    def run(self, state, view):
        n = state.n
        lo, hi = np.array([0, n // 2 - 1]), np.array([n // 2 + 1, n])
        query = (_Overlap if self.declared_one else IntervalSums)(n, lo, hi)
        m = view.measure(query)
        return state.with_(estimate=np.zeros(n), notes={"answers": m.values.astype(np.float64)})


@dataclass(frozen=True, kw_only=True)
class FirstStage(Block):
    """AHP-like: noisy counts at epsilon1, grouped by S2, then one noisy total per
    group with what is left. MUTANT when ``charged`` is False: the first stage is
    drawn without a charge (reading the sealed counts directly), so the totals get
    the whole budget and the true loss is epsilon1 + epsilon."""

    label = "ahp_like"
    spends = True
    eps1: str = "0.5"
    charged: bool = False

    def run(self, state, view):
        if self.charged:
            noisy = view.measure(Identity(view.n), epsilon=self.eps1).values.astype(np.float64)
        else:
            x = view._data._read()  # test-only: the mutant bypasses the kernel's charge
            t, s = rational_scale(Fraction(1), Fraction(self.eps1))
            noisy = (x + view._noise.discrete_laplace(t, s, x.size)).astype(np.float64)
        eps2 = float(view.remaining)
        starts = segment(noisy, eps1=float(self.eps1), eps2=eps2, noise_term="first_principles")
        labels = labels_from_starts(starts, state.n)
        m = view.measure(GroupSums(labels))
        sizes = np.bincount(labels).astype(np.float64)
        return state.with_(labels=labels, estimate=m.values[labels] / sizes[labels])


@dataclass(frozen=True, kw_only=True)
class PeekingNoisyBins(NoisyBins):
    """AHP's first stage, charged and measured as usual, that also hands the true
    counts to later blocks (helper of the raw-threshold mutant)."""

    def run(self, state, view):
        state = super().run(state, view)
        raw = view._data._read()  # test-only: the mutant peeks past the kernel
        return state.with_(notes={**state.notes, "true_counts": raw.copy()})


@dataclass(frozen=True, kw_only=True)
class RawThreshold(Threshold):
    """MUTANT: AHP's threshold decided on the true counts -- a bin whose *true* count
    is below ``eta ln N / epsilon1`` is zeroed, whatever its noisy count. Every draw
    is charged, so the ledger check passes; only the black-box audit can see it."""

    def run(self, state, view):
        theta = self.eta * math.log(state.n) / float(state.budgets[self.source])
        keep = state.notes["true_counts"] >= theta
        noisy = np.where(keep, state.noisy, 0.0)
        return state.with_(noisy=noisy, estimate=noisy)


@dataclass(frozen=True, kw_only=True)
class PeekingCells(NoisyCells):
    """MUTANT: DPCube's noisy cells, charged and measured as usual, but the cell totals
    handed on to the least-squares mix are the true ones: within a part the released
    bins then differ by exactly their true cells' difference."""

    def run(self, state, view):
        state = super().run(state, view)
        width, _, variance = state.notes["cells"]
        raw = view._data._read().astype(np.float64)  # test-only: peeks past the kernel
        totals = np.add.reduceat(raw, np.arange(0, raw.size, width))
        return state.with_(notes={**state.notes, "cells": (width, totals, variance)})


def data_range_bins(x: np.ndarray, generator: np.random.Generator, *, public: bool = False):
    """Two equal-width coarse bins over the data's [min, max] (MUTANT) or over the
    whole public domain (``public=True``), noisy totals spread evenly; bins outside
    the range are released as 0. Returns (estimate, coarse-bin labels)."""
    if public:
        lo, hi = 0, x.size
    else:
        nonzero = np.flatnonzero(x)
        lo, hi = (int(nonzero[0]), int(nonzero[-1]) + 1) if nonzero.size else (0, x.size)
    edges = np.round(np.linspace(lo, hi, 3)).astype(int)
    estimate = np.zeros(x.size)
    labels = np.zeros(x.size, dtype=np.int64)
    for g in range(2):
        a, b = edges[g], edges[g + 1]
        if b > a:
            total = x[a:b].sum() + audit.seeded_laplace(generator, 1, 1)[0]
            estimate[a:b] = total / (b - a)
            labels[a:b] = g + 1
    return estimate, labels


# --------------------------------------------------------------------------- the zoo

SEED = 20260
FAST = {"n_search": 1000, "n_confirm": 4000}


def _scale_halved(correct: bool = False) -> Outcome:
    x = audit.standard_histogram(8)
    pairs = [audit.catalogue(8)[0]]
    if correct:
        res = audit.audit(audit.method_mechanism("identity"), pairs, seed=SEED, **FAST)
        return from_audit(res)
    with halved_noise_scale():
        res = audit.audit(audit.method_mechanism("identity"), pairs, seed=SEED, **FAST)
        ledger = audit.ledger_check("identity", x)
    return from_audit(res, f"ledger: {ledger.problems[0]}")


def _copies(correct: bool = False) -> Outcome:
    publisher = GroupTotals if correct else CopiesPerBin
    name = "control-group-means" if correct else "mutant-per-bin-copies"

    def recipe() -> Pipeline:
        return Pipeline((PairGroups(), publisher(share=REST)))

    x = audit.standard_histogram(8)
    pairs = [pair(x, 3, +1, "group of 2"), pair(x, 5, -1, "group of 2")]
    with temporary_method(name, recipe):
        res = audit.audit(audit.method_mechanism(name), pairs, seed=SEED, **FAST)
    return from_audit(res)


def _raw_partition(correct: bool = False) -> Outcome:
    blocks = [RawCounts(share=0.25), SquaredErrorGrouping(), GroupTotals(share=REST)]
    mutant = audit.pipeline_mechanism("raw partition", blocks)
    boundary = audit.probe_boundaries(
        mutant, audit.standard_histogram(8), bins=[3], span=6, seed=SEED, limit=1
    )
    mech = audit.method_mechanism("S2") if correct else mutant
    res = audit.audit(mech, boundary, seed=SEED, **FAST)
    return from_audit(res)


def _tree_one_level_short(correct: bool = False) -> Outcome:
    levels = "all" if correct else "one too few"
    mech = audit.pipeline_mechanism(
        f"tree ({levels})", [TreeCounts(share=REST, levels=levels)], output=_nodes
    )
    x = audit.standard_histogram(4)
    pairs = [pair(x, 1, +1, "tree split (left leaf)"), pair(x, 2, +1, "tree split")]
    res = audit.audit(mech, pairs, n_search=2000, n_confirm=10_000, seed=SEED)
    return from_audit(res)


def _nodes(state) -> np.ndarray:
    return state.notes["nodes"]


def _answers(state) -> np.ndarray:
    return state.notes["answers"]


def _tree_undivided(correct: bool = False) -> Outcome:
    levels = "all" if correct else "one"
    mech = audit.pipeline_mechanism(f"tree ({levels})", [TreeCounts(share=REST, levels=levels)])
    pairs = list(audit.catalogue(8)[:2])
    res = audit.audit(mech, pairs, seed=SEED, **FAST)
    return from_audit(res)


def _overlap(correct: bool = False) -> Outcome:
    mech = audit.pipeline_mechanism(
        "overlapping sums", [OverlapSums(share=REST, declared_one=not correct)], output=_answers
    )
    x = audit.standard_histogram(4)
    pairs = [pair(x, 1, +1, "bin in both cells"), pair(x, 2, +1, "bin in both cells")]
    res = audit.audit(mech, pairs, seed=SEED, **FAST)
    return from_audit(res)


def _data_range(correct: bool = False) -> Outcome:
    def run(x, gen):
        return data_range_bins(x, gen, public=correct)

    mech = audit.function_mechanism("data-range bins", run)
    x = np.array([0, 0, 5, 7, 6, 0, 0, 0])
    pairs = [pair(x, 7, +1, "outlier above the range"), pair(x, 0, +1, "outlier below")]
    res = audit.audit(mech, pairs, seed=SEED, **FAST)
    return from_audit(res)


def _uncharged_first_stage(correct: bool = False) -> Outcome:
    blocks = [FirstStage(share=REST, charged=correct)]
    ledger = audit.ledger_check(blocks, audit.standard_histogram(8))
    mech = audit.pipeline_mechanism("ahp-like", blocks)
    x = np.array([5, 5, 0, 0, 20, 20, 3, 60])
    pairs = [pair(x, 2, +1, "zero bin"), pair(x, 6, -1, "low bin")]
    res = audit.audit(mech, pairs, seed=SEED, **FAST)  # black-box, for the record only
    verdict = "ok" if ledger.ok else "; ".join(ledger.problems)
    return from_audit(res, f"ledger: {verdict}", flagged=res.flagged or not ledger.ok)


def _dawa_reference(correct: bool = False) -> Outcome:
    """DAWA's published noise scale on S~ (methods framework A.2 and E.1).

    The spec's counterexample pair x = (0,10,1000), x' = (0,11,1000) (epsilon1 = 1)
    cannot be witnessed by sampling: its witness partition has a probability far
    below 1e-300. The same failure -- two competing pair partitions whose noisy
    costs move in opposite directions while DAWA's scale covers only one move -- is
    visible on three bins with a large penalty (epsilon2 = 0.01, so singletons never
    win): at x = (0,12,21), x' = (0,11,21) and epsilon1 = 2 the partition
    {1,2},{3} has probabilities near 0.011 and 0.165, a loss near 2.7 against the
    claimed epsilon1 + epsilon2 = 2.01 (the coupled partition: about 1.25). The white-box
    flag is the ledger's ``certified=False`` on every reference-mode charge (S1, S~).
    """
    mode = "certified" if correct else "reference"
    eps, ratio = Fraction(201, 100), Fraction(200, 201)
    mech = audit.method_mechanism("S~", epsilon=eps, ratio=ratio, noise=mode)
    pairs = [pair([0, 12, 21], 1, -1, "A.2: opposite pair-cost moves")]
    res = audit.audit(mech, pairs, n_search=1000, n_confirm=10_000, seed=SEED)
    problems = []
    for name in ("S~", "S1"):
        ledger = audit.ledger_check(
            name, [0, 10, 1000], epsilon=eps, params={"ratio": ratio, "noise": mode}
        )
        problems += [f"{name}: {p}" for p in ledger.problems]
    verdict = "ok" if not problems else problems[0]
    return from_audit(res, f"ledger: {verdict}", flagged=res.flagged or bool(problems))


def _ahp_raw_threshold(correct: bool = False) -> Outcome:
    """AHP with eta = 5 (threshold 12.2 at epsilon = 1) on the noise-free threshold
    pair: seven empty bins and one at 12 -> 13. The mutant zeroes 12 always and keeps
    13 always, so bin 7 is a singleton only under x'; correct AHP decides on the noisy
    count (probabilities P(Z >= 1) and P(Z >= 0), a ratio of exp(0.85))."""
    eta = 5.0

    def recipe(*, ratio: float = 0.85) -> Pipeline:
        return Pipeline(
            (
                PeekingNoisyBins(share=ratio),
                RawThreshold(eta=eta),
                SortByNoisy(descending=False),
                AHPClustering(),
                GroupTotals(share=REST),
            )
        )

    (boundary,) = audit.decision_pairs("AHP", [0] * 7 + [12], bins=[7], span=2, params={"eta": eta})
    if correct:
        res = audit.audit(audit.method_mechanism("AHP", eta=eta), [boundary], seed=SEED, **FAST)
        return from_audit(res)
    with temporary_method("mutant-ahp-raw-threshold", recipe) as name:
        res = audit.audit(audit.method_mechanism(name), [boundary], seed=SEED, **FAST)
        ledger = audit.ledger_check(name, boundary.x)
    return from_audit(res, f"ledger: {'ok' if ledger.ok else ledger.problems[0]}")


def _privtree_unbiased(correct: bool = False) -> Outcome:
    """The biased split with its floor but without the per-level bias (delta = 0).

    On empty data every node sits at the floor, so a record in bin 0 moves each node
    of the leftmost path across the threshold: each split is up to ln 2 more likely,
    about 0.43 per level at epsilon = 2.7, 5.2 over the 12 levels of 4,096 bins. The
    audited output is the size of bin 0's group (post-processing of the cut); with
    the bias the path costs at most 1.2 (tests/test_biased_split.py, exact law).
    """
    eps, n = Fraction(27, 10), 4096
    selection = BiasedSplit(tree_layout(n, 2), "count")

    def leaf_of_first_bin(x, generator):
        cut = selection.choose(x, eps, NoiseSource(GeneratorBits(generator)))
        starts = np.sort(selection.tree.lo[cut])
        return np.array([starts[1] if starts.size > 1 else n])

    mech = audit.function_mechanism("biased split, n = 4096", leaf_of_first_bin, epsilon=eps)
    pairs = [pair(np.zeros(n, dtype=np.int64), 0, +1, "a record on the leftmost path")]
    with nullcontext() if correct else unbiased_split():
        res = audit.audit(mech, pairs, n_search=2000, n_confirm=20_000, seed=SEED)
    return from_audit(res)


def _worst_query_half(correct: bool = False) -> Outcome:
    """MWEM's worst-query choice run with sensitivity 1/2 (true: 1).

    With both candidates' errors 4 on empty data, one record in bin 0 raises the error
    of ``[0, 1)`` (answered -4) and lowers that of ``[0, 2)`` (answered 4) by 1: the
    score gap moves by 2, which report noisy max at scale ``2/epsilon`` prices at
    epsilon = 3 and the halved scale at 6. The audited output is the chosen query.
    """
    eps = Fraction(3)
    selection = WorstQuery(np.array([0, 0]), np.array([1, 2]), np.array([-4.0, 4.0]))

    def choice(x, generator):
        noise = NoiseSource(GeneratorBits(generator))
        if correct:
            return np.array([selection.choose(x, eps, noise)])
        prefix = np.concatenate(([0], np.cumsum(x)))
        error = np.abs(prefix[selection.hi] - prefix[selection.lo] - selection.answers)
        return np.array([report_noisy_min(-error, Fraction(1, 2), eps, noise)])

    mech = audit.function_mechanism("worst query of 2", choice, epsilon=eps)
    pairs = [pair(np.zeros(2, dtype=np.int64), 0, +1, "a record in both queries")]
    res = audit.audit(mech, pairs, n_search=1000, n_confirm=10_000, seed=SEED)
    return from_audit(res)


def _cube_raw_cells(correct: bool = False) -> Outcome:
    """DPCube-LS (cells of 2 bins) whose least squares mixes the true cell totals with
    the noisy part totals. Every draw is charged, so only the black-box audit can see
    it: on flat counts the split keeps cells together, and a record moves the released
    difference of two bins of one part by exactly half a count (true loss: unbounded)."""
    cells = PeekingCells if not correct else NoisyCells
    blocks = [
        cells(share=0.5, width=2),
        CubeSplit(cuts="cells", rule="variance", publisher="part_totals"),
        PartsLeastSquares(share=REST),
    ]
    mech = audit.pipeline_mechanism(f"DPCube-LS ({'noisy' if correct else 'true'} cells)", blocks)
    x = np.array([6, 6, 6, 6, 6, 6, 6, 6])
    pairs = [pair(x, 3, +1, "a cell inside a part"), pair(x, 4, -1, "a cell inside a part")]
    res = audit.audit(mech, pairs, seed=SEED, **FAST)
    return from_audit(res)


ZOO = [
    Mutant("noise scale x0.5", "2", _scale_halved),
    Mutant("per-bin draws in a group (|g|=2)", "2", _copies),
    Mutant("partition from raw counts (N2 pair)", "inf", _raw_partition),
    Mutant("tree: one level too few charged", "1.5", _tree_one_level_short),
    Mutant("tree: per-level epsilon not divided", "4", _tree_undivided),
    Mutant("H_K stand-in: sensitivity 1 (true 2)", "2", _overlap),
    Mutant("bin edges from data min/max", "inf", _data_range),
    Mutant("uncharged first stage (ledger)", "1.5", _uncharged_first_stage),
    Mutant("DAWA reference noise on S~", ">2.7", _dawa_reference),
    Mutant("AHP threshold on true counts (N2 pair)", "inf", _ahp_raw_threshold),
    Mutant("PrivTree split without the depth bias", "5.2", _privtree_unbiased),
    Mutant("MWEM worst query: sensitivity 1/2", "2", _worst_query_half),
    Mutant("DPCube least squares on the true cells", "inf", _cube_raw_cells),
]

CONTROLS = [
    Mutant(f"twin of: {m.name}", "<= claimed", lambda f=m.run: f(correct=True)) for m in ZOO
]


# --------------------------------------------------------------------------- tests


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("mutant", ZOO, ids=[m.name for m in ZOO])
def test_mutant_is_flagged(mutant, audit_row):
    start = time.perf_counter()
    out = mutant.run()
    verdict = "FLAGGED" if out.flagged else "ESCAPED"
    audit_row(
        f"mutant: {mutant.name}",
        out.claimed,
        out.eps_lb,
        verdict,
        out.evidence,
        out.runs,
        time.perf_counter() - start,
    )
    assert out.flagged, f"mutant escaped: {mutant.name}: {out}"


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("control", CONTROLS, ids=[m.name for m in CONTROLS])
def test_correct_twin_passes(control, audit_row):
    start = time.perf_counter()
    out = control.run()
    audit_row(
        f"control: {control.name}",
        out.claimed,
        out.eps_lb,
        "FLAGGED" if out.flagged else "pass",
        out.evidence,
        out.runs,
        time.perf_counter() - start,
    )
    assert not out.flagged, f"a correct twin was flagged: {control.name}: {out}"


def test_temporary_methods_leave_the_registry_as_it_was():
    before = [m.name for m in dh.list_methods()]
    with temporary_method(
        "mutant-probe", lambda: Pipeline((PairGroups(), GroupTotals(share=REST)))
    ):
        assert dh.get_method("mutant-probe").name == "mutant-probe"
    assert [m.name for m in dh.list_methods()] == before
    with pytest.raises(dh.UnknownMethodError):
        dh.get_method("mutant-probe")


def test_halved_scale_patch_is_undone():
    with halved_noise_scale():
        assert kernel_view.rational_scale(Fraction(1), Fraction(1)) == (1, 2)
    assert kernel_view.rational_scale(Fraction(1), Fraction(1)) == (1, 1)


@pytest.mark.extended  # ~9 s: every white-box mutant
def test_ledger_check_catches_each_white_box_mutant():
    x = audit.standard_histogram(8)
    free = audit.ledger_check([FirstStage(share=REST)], x)
    assert free.uncharged_values == x.size and free.charged == 1
    assert any("before any charge" in p for p in free.problems)
    with halved_noise_scale():
        halved = audit.ledger_check("identity", x)
    assert any("below sensitivity/epsilon" in p for p in halved.problems)
    reference = audit.ledger_check("S1", x, params={"noise": "reference"})
    assert any("uncertified" in p for p in reference.problems)
    assert audit.ledger_check("S1", x).ok
    assert audit.ledger_check([FirstStage(share=REST, charged=True)], x).ok


# --------------------------------------------------------------------------- extended


@pytest.mark.exhaustive
@pytest.mark.statistical
def test_extended_black_box_power(audit_row):
    """Larger samples: the black-box audit alone flags the DAWA reference scale and
    the 4/3 tree (n = 8, stage audit); the spec's literal A.2 pair is recorded."""
    eps, ratio = Fraction(201, 100), Fraction(200, 201)
    dawa = audit.method_mechanism("S~", epsilon=eps, ratio=ratio, noise="reference")
    res = audit.audit(
        dawa, [pair([0, 12, 21], 1, -1)], n_search=2000, n_confirm=60_000, seed=SEED + 1
    )
    record_row = from_audit(res)
    audit_row("extended: DAWA reference, black box", *_row(record_row))
    assert res.flagged, res.summary()

    tree = audit.pipeline_mechanism(
        "tree (one too few), n = 8", [TreeCounts(share=REST, levels="one too few")], output=_nodes
    )
    x = audit.standard_histogram(8)
    res = audit.audit(tree, [pair(x, 3, +1)], n_search=5000, n_confirm=50_000, seed=SEED + 2)
    audit_row("extended: tree 4/3, n = 8", *_row(from_audit(res)))
    assert res.flagged, res.summary()

    spec = audit.method_mechanism(
        "S1", epsilon=Fraction(101, 100), ratio=Fraction(100, 101), noise="reference"
    )
    res = audit.audit(
        spec, [((0, 10, 1000), (0, 11, 1000))], n_search=2000, n_confirm=10_000, seed=SEED + 3
    )
    audit_row("extended: A.2 literal pair (not observable)", *_row(from_audit(res)))


def _row(out: Outcome) -> tuple:
    verdict = "FLAGGED" if out.flagged else "pass"
    return out.claimed, out.eps_lb, verdict, out.evidence, out.runs, out.seconds
