"""OPT-H's on-disk design cache (``dphist._numeric.design_cache``): a stored design is
the fresh fit bit for bit, and a corrupt, tampered or foreign file is ignored and
replaced by a fresh fit."""

from __future__ import annotations

import json

import pytest

from dphist._numeric import design_cache, strategy

N = 24  # a fit of a fraction of a second
KEY = {"n": N, "workload": "all", "noise": "laplace"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty per-user folder, no package folder, and no in-memory memo."""
    monkeypatch.setenv("DPHIST_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(design_cache, "package_dir", lambda: tmp_path / "none")
    strategy.optimal_design.cache_clear()
    yield tmp_path / "designs"
    strategy.optimal_design.cache_clear()


@pytest.fixture(scope="module")
def fresh():
    return {"all": strategy.fit_design(N, "all", "laplace")}


@pytest.fixture
def stored(cache, fresh, monkeypatch):
    """A stored entry for ``N`` and a fit that records its calls and returns the fresh
    design (so a rejected entry shows as a call, without fitting again)."""
    design_cache.write("opt-h", KEY, strategy._to_store(fresh["all"]), cache)
    calls = []
    monkeypatch.setattr(strategy, "fit_design", lambda *a: calls.append(a) or fresh["all"])
    return _entry(cache), calls


def _entry(folder):
    (path,) = folder.glob("opt-h-*.json")
    return path


def _cached(workload="all"):
    strategy.optimal_design.cache_clear()
    return strategy.optimal_design(N, workload)


def _bits(design):
    return (design.fanout, [w.hex() for w in design.shares], float(design.error).hex())


def test_cache_hit_equals_fresh_fit(cache, fresh, monkeypatch):
    first = strategy.optimal_design(N, "all")  # fitted here, independently of ``fresh``
    assert _bits(first) == _bits(fresh["all"])
    path = _entry(cache)
    monkeypatch.setattr(strategy, "fit_design", lambda *a: pytest.fail("fitted again"))
    hit = _cached()
    assert _bits(hit) == _bits(fresh["all"]) and type(hit.error) is type(first.error)
    assert _entry(cache) == path


@pytest.mark.extended
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("workload", ["all", "prefix"])
@pytest.mark.parametrize("n", [2, 3, 100, 4096])
def test_cache_hit_equals_fresh_fit_extended(cache, monkeypatch, n, workload, noise):
    fit = strategy.fit_design(n, workload, noise)
    strategy.optimal_design(n, workload, noise)
    monkeypatch.setattr(strategy, "fit_design", lambda *a: pytest.fail("fitted again"))
    strategy.optimal_design.cache_clear()
    assert _bits(strategy.optimal_design(n, workload, noise)) == _bits(fit)


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "\x00garbage",
        lambda text: json.dumps({"key": json.loads(text)["key"], "value": {"fanout": 2}}),
    ],
)
def test_corrupt_file_is_ignored_and_replaced(stored, fresh, damage):
    path, calls = stored
    assert _bits(_cached()) == _bits(fresh["all"]) and not calls  # intact: read
    path.write_text(damage(path.read_text()))
    assert _bits(_cached()) == _bits(fresh["all"]) and len(calls) == 1
    assert json.loads(path.read_text())["value"] == strategy._to_store(fresh["all"])


def test_tampered_shares_are_rejected(stored, fresh):
    """Shares that parse but do not reproduce the stored error are not used."""
    path, calls = stored
    entry = json.loads(path.read_text())
    shares = [float.fromhex(w) for w in entry["value"]["shares"]]
    big = max(range(len(shares)), key=shares.__getitem__)
    shares[big], shares[-1] = shares[-1], shares[big]  # same sum, another design
    if shares == [float.fromhex(w) for w in entry["value"]["shares"]]:
        shares = [1.0 / len(shares)] * len(shares)
    entry["value"]["shares"] = [w.hex() for w in shares]
    path.write_text(json.dumps(entry))
    assert _bits(_cached()) == _bits(fresh["all"]) and len(calls) == 1


def test_foreign_key_is_ignored(stored, fresh):
    """A file from other code or libraries (another fingerprint) is never read."""
    path, calls = stored
    entry = json.loads(path.read_text())
    entry["value"]["fanout"] = 5  # would fail validation anyway; the key check comes first
    entry["key"]["fingerprint"] = "0" * 64
    path.write_text(json.dumps(entry))
    assert design_cache.read("opt-h", KEY) is None
    assert _bits(_cached()) == _bits(fresh["all"]) and len(calls) == 1


def test_unwritable_folder_only_costs_speed(tmp_path, monkeypatch, fresh):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DPHIST_CACHE_DIR", str(blocker))  # a file, not a folder
    monkeypatch.setattr(design_cache, "package_dir", lambda: tmp_path / "none")
    monkeypatch.setattr(strategy, "fit_design", lambda *a: fresh["all"])
    assert _bits(_cached()) == _bits(fresh["all"])
    design_cache.write("opt-h", KEY, strategy._to_store(fresh["all"]))  # no error
    strategy.optimal_design.cache_clear()


def test_package_folder_is_read_first(tmp_path, monkeypatch, fresh):
    """What the install stores beside the sources serves a fresh process."""
    monkeypatch.setattr(design_cache, "package_dir", lambda: tmp_path / "pkg")
    monkeypatch.setenv("DPHIST_CACHE_DIR", str(tmp_path / "user"))
    design_cache.write("opt-h", KEY, strategy._to_store(fresh["all"]), tmp_path / "pkg")
    monkeypatch.setattr(strategy, "fit_design", lambda *a: pytest.fail("fitted again"))
    assert _bits(_cached()) == _bits(fresh["all"])
    assert not (tmp_path / "user").exists()
    strategy.optimal_design.cache_clear()
