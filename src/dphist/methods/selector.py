"""The candidates of ``method="auto"`` and the trained model that ranks them.

The model (``auto_model.json`` beside this module) is a small cost-sensitive decision
tree per workload kind, fitted on public data only by ``dphist reproduce auto``
(``dphist.lab.selector``): DPBench-style histograms drawn from the shared datasets and
synthetic shapes (shape x domain size x scale), each candidate's measured error per
workload, in the manner of Pythia (Kotsogiannis et al., SIGMOD 2017). It reads
:func:`feature_vector` -- the number of bins, the method's epsilon and, when ``auto``
spends a share of the budget on them, the noisy number of records and of records in
the fullest tenth of the bins -- and returns the
candidates ranked by their training regret in the leaf the features fall in. The
file is data, not code: the same inputs give the same ranking.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InternalError

__all__ = [
    "CANDIDATES",
    "DEFAULT_SHARE",
    "FEATURES",
    "MODEL_FILE",
    "PLAIN",
    "SMALL_DOMAIN",
    "WORKLOADS",
    "Candidate",
    "Model",
    "Ranking",
    "data_independent",
    "feature_matrix",
    "feature_vector",
    "load_model",
]

#: Workload kinds the model is trained for, in table order.
WORKLOADS: tuple[str, ...] = ("point", "short", "long", "all", "prefix")


@dataclass(frozen=True)
class Candidate:
    """A registered method with fixed settings."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if not self.params:
            return self.method
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.method}[{inner}]"

    def __hash__(self) -> int:
        return hash(self.label)


#: The pool ``auto`` chooses from: every method that was best or within 10% of the best
#: in a sweep of all registered methods (and split variants) over 96 histograms x 2
#: epsilons x 5 workloads, plus HB (so that ``auto`` is never worse by design than the
#: better of identity and HB), and PrivTree with half the budget on its decomposition
#: (on sparse spiky histograms the best for point queries in 2 of 8 cells measured, and
#: within 1.1x in 3). S1 is left out: under the certified partition it equals S~.
CANDIDATES: tuple[Candidate, ...] = (
    Candidate("identity"),
    Candidate("HB"),
    Candidate("OPT-H"),
    Candidate("OPT-H", {"workload": "prefix"}),
    Candidate("NF"),
    Candidate("S2"),
    Candidate("S~"),
    Candidate("S~", {"ratio": 0.4}),
    Candidate("O+S2"),
    Candidate("S1+H"),
    Candidate("S2+H"),
    Candidate("AHP"),
    Candidate("sDAHP"),
    Candidate("DPC"),
    Candidate("sDPC"),
    Candidate("DAWA"),
    Candidate("DAWA", {"ratio": 0.15}),
    Candidate("DAWA", {"ratio": 0.4}),
    Candidate("PrivTree"),
    Candidate("PrivTree", {"ratio": 0.15}),
    Candidate("PrivTree", {"ratio": 0.5}),
    Candidate("P-HP"),
)


#: Up to this many bins ``auto`` measures no features and publishes with the first
#: data-independent candidate of the public ranking (identity, HB or OPT-H). Held out on
#: 4-bin histograms, the better of identity and HB alone had a geometric-mean regret of
#: 0.98 against auto's 1.03, and auto's data-dependent picks there made 185 of its 228
#: cells above 1.2x that baseline; on 16 bins the two were even (1.17 and 1.18), and from
#: 64 bins on auto gains (1.58 against 1.83). ``dphist reproduce auto`` measures it.
SMALL_DOMAIN = 8


def data_independent(candidate: Candidate) -> bool:
    """True when the candidate's error is known before release (every block unbiased and
    data-independent), as for identity, HB and OPT-H."""
    from .registry import get_method

    info = get_method(candidate.method)
    return all(block.unbiased for block in info.pipeline(**candidate.params).blocks)


