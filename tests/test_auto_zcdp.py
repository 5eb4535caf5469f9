"""``method="auto"`` under zCDP ranks with trees trained under rho; the lab's tables
under zCDP, the cache that lends shared columns, and the targets the report checks."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.lab.reproduce import auto
from dphist.lab.reproduce.report import Report, claim_lines
from dphist.lab.selector import load_table
from dphist.lab.selector.fit import Settings, fit_model, with_zcdp
from dphist.lab.selector.table import Cell, Table, build_table
from dphist.methods.advisor import choose
from dphist.methods.selector import WORKLOADS, Candidate, Model

SHAPES = {"a": np.linspace(1.0, 5.0, 16), "b": np.r_[np.zeros(8), np.full(8, 4.0)]}
CELLS = [Cell(s, 8, 100) for s in SHAPES]


def _model(first: str, zcdp_first: str | None = None) -> Model:
    cands = {c.label: c for c in (Candidate("identity"), Candidate("HB"))}
    other = next(k for k in cands if k != first)

    def leaf(top: str) -> dict:
        return {"rank": [top, next(k for k in cands if k != top)], "regret": 1.0}

    trees = {k: {w: leaf(first) for w in WORKLOADS} for k in ("public", "measured")}
    model = Model(Fraction(1, 100), trees, cands)
    if zcdp_first is None:
        return model
    ztrees = {k: {w: leaf(zcdp_first) for w in WORKLOADS} for k in ("public", "measured")}
    assert other
    return with_zcdp(model, Model(Fraction(1, 100), ztrees, cands))


def test_zcdp_releases_rank_with_the_trees_trained_under_rho():
    both = _model("identity", zcdp_first="HB")
    assert set(both.trees) == {"public", "measured", "zcdp public", "zcdp measured"}
    assert choose(100, 0.5, "all", model=both).method == "identity"
    z = choose(100, 0.5, "all", model=both, definition="zcdp", noisy_total=500.0,
               noisy_top_tenth=60.0)  # fmt: skip
    assert z.method == "HB" and "trained under rho" in z.reason
    pure_only = _model("identity")
    z = choose(100, 0.5, "all", model=pure_only, definition="zcdp")
    assert z.method == "identity" and "trained under epsilon" in z.reason
    # the JSON keeps the zCDP trees
    again = dh.methods.selector.model_from_json(both.to_json())
    assert again.trees == both.trees and again.trained_for("zcdp")


def test_shipped_model_has_zcdp_trees_and_auto_publishes_under_rho():
    shipped = dh.methods.selector.load_model()
    assert shipped.trained_for("zcdp")
    rel = dh.publish(np.arange(64) % 7, rho=Fraction(1, 4), method="auto", rng=1)
    assert rel.definition == "zcdp" and "trained under rho" in rel.params["auto"]["reason"]


def test_zcdp_table_draws_gaussian_features_at_the_queries_l2_sensitivity():
    facts = np.array([[1000.0, 300.0]])
    table = Table((Cell("a", 64, 0),), (0.5,), (), np.zeros((1, 1, 0, 5)), facts, "zcdp")
    rho = 0.02
    draws = np.array([table.noisy_facts(0, rho, np.random.default_rng(s)) for s in range(4000)])
    # TotalAndTop has squared L2 sensitivity 2: variance 2 / (2 rho) per answer
    assert draws.mean(axis=0) == pytest.approx(facts[0], abs=4 * np.sqrt(50 / 4000))
    assert draws.var(axis=0) == pytest.approx([1 / rho] * 2, rel=0.1)
    pure = replace(table, definition="pure")
    lap = np.array([pure.noisy_facts(0, 0.5, np.random.default_rng(s)) for s in range(4000)])
    assert lap.var(axis=0) == pytest.approx([2 * (2 / 0.5) ** 2] * 2, rel=0.15)


@pytest.mark.extended
def test_zcdp_tables_run_every_candidate_under_rho(tmp_path):
    cands = (Candidate("identity"), Candidate("S2"))
    z = build_table(CELLS, SHAPES, epsilons=(0.25,), candidates=cands, seeds=1, workers=1,
                    cache=tmp_path / "z.npz", definition="zcdp")  # fmt: skip
    x = CELLS[1].counts(SHAPES)
    runs = 16  # seeds_for(8, 1)
    want = np.mean(
        [dh.metrics.point_mse(x, dh.publish(x, method="S2", rho=0.25, rng=s).estimate)
         for s in range(runs)]
    )  # fmt: skip
    assert z.errors[1, 0, 1, WORKLOADS.index("point")] == pytest.approx(want, rel=1e-12)
    assert load_table(tmp_path / "z.npz").definition == "zcdp"
    # a pure build cannot resume from the zCDP cache
    p = build_table(CELLS, SHAPES, epsilons=(0.25,), candidates=cands, seeds=1, workers=1,
                    cache=tmp_path / "z.npz")  # fmt: skip
    assert p.definition == "pure" and not np.allclose(p.errors, z.errors)


def test_a_new_candidate_costs_its_own_column_only(tmp_path):
    cache = tmp_path / "t.npz"
    old = (Candidate("identity"), Candidate("S2"))
    build_table(CELLS, SHAPES, epsilons=(0.5,), candidates=old, seeds=1, workers=1, cache=cache)
    with np.load(cache, allow_pickle=True) as z:  # mark S2's cached column
        data = {k: z[k] for k in z.files}
    data["errors"][:, :, 1] = 12345.0
    np.savez(cache, **data)
    new = (Candidate("S~", {"ratio": 0.4}), Candidate("identity"), Candidate("S2"))
    t = build_table(CELLS, SHAPES, epsilons=(0.5,), candidates=new, seeds=1, workers=1, cache=cache)
    assert (t.errors[:, :, 2] == 12345.0).all()  # lent, not rerun
    fresh = build_table(CELLS, SHAPES, epsilons=(0.5,), candidates=new, seeds=1, workers=1)
    assert np.array_equal(t.errors[:, :, :2], fresh.errors[:, :, :2])
    assert [c.label for c in load_table(cache).candidates] == [c.label for c in new]


def test_zcdp_rows_compare_trees_trained_under_rho_with_the_pure_ones():
    cands = (Candidate("identity"), Candidate("HB"), Candidate("S2"))
    common = {"epsilons": (0.1,), "candidates": cands, "seeds": 1, "workers": 1}
    pure = build_table(CELLS, SHAPES, **common)
    z = build_table(CELLS, SHAPES, **{**common, "epsilons": (0.0025,)}, definition="zcdp")
    rows = auto.zcdp_rows(pure, z, Settings(depth=1))
    assert [r["trees"] for r in rows] == ["trained under rho (shipped)", "pure trees"]
    for r in rows:
        assert r["geo-mean regret"] >= 1.0 - 1e-12
    model = with_zcdp(fit_model(pure, np.arange(2), Settings(depth=1)),
                      fit_model(z, np.arange(2), Settings(depth=1)))  # fmt: skip
    assert model.trained_for("zcdp")


def test_targets_are_the_issues_and_meets_needs_all_of_them():
    assert (auto.TARGET_GEOMEAN, auto.TARGET_NEAR, auto.TARGET_WORST) == (1.25, 0.80, 4.0)
    assert (auto.TARGET_GUARD_SHARE, auto.HARD_GUARD) == (0.005, 1.5)
    good = {
        "geo-mean regret": 1.2,
        "within 1.5x": 0.85,
        "max regret": 3.0,
        "share above 1.2x identity/HB": 0.004,
        "cells above 1.5x identity/HB": 0,
    }
    assert auto.meets(good)
    for key, bad in (("geo-mean regret", 1.26), ("within 1.5x", 0.79), ("max regret", 4.1),
                     ("share above 1.2x identity/HB", 0.006),
                     ("cells above 1.5x identity/HB", 1)):  # fmt: skip
        assert not auto.meets({**good, key: bad})


def test_claim_lines_read_the_claims_of_a_written_report(tmp_path):
    rep = Report("t")
    rep.claim("regret at most 1.5 | in 80%", "target", "81%", True, "a; b")
    rep.claim("worst at most 4x", "target", "4.4x", False, "why")
    text = rep.write(tmp_path).read_text(encoding="utf-8")
    assert claim_lines(text) == [
        "reproduced: regret at most 1.5 | in 80% (ours: 81%)",
        "differs: worst at most 4x (ours: 4.4x)",
    ]
    assert claim_lines("# no claims\n") == []
