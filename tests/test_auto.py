"""``method="auto"``: the shipped model, the choice, the noisy-total step, the tree fit
against brute force, and the newcomer cases where auto must not lose to identity."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import dphist as dh
from dphist import session as session_module
from dphist import workloads
from dphist._kernel import TotalAndTop
from dphist._kernel.operators import total_and_top_mass
from dphist.errors import BudgetExceededError, InputTypeError, ValidationError
from dphist.lab.selector.fit import GUARD_WEIGHT, TRAIN_GUARD, costs, fit_tree
from dphist.methods import advisor, selector
from dphist.methods.advisor import choose, workload_kind
from dphist.methods.selector import (
    CANDIDATES,
    DEFAULT_SHARE,
    SMALL_DOMAIN,
    WORKLOADS,
    Candidate,
    data_independent,
    feature_vector,
    load_model,
)


def _leaves(node):
    if "rank" in node:
        yield node
    else:
        yield from _leaves(node["low"])
        yield from _leaves(node["high"])


def test_shipped_model_ranks_every_candidate_in_every_leaf():
    model = load_model()
    labels = {c.label for c in CANDIDATES}
    assert set(model.candidates) == labels
    assert {"identity", "HB"} <= labels  # never worse by design than the better of them
    for c in CANDIDATES:
        dh.get_method(c.method).pipeline(**c.params)
    for kind in ("public", "measured"):
        assert set(model.trees[kind]) == set(WORKLOADS)
        for tree in model.trees[kind].values():
            for leaf in _leaves(tree):
                assert sorted(leaf["rank"]) == sorted(labels)
                assert leaf["regret"] >= 1.0


def test_features_are_finite_clipped_and_monotone():
    assert np.isnan(feature_vector(40, 0.5, None)[2:]).all()
    lows = [feature_vector(40, 0.5, t, t / 10) for t in (-5.0, 0.0, 10.0, 1e3, 1e9)]
    assert all(np.isfinite(v).all() for v in lows)
    assert [v[2] for v in lows] == sorted(v[2] for v in lows)
    tops = [feature_vector(40, 0.5, 100.0, top)[4] for top in (-5.0, 0.0, 50.0, 100.0, 500.0)]
    assert tops == [0.0, 0.0, 0.5, 1.0, 1.0]  # a share of the records, clipped
    assert feature_vector(40, 0.5, -3.0, 0.5)[4] == 0.5  # a noisy total below 1 counts as 1
    assert feature_vector(1024, 0.1, 1e4)[3] == pytest.approx(np.log10(1e3 / 1024))
    assert np.isnan(feature_vector(1024, 0.1, 1e4)[4])


@pytest.mark.parametrize("workload", [*WORKLOADS, None, "categorical", 3, 600])
@pytest.mark.parametrize("n", [4, 40, 1000, 65536])
def test_choice_is_deterministic_and_valid(n, workload):
    if isinstance(workload, int) and workload > n:
        return
    for total in (None, 0.0, 1e3, 1e7):
        a = choose(n, 0.3, workload, noisy_total=total)
        b = choose(n, Fraction(3, 10), workload, noisy_total=total)
        assert a == b
        dh.get_method(a.method).pipeline(**a.params)
        assert f"over {n} bins" in a.reason


def test_time_budget_moves_to_faster_candidates():
    n = 10**7
    full = choose(n, 1, "all", noisy_total=1e8)
    quick = choose(n, 1, "all", noisy_total=1e8, time_budget=1e-3)
    assert advisor.predicted_seconds(quick.method, n) <= advisor.predicted_seconds(full.method, n)
    if quick.method != full.method:
        assert "time budget" in quick.reason


def test_workload_kinds_and_objects():
    n = 2048
    assert workload_kind(n, None)[0] == "all"
    assert workload_kind(n, "categorical")[0] == "point"
    assert workload_kind(n, "mixed")[0] == "all"
    assert workload_kind(n, 5)[0] == "short"
    assert workload_kind(n, 700)[0] == "long"
    assert workload_kind(n, workloads.identity(n))[0] == "point"
    assert workload_kind(n, workloads.small_ranges(n))[0] == "short"
    assert workload_kind(n, workloads.prefix(n))[0] == "prefix"
    assert workload_kind(n, workloads.all_ranges(n))[0] == "all"
    with pytest.raises(ValidationError, match="2048"):
        workload_kind(n, workloads.prefix(10))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"workload": "sideways"}, ValidationError),
        ({"workload": 0}, ValidationError),
        ({"workload": True}, InputTypeError),
        ({"time_budget": 0}, ValidationError),
        ({"time_budget": "fast"}, InputTypeError),
        ({"auto_share": 0.6}, ValidationError),
        ({"auto_share": -0.1}, ValidationError),
        ({"auto_share": "half"}, InputTypeError),
        ({"ratio": 0.5}, ValidationError),
    ],
)
def test_bad_options_are_refused_before_any_read(kwargs, error, monkeypatch):
    reads = []
    real = session_module.run
    monkeypatch.setattr(session_module, "run", lambda *a, **k: reads.append(1) or real(*a, **k))
    with dh.Session([1, 2, 3], epsilon=1, rng=0) as s:
        with pytest.raises(error):
            s.publish("auto", epsilon=0.5, **kwargs)
        assert s.spent == 0 and not reads


def test_auto_over_the_session_budget_spends_nothing():
    with dh.Session([1, 2, 3], epsilon=1, rng=0) as s:
        s.publish("identity", epsilon=0.8)
        with pytest.raises(BudgetExceededError):
            s.publish("auto", epsilon=0.5)
        assert s.spent == Fraction(4, 5)


def test_release_records_features_choice_and_the_whole_ledger():
    x = dh.synthetic.spiky(512, rng=3)
    rel = dh.publish(x, epsilon=0.5, method="auto", workload="long", rng=1)
    auto = rel.params["auto"]
    assert rel.method == auto["method"] and auto["share"] == str(DEFAULT_SHARE)
    assert isinstance(auto["noisy_total"], float) and isinstance(auto["noisy_top_tenth"], float)
    assert auto["reason"]
    assert rel.spent == rel.epsilon == Fraction(1, 2)
    first = rel.ledger[0]
    assert first.epsilon == DEFAULT_SHARE / 2 and first.sensitivity == 2 and first.size == 2
    assert sum(c.epsilon for c in rel.ledger[1:]) == (1 - DEFAULT_SHARE) / 2
    assert rel.to_dict()["params"]["auto"]["method"] == rel.method


@pytest.mark.parametrize(
    ("n", "values"), [(4, range(4)), (4, (0, 3, 4, 7, 8, 9, 10, 11)), (11, (0, 1, 9, 10, 13))]
)
def test_total_and_top_sensitivity_by_brute_force(n, values):
    """One record added or removed moves the total and the top mass by at most one each,
    across the grid's thresholds (8, 10, 12, ...) and for k = 1 (n = 4) and 2 (n = 11)."""
    query = TotalAndTop(n)
    rng = np.random.default_rng(n)
    if n <= 4:
        xs = [np.array(x) for x in itertools.product(values, repeat=n)]
    else:
        xs = [rng.choice(np.array(values), n) for _ in range(3_000)]
    worst = 0
    for x in xs:
        base = query.apply(x)
        for i in range(n):
            for d in (-1, 1):
                y = x.copy()
                y[i] += d
                if y[i] < 0:
                    continue
                worst = max(worst, int(np.abs(query.apply(y) - base).sum()))
    assert worst == query.sensitivity == query.sensitivity2 == 2


