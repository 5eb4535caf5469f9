"""Structural privacy checks: only the kernel reads raw counts."""

import ast
from pathlib import Path

import dphist

SRC = Path(dphist.__file__).parent
KERNEL = SRC / "_kernel"
RAW_NAMES = {"_true_counts", "_true_groups", "_read"}


def raw_accesses(source: str) -> list[str]:
    """Places in ``source`` that name the sealed array or its reader."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in RAW_NAMES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Constant) and node.value in RAW_NAMES:
            found.append(f"line {node.lineno}: string {node.value!r}")
        elif isinstance(node, ast.Name) and node.id in RAW_NAMES:
            found.append(f"line {node.lineno}: name {node.id}")
    return found


def test_the_checker_catches_raw_reads():
    assert raw_accesses("x = data._read()")
    assert raw_accesses("x = getattr(data, '_true_counts')")
    assert raw_accesses("x = groups._true_groups")
    assert raw_accesses("from dphist._kernel.data import ProtectedCounts as P\nP._read")
    assert not raw_accesses("x = view.measure(q)")


def test_no_module_outside_the_kernel_reads_raw_counts():
    modules = [p for p in SRC.rglob("*.py") if KERNEL not in p.parents]
    assert len(modules) >= 10  # the walk really covers the package
    offenders = {
        str(p.relative_to(SRC)): hits
        for p in modules
        if (hits := raw_accesses(p.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_kernel_is_where_raw_reads_happen():
    kernel_hits = {p.name for p in KERNEL.rglob("*.py") if raw_accesses(p.read_text())}
    assert kernel_hits == {"data.py", "view.py", "groups.py", "group_counts.py", "streams.py"}


def test_blocks_and_methods_do_not_import_kernel_internals():
    """Blocks see the kernel only through its package interface."""
    for p in SRC.rglob("*.py"):
        if KERNEL in p.parents:
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(
                    ("_kernel.data", "_kernel.view", "_kernel.groups")
                ) and not (node.module.endswith(("_kernel.data", "_kernel.groups"))), (
                    f"{p.relative_to(SRC)} imports {node.module}"
                )
