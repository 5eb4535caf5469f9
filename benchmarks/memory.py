"""Peak memory of publishing, per method and size: the estimate against the measured peak.

For each size N and method, two paths each run in their own subprocess (so peaks do
not mix), seeded, with the memory check switched off:

* **python**: ``dh.publish(counts, ...)`` on a spiky synthetic histogram of N bins
  loaded from a ``.npy`` file;
* **cli**: ``dphist publish FILE.parquet -c x --domain 0:N:1 --out OUT.parquet`` on N
  skewed records (counting, publishing, error bars and the written table); ``--no-out``
  runs it without ``--out`` (the printout only).

The figure is the peak resident set size of the process during the big run minus its
resident set just before it (after imports, the input, and a tiny run of the same method
that loads the compiled code; the peak is reset there through ``/proc/self/clear_refs``,
so Linux only): the memory the publication adds, which is what
:func:`dphist.resources.memory_estimate` predicts and what the checks compare with the
memory available. Prints one row per (N, method, path) with the estimate, the measured
peak and their ratio (the target: within 1.5x either way).

    python benchmarks/memory.py --n 1e6,1e7,1e8 --methods identity,HB,S2+H,AHP,DAWA
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import contextlib, io, json, sys
import numpy as np
import dphist as dh
from dphist import resources
resources.available_memory = lambda: None  # measure beyond what the check would allow

def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))

def start():  # the resident set now, with the peak reset to it (Linux: clear_refs 5)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status("VmRSS:")

def peak():
    return status("VmHWM:")

path, name, n, data, tiny, out = sys.argv[1:7]
n = int(n)
if path == "python":
    counts = np.load(data)
    dh.publish(np.arange(1, 65, dtype=np.int64), epsilon=1, method=name, rng=0)
    base = start()
    dh.publish(counts, epsilon=0.1, method=name, rng=0)
else:
    from dphist import cli
    common = ["-c", "x", "--method", name, "--seed", "0"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["publish", tiny, *common, "--domain", "0:64:1", "--epsilon", "1"]) == 0
        base = start()
        target = ["--out", out] if out != "-" else []
        code = cli.main(["publish", data, *common, "--domain", f"0:{n}:1", "--epsilon", "0.1",
                         *target])
    assert code == 0, code
print(json.dumps([base, peak()]))
"""


def make_inputs(n: int, folder: Path) -> tuple[Path, Path, Path]:
    """A spiky histogram of ``n`` bins (built in chunks: small temporaries), ``n`` skewed
    records as Parquet, and a tiny Parquet file for the warm-up run."""
    import duckdb
    import numpy as np

    from dphist import synthetic

    counts = np.empty(n, dtype=np.int64)
    step = 1 << 20
    for i, lo in enumerate(range(0, n, step)):
        hi = min(lo + step, n)
        counts[lo:hi] = synthetic.spiky(hi - lo, rng=i)
    npy = folder / f"counts_{n}.npy"
    np.save(npy, counts)
    del counts
    records = folder / f"records_{n}.parquet"
    duckdb.sql(
        f"COPY (SELECT CAST(floor(pow(random(), 3) * {n}) AS BIGINT) AS x FROM range({n})) "
        f"TO '{records}' (FORMAT parquet)"
    )
    tiny = folder / "tiny.parquet"
    duckdb.sql(f"COPY (SELECT range % 64 AS x FROM range(1000)) TO '{tiny}' (FORMAT parquet)")
    return npy, records, tiny


def measure(path: str, name: str, n: int, data: Path, tiny: Path, out: Path) -> int:
    """Bytes the big run added to the process's peak."""
    args = [path, name, str(n), str(data), str(tiny), str(out)]
    res = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=True
    )
    base, top = json.loads(res.stdout.strip().splitlines()[-1])
    if str(out) != "-":
        out.unlink(missing_ok=True)
    return max(top - base, 0)


def main() -> None:
    from dphist.resources import available_memory, memory_estimate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="1e6,1e7", help="sizes, comma-separated")
    parser.add_argument("--methods", default="identity,HB,S2+H,AHP,DAWA")
    parser.add_argument("--paths", default="python,cli")
    parser.add_argument("--no-out", action="store_true", help="the command line writes no file")
    args = parser.parse_args()
    sizes = [int(float(v)) for v in args.n.split(",")]
    names = args.methods.split(",")
    print(f"{'bins':>11} {'method':<9} {'path':<7} {'estimate MB':>12} {'peak MB':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="dphist-memory-") as tmp:
        folder = Path(tmp)
        for n in sizes:
            npy, records, tiny = make_inputs(n, folder)
            for name in names:
                for path in args.paths.split(","):
                    data = npy if path == "python" else records
                    est = memory_estimate(n, name, command_line=path == "cli",
                                          output=not args.no_out)  # fmt: skip
                    free = available_memory()
                    if free is not None and est > 0.8 * free:  # what the check would refuse
                        print(f"{n:>11,} {name:<9} {path:<7} {est / 2**20:12,.0f}  skipped: "
                              f"{free / 2**20:,.0f} MB available")  # fmt: skip
                        continue
                    try:
                        out = Path("-") if args.no_out else folder / "out.parquet"
                        used = measure(path, name, n, data, tiny, out)
                    except subprocess.CalledProcessError as exc:
                        last = (exc.stderr.strip().splitlines() or ["?"])[-1]
                        print(f"{n:>11,} {name:<9} {path:<7} failed: {last}")
                        continue
                    print(
                        f"{n:>11,} {name:<9} {path:<7} {est / 2**20:12,.0f} "
                        f"{used / 2**20:9,.0f} {est / max(used, 1):6.2f}",
                        flush=True,
                    )
            npy.unlink()
            records.unlink()


if __name__ == "__main__":
    main()