def test_top_mass_bounds_the_largest_counts_against_sorting():
    """Exact when the k-th largest count is 0 or on the grid (every count up to 8 is),
    never below the sum of the k largest, at most 1.25x above it."""
    rng = np.random.default_rng(5)
    assert total_and_top_mass(np.array([9] * 10), 1) == (90, 10)  # grid 8, 10: 10 <= 1.25 * 9
    assert total_and_top_mass(np.array([0, 5, 0, 0]), 2) == (5, 5)  # k-th largest is 0
    big = 2**62 + 5
    assert total_and_top_mass(np.array([big, 3, 0]), 1) == (big + 3, big)  # exact integers
    for _ in range(3_000):
        n = int(rng.integers(1, 60))
        scale = float(rng.choice([1, 8, 1e3, 1e6, 1e12]))
        x = (rng.pareto(1.0, n) * scale).astype(np.int64) * (rng.random(n) < 0.6)
        k = int(rng.integers(1, n + 1))
        exact = int(np.sort(x)[::-1][:k].sum())
        total, top = total_and_top_mass(x, k)
        assert total == int(x.sum())
        assert exact <= top <= 1.25 * exact
        if np.sort(x)[::-1][k - 1] <= 8:
            assert top == exact


def test_public_mode_spends_nothing_on_features_and_ignores_the_data():
    rng = np.random.default_rng(0)
    a = rng.poisson(3, 300)
    b = rng.poisson(3000, 300) * (rng.random(300) < 0.1)
    ra = dh.publish(a, epsilon=0.2, method="auto", workload=20, auto_share=0, rng=1)
    rb = dh.publish(b, epsilon=0.2, method="auto", workload=20, auto_share=0, rng=1)
    assert (ra.method, ra.params) == (rb.method, rb.params)
    assert ra.params["auto"]["noisy_total"] is None
    assert all(c.block != "noisy_total" for c in ra.ledger)


