"""The statistical audit of zero-concentrated DP: (epsilon, delta) claims and mutants.

A rho-zCDP release is (epsilon, delta)-DP for every delta at the epsilon of the tight
conversion; the audit checks that claim (``Mechanism.delta > 0``): no event may have
``P_x(E) - e^epsilon P_x'(E)`` above delta (lower Clopper-Pearson bounds). Sampling
sees deltas of about the bounds' width only, so the claims use delta = 0.1 to 0.3,
where the implied epsilon is small and under-noising shows as excess delta.

Mutants (each with a correct twin that must pass on the same pairs and samples):

* a binary tree over 8 bins (4 levels) measured as one query declared of squared L2
  sensitivity 1 instead of 4: true rho is 4 times the claim (rho = 1/8, delta = 0.1);
* Gaussian noise of variance ``D2 / (4 rho)`` instead of ``D2 / (2 rho)`` (kernel
  patch): true rho is twice the claim. A privacy unit of 8 records keeps the noise
  far from the integer lattice (sigma 4), so the discrete law is close to the
  continuous one the sample sizes were chosen for (rho = 2, delta = 0.3: the mutant's
  true delta at the claimed epsilon 3.44 is about 0.45).

The mutants and twins measure many stacked copies through the kernel at once (the same
law as separate releases, far faster); registered methods are audited release by
release at small sizes (``test_zcdp_methods_pass_their_implied_claim``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest

import dphist._kernel.view as kernel_view
from dphist._kernel import Accountant, Identity, IntervalSums, PrivateView, protect
from dphist._kernel.noise import GeneratorBits, NoiseSource
from dphist._numeric.tree import tree_layout
from dphist.lab import audit

SEED = 20261


class _TreeQuery(IntervalSums):
    """All nodes of a tree as one query, with a declared squared L2 sensitivity."""

    def __init__(self, n, lo, hi, declared):
        super().__init__(n, lo, hi)
        object.__setattr__(self, "declared", Fraction(declared))

    @property
    def sensitivity2(self) -> Fraction:
        return self.declared


@contextmanager
def half_gaussian_variance():
    """MUTANT patch: every Gaussian measurement uses half the variance its rho needs."""
    original = kernel_view.gaussian_parameters
    kernel_view.gaussian_parameters = lambda sigma2: original(sigma2 / 2)
    try:
        yield
    finally:
        kernel_view.gaussian_parameters = original


def batched(name, declared, rho, delta, records=1):
    """The kernel's Gaussian measurement of ``declared(n)`` over ``runs`` stacked copies
    of ``x`` at once: copies are disjoint, so one query over the stacked bins gives each
    copy independent noise of the same law as ``runs`` separate releases (fast)."""

    def f(x, runs, gen):
        n = x.size
        query = declared(n, runs)
        data = protect(np.tile(x, runs), max_records=records)
        budget = Accountant(Fraction(rho), label="audit")
        noise = NoiseSource(GeneratorBits(gen))
        view = PrivateView(data, budget, noise, name, definition="zcdp")
        return view.measure(query).values.reshape(runs, -1).astype(np.float64)

    eps = audit.zcdp_claim(rho, delta)
    return audit.function_mechanism(name, f, epsilon=eps, vectorized=True, delta=delta)


def stacked_tree(correct):
    """Every node of a binary tree per copy; the MUTANT declares squared L2 sensitivity 1
    (one level's) instead of the number of levels."""

    def query(n, runs):
        layout = tree_layout(n, 2)
        shift = (n * np.arange(runs))[:, None]
        lo, hi = (layout.lo[None, :] + shift).ravel(), (layout.hi[None, :] + shift).ravel()
        return _TreeQuery(n * runs, lo, hi, layout.n_levels if correct else 1)

    return query


def _tree(correct: bool) -> audit.AuditResult:
    mech = batched("gaussian tree", stacked_tree(correct), Fraction(1, 8), 0.1)
    x = audit.standard_histogram(8)
    pairs = [audit.pair(x, 2, +1, "leaf under 4 nodes")]
    return audit.audit(mech, pairs, n_search=5000, n_confirm=50_000, seed=SEED)


def _half_variance(correct: bool) -> audit.AuditResult:
    mech = batched("identity (8 records)", lambda n, runs: Identity(n * runs), 2, 0.3, 8)
    x = audit.standard_histogram(4)
    pairs = [audit.pair(x, 1, +1, "8 records", records=8)]
    kwargs = {"n_search": 10_000, "n_confirm": 100_000, "seed": SEED}
    if correct:
        return audit.audit(mech, pairs, **kwargs)
    with half_gaussian_variance():
        return audit.audit(mech, pairs, **kwargs)


CASES = {
    "tree: L2 sensitivity 1 (true 2)": _tree,
    "Gaussian variance D2/(4 rho)": _half_variance,
}


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("correct", [False, True], ids=["mutant", "twin"])
def test_zcdp_mutant_is_flagged_and_its_twin_passes(name, correct, audit_row):
    start = time.perf_counter()
    res = CASES[name](correct)
    w = res.worst
    evidence = f"{w.best.event if w.best else '-'}; delta_lb {res.delta_lb:.4f} vs {res.delta}"
    verdict = (
        ("FLAGGED" if res.flagged else "pass")
        if correct
        else ("FLAGGED" if res.flagged else "ESCAPED")
    )
    label = f"{'control' if correct else 'mutant'} (zCDP): {name}"
    audit_row(label, res.epsilon, res.eps_lb, verdict, evidence, res.runs,
              time.perf_counter() - start)  # fmt: skip
    assert res.flagged != correct, res.summary()


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("method", ["HB", "P-HP"])
def test_zcdp_methods_pass_their_implied_claim(method, audit_row):
    """A tree (Gaussian levels) and P-HP (exponential choices, Gaussian totals) at
    rho = 1/2, delta = 0.2."""
    start = time.perf_counter()
    mech = audit.method_mechanism(method, rho=Fraction(1, 2), delta=0.2)
    pairs = [audit.method_catalogue(method, 8)[0]]
    res = audit.audit(mech, pairs, n_search=400, n_confirm=2000, seed=SEED)
    audit_row(f"zCDP: {method}", res.epsilon, res.eps_lb, "FLAGGED" if res.flagged else "pass",
              f"delta_lb {res.delta_lb:.4f} vs {res.delta}", res.runs,
              time.perf_counter() - start)  # fmt: skip
    assert not res.flagged, res.summary()


@pytest.mark.parametrize("method", ["OPT-H", "S1+MM", "SF", "MWEM", "EFPA", "PrivTree"])
def test_zcdp_ledger_covers_every_draw(method):
    """White-box: every Gaussian, exponential and Laplace draw follows a charge, the rhos
    add up exactly and every Gaussian variance is at least D2 / (2 rho)."""
    params = {"bound": 100} if method == "SF" else {}
    x = audit.standard_histogram(32)
    report = audit.ledger_check(method, x, epsilon="0.4", params=params, definition="zcdp")
    assert report.ok, report.problems
    assert report.values_drawn > 0 and {c.unit for c in report.charges} == {"rho"}


def test_zcdp_ledger_check_catches_the_half_variance_mutant():
    with half_gaussian_variance():
        report = audit.ledger_check("HB", audit.standard_histogram(16), definition="zcdp")
    assert not report.ok and "below D2/(2 rho)" in report.problems[0]
