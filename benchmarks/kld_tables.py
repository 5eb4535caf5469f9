"""KLD of the sorting-family methods beside the published tables (AHP Tables 2-4,
SReB_GCA Table 2), on Search Log, NetTrace and Social Network.

Run: python benchmarks/kld_tables.py [--trials 10]
KLD convention (dphist.metrics.kld): both histograms are made distributions with a
pseudo-count tau = 1e-3 per bin, negative estimates clipped at 0. The papers' exact
convention is unknown, so absolute values are comparable only roughly; rankings and
orders of magnitude are the check. Seeded trials, mean over trials. SF is left out:
its V-optimal table is O(k N^2) and the authors' k = N/10 makes it infeasible here.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dphist as dh
from dphist import datasets, metrics

PAPER = {  # (dataset, eps) -> {method: KLD} from AHP Tables 2-4 and SReB_GCA Table 2
    ("search_logs", 1): {"AHP": 0.054, "NF": 1.582, "PHP": 0.132, "GS": 2.115, "SReB": 0.0001},
    ("search_logs", 0.1): {"AHP": 0.103, "NF": 2.467, "PHP": 0.159, "GS": 4.157, "SReB": 0.009},
    ("search_logs", 0.01): {"AHP": 0.189, "NF": 5.584, "PHP": 0.86, "GS": 7.046, "SReB": 0.099},
    ("nettrace", 1): {"AHP": 0.153, "NF": 2.839, "PHP": 0.904, "GS": 4.816, "SReB": 0.004},
    ("nettrace", 0.1): {"AHP": 0.572, "NF": 4.726, "PHP": 2.026, "GS": 6.917, "SReB": 0.092},
    ("nettrace", 0.01): {"AHP": 1.229, "NF": 6.926, "PHP": 2.280, "GS": 8.187, "SReB": 0.252},
    ("social_network", 1): {"AHP": 0.071, "NF": 1.001, "PHP": 0.801, "GS": 2.611, "SReB": 0.0001},
    ("social_network", 0.1): {"AHP": 0.309, "NF": 2.753, "PHP": 0.602, "GS": 3.251, "SReB": 0.003},
    ("social_network", 0.01): {
        "AHP": 0.825,
        "NF": 3.099,
        "PHP": 1.019,
        "GS": 5.112,
        "SReB": 0.099,
    },
}
METHODS = {
    "AHP": "AHP",
    "NF": "NF",
    "PHP": "P-HP",
    "GS": "GS",
    "SReB": "SReB_GCA",
    "identity": "identity",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    print(f"mean KLD over {args.trials} seeded trials (paper value in brackets)")
    for name in ("search_logs", "nettrace", "social_network"):
        x = datasets.load(name)
        for eps in (1, 0.1, 0.01):
            cells = []
            for label, method in METHODS.items():
                start = time.perf_counter()
                vals = [
                    metrics.kld(x, dh.publish(x, epsilon=eps, method=method, rng=t).estimate)
                    for t in range(args.trials)
                ]
                secs = (time.perf_counter() - start) / args.trials
                paper = PAPER[(name, eps)].get(label)
                ref = f" [{paper}]" if paper is not None else ""
                cells.append(f"{label} {np.mean(vals):.4f}{ref} ({secs:.2f}s)")
            print(f"{name:15} eps={eps:<5} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