@pytest.mark.parametrize("workload", [*WORKLOADS, None])
def test_small_domains_get_a_data_independent_method_and_measure_nothing(workload):
    """Up to SMALL_DOMAIN bins: no features, the whole epsilon to a method whose error is
    known in advance; one bin more and the features are measured again."""
    small = np.array([0, 40, 3, 900, 0, 2, 7, 1])[:SMALL_DOMAIN]
    rel = dh.publish(small, epsilon=0.3, method="auto", workload=workload, rng=2)
    auto = rel.params["auto"]
    assert data_independent(Candidate(rel.method, auto["params"]))
    assert auto["share"] == "0" and auto["noisy_total"] is None
    assert "data-independent" in auto["reason"]
    assert sum(c.epsilon for c in rel.ledger) == Fraction(3, 10)
    assert all(c.block != "auto_features" for c in rel.ledger)
    bigger = dh.publish(np.r_[small, 5], epsilon=0.3, method="auto", workload=workload, rng=2)
    assert bigger.params["auto"]["share"] == str(DEFAULT_SHARE)
    assert isinstance(bigger.params["auto"]["noisy_total"], float)


def test_data_independent_candidates_are_the_unbiased_linear_ones():
    found = {c.label for c in CANDIDATES if data_independent(c)}
    assert found == {"identity", "HB", "OPT-H", "OPT-H[workload=prefix]"}


def test_choice_sees_the_data_only_through_the_noisy_total(monkeypatch):
    seen = []
    real = session_module.choose

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "choose", spy)
    dh.publish(np.arange(64), epsilon=1, method="auto", rng=2)
    ((args, kwargs),) = seen
    assert args[0] == 64 and not any(isinstance(v, np.ndarray) for v in [*args, *kwargs.values()])
    assert set(kwargs) == {"noisy_total", "noisy_top_tenth", "model", "definition", "share"}


# --- the fit, against brute force ------------------------------------------------------


def _brute_force_stump(x, c, min_rows):
    """Best single split by trying every feature and threshold."""
    best = c.sum(axis=0).min()
    for f in range(x.shape[1]):
        for t in np.unique(x[:, f])[1:]:
            low = x[:, f] < t
            if min_rows <= low.sum() <= low.size - min_rows:
                best = min(best, c[low].sum(axis=0).min() + c[~low].sum(axis=0).min())
    return best


def _tree_cost(node, x, c):
    if "rank" in node:
        return 0.0
    low = x[:, node["feature"]] < node["threshold"]
    return _tree_cost(node["low"], x[low], c[low]) + _tree_cost(node["high"], x[~low], c[~low])


def _fitted_cost(tree, x, c, labels):
    total = 0.0
    for row, cost in zip(x, c, strict=True):
        node = tree
        while "rank" not in node:
            node = node["low"] if row[node["feature"]] < node["threshold"] else node["high"]
        total += cost[labels.index(node["rank"][0])]
    return total


