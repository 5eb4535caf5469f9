"""The install-time warm-up (``dphist._precompile``) runs methods without failing."""

from dphist._precompile import _command, warm


def test_warm_runs_a_method_and_its_error_bars():
    assert warm(["identity", "H"]) == []


def test_children_import_this_copy_of_dphist():
    cmd = _command("--methods", "identity")
    assert cmd[1] == "-c" and "sys.path.insert(0, " in cmd[2] and "'--methods'" in cmd[2]
