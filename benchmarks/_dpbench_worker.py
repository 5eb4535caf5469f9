"""Runs DPBench's algorithms for ``benchmarks/dpbench.py`` in DPBench's own interpreter.

Not part of dphist: started by ``dpbench.py`` with DPBench's Python (its numpy) and
``PYTHONPATH`` pointing at a DPBench checkout. One JSON request a line on stdin
(``{"method", "data", "epsilon", "seed", "calls"}``; ``data`` an ``.npy`` file; ``calls``
back-to-back calls, default 1), one JSON reply a line on stdout: the CPU seconds of
``engine.Run`` per call (the workload is built outside the timed calls and kept), the
all-range and point errors of the first call's estimate, or the error that stopped it.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

import numpy as np


def engine(method: str, n: int):
    """DPBench's engine for a dphist method name, and the workload it is given."""
    from dpcomp_core import workload
    from dpcomp_core.algorithm import (
        HB,
        DPcube1D,
        ahp,
        dawa,
        identity,
        mwemND,
        privelet,
        thirdparty,
        uniform,
    )

    prefix = workload.Prefix1D(n)
    table = {
        "identity": lambda: identity.identity_engine(),
        "uniform": lambda: uniform.uniform_noisy_engine(),
        "Privelet": lambda: privelet.privelet_engine(),
        "HB": lambda: HB.HB_engine(),
        "Boost": lambda: HB.H2_engine(),
        "AHP": lambda: ahp.ahpND_engine(),
        # dphist's DAWA spends a quarter on the partition (DPBench's default is half)
        # the workload reform materializes max_block_size x n floats at a time
        "DAWA": lambda: dawa.dawa_engine(ratio=0.25, max_block_size=min(n, 4096)),
        "P-HP": lambda: thirdparty.php_engine(),
        "EFPA": lambda: thirdparty.efpa_engine(),
        "MWEM": lambda: mwemND.mwemND_engine(),
        "SF": lambda: thirdparty.StructureFirst_engine(),
        "DPC": lambda: DPcube1D.DPcube1D_engine(),
        "DPCube": lambda: DPcube1D.DPcube1D_engine(),
        # DPCube-LS adds the paper's least squares, which DPcube1D leaves out
        "DPCube-LS": lambda: DPcube1D.DPcube1D_engine(),
    }
    if method not in table:
        raise KeyError(f"no DPBench counterpart for {method!r}")
    needs_queries = method in ("DAWA", "MWEM")
    q = prefix if needs_queries else None
    if method == "DAWA":
        q = prefix.query_list
    return table[method](), q


def main() -> None:
    cache: dict = {}
    data: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["data"] not in data:
                data[req["data"]] = np.load(req["data"])
            x = data[req["data"]]
            key = (req["method"], x.size)
            if key not in cache:
                cache[key] = engine(req["method"], x.size)
            eng, q = cache[key]
            calls, seed, eps = int(req.get("calls", 1)), int(req["seed"]), float(req["epsilon"])
            start = time.process_time()
            est = eng.Run(q, x, eps, seed)
            for k in range(1, calls):  # back to back, seeds seed*calls+k: a warm loop
                eng.Run(q, x, eps, seed * calls + k)
            seconds = (time.process_time() - start) / calls
            est = np.asarray(est, dtype=np.float64).reshape(-1)
            point = float(np.mean((est - x) ** 2))
            reply = {"seconds": seconds, "error": _all_range_mse(x, est), "point": point}
        except Exception as exc:  # reported to the driver, which prints it
            reply = {"failed": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def _all_range_mse(x: np.ndarray, est: np.ndarray) -> float:
    """Mean squared error over all ``n (n + 1) / 2`` ranges, from prefix sums (O(n))."""
    e = np.concatenate(([0.0], np.cumsum(est - x)))
    n = e.size
    # sum over i < j of (e_j - e_i)**2 = n sum e**2 - (sum e)**2
    total = n * np.dot(e, e) - e.sum() ** 2
    return float(total / (n * (n - 1) / 2))


if __name__ == "__main__":
    main()
