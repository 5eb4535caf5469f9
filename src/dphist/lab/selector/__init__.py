"""Training and held-out evaluation of ``method="auto"`` (public data only).

* :mod:`.table` -- every candidate's error on DPBench-style histograms;
* :mod:`.fit` -- the cost-sensitive trees, written as ``auto_model.json``;
* :mod:`.evaluate` -- leave-one-shape-out runs of the whole mechanism.

``dphist reproduce auto`` runs all three and reports; :func:`load_table` reads a
table built earlier.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...methods.selector import CANDIDATES
from .table import Cell, Table

__all__ = ["load_table"]


def load_table(path: Path, cells: list[Cell] | None = None) -> Table:
    """The table cached at ``path`` (an ``.npz`` from :func:`.table.build_table`),
    restricted to ``cells`` when given."""
    with np.load(path, allow_pickle=True) as z:
        stored = [Cell(str(a), int(b), int(c)) for a, b, c in z["cells"]]
        errors = z["errors"]
        candidates = CANDIDATES
        if "labels" in z:  # the table's own candidates, in its column order
            by_label = {c.label: c for c in CANDIDATES}
            candidates = tuple(by_label[str(v)] for v in z["labels"])
        index = {c: i for i, c in enumerate(stored)}
        keep = [index[c] for c in cells] if cells is not None else list(range(len(stored)))
        eps = tuple(float(e) for e in z["epsilons"])
        return Table(
            tuple(stored[i] for i in keep),
            eps,
            candidates,
            errors[keep],
            z["facts"][keep],
            str(z["definition"]) if "definition" in z else "pure",
        )