#: The share of epsilon ``auto`` spends on its features unless told otherwise; the
#: shipped model is trained for it (``dphist reproduce auto`` compares shares). Held out
#: (leave one shape out, cross-fitted, 641 histograms), 1/50 beats 1/100 on every
#: target: geometric-mean regret 1.10 against 1.13, 79.9% of cells within 1.5x against
#: 78.6%, worst cell 535x against 733x, 4 cells above 1.5x the better of identity and
#: HB against 11; the features' noise costs more than the method's lost share.
DEFAULT_SHARE = Fraction(1, 50)

#: Names of the entries of :func:`feature_vector`, in order.
FEATURES: tuple[str, ...] = (
    "log2_bins",
    "log10_epsilon",
    "log10_signal",
    "log10_signal_per_bin",
    "top_tenth_share",
)

MODEL_FILE = Path(__file__).with_name("auto_model.json")

#: What a leaf's side of each feature means, in words a publisher reads (a leaf's
#: thresholds are left to the JSON: they are model internals, not facts about the data).
PLAIN: dict[str, dict[str, str]] = {
    "log2_bins": {
        "low": "smaller domains",
        "high": "larger domains",
        "between": "mid-sized domains",
    },
    "log10_epsilon": {
        "low": "a small epsilon",
        "high": "a large epsilon",
        "between": "a moderate epsilon",
    },
    "log10_signal": {
        "low": "few records for this epsilon",
        "high": "many records for this epsilon",
        "between": "a moderate number of records for this epsilon",
    },
    "log10_signal_per_bin": {
        "low": "most bins hold few records next to the noise",
        "high": "most bins hold records well above the noise",
        "between": "bins hold about as many records as the noise",
    },
    "top_tenth_share": {
        "low": "the records are spread over the bins",
        "high": "the records are concentrated in a few bins",
        "between": "the records are partly concentrated",
    },
}


def feature_vector(
    n: int, epsilon: float, total: float | None, top: float | None = None
) -> np.ndarray:
    """What the model sees: ``log2 N``, ``log10 epsilon`` and, when ``auto`` measured
    them, ``log10(epsilon * total)`` (signal to noise of the whole histogram, DPBench's
    scale x epsilon), ``log10(epsilon * total / N)`` (per bin) and the share of the
    records that sit in the fullest tenth of the bins (near 1 for sparse or bursty
    data, near 0.1 for flat data), each floored or clipped so that noisy values stay
    finite and in range. ``epsilon`` is the chosen method's; missing values are NaN."""
    return feature_matrix(
        np.array([n]),
        epsilon,
        None if total is None else np.array([float(total)]),
        None if top is None else np.array([float(top)]),
    )[0]


def feature_matrix(
    n: np.ndarray, epsilon: float, total: np.ndarray | None, top: np.ndarray | None = None
) -> np.ndarray:
    """:func:`feature_vector` for many histograms at one epsilon, one row each (the
    training's and the lab's form; the one computation both use)."""
    n = np.asarray(n, dtype=np.float64)
    out = np.full((n.size, len(FEATURES)), np.nan)
    out[:, 0] = np.log2(n)
    out[:, 1] = math.log10(epsilon)
    if total is not None:
        signal = epsilon * np.maximum(np.asarray(total, dtype=np.float64), 0.0)
        out[:, 2] = np.log10(np.maximum(signal, 1e-1))
        out[:, 3] = np.log10(np.maximum(signal / n, 1e-4))
    if top is not None:
        below = np.maximum(np.asarray(total, dtype=np.float64), 1.0) if total is not None else 1.0
        out[:, 4] = np.clip(np.asarray(top, dtype=np.float64) / below, 0.0, 1.0)
    return out


@dataclass(frozen=True)
class Ranking:
    """The candidates of one leaf, best first, with the leaf's path and training regret."""

    candidates: tuple[Candidate, ...]
    path: tuple[str, ...]  # the leaf's region with its thresholds (for the JSON only)
    regret: float  # geometric-mean training regret of the first candidate in the leaf
    sides: tuple[tuple[int, str], ...] = ()  # (feature, "low" | "high" | "between")

    def plain(self) -> str:
        """The leaf's region in words, without thresholds: "larger domains and most
        bins hold records well above the noise" (:data:`PLAIN`)."""
        return " and ".join(PLAIN[FEATURES[f]][side] for f, side in self.sides)


