"""``method="auto"`` under the statistical audit as one mechanism: the noisy total, the
choice and the chosen method, with the choice in the output. A mutant that chooses
from the true total must be flagged on a pair that straddles one of the model's
thresholds; auto itself must pass on the same pair."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.lab import audit
from dphist.methods.advisor import choose
from dphist.methods.selector import CANDIDATES, DEFAULT_SHARE

SHARE = DEFAULT_SHARE


def _index(method: str, params: dict) -> int:
    return next(k for k, c in enumerate(CANDIDATES) if c.method == method and c.params == params)


def _setting() -> tuple[int, Fraction, int]:
    """A small domain, an epsilon and the smallest total (at least 8) at which the
    shipped model's choice for all ranges changes with the noisy total."""
    for n in (8, 16, 32, 64):
        for eps in (Fraction(1), Fraction(1, 2), Fraction(1, 5)):
            first = choose(n, eps * (1 - SHARE), "all", noisy_total=8.0).method
            for total in range(9, 3000):
                if choose(n, eps * (1 - SHARE), "all", noisy_total=float(total)).method != first:
                    return n, eps, total
    raise AssertionError("the shipped model never uses the noisy total on small domains")


N_BINS, EPS, BOUNDARY = _setting()


def _auto(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    rel = dh.publish(x, epsilon=EPS, method="auto", rng=gen)
    return np.append(rel.estimate, _index(rel.method, rel.params["auto"]["params"]))


def _true_total_mutant(x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Chooses from the exact total (no noise, nothing charged for it)."""
    c = choose(N_BINS, EPS * (1 - SHARE), "all", noisy_total=float(x.sum()))
    rel = dh.publish(x, epsilon=EPS * (1 - SHARE), method=c.method, rng=gen, **c.params)
    return np.append(rel.estimate, _index(c.method, c.params))


def _pair_at(total: int) -> audit.Neighbour:
    x = np.zeros(N_BINS, dtype=np.int64)
    x[:] = (total - 1) // N_BINS
    x[: (total - 1) % N_BINS] += 1
    assert x.sum() == total - 1
    return audit.pair(x, 0, +1, "straddles a threshold of the model")


@pytest.mark.statistical
def test_auto_is_not_flagged_and_the_true_total_mutant_is(audit_row):
    pair = _pair_at(BOUNDARY)
    mech = audit.function_mechanism("auto", _auto, epsilon=EPS)
    ok = audit.audit(mech, [pair], n_search=600, n_confirm=2_400, seed=[2026, 13])
    audit_row("method: auto", ok.epsilon, ok.eps_lb, "pass" if not ok.flagged else "FLAGGED",
              pair.describe(), ok.runs, ok.seconds)  # fmt: skip
    assert not ok.flagged, ok.summary()
    bad = audit.function_mechanism("auto on the true total", _true_total_mutant, epsilon=EPS)
    caught = audit.audit(bad, [pair], n_search=600, n_confirm=2_400, seed=[2026, 14])
    assert caught.flagged, caught.summary()
