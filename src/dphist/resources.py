"""Memory planning: will a histogram of N bins fit, before any data is read?

The number of bins is public, so the check depends on public facts only (N, the
method, whether a file is written, and the machine). :func:`memory_estimate` is the
memory a publication adds to the process: a fixed part plus ``N`` times the bytes per
bin of the method, measured by ``benchmarks/memory.py`` at 10**6 to 10**8 bins (the
peak resident set above the one before; its table prints each estimate beside the
measured peak). Two paths:

* **Python** (``dh.publish``, ``dh.histogram``, :class:`dphist.Session`): the method
  itself, from counts already in memory;
* **command line** (``dphist publish``): counting the file, the method, and the
  published table with its error bars (the error model of a tree keeps per-node
  factors: HB's table needs far more than its release); with ``--out`` also the
  written table (about 45 bytes a bin more, for DuckDB's copy of the rows).

:func:`check_bins` refuses a publication that would need more than 80% of the memory
available now, with the estimate in the message; both paths call it before any record
is read or any budget is spent.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache

from .errors import ValidationError

__all__ = ["available_memory", "bytes_per_bin", "check_bins", "check_domain", "memory_estimate"]

_MIB = 2**20
_FIXED = {"python": 4 * _MIB, "cli": 100 * _MIB}
_OUTPUT = (30 * _MIB, 45)  # a written table: fixed bytes, bytes per bin
# Bytes per bin of the Python path, measured at 10**6 bins (rounded up; the five methods
# the benchmark measures up to 10**8 from their 10**7 figures).
_PYTHON = {
    "identity": 25, "uniform": 30, "S1": 285, "S~": 285, "S2": 60, "O+S1": 310, "O+S~": 310,
    "O+S2": 75, "S1+MM": 285, "S~+MM": 285, "S2+MM": 150, "S1+PMM": 285, "S~+PMM": 285,
    "S2+PMM": 150, "H": 35, "S1+H": 265, "S2+H": 29, "HB": 25, "OPT-H": 35, "Boost": 45,
    "Privelet": 120, "AHP": 31, "SReB_GCA": 45, "DAWA": 242, "GAHP": 65, "sGAHP": 70,
    "stGAHP": 70, "sDAHP": 85, "sDWF": 85, "DPC": 60, "sDPC": 70, "sDAWA": 310, "NF": 65,
    "GS": 45, "PrivTree": 130, "MWEM": 130, "P-HP": 95, "EFPA": 70, "SF": 400,
}  # fmt: skip
# What the command line adds per bin without --out (counting, the table, its error bars):
# measured for these; a tree's error model (per-node factors) for the tree methods, the
# identity's for the others
_COMMAND_LINE = {"identity": 54, "HB": 190, "S2+H": 81, "AHP": 64, "DAWA": 20}
_TREES = frozenset(
    ("H", "OPT-H", "Boost", "S1+H", "S1+MM", "S~+MM", "S2+MM", "S1+PMM", "S~+PMM", "S2+PMM")
)
_SHARE_OF_AVAILABLE = 0.8
_HEAVIEST = max(_PYTHON.values())  # a method without its own figure is planned as the heaviest


def bytes_per_bin(method: str, n: int = 1_000_000, *, command_line: bool = False) -> float:
    """Bytes per bin of publishing ``n`` bins with ``method`` (module doc; StructureFirst's
    table grows with ``n``: about ``0.8 n`` bytes per bin more)."""
    per_bin = float(_PYTHON.get(method, _HEAVIEST))
    if command_line:
        family = "HB" if method in _TREES else "identity"
        per_bin += _COMMAND_LINE.get(method, _COMMAND_LINE[family])
    return per_bin + (0.8 * n if method == "SF" else 0.0)


@lru_cache(maxsize=256)  # public arithmetic, asked again by every release of a loop
def memory_estimate(
    n: int, method: str, *, command_line: bool = False, output: bool = True
) -> float:
    """Bytes a publication of ``n`` bins with ``method`` adds to the process (module
    doc); ``output``: the command line writes the table to a file."""
    fixed = _FIXED["cli" if command_line else "python"]
    need = fixed + n * bytes_per_bin(method, n, command_line=command_line)
    if command_line and output:
        need += _OUTPUT[0] + n * _OUTPUT[1]
    return need


def available_memory() -> int | None:
    """Bytes of memory available to this process now, or None when unknown (read at
    most every half second: a loop of small releases need not read /proc each time)."""
    now = time.monotonic()
    if now - _last_read[0] > 0.5:
        _last_read[:] = [now, _read_available_memory()]
    return _last_read[1]


_last_read: list = [-1.0, None]


def _read_available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def check_bins(
    n: int, method: str, *, command_line: bool = False, output: bool = True,
    available: int | None = None,
) -> None:  # fmt: skip
    """Refuse ``n`` bins when ``method`` would need more than 80% of the available memory.

    The message gives the estimate, so the user can choose fewer bins or another method.
    """
    free = available_memory() if available is None else available
    if free is None:
        return
    need = memory_estimate(n, method, command_line=command_line, output=output)
    if need > _SHARE_OF_AVAILABLE * free:
        fixed = memory_estimate(0, method, command_line=command_line, output=output)
        per_bin = (need - fixed) / n
        most = max(int((_SHARE_OF_AVAILABLE * free - fixed) / per_bin), 0)
        raise ValidationError(
            f"{n:,} bins with method {method!r} need about {_gib(need)} of memory; this "
            f"machine has {_gib(free)} available. Use wider bins (at most about "
            f"{most:,} bins) or a lighter method"
        )


def check_domain(n: int, available: int | None = None) -> None:
    """Refuse ``n`` bins that not even the lightest publication (identity's) could hold,
    before a binning builds their ``n + 1`` edges (gigabytes at 10**9 bins)."""
    free = available_memory() if available is None else available
    need = memory_estimate(n, "identity")
    if free is not None and need > _SHARE_OF_AVAILABLE * free:
        raise ValidationError(
            f"{n:,} bins need at least {_gib(need)} of memory to publish; this machine has "
            f"{_gib(free)} available. Use wider bins"
        )