@dataclass(frozen=True)
class Model:
    """One tree per workload kind for each feature set (``"public"``: N and epsilon
    only; ``"measured"``: with the noisy features), under pure DP and, in the trees
    keyed ``"zcdp public"`` and ``"zcdp measured"``, trained under zCDP (a model
    without them ranks zCDP releases with the pure trees), and the default feature
    share."""

    share: Fraction
    trees: dict[str, dict[str, Any]]
    candidates: dict[str, Candidate]

    def trained_for(self, definition: str) -> bool:
        """Whether the model has trees trained under ``definition`` ("pure" or "zcdp")."""
        return definition == "pure" or "zcdp measured" in self.trees

    def rank(
        self, features: np.ndarray, workload: str, measured: bool, definition: str = "pure"
    ) -> Ranking:
        node = self._tree(workload, measured, definition)
        low: dict[int, float] = {}
        high: dict[int, float] = {}
        while "feature" in node:
            f, t = int(node["feature"]), float(node["threshold"])
            if features[f] < t:
                high[f] = min(high.get(f, math.inf), t)
                node = node["low"]
            else:
                low[f] = max(low.get(f, -math.inf), t)
                node = node["high"]
        ranked = tuple(self.candidates[label] for label in node["rank"])
        sides = tuple(
            (f, "between" if f in low and f in high else "high" if f in low else "low")
            for f in sorted(set(low) | set(high))
        )
        return Ranking(ranked, _bounds(low, high), float(node["regret"]), sides)

    def firsts(
        self, features: np.ndarray, workload: str, measured: bool, definition: str = "pure"
    ) -> np.ndarray:
        """The label :meth:`rank` puts first for each row of ``features`` (the lab
        scores many histograms at once)."""
        out = np.empty(len(features), dtype=object)

        def walk(node: dict[str, Any], idx: np.ndarray) -> None:
            if "feature" not in node:
                out[idx] = node["rank"][0]
                return
            low = features[idx, int(node["feature"])] < float(node["threshold"])
            walk(node["low"], idx[low])
            walk(node["high"], idx[~low])

        walk(self._tree(workload, measured, definition), np.arange(len(features)))
        return out

    def _tree(self, workload: str, measured: bool, definition: str) -> dict[str, Any]:
        key = "measured" if measured else "public"
        if definition == "zcdp" and self.trained_for("zcdp"):
            key = f"zcdp {key}"
        return self.trees[key][workload]

    def to_json(self) -> str:
        data = {
            "share": str(self.share),
            "candidates": {
                k: {"method": c.method, "params": c.params} for k, c in self.candidates.items()
            },
            "trees": self.trees,
        }
        return json.dumps(data, indent=1, sort_keys=True)


def _bounds(low: dict[int, float], high: dict[int, float]) -> tuple[str, ...]:
    """A leaf's region, one interval per feature: ``"3 <= log2_bins < 9"``."""
    out = []
    for f in sorted(set(low) | set(high)):
        lo = f"{low[f]:.3g} <= " if f in low else ""
        hi = f" < {high[f]:.3g}" if f in high else ""
        out.append(f"{lo}{FEATURES[f]}{hi}")
    return tuple(out)


def model_from_json(text: str) -> Model:
    data = json.loads(text)
    candidates = {
        label: Candidate(c["method"], dict(c["params"])) for label, c in data["candidates"].items()
    }
    return Model(Fraction(data["share"]), data["trees"], candidates)


@lru_cache(maxsize=1)
def load_model() -> Model:
    """The shipped model (read once)."""
    try:
        return model_from_json(MODEL_FILE.read_text())
    except (OSError, KeyError, ValueError) as exc:
        raise InternalError(
            f"the auto model {MODEL_FILE.name} is missing or damaged: {exc}"
        ) from exc
