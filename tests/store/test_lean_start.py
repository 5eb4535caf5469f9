"""The budget commands start lean: no numpy, numba, kernel, methods or session."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction

import pytest

import dphist
from dphist import _exact
from dphist._kernel import budget as kernel_budget

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


@pytest.mark.parametrize(
    "value", [0.1, "0.1", 1, Fraction(1, 3), "1/3", 1e30, 2e30, 0, -1, True, "x", None, 1e-300]
)
def test_the_light_epsilon_reader_agrees_with_the_kernel(value):
    def read(module):
        try:
            q = module.validate_epsilon(value, name="rho")
        except Exception as exc:  # the same class and message
            return type(exc), str(exc)
        return q, module.exact_text(q)

    assert read(_exact) == read(kernel_budget)