@pytest.mark.parametrize("seed", range(6))
def test_one_split_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, (40, 3)).astype(float)
    c = rng.random((40, 4))
    labels = ["a", "b", "c", "d"]
    tree = fit_tree(x, c, np.exp(c), labels, depth=1, min_rows=3)
    assert _fitted_cost(tree, x, c, labels) == pytest.approx(_brute_force_stump(x, c, 3))


def test_deeper_trees_never_cost_more_and_leaves_are_exact_minima():
    rng = np.random.default_rng(9)
    x = rng.random((60, 2))
    c = rng.random((60, 3))
    labels = ["a", "b", "c"]
    costs_by_depth = [
        _fitted_cost(fit_tree(x, c, np.exp(c), labels, d, 2), x, c, labels) for d in range(4)
    ]
    assert costs_by_depth == sorted(costs_by_depth, reverse=True)
    assert costs_by_depth[0] == pytest.approx(c.sum(axis=0).min())


def test_costs_are_log_regret_plus_the_baseline_hinge():
    labels = ["identity", "HB", "m"]
    e = np.array([[2.0, 4.0, 1.0], [1.0, 1.0, 1.5]])
    got = costs(e, labels)
    # HB is 4 against the baseline min(identity, HB) = 2: hinge log(4 / (1.1 * 2))
    assert TRAIN_GUARD == 1.1
    assert got[0] == pytest.approx([np.log(2), np.log(4) + GUARD_WEIGHT * np.log(4 / 2.2), 0.0])
    hinge = np.log(1.5 / TRAIN_GUARD)
    assert got[1] == pytest.approx([0.0, 0.0, np.log(1.5) + GUARD_WEIGHT * hinge])
    # another hinge and weight; weight 0 is the plain log regret
    assert costs(e, labels, hinge=1.0, weight=2.0)[1] == pytest.approx(
        [0.0, 0.0, np.log(1.5) + 2.0 * np.log(1.5)]
    )
    assert costs(e, labels, weight=0.0) == pytest.approx(np.log(e / e.min(axis=1)[:, None]))


# --- the newcomer cases ---------------------------------------------------------------


def _mean_errors(x, epsilon, workload, error, seeds=40):
    out = {}
    for method in ("identity", "auto"):
        extra = {"workload": workload} if method == "auto" else {}
        out[method] = np.mean(
            [
                error(x, dh.publish(x, epsilon=epsilon, method=method, rng=s, **extra).estimate)
                for s in range(seeds)
            ]
        )
    return out


NEWCOMERS = [
    # doctor visits per patient, 0..39, over 3,000 patients; epsilon 0.5
    ("visits", 40, 0.5),
    # four categories (regions) of 2,000 records; epsilon 0.2
    ("regions", 4, 0.2),
]


def _newcomer_counts(name):
    rng = np.random.default_rng(5)
    if name == "visits":
        return np.bincount(np.minimum(rng.negative_binomial(2, 0.35, 3000), 39), minlength=40)
    return np.bincount(rng.choice(4, 2000, p=[0.4, 0.3, 0.2, 0.1]), minlength=4)


@pytest.mark.statistical
@pytest.mark.parametrize(("name", "n", "epsilon"), NEWCOMERS)
@pytest.mark.parametrize("workload", ["point", "prefix", None])
def test_newcomer_cases_are_within_1_2_of_identity(name, n, epsilon, workload):
    x = _newcomer_counts(name)
    assert x.size == n
    wl = {"point": workloads.identity(n), "prefix": workloads.prefix(n)}.get(
        workload, workloads.all_ranges(n)
    )
    err = _mean_errors(x, epsilon, workload, lambda t, e: dh.metrics.workload_mse(t, e, wl))
    assert err["auto"] <= 1.2 * err["identity"], err


def test_model_file_round_trips():
    model = load_model()
    again = selector.model_from_json(model.to_json())
    assert again == model
    for n, eps, total, w in itertools.product((4, 4096), (0.01, 1.0), (10.0, 1e6), WORKLOADS):
        f = feature_vector(n, eps, total)
        assert again.rank(f, w, True) == model.rank(f, w, True)
