"""The budget commands start lean: no numpy, numba, kernel, methods or session."""

from __future__ import annotations

import os
import subprocess
import sys

import dphist

HEAVY = ("numpy", "numba", "dphist._kernel", "dphist.methods", "dphist.session")
SCRIPT = """
import sys
from dphist import cli
store = sys.argv[1]
for args in (["init", "ages", "--epsilon", "0.5"], ["show", "ages"], ["list"], ["check"]):
    assert cli.main(["budget", *args, "--store", store]) == 0, args
print("imported:", *(m for m in {heavy!r} if m in sys.modules))
"""


def test_budget_commands_import_nothing_a_release_needs(tmp_path):
    src = os.path.dirname(os.path.dirname(dphist.__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    script = SCRIPT.format(heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "s.sqlite")],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "Created budget 'ages'" in out and "chains of 1 budget pass" in out
    assert out.splitlines()[-1] == "imported:"  # none of HEAVY


SHOW = """
import sys
from dphist import cli
from dphist.store import BudgetStore
with BudgetStore(sys.argv[1]) as store:
    store.create("ages", epsilon=1).charge(epsilon=0.5, method="H")
assert cli.main(["budget", "show", "ages", "--store", sys.argv[1]]) == 0
print("imported:", *(m for m in ("typer", "pydantic", "rich", "numpy") if m in sys.modules))
"""


def test_show_starts_without_typer(tmp_path):
    """``budget show`` given plainly parses its own arguments: Typer's conversions
    (pydantic) would cost more than printing 10**5 releases."""
    src = os.path.dirname(os.path.dirname(dphist.__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", SHOW, str(tmp_path / "s.sqlite")],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "1 charge; 1 without a release:" in out
    assert out.splitlines()[-1] == "imported:"
