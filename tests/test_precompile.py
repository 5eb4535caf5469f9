"""The install-time warm-up (``dphist._precompile``) runs methods without failing."""

import pytest

from dphist import _precompile
from dphist._numeric import design_cache, strategy
from dphist._precompile import _command, warm


def test_warm_runs_a_method_and_its_error_bars():
    assert warm(["identity", "H"]) == []


def test_warm_group_sizes_publishes_every_estimator():
    assert _precompile.warm_group_sizes() == []


def test_children_import_this_copy_of_dphist():
    cmd = _command("--methods", "identity")
    assert cmd[1] == "-c" and "sys.path.insert(0, " in cmd[2] and "'--methods'" in cmd[2]


def test_store_designs_fills_the_package_folder(tmp_path, monkeypatch):
    """The install's designs are what a later process reads instead of fitting."""
    monkeypatch.setattr(design_cache, "package_dir", lambda: tmp_path)
    monkeypatch.setattr(_precompile, "DESIGN_SIZES", (4,))
    _precompile.store_designs(0, 2)  # the first of two keys: n = 4, "all", Laplace
    assert len(list(tmp_path.glob("opt-h-*.json"))) == 1
    fitted = strategy.fit_design(4, "all", "laplace")
    monkeypatch.setattr(strategy, "fit_design", lambda *a: pytest.fail("fitted again"))
    strategy.optimal_design.cache_clear()
    try:
        assert strategy.optimal_design(4, "all", "laplace") == fitted
    finally:
        strategy.optimal_design.cache_clear()


def test_design_keys_cover_every_workload_of_pure_dp():
    keys = _precompile.design_keys()
    assert len(set(keys)) == len(keys)
    assert {k[1:] for k in keys} == {(w, "laplace") for w in strategy.WORKLOADS}
    assert {k[0] for k in keys} == set(_precompile.DESIGN_SIZES)
