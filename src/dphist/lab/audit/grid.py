"""The audit on 2-D histograms: a registered 2-D method as a mechanism, and 2-D neighbours.

A 2-D histogram is audited as its cells in row-major order (the kernel's view of it):
neighbours differ by one record in one cell, and every event of the catalogue reads the
flattened estimate. :func:`grid_catalogue` picks cells where the 2-D methods decide
something: the corners, the centre, both sides of the quadtree's first split in each
axis, an empty cell of a sparse region and the largest cell, on
:func:`standard_grid` (a dense block, a sparse block with a heavy cell).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._kernel import validate_epsilon
from ...errors import ValidationError
from ...session import publish
from ...twod import grid_method
from .mechanisms import Mechanism, Outputs, children
from .neighbours import Neighbour, pair

__all__ = ["grid_catalogue", "grid_mechanism", "standard_grid"]


def grid_mechanism(
    name: str, shape: tuple[int, int], *, epsilon: object = 1.0, **params: Any
) -> Mechanism:
    """The registered 2-D method ``name`` run through :func:`dphist.publish` on cells
    given flattened (row-major, ``shape``); the output is the flattened estimate."""
    resolved = grid_method(name)
    resolved.pipeline(**params)  # validate once, up front
    eps = validate_epsilon(epsilon)
    rows, cols = (int(v) for v in shape)

    def run(x: np.ndarray, runs: int, seed: np.random.SeedSequence) -> Outputs:
        if x.size != rows * cols:
            raise ValidationError(f"a {rows} x {cols} mechanism got {x.size} cells")
        grid = np.asarray(x, dtype=np.int64).reshape(rows, cols)
        values = np.empty((runs, rows * cols))
        for r, child in enumerate(children(seed, runs)):
            gen = np.random.Generator(np.random.PCG64(child))
            rel = publish(grid, epsilon=eps, method=resolved.name, rng=gen, **params)
            values[r] = rel.estimate.ravel()
        return Outputs(values)

    label = resolved.name if not params else f"{resolved.name}{sorted(params.items())}"
    return Mechanism(f"{label} {rows}x{cols}", eps, run)


def standard_grid(shape: tuple[int, int]) -> np.ndarray:
    """The default 2-D audit input: a dense top-left block of 20s, zeros and 3s elsewhere,
    and one heavy cell (60) at the bottom right."""
    rows, cols = (int(v) for v in shape)
    if rows * cols < 4:
        raise ValidationError("2-D audit inputs need at least 4 cells")
    x = np.where((np.add.outer(np.arange(rows), np.arange(cols)) % 2) == 0, 0, 3)
    x[: max(1, rows // 2), : max(1, cols // 2)] = 20
    x[-1, -1] = 60
    return x.astype(np.int64)


def grid_catalogue(shape: tuple[int, int]) -> tuple[Neighbour, ...]:
    """Neighbour pairs (flattened cells) of :func:`standard_grid`, most informative first,
    then the empty grid against one record."""
    rows, cols = (int(v) for v in shape)
    x = standard_grid(shape).ravel()
    cells: list[tuple[int, int, int, str]] = []

    def both(i: int, j: int, reason: str) -> None:
        cells.append((i, j, +1, reason))
        cells.append((i, j, -1, reason))

    hr, hc = (rows + 1) // 2, (cols + 1) // 2  # the quadtree's first split
    both(hr - 1, hc - 1, "last cell before the first split")
    both(hr, hc, "first cell after the first split")
    both(0, 0, "corner")
    both(rows - 1, cols - 1, "largest cell")
    both(rows // 2, cols // 2, "centre")
    cells.append((rows - 1, 0, +1, "zero cell"))
    seen: set[tuple[int, int]] = set()
    out: list[Neighbour] = []
    for i, j, sign, reason in cells:
        k = min(i, rows - 1) * cols + min(j, cols - 1)
        if (k, sign) in seen or (sign < 0 and x[k] == 0):
            continue
        seen.add((k, sign))
        out.append(pair(x, k, sign, f"cell ({k // cols}, {k % cols}): {reason}"))
    out.append(pair(np.zeros(rows * cols, dtype=np.int64), (rows // 2) * cols + cols // 2, +1,
                    "empty vs one record"))  # fmt: skip
    return tuple(out)
