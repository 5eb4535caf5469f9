"""``method="auto"`` under the statistical audit as one mechanism: the noisy features,
the choice and the chosen method, with the choice in the output, under pure epsilon-DP
and under zCDP (claimed as the (epsilon, delta)-DP its rho implies). A mutant that
chooses from the true features must be flagged on a pair that straddles one of the
model's thresholds; auto itself must pass on the same pair."""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._kernel import TotalAndTop
from dphist.lab import audit
from dphist.lab.audit.mechanisms import zcdp_claim
from dphist.methods.advisor import choose
from dphist.methods.selector import CANDIDATES, DEFAULT_SHARE

SHARE = DEFAULT_SHARE


def _index(method: str, params: dict) -> int:
    return next(k for k, c in enumerate(CANDIDATES) if c.method == method and c.params == params)


def _counts(n: int, total: int) -> np.ndarray:
    """``total`` records spread as evenly as possible over ``n`` bins."""
    x = np.full(n, total // n, dtype=np.int64)
    x[: total % n] += 1
    return x


def _choice_on(n: int, eps: Fraction, x: np.ndarray, definition: str = "pure") -> tuple[str, dict]:
    """The shipped model's choice for all ranges from ``x``'s exact features (``eps``
    is rho under zCDP)."""
    total, top = (float(v) for v in TotalAndTop(n).apply(x))
    c = choose(
        n, eps * (1 - SHARE), "all", noisy_total=total, noisy_top_tenth=top,
        definition=definition,
    )  # fmt: skip
    return c.method, c.params


@functools.cache
def _setting(definition: str = "pure") -> tuple[int, Fraction, int]:
    """A small domain, a budget and the smallest total (at least 8) at which the
    shipped model's choice for all ranges changes with the features of even counts."""
    budgets = (Fraction(1), Fraction(1, 2), Fraction(1, 5))
    if definition == "zcdp":  # rho whose pure equivalent 2 sqrt(rho) is 1, 1/2, 1/5
        budgets = (Fraction(1, 4), Fraction(1, 16), Fraction(1, 100))
    for n in (16, 32, 64, 128):
        for eps in budgets:
            first = _choice_on(n, eps, _counts(n, 8), definition)
            for total in range(9, 3000):
                if _choice_on(n, eps, _counts(n, total), definition) != first:
                    return n, eps, total
    raise AssertionError("the shipped model never uses the features on small domains")


DELTA = 1e-6


def _auto(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    rel = dh.publish(x, epsilon=_setting()[1], method="auto", rng=gen)
    return np.append(rel.estimate, _index(rel.method, rel.params["auto"]["params"]))


def _true_features_mutant(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Chooses from the exact features (no noise, nothing charged for them)."""
    n, eps, _ = _setting()
    method, params = _choice_on(n, eps, x)
    rel = dh.publish(x, epsilon=eps * (1 - SHARE), method=method, rng=gen, **params)
    return np.append(rel.estimate, _index(method, params))


def _pair_at(total: int) -> audit.Neighbour:
    x = _counts(_setting()[0], total - 1)
    return audit.pair(x, int(np.argmin(x)), +1, "straddles a threshold of the model")


@pytest.mark.extended
@pytest.mark.statistical
def test_auto_is_not_flagged_and_the_true_features_mutant_is(audit_row):
    _, eps, boundary = _setting()  # found on first use: only the extended run needs it
    pair = _pair_at(boundary)
    mech = audit.function_mechanism("auto", _auto, epsilon=eps)
    ok = audit.audit(mech, [pair], n_search=600, n_confirm=2_400, seed=[2026, 13])
    audit_row("method: auto", ok.epsilon, ok.eps_lb, "pass" if not ok.flagged else "FLAGGED",
              pair.describe(), ok.runs, ok.seconds)  # fmt: skip
    assert not ok.flagged, ok.summary()
    bad = audit.function_mechanism("auto on the true features", _true_features_mutant, epsilon=eps)
    caught = audit.audit(bad, [pair], n_search=600, n_confirm=2_400, seed=[2026, 14])
    assert caught.flagged, caught.summary()


@pytest.mark.extended
@pytest.mark.statistical
def test_auto_under_zcdp_is_not_flagged_and_the_true_features_mutant_is(audit_row):
    """The same mechanism under rho: Gaussian features, the choice through 2 sqrt(rho),
    a zCDP method; claimed at the (epsilon, delta) its rho implies."""
    n, rho, boundary = _setting("zcdp")
    claim = zcdp_claim(rho, DELTA)

    def auto_rho(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        rel = dh.publish(x, rho=rho, method="auto", rng=gen)
        return np.append(rel.estimate, _index(rel.method, rel.params["auto"]["params"]))

    def mutant(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        method, params = _choice_on(n, rho, x, "zcdp")
        rel = dh.publish(x, rho=rho * (1 - SHARE), method=method, rng=gen, **params)
        return np.append(rel.estimate, _index(method, params))

    x = _counts(n, boundary - 1)
    pair = audit.pair(x, int(np.argmin(x)), +1, "straddles a threshold of the model")
    mech = audit.function_mechanism("auto (zCDP)", auto_rho, epsilon=claim, delta=DELTA)
    ok = audit.audit(mech, [pair], n_search=600, n_confirm=2_400, seed=[2026, 15])
    audit_row("method: auto (zCDP)", ok.epsilon, ok.eps_lb, "pass" if not ok.flagged else "FLAGGED",
              pair.describe(), ok.runs, ok.seconds)  # fmt: skip
    assert not ok.flagged, ok.summary()
    bad = audit.function_mechanism("auto (zCDP) on the true features", mutant, epsilon=claim,
                                   delta=DELTA)  # fmt: skip
    caught = audit.audit(bad, [pair], n_search=600, n_confirm=2_400, seed=[2026, 16])
    assert caught.flagged, caught.summary()
