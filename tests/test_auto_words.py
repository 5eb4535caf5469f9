"""``method="auto"`` as a publisher meets it: reasons in plain words (the model's
thresholds stay in the JSON), one workload default, auto under zCDP, and what
``dh.accuracy("auto", ...)`` says."""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist.errors import ValidationError
from dphist.methods.advisor import choose, pure_equivalent
from dphist.methods.selector import DEFAULT_SHARE, FEATURES, PLAIN, WORKLOADS, load_model

# a leaf threshold prints as "<=", "<" or a feature's name; none may reach a reason
_LEAF = re.compile(r"<=|<|>=|>|" + "|".join(FEATURES))


def _walk(node, path=()):
    if "rank" in node:
        yield path
    else:
        yield from _walk(node["low"], path)
        yield from _walk(node["high"], path)


@pytest.mark.parametrize("kind", WORKLOADS)
def test_reasons_carry_no_leaf_thresholds(kind):
    seen = set()
    for n in (4, 16, 100, 4096, 10**6):
        for eps in (0.01, 0.1, 1.0):
            for total, top in ((None, None), (-40.0, 3.0), (50.0, 45.0), (1e6, 2e5), (1e8, 9e7)):
                c = choose(n, eps, kind, noisy_total=total, noisy_top_tenth=top, share="0.01")
                assert not _LEAF.search(c.reason), c.reason
                assert "noisy total" not in c.reason and c.reason.startswith(c.method)
                if total is not None:
                    assert "1% of the epsilon measured the total" in c.reason
                    assert f"{total:g}" not in c.reason  # the noisy values are left to JSON
                seen.add(c.leaf)
    assert any("<" in leaf for leaf in seen)  # the thresholds are kept for the JSON


def test_every_leaf_of_the_shipped_model_reads_in_words():
    model = load_model()
    for trees in model.trees.values():
        for tree in trees.values():
            assert list(_walk(tree))
    for words in PLAIN.values():
        assert set(words) == {"low", "high", "between"}
        assert not any(_LEAF.search(w) or re.search(r"\d", w) for w in words.values())
    assert set(PLAIN) == set(FEATURES)


def test_the_printed_reason_is_plain(tmp_path, monkeypatch, capsys):
    from dphist import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "v.csv").write_text("v\n" + "\n".join(str(i % 37) for i in range(500)) + "\n")
    code = cli.main(["publish", "v.csv", "-c", "v", "--domain", "0:16:1", "--epsilon", "1",
                     "--seed", "3", "--out", "o.json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    line = " ".join(out[out.index("Chosen by auto") :].split())
    assert "measured the total" in line and not _LEAF.search(line.split(".")[0])
    assert "noisy total" not in out


def test_one_workload_default_in_python_and_the_command_line(tmp_path, monkeypatch, capsys):
    import json

    from dphist import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "v.csv").write_text("v\n" + "\n".join("abc"[i % 3] for i in range(90)) + "\n")
    code = cli.main(["publish", "v.csv", "-c", "v", "--categories", "a,b,c", "--epsilon", "1",
                     "--seed", "3", "--out", "o.json"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    cli_reason = json.loads((tmp_path / "o.json").read_text())["release"]["params"]["auto"]
    py = dh.publish([30, 30, 30], epsilon=1, method="auto", rng=3).params["auto"]
    assert "ranges of every length (no workload given)" in cli_reason["reason"]
    assert "ranges of every length (no workload given)" in py["reason"]


def test_auto_under_rho_is_one_zcdp_release():
    x = np.arange(256) % 11
    rel = dh.publish(x, rho=Fraction(1, 10), method="auto", rng=5, workload="point")
    assert rel.definition == "zcdp" and sum(c.epsilon for c in rel.ledger) == Fraction(1, 10)
    assert {c.primitive.value for c in rel.ledger} == {"discrete_gaussian"}
    assert rel.ledger[0].epsilon == Fraction(1, 10) * DEFAULT_SHARE  # the features' share
    assert "2 sqrt(rho)" in rel.params["auto"]["reason"]
    assert rel.params["auto"]["method"] == rel.method


def test_zcdp_mapping_matches_the_noise_of_one_count():
    # Laplace at epsilon has variance 2/epsilon^2; Gaussian at rho 1/(2 rho)
    for rho in (0.001, 0.1, 2.0):
        eps = pure_equivalent(rho, "zcdp")
        assert 2 / eps**2 == pytest.approx(1 / (2 * rho))
    assert pure_equivalent(Fraction(1, 2)) == 0.5
    shipped = load_model()
    pure = replace(shipped, trees={k: v for k, v in shipped.trees.items() if "zcdp" not in k})
    a = choose(500, 0.25, "all", definition="zcdp", model=pure)
    b = choose(500, 1.0, "all", model=pure)
    assert (a.method, a.params) == (b.method, b.params)  # rho 1/4 reads as epsilon 1


def test_accuracy_of_auto_explains_and_gives_the_candidates():
    with pytest.raises(ValidationError) as info:
        dh.accuracy("auto", 100, epsilon=1.0, workload="point")
    msg = str(info.value)
    assert "depend on the data" in msg and "unknown method" not in msg
    rest = 1 - DEFAULT_SHARE  # the budget left after the features
    ident = dh.accuracy("identity", 100, epsilon=rest, workload="point")
    hb = dh.accuracy("HB", 100, epsilon=rest, workload="point")
    assert f"identity: RMSE {ident.rmse:.4g}" in msg and f"HB: RMSE {hb.rmse:.4g}" in msg
    with pytest.raises(ValidationError, match=f"rho {float(rest / 10):.3g}"):
        dh.accuracy("auto", 100, rho=0.1, workload="point")
    with pytest.raises(ValidationError, match="depend on the data"):
        dh.epsilon_for("auto", 100, 3.0, "point")
