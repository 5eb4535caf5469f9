"""``method="auto"``: the rules of :func:`dphist.methods.advisor.choose`, and that the
choice depends on public facts only."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dphist as dh
from dphist import session as session_module
from dphist import workloads
from dphist.errors import InputTypeError, ValidationError
from dphist.methods import advisor
from dphist.methods.advisor import choose, predicted_seconds, workload_kind

# (n, epsilon, workload) -> method, each worked out by hand from the module's rules
CASES = [
    (1024, 1, "point", "S2"),  # Kellaris §7.4 item 1, under certified noise
    (1024, 0.01, "short", "S2"),
    (1024, 1, 5, "S2"),  # length 5 <= 10: short
    (1024, 1, "long", "S2+H"),  # item 3
    (1024, 1, 512, "S2+H"),  # 512 > 1024 / 16
    (1024, 1, 40, "S1+H"),  # medium
    (1024, 0.01, "medium", "S1+H"),
    (1024, 0.5, None, "S1+H"),  # every length: hierarchical smoothing
    (1024, 1, "categorical", "sDWF"),  # SORTaki §VII-C
    (65536, 0.1, "categorical", "sDAHP"),  # SORTaki §VII-A
    (65536, 0.01, None, "S1+H"),
    (10**8, 0.1, None, "S2+H"),  # S1+H predicted over 60 s
    (10**8, 0.1, "medium", "S2+H"),
]


@pytest.mark.parametrize(("n", "eps", "workload", "expected"), CASES)
def test_rules(n, eps, workload, expected):
    name, params, reason = choose(n, eps, workload)
    assert name == expected
    dh.get_method(name).pipeline(**params)  # valid parameters
    assert reason and ("Kellaris" in reason or "SORTaki" in reason)


def test_sortaki_gamma_in_follows_epsilon_on_small_domains():
    assert choose(1024, 1, "categorical")[1] == {"gamma_in": 0.9}
    assert choose(1024, 0.5, "categorical")[1] == {"gamma_in": 0.7}
    assert choose(1024, 0.1, "categorical")[1] == {"gamma_in": 0.5}
    assert choose(10**5, 0.1, "categorical")[1] == {"gamma_in": 0.9}


def test_time_budget_moves_to_faster_methods():
    slow = choose(4096, 1, "medium", time_budget=1000)
    assert slow[0] == "S1+H"
    name, _, reason = choose(4096, 1, "medium", time_budget=0.0015)
    assert name == "S2+H" and "S1+H predicted to take longer" in reason
    assert predicted_seconds(name, 4096) <= 0.0015 < predicted_seconds("S1+H", 4096)
    name, _, _ = choose(10**7, 1, "medium", time_budget=1e-3)
    assert name == "identity"  # nothing fits: the fastest, last candidate


def test_dominated_methods_are_never_chosen():
    kinds = [*advisor.WORKLOAD_KINDS, None, 3, 100]
    for n in (16, 1000, 5000, 40000, 10**6):
        for eps in (0.001, 0.05, 0.3, 1, 10):
            for kind in kinds:
                if isinstance(kind, int) and kind > n:
                    continue
                for budget in (None, 0.01):
                    name, _, _ = choose(n, eps, kind, time_budget=budget)
                    assert name not in ("H", "O+S~")
                    dh.get_method(name)


def test_workload_objects_are_read_through_public_bounds():
    n = 2048
    assert workload_kind(n, workloads.identity(n))[0] == "point"
    assert workload_kind(n, workloads.small_ranges(n))[0] == "short"
    assert workload_kind(n, workloads.big_ranges(n))[0] == "long"  # mean 550 > 128
    assert workload_kind(n, workloads.prefix(n))[0] == "mixed"
    assert workload_kind(n, workloads.all_ranges(n))[0] == "mixed"
    assert workload_kind(n, workloads.explicit(n, [0, 10], [64, 74]))[0] == "medium"
    assert choose(n, 1, workloads.identity(n))[0] == "S2"
    with pytest.raises(ValidationError, match="2048"):
        workload_kind(n, workloads.prefix(10))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"workload": "sideways"}, ValidationError),
        ({"workload": 0}, ValidationError),
        ({"workload": 5000}, ValidationError),
        ({"workload": True}, InputTypeError),
        ({"time_budget": 0}, ValidationError),
        ({"time_budget": "fast"}, InputTypeError),
        ({"epsilon": 0}, ValidationError),
    ],
)
def test_bad_arguments(kwargs, error):
    args = {"n": 1000, "epsilon": 1, **kwargs}
    with pytest.raises(error):
        choose(**args)


def test_publish_auto_records_choice_and_spends_epsilon():
    x = dh.synthetic.spiky(512, rng=3)
    rel = dh.publish(x, epsilon=0.5, method="auto", workload="long", rng=1)
    assert rel.method == "S2+H"
    assert rel.spent == Fraction(1, 2)
    assert "S2+H wins for long ranges" in rel.params["auto"]
    assert rel.to_dict()["params"]["auto"] == rel.params["auto"]
    with dh.Session(x, epsilon=1, rng=0) as s:
        s.publish("AUTO", epsilon=0.25, workload="point")
        assert s.remaining == Fraction(3, 4)


def test_auto_refuses_method_parameters():
    with pytest.raises(ValidationError, match="workload= and time_budget="):
        dh.publish([1, 2, 3], epsilon=1, method="auto", ratio=0.5, rng=0)


def test_choice_reads_only_public_facts(monkeypatch):
    seen = []
    real = session_module.choose

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "choose", spy)
    rng = np.random.default_rng(0)
    a = rng.poisson(3, 300)
    b = rng.poisson(3000, 300) * (rng.random(300) < 0.1)
    ra = dh.publish(a, epsilon=0.2, method="auto", workload=20, rng=1)
    rb = dh.publish(b, epsilon=0.2, method="auto", workload=20, rng=1)
    assert (ra.method, ra.params) == (rb.method, rb.params)
    assert seen[0] == seen[1]
    for args, kwargs in seen:
        values = [*args, *kwargs.values()]
        assert not any(isinstance(v, np.ndarray) for v in values)
        assert args[0] == 300


@settings(max_examples=25, deadline=None)
@given(
    counts=st.lists(st.integers(0, 10**6), min_size=64, max_size=64),
    kind=st.sampled_from(["point", "long", "mixed", "categorical", "medium"]),
)
def test_same_public_facts_same_choice(counts, kind):
    x = np.asarray(counts)
    rel = dh.publish(x, epsilon=0.7, method="auto", workload=kind, rng=0)
    name, params, reason = choose(64, 0.7, kind)
    assert rel.method == name
    assert rel.params["auto"] == reason
    assert all(rel.params[k] == v for k, v in params.items())
