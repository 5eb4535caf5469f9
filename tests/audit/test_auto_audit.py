"""``method="auto"`` under the statistical audit as one mechanism: the noisy features,
the choice and the chosen method, with the choice in the output. A mutant that
chooses from the true features must be flagged on a pair that straddles one of the
model's thresholds; auto itself must pass on the same pair."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist._kernel import TotalAndTop
from dphist.lab import audit
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


def _choice_on(n: int, eps: Fraction, x: np.ndarray) -> tuple[str, dict]:
    """The shipped model's choice for all ranges from ``x``'s exact features."""
    total, top = (float(v) for v in TotalAndTop(n).apply(x))
    c = choose(n, eps * (1 - SHARE), "all", noisy_total=total, noisy_top_tenth=top)
    return c.method, c.params


def _setting() -> tuple[int, Fraction, int]:
    """A small domain, an epsilon and the smallest total (at least 8) at which the
    shipped model's choice for all ranges changes with the features of even counts."""
    for n in (16, 32, 64):
        for eps in (Fraction(1), Fraction(1, 2), Fraction(1, 5)):
            first = _choice_on(n, eps, _counts(n, 8))
            for total in range(9, 3000):
                if _choice_on(n, eps, _counts(n, total)) != first:
                    return n, eps, total
    raise AssertionError("the shipped model never uses the features on small domains")


N_BINS, EPS, BOUNDARY = _setting()


def _auto(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    rel = dh.publish(x, epsilon=EPS, method="auto", rng=gen)
    return np.append(rel.estimate, _index(rel.method, rel.params["auto"]["params"]))


def _true_features_mutant(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Chooses from the exact features (no noise, nothing charged for them)."""
    method, params = _choice_on(N_BINS, EPS, x)
    rel = dh.publish(x, epsilon=EPS * (1 - SHARE), method=method, rng=gen, **params)
    return np.append(rel.estimate, _index(method, params))


def _pair_at(total: int) -> audit.Neighbour:
    x = _counts(N_BINS, total - 1)
    return audit.pair(x, int(np.argmin(x)), +1, "straddles a threshold of the model")


@pytest.mark.extended
@pytest.mark.statistical
def test_auto_is_not_flagged_and_the_true_features_mutant_is(audit_row):
    pair = _pair_at(BOUNDARY)
    mech = audit.function_mechanism("auto", _auto, epsilon=EPS)
    ok = audit.audit(mech, [pair], n_search=600, n_confirm=2_400, seed=[2026, 13])
    audit_row("method: auto", ok.epsilon, ok.eps_lb, "pass" if not ok.flagged else "FLAGGED",
              pair.describe(), ok.runs, ok.seconds)  # fmt: skip
    assert not ok.flagged, ok.summary()
    bad = audit.function_mechanism("auto on the true features", _true_features_mutant, epsilon=EPS)
    caught = audit.audit(bad, [pair], n_search=600, n_confirm=2_400, seed=[2026, 14])
    assert caught.flagged, caught.summary()
