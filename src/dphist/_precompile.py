"""Compile the numba kernels ahead of use, into numba's on-disk cache.

Kernels compile on first call (:mod:`dphist._jit`) and numba keeps the machine code
(``cache=True``) in ``__pycache__`` beside the sources, or in ``NUMBA_CACHE_DIR``.
Running every registered method once, on small synthetic histograms and under both
privacy definitions, with its error bars, compiles every kernel a release uses with
the types a release gives it (and one process publishes group sizes with every
estimator); later processes load the code instead of compiling it.
OPT-H's tree designs (a fit of seconds per public ``n``, workload and noise) are fitted
first for the common domain sizes and stored beside the sources
(:mod:`dphist._numeric.design_cache`), so its first release reads them.
The install runs this (``setup.py``; ``DPHIST_PRECOMPILE=0`` skips it); so can a
container build: ``python -m dphist._precompile``. The cache belongs to this numba
version, Python and CPU: anywhere else numba compiles as before.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import subprocess
import sys
import time
import warnings

__all__ = ["main", "warm"]

#: Sizes that take both noise samplers (a table from 512 draws) and the methods'
#: small- and large-domain paths.
SIZES = (40, 1500)

#: Domain sizes whose OPT-H designs are stored at install: the sizes above, powers of
#: two from 1,024 to 65,536 and the built-in datasets' (a size, or a zCDP release, not
#: listed is fitted on first use and kept in the per-user cache; the install stays short).
DESIGN_SIZES = tuple(sorted({*SIZES, *(2**k for k in range(10, 17)), 11_342}))


#: Settings beyond a method's example that a release may ask for and that run kernels of
#: their own: the coupled (lazily sampled) noise of the L1 partitions.
EXTRA_SETTINGS = {"S1": ({"noise": "coupled"},), "S~": ({"noise": "coupled"},)}


def design_keys() -> list[tuple[int, str, str]]:
    """Every ``(n, workload, noise)`` stored at install: pure DP's Laplace designs for
    both workloads."""
    return [(n, w, "laplace") for n in DESIGN_SIZES for w in ("all", "prefix")]


def store_designs(part: int, parts: int) -> None:
    """Fit and store the ``part``-th of ``parts`` shares of the OPT-H designs."""
    from dphist._numeric import design_cache, strategy

    for n, workload, noise in design_keys()[part::parts]:
        design = strategy.fit_design(n, workload, noise)
        key = {"n": n, "workload": workload, "noise": noise}
        design_cache.write("opt-h", key, strategy._to_store(design), design_cache.package_dir())


def warm(names: list[str]) -> list[str]:
    """Run ``names`` once per size and definition, with error bars; return failures."""
    import numpy as np

    import dphist as dh
    from dphist.uncertainty.model import NoErrorBarError

    failed = []
    zcdp = set(dh.zcdp_methods())
    for name in names:
        info = dh.get_method(name)
        settings = [info.example, *({**info.example, **e} for e in EXTRA_SETTINGS.get(name, ()))]
        for n, params in itertools.product(SIZES, settings):
            x = dh.synthetic.spiky(n, rng=1)
            budgets = [{"epsilon": 0.5}] + ([{"rho": 0.05}] if name in zcdp else [])
            for budget in budgets:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        rel = dh.publish(x, method=name, rng=0, **budget, **params)
                    if rel.uncertainty is not None:
                        with contextlib.suppress(NoErrorBarError):  # a method stating none
                            lo = np.array([0, n // 3])
                            rel.ranges(lo, lo + n // 2, stderr=True)
                            rel.interval(0, n // 2)
                except Exception as exc:  # a method refusing a setting is not a failure here
                    failed.append(
                        f"{name} (n={n}, {budget}, {params}): {type(exc).__name__}: {exc}"
                    )
    return failed


def warm_group_sizes() -> list[str]:
    """Publish group sizes once per estimator, norm and definition (``dphist groupsize``)."""
    from dphist import groupsize as gs

    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy.from_fanouts([[2]]), [[1, 2], [3]])
    failed = []
    for method in gs.ESTIMATORS:
        for norm in ("l1", "l2"):
            for budget in ({"epsilon": 1}, {"rho": 0.5}):
                try:
                    gs.publish_group_sizes(data, K=5, rng=0, method=method, norm=norm, **budget)
                except Exception as exc:  # a setting refused is not a failure here
                    failed.append(f"group sizes {method} {norm} {budget}: {exc}")
    return failed


def warm_secure_noise() -> list[str]:
    """Publish once per size and definition with secure noise: the releases above are
    seeded, and the secure Laplace table sampler runs a compiled driver of its own."""
    import dphist as dh

    failed = []
    for n, budget in itertools.product(SIZES, ({"epsilon": 0.5}, {"rho": 0.05})):
        try:
            dh.publish(dh.synthetic.spiky(n, rng=1), method="identity", rng=None, **budget)
        except Exception as exc:  # reported, as a method's failure is
            failed.append(f"secure noise (n={n}, {budget}): {type(exc).__name__}: {exc}")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--methods", default="", help="comma-separated (default: all)")
    parser.add_argument("--designs", default="", help=argparse.SUPPRESS)  # "part/parts"
    parser.add_argument("--group-sizes", action="store_true", help="also the group sizes")
    args = parser.parse_args(argv)
    if args.designs:
        store_designs(*map(int, args.designs.split("/")))
        return 0
    if args.methods:
        failed = warm([m for m in args.methods.split(",") if m])
        if args.group_sizes:
            failed += warm_group_sizes() + warm_secure_noise()
        for line in failed:
            print(f"  not compiled: {line}", file=sys.stderr)
        return 0

    from dphist.methods import list_methods

    names = [m.name for m in list_methods()]
    start = time.perf_counter()
    jobs = max(args.jobs, 1)
    # designs first: the methods' runs below then read OPT-H's from the package folder
    procs = [subprocess.Popen(_command("--designs", f"{j}/{jobs}")) for j in range(jobs)]
    codes = [p.wait() for p in procs]
    shares = [names[j::jobs] for j in range(jobs)]
    procs = [
        subprocess.Popen(
            _command("--methods", ",".join(part), *(["--group-sizes"] if j == 0 else []))
        )
        for j, part in enumerate(shares)
        if part
    ]
    codes += [p.wait() for p in procs]
    print(
        f"dphist: compiled the kernels of {len(names)} methods and the group sizes, and stored "
        f"OPT-H's designs in "
        f"{time.perf_counter() - start:.0f} s",
        file=sys.stderr,
    )
    return max(codes, default=0)


def _command(*args: str) -> list[str]:
    """This module's command line, importing this very copy of dphist (an install's
    build environment may hide the source folder from a path-based import)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"import sys; sys.path.insert(0, {root!r}); from dphist._precompile import main; "
    return [sys.executable, "-c", code + f"sys.exit(main({list(args)!r}))"]


if __name__ == "__main__":
    sys.exit(main())
