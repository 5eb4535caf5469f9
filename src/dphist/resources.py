"""Memory planning: will a histogram of N bins fit, before any data is read?

The number of bins is public, so the check depends on public facts only (N, the
method and the machine). Figures are peak bytes per bin measured by
``benchmarks/memory.py`` at 10**6 bins (rounded up), plus what the command line
itself keeps per bin (counts, labels and the output table).
"""

from __future__ import annotations

import os

from .errors import ValidationError

__all__ = ["available_memory", "bytes_per_bin", "check_bins"]

_DEFAULT = 400  # bytes per bin for methods not listed below
_LIGHT = ("identity", "uniform", "S2", "O+S2", "AHP", "SReB_GCA", "GAHP", "sGAHP", "stGAHP")
_LIGHT += ("sDAHP", "sDWF", "DPC", "sDPC", "NF", "GS", "EFPA")
_PER_BIN = {
    **dict.fromkeys(_LIGHT, 150),
    **dict.fromkeys(("S2+MM", "S2+PMM", "P-HP", "S2+H", "Privelet", "H", "HB"), 250),
    **dict.fromkeys(("S1", "O+S1", "S1+MM", "S1+PMM", "S1+H", "Boost"), 350),
    **dict.fromkeys(("S~", "O+S~", "S~+MM", "S~+PMM", "DAWA", "sDAWA"), 1100),
}
_COMMAND_LINE = 300  # counts, edges, labels and the written table, per bin
_SHARE_OF_AVAILABLE = 0.8


def bytes_per_bin(method: str, n: int = 1_000_000) -> float:
    """Peak bytes per bin of publishing ``n`` bins with ``method`` (a measured upper
    estimate; StructureFirst's table grows with ``n``: about ``0.8 n`` bytes per bin)."""
    if method == "SF":
        return 400.0 + 0.8 * n
    return float(_PER_BIN.get(method, _DEFAULT))


def available_memory() -> int | None:
    """Bytes of memory available to this process now, or None when unknown."""
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


def check_bins(n: int, method: str, *, available: int | None = None) -> None:
    """Refuse ``n`` bins when ``method`` would need more than 80% of the available memory.

    The message gives the estimate, so the user can choose fewer bins or another method.
    """
    free = available_memory() if available is None else available
    if free is None:
        return
    need = n * (bytes_per_bin(method, n) + _COMMAND_LINE)
    if need > _SHARE_OF_AVAILABLE * free:
        raise ValidationError(
            f"{n:,} bins with method {method!r} need about {_gib(need)} of memory; this "
            f"machine has {_gib(free)} available. Use wider bins (at most about "
            f"{int(_SHARE_OF_AVAILABLE * free / (need / n)):,} bins) or a lighter method"
        )
