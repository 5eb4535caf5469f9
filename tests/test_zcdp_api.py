"""Publishing under zero-concentrated DP: ``dh.zCDP(rho)`` sessions and ``rho=``."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.blocks import NoisyTotal
from dphist.errors import InputTypeError, ValidationError
from dphist.guarantee import ZCDP_SECURE


def test_publish_with_rho_charges_rho_and_states_the_guarantee():
    x = np.arange(64) % 7
    rel = dh.publish(x, rho="0.05", method="HB")  # secure noise
    assert rel.definition == "zcdp" and rel.epsilon == Fraction(1, 20)
    assert rel.spent == Fraction(1, 20) and {c.unit for c in rel.ledger} == {"rho"}
    assert {c.primitive for c in rel.ledger} == {"discrete_gaussian"}
    assert rel.guarantee == ZCDP_SECURE and rel.private
    assert rel.epsilon_at(1e-9) == pytest.approx(dh.zCDP("0.05").epsilon_at(1e-9))
    assert 1.5 < rel.epsilon_at(1e-9) < 0.05 + 2 * np.sqrt(0.05 * np.log(1e9))
    data = json.loads(rel.to_json())
    assert data["definition"] == "zcdp" and data["ledger"][0]["unit"] == "rho"
    assert "rho=0.05" in repr(rel)


def test_session_refuses_methods_without_a_gaussian_form_before_reading(monkeypatch):
    """Every registered method has a zCDP form; a block without one (here NoisyTotal,
    patched) makes its method refuse before anything is charged or read."""
    assert dh.zcdp_methods() == [m.name for m in dh.list_methods()]
    monkeypatch.setattr(NoisyTotal, "zcdp", False)
    with dh.Session(np.arange(32), budget=dh.zCDP(1), rng=0) as s:
        with pytest.raises(ValidationError, match="no zero-concentrated DP version"):
            s.publish("uniform", rho=0.5)
        with pytest.raises(ValidationError, match="give rho="):
            s.publish("identity", epsilon=0.5)
        assert s.remaining == 1 and s.ledger == ()
        s.publish("identity", rho=0.25)
        s.publish("AHP", rho=0.75)
        assert s.remaining == 0
    assert "uniform" not in dh.zcdp_methods()


def test_budget_arguments_are_checked():
    with pytest.raises(InputTypeError):
        dh.Session([1, 2], epsilon=1, budget=dh.zCDP(1))
    with pytest.raises(InputTypeError):
        dh.Session([1, 2], budget=0.5)
    with pytest.raises(ValidationError):
        dh.publish([1, 2], epsilon=1, rho=1, method="identity")
    with pytest.raises(ValidationError):
        dh.zCDP(0)
    assert dh.PureDP(0.5).epsilon_at(1e-9) == 0.5
    pure = dh.Session([1, 2], budget=dh.PureDP("0.5"), rng=0)
    assert pure.publish("identity", epsilon=0.5).definition == "pure"


def test_tree_variance_under_zcdp_matches_the_gaussian_levels():
    """HB over 256 bins under zCDP: the Gaussian rule picks fan-out 4 (5 levels, not
    Laplace's 16 and 3); each level gets rho/5, so a node's noise has variance
    5/(2 rho); the leaves' reported variance comes from it by least squares."""
    n, rho = 256, Fraction(1, 2)
    x = np.zeros(n, dtype=np.int64)
    runs = [dh.publish(x, rho=rho, method="HB", rng=s) for s in range(300)]
    sigma2 = {c.scale for c in runs[0].ledger}
    assert sigma2 == {Fraction(5)} and len(runs[0].ledger) == 5  # 5 / (2 * 1/2)
    empirical = np.var(np.array([r.estimate for r in runs]), axis=0).mean()
    assert empirical == pytest.approx(float(runs[0].noise_variance.mean()), rel=0.1)


def test_session_rhos_add_exactly_and_convert():
    """Ten releases of rho 0.01 fit exactly in a session of 0.1; an eleventh is refused;
    the session's total converts like one release of rho 0.1."""
    with dh.Session(np.arange(16), budget=dh.zCDP("0.1"), rng=0) as s:
        rels = [s.publish("identity", rho=0.01) for _ in range(10)]
        assert s.spent == Fraction(1, 10) and s.remaining == 0
        with pytest.raises(dh.BudgetExceededError):
            s.publish("identity", rho=0.01)
    assert all(r.spent == Fraction(1, 100) for r in rels)
    assert s.definition.epsilon_at(1e-6) == pytest.approx(
        dh.publish(np.arange(16), rho="0.1", method="identity", rng=0).epsilon_at(1e-6)
    )
    assert rels[0].epsilon_at(1e-6) < s.definition.epsilon_at(1e-6)
