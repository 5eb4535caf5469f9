"""The statistical audit of the command line, end to end, on neighbouring CSV files.

Each run is one ``dphist publish`` (``cli.main``) on a CSV file with its own seed,
output read back from the JSON it writes; a refusal is an output too (a sentinel
vector), so a data-dependent refusal is an event of probability 1 on one side only.
The mechanism's input ``x = [0]`` or ``[1]`` picks one of two neighbouring files:

* one malformed row more (a row with an extra field, one with an unbalanced quote);
* one more record of a person already at the cap (``--max-records 4``): at most one
  kept record moves, well within the bound;
* one more person, with 30 records (more than the cap), all in one bin.

Three mutants each break one rule: strict mode (refuses the file with the malformed
row), counting without the bound (the new person's 30 records all count), and a
kernel that ignores the bound (noise for one record per person). Mutants must be
flagged, the real command must not.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dphist.cli.publish as command
from dphist import cli, ingest
from dphist.lab import audit

EPS = 1
K = 4
SENTINEL = -1e6
BINS = 8  # --domain 0:80:10


def _rows(pairs: list[tuple[int, str]]) -> str:
    return "".join(f"{age},{pid}\n" for age, pid in pairs)


BASE = [(5 + 10 * (i % 8), f"p{i}") for i in range(24)] + [(35, "cap")] * K
FILES = {
    "malformed": (
        "age,pid\n" + _rows(BASE),
        "age,pid\n" + _rows(BASE[:10]) + '42,p99,extra\n45,"p98\n' + _rows(BASE[10:]),
    ),
    "capped record": ("age,pid\n" + _rows(BASE), "age,pid\n" + _rows(BASE) + "75,cap\n"),
    "new person": ("age,pid\n" + _rows(BASE), "age,pid\n" + _rows(BASE) + "75,new\n" * 30),
}


def cli_mechanism(
    tmp: Path, files: tuple[str, str], extra: tuple[str, ...] = (), name: str = "publish"
) -> audit.Mechanism:
    """``dphist publish`` on file ``x[0]`` of the pair, one seed per run."""
    paths = []
    for i, text in enumerate(files):
        paths.append(tmp / f"in{i}.csv")
        paths[-1].write_text(text)
    out = tmp / "out.json"

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> audit.Outputs:
        source = paths[int(x[0])]
        rows = np.empty((runs, BINS))
        seeds = seed.generate_state(runs, dtype=np.uint64) >> np.uint64(1)
        for r, s in enumerate(seeds.tolist()):
            args = ["publish", str(source), "-c", "age", "--domain", "0:80:10", "--epsilon",
                    str(EPS), "--method", "identity", "--seed", str(s), "--out", str(out),
                    *extra]  # fmt: skip
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                code = cli.main(args)
            if code != 0:
                rows[r] = SENTINEL
                continue
            rows[r] = [b["estimate"] for b in json.loads(out.read_text())["bins"]]
        return audit.Outputs(rows)

    return audit.Mechanism(name, Fraction(EPS), run)


def _audit(mechanism: audit.Mechanism, n_search: int, n_confirm: int, seed: int):
    return audit.audit_pair(
        mechanism, ([0], [1]), n_search=n_search, n_confirm=n_confirm, seed=seed
    )


UNIT = ("--privacy-unit", "pid", "--max-records", str(K))


@contextlib.contextmanager
def patched(target: object, name: str, value: object) -> Iterator[None]:
    old = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, old)


def _strict(count: Callable) -> Callable:
    return lambda *a, **k: count(*a, **{**k, "strict": True})


def _unbounded(count: Callable) -> Callable:
    return lambda *a, **k: count(*a, **{**k, "privacy_unit": None, "max_records": None})


def _ignoring_k(publish: Callable) -> Callable:
    def mutant(*args, **kwargs):
        if "max_records" in kwargs:
            kwargs["max_records"] = 1
        return publish(*args, **kwargs)

    return mutant


CASES = {"malformed": (), "capped record": UNIT, "new person": UNIT}
MUTANTS = {
    "strict mode": ("malformed", ingest, "count_file", _strict),
    "no bound per person": ("new person", ingest, "count_file", _unbounded),
    "kernel ignores the bound": ("new person", command, "publish", _ignoring_k),
}


@pytest.mark.extended
@pytest.mark.parametrize("case", sorted(CASES))
def test_command_line_is_private_on_neighbouring_files(tmp_path, audit_row, case):
    mech = cli_mechanism(tmp_path, FILES[case], CASES[case], f"dphist publish ({case})")
    result = _audit(mech, n_search=100, n_confirm=500, seed=sorted(CASES).index(case))
    evidence = result.best.event if result.best is not None else "no event"
    audit_row(mech.name, EPS, result.eps_lb, "flagged" if result.flagged else "ok", evidence,
              result.runs, result.seconds)  # fmt: skip
    assert not result.flagged, result.best


@pytest.mark.extended
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutants_of_the_command_line_are_flagged(tmp_path, audit_row, mutant):
    case, module, attribute, wrap = MUTANTS[mutant]
    mech = cli_mechanism(tmp_path, FILES[case], CASES[case], f"MUTANT publish: {mutant}")
    with patched(module, attribute, wrap(getattr(module, attribute))):
        result = _audit(mech, n_search=100, n_confirm=400, seed=7)
    evidence = result.best.event if result.best is not None else "no event"
    audit_row(mech.name, EPS, result.eps_lb, "flagged" if result.flagged else "MISSED",
              evidence, result.runs, result.seconds)  # fmt: skip
    assert result.flagged, result.best
