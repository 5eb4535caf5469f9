"""Audit power on AHP, sDAHP and EFPA: neighbours at their data-dependent decisions.

On the default catalogue (standard histogram, probed boundary) the audit finds
almost nothing on these three methods (eps_lb about 0 at CI sample sizes): their
decisions -- AHP's threshold and clustering cut, sDAHP's sorted partition, EFPA's
number of retained Fourier coefficients -- are far from every catalogue pair, and a
decision that is never near its boundary leaks nothing observable. The pairs here
sit on the boundary, found by :func:`dphist.lab.audit.decision_pairs` (the method run
noise-free at the claimed epsilon, so the cut is where the exact values put it):

* AHP, clustering cut: seven empty bins and one bin at ``v``; bin 7 leaves the
  cluster of zeros iff its noisy count is at least ``c`` (10 -> 11 at the defaults).
  AHP's threshold zeroes the noisy zeros, so the cut never drops below ``c`` and the
  event "bin 7 is a singleton" has probabilities ``P(Z >= 1)`` and ``P(Z >= 0)``:
  ratio ``exp(epsilon1)`` = ``exp(0.85)``, the whole first-stage budget.
* AHP, threshold: with ``eta = 5`` the threshold ``eta ln N / epsilon1`` (12.2) lies
  beyond the clustering width, so a bin at 12 / 13 is zeroed (joins the zeros) or
  kept (a singleton) exactly as its noisy count falls below or above the threshold:
  the same ``exp(0.85)`` ratio. At the default ``eta`` (threshold 0.86) zeroing a
  count of 0 or 1 never changes the grouping: the threshold step is invisible there.
* sDAHP: the descending noisy sort puts the large bin first; the exact partition
  keeps it apart from the zero run iff its noisy count reaches the cut (15 -> 16).
  Without a threshold the zeros' noise moves the cut both ways, so the ratio is a
  little below ``exp(0.9)``.
* EFPA on two bins: report-noisy-min chooses K in {1, 2}; the pair (0, 5) -> (0, 6)
  is the noise-free switch from K = 1 to K = 2. EFPA's true loss on any two-bin pair
  is at most 0.68 at epsilon = 1 (docs/privacy.md), so its bound stays lower.

Each pair is audited at epsilon = 1 with the production publish path; bounds must be
clearly positive and not above epsilon. Extended mode repeats them with larger
samples and at epsilon = 0.5.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dphist as dh
from dphist.lab import audit

SEED = 20261
N_SEARCH, N_CONFIRM = 1000, 4000


def boundary(method: str, x, i: int, span: int, **params) -> audit.Neighbour:
    (pair,) = audit.decision_pairs(method, x, bins=[i], span=span, params=params, limit=1)
    return pair


def ahp_cluster_pair() -> audit.Neighbour:
    return boundary("AHP", [0] * 7 + [8], 7, 4)


def ahp_threshold_pair(eta: float = 5.0) -> audit.Neighbour:
    theta = eta * math.log(8) / 0.85
    return boundary("AHP", [0] * 7 + [round(theta)], 7, 2, eta=eta)


def sdahp_pair() -> audit.Neighbour:
    return boundary("sDAHP", [0] * 7 + [12], 7, 5)


def efpa_pair() -> audit.Neighbour:
    return boundary("EFPA", [0, 5], 1, 2)


def test_decision_pairs_sit_where_the_exact_decisions_switch():
    """Hand-worked cut points at epsilon = 1 (n = 8 unless noted)."""
    # AHP: c = 2 / eps2**2 with eps2 = 0.15; a bin at distance d from 7 zeros joins
    # them iff d**2 * 7/8 < c (1 + 1/56), i.e. d < 10.17 -> 10 joins, 11 does not.
    assert ahp_cluster_pair().x.tolist() == [0] * 7 + [10]
    # AHP threshold with eta = 5: 5 ln 8 / 0.85 = 12.23 -> 12 is zeroed, 13 kept.
    assert ahp_threshold_pair().x.tolist() == [0] * 7 + [12]
    # sDAHP (DP partition, AHP error, var_f = 2 / 0.1**2): 15 joins the zeros, 16 not.
    assert sdahp_pair().x.tolist() == [0] * 7 + [15]
    # EFPA, two bins, eps_c = 0.5: the noise terms are sqrt(2K) D(K) / eps_c with
    # D(1) = 1/sqrt 2, D(2) = sqrt 2, so K = 2 iff |x0 - x1| / sqrt 2 + 2 > 4 sqrt 2,
    # i.e. |x0 - x1| > 8 - 2 sqrt 2 = 5.17.
    assert efpa_pair().x.tolist() == [0, 5]
    for p in (ahp_cluster_pair(), ahp_threshold_pair(), sdahp_pair(), efpa_pair()):
        assert p.sign == +1 and p.reason == "noise-free decision boundary"


def test_decision_pairs_find_nothing_on_a_data_independent_method():
    assert audit.decision_pairs("identity", [0, 3, 9], span=3, limit=None) == ()
    assert audit.decision_pairs("uniform", [0, 3, 9], span=3, limit=None) == ()


def test_noise_free_runs_leave_the_method_private_and_the_registry_untouched():
    before = [m.name for m in dh.list_methods()]
    audit.decision_pairs("AHP", [0, 5, 9], span=2)
    assert [m.name for m in dh.list_methods()] == before
    rel = dh.publish([0, 5, 9], epsilon=1.0, method="AHP", rng=1)
    assert rel.estimate.std() > 0 or rel.groups is not None


TARGETS = {
    "AHP (clustering cut)": ("AHP", {}, ahp_cluster_pair, 0.45),
    "AHP (threshold, eta = 5)": ("AHP", {"eta": 5.0}, ahp_threshold_pair, 0.45),
    "sDAHP (noisy sort, partition cut)": ("sDAHP", {}, sdahp_pair, 0.35),
    "EFPA (K = 1 -> 2, two bins)": ("EFPA", {}, efpa_pair, 0.05),
}


def record(audit_row, label: str, result: audit.AuditResult) -> None:
    worst = result.worst
    event = worst.best.event if worst.best is not None else "-"
    audit_row(
        f"targeted: {label}",
        result.epsilon,
        result.eps_lb,
        "FLAGGED" if result.flagged else "pass",
        f"{event} [{worst.pair.describe()}: {worst.pair.x.tolist()}]",
        result.runs,
        result.seconds,
    )


@pytest.mark.extended
@pytest.mark.statistical
@pytest.mark.parametrize("label", list(TARGETS))
def test_targeted_pair_has_power_and_no_flag(label, audit_row):
    name, params, make_pair, floor = TARGETS[label]
    mech = audit.method_mechanism(name, epsilon=1.0, **params)
    result = audit.audit(mech, [make_pair()], n_search=N_SEARCH, n_confirm=N_CONFIRM, seed=SEED)
    record(audit_row, label, result)
    assert not result.flagged, result.summary()
    assert result.eps_lb >= floor, result.summary()


# --------------------------------------------------------------------------- extended


@pytest.mark.exhaustive
@pytest.mark.statistical
@pytest.mark.parametrize("label", list(TARGETS))
@pytest.mark.parametrize("epsilon", [1.0, 0.5])
def test_targeted_pair_extended(label, epsilon, audit_row):
    name, params, make_pair, _ = TARGETS[label]
    mech = audit.method_mechanism(name, epsilon=epsilon, **params)
    pairs = [make_pair()]
    if epsilon != 1.0:  # the cut scales like 1/epsilon: take the outermost one again
        p = pairs[0]
        found = audit.decision_pairs(
            name,
            p.x,
            bins=[p.bin],
            span=2 * int(p.x[p.bin]),
            epsilon=epsilon,
            params=params,
            limit=None,
        )
        pairs = [max(found, key=lambda q: int(q.x[q.bin]))]
    result = audit.audit(mech, pairs, n_search=3000, n_confirm=20_000, seed=SEED + 1)
    record(audit_row, f"{label} at {epsilon:g}", result)
    assert not result.flagged, result.summary()
    assert result.eps_lb > 0, result.summary()
    assert np.isfinite(result.eps_lb)
