"""The package's shape, checked on the source: who may import whom, and size limits.

The layer graph is an allowlist: each top-level unit of ``dphist`` (a module or a
subpackage) may import only the units listed for it. It encodes "only ``_kernel``
reads data" (the structural test above), "nothing imports upward" (numerics and the
kernel know nothing of blocks, methods or the API) and "the product core never
imports the lab" (``lab`` appears in no core unit's list; the command line reaches it
only by a lazy import inside ``cli/lab.py``'s commands).
"""

from __future__ import annotations

import ast
from pathlib import Path

import dphist

SRC = Path(dphist.__file__).parent

BASE = {"errors", "_io"}
# fmt: off
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_io": set(),
    "_jit": set(),
    "_exact": {"errors"},  # exact epsilons without numpy, for what must start fast
    "_numeric": {"errors", "_jit", "_io"},  # _io: design_cache's atomic writes
    "_kernel": {"errors", "_exact", "_numeric", "_jit"},
    "blocks": {"errors", "_kernel", "_numeric", "uncertainty", "_jit"},
    "workloads": {"errors"},
    "methods": {"errors", "_kernel", "_numeric", "blocks", "workloads"},
    "guarantee": {"errors", "_kernel"},
    "definitions": {"errors", "_exact", "_kernel"},
    "uncertainty": {"errors", "_numeric", "workloads"},
    "table": {"errors", "_numeric"},
    "release": {"errors", "_kernel", "uncertainty", "table"},
    "store": {"errors", "_exact", "definitions"},
    "session": {
        "errors", "_kernel", "methods", "guarantee", "release", "definitions", "resources",
        "store", "twod",
    },
    "twod": {
        "errors", "_io", "_kernel", "_numeric", "blocks", "methods", "uncertainty", "workloads",
        "release", "plot", "ingest",
    },
    "accuracy": {"errors", "methods", "session", "uncertainty", "workloads"},
    "groupsize": {"errors", "_kernel", "_numeric", "guarantee"},
    "ingest": {"errors", "_kernel", "groupsize", "_jit", "resources"},
    "records": {
        "errors", "_kernel", "ingest", "methods", "release", "resources", "session", "store",
    },
    "records2d": {"errors", "_kernel", "ingest", "session", "store", "twod"},
    "export": {"errors", "_io", "ingest", "release", "table"},
    "plot": {"errors", "_io", "release"},
    "metrics": {"errors", "workloads"},
    "datasets": {"errors"},
    "synthetic": {"errors"},
    "resources": {"errors"},
    "streams": {
        "errors", "_io", "_kernel", "guarantee", "ingest", "methods", "release", "store",
        "uncertainty",
    },
    "cli": {
        "errors", "_kernel", "accuracy", "export", "groupsize", "ingest", "methods", "plot",
        "release", "resources", "session", "synthetic", "table", "uncertainty", "__init__",
        "lab", "store", "streams", "twod", "_exact", "definitions",
    },
    "lab": {
        "errors", "_io", "_kernel", "_numeric", "blocks", "methods", "session", "release",
        "datasets", "synthetic", "metrics", "workloads", "groupsize", "plot", "uncertainty",
        "ingest", "__init__", "streams", "twod",
    },
    "__init__": {
        "errors", "_kernel", "accuracy", "datasets", "definitions", "export", "groupsize",
        "ingest", "methods", "metrics", "records", "release", "session", "store", "streams",
        "synthetic", "uncertainty", "workloads", "twod", "records2d",
    },
    "__main__": {"cli"},
    "_precompile": {"__init__", "methods", "uncertainty", "_numeric", "groupsize"},  # at install
}
# fmt: on
CORE = set(ALLOWED) - {"lab", "cli"}


def _unit(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0].removesuffix(".py") if len(rel) == 1 else rel[0]


def _targets(path: Path, tree: ast.AST) -> list[tuple[int, str, ast.ImportFrom | ast.Import]]:
    """(line, imported unit, node) for every import of a dphist module in ``tree``."""
    here = list(path.relative_to(SRC).parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[1], node) for a in node.names
                    if a.name.startswith("dphist.")]  # fmt: skip
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if not (node.module or "").startswith("dphist"):
                    continue
                parts = node.module.split(".")[1:]
            else:
                base = here[: len(here) - (node.level - 1)]
                parts = base + (node.module.split(".") if node.module else [])
            if parts:
                out.append((node.lineno, parts[0], node))
            else:  # "from . import x" at the package root
                out += [(node.lineno, a.name, node) for a in node.names]
    return out


def _lazy(node: ast.AST, tree: ast.AST) -> bool:
    """True when ``node`` sits inside a function body (imported when called)."""
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and node in ast.walk(fn):
            return True
    return False


def _sources() -> list[tuple[Path, ast.AST]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(SRC.rglob("*.py"))]


def test_every_unit_is_in_the_allowlist():
    units = {_unit(p) for p, _ in _sources()}
    assert units <= set(ALLOWED), units - set(ALLOWED)


def test_imports_follow_the_layer_graph():
    bad = []
    for path, tree in _sources():
        unit = _unit(path)
        for line, target, node in _targets(path, tree):
            if target == unit or target not in ALLOWED:
                continue
            if target not in ALLOWED[unit]:
                bad.append(f"{path.relative_to(SRC)}:{line} {unit} -> {target}")
            elif target == "lab" and not (path.name == "lab.py" and _lazy(node, tree)):
                bad.append(f"{path.relative_to(SRC)}:{line} imports the lab eagerly")
    assert bad == []


def test_the_core_never_imports_the_lab():
    for path, tree in _sources():
        if _unit(path) in CORE:
            assert all(t != "lab" for _, t, _ in _targets(path, tree)), path


def test_no_private_name_crosses_a_module():
    bad = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or "dphist" in (node.module or "")):
                bad += [f"{path.relative_to(SRC)}:{node.lineno} {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]  # fmt: skip
    assert bad == []


def _numba(tree: ast.AST) -> set[ast.AST]:
    return {
        fn for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef)
        and any("njit" in ast.unparse(d) for d in fn.decorator_list)
    }  # fmt: skip


def test_modules_stay_small():
    """600 lines at most; modules of numba kernels up to 800 (splitting them would
    scatter one algorithm's compiled parts)."""
    big = []
    for path, tree in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > (800 if _numba(tree) else 600):
            big.append(f"{path.relative_to(SRC)}: {lines}")
    assert big == []


def test_functions_stay_short():
    """80 lines at most, numba kernels excepted."""
    long = []
    for path, tree in _sources():
        compiled = _numba(tree)
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn not in compiled:
                n = fn.end_lineno - fn.lineno + 1
                if n > 80:
                    long.append(f"{path.relative_to(SRC)}:{fn.lineno} {fn.name} ({n})")
    assert long == []
