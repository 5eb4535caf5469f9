"""Do more private features pay for ``method="auto"``? A sweep from an error table.

Run: python benchmarks/auto_features.py TABLE.npz [--share 0.01] [--exact] [--pool 0.05]
     [--configs base,above,rough,above+rough,total+above]

TABLE is a table of ``dphist reproduce auto`` (``DIR/auto/table.npz``). Each
configuration is a set of facts ``auto`` could measure with ``--share`` of epsilon in
one query whose L1 sensitivity is the sum of its answers' (Laplace noise in training,
as ``dphist.lab.selector.table.Table.noisy_facts``):

* ``base``: the total (sensitivity 1) and the records in the fullest tenth of the bins
  (1), what ``auto`` measures today;
* ``above``: plus the number of bins holding at least ``ceil(1 / epsilon)`` records
  (a public threshold: one record moves the count by at most 1);
* ``rough``: plus the L1 roughness ``sum |x_i - x_{i+1}|`` (one record moves two
  differences by one each: sensitivity 2);
* ``total+above``: the total and the count above the threshold only.

The features are fractions: the count above over N, the roughness over twice the
total. Each configuration is scored leave one shape out from the table alone (the
protocol of ``dphist.lab.selector.evaluate.table_only``, naive regret against the
table's least error, 4 feature draws per cell), with the shipped training hinge.
``--exact`` trains and scores on the true facts (no noise: a bound, not a mechanism);
``--pool F`` restricts each workload's candidates to those within 1.1x of the best in
at least a fraction F of its training rows (plus identity and HB).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from dphist.lab.selector import load_table
from dphist.lab.selector.evaluate import families
from dphist.lab.selector.fit import GUARD_WEIGHT, TRAIN_GUARD, costs, fit_tree
from dphist.lab.selector.table import WORKLOADS, shapes

CONFIGS = {
    "base": ("top",),
    "above": ("top", "above"),
    "rough": ("top", "rough"),
    "above+rough": ("top", "above", "rough"),
    "total+above": ("above",),
}
SENSITIVITY = {"top": 1, "above": 1, "rough": 2}


def facts(x: np.ndarray, eps: float, parts: tuple[str, ...]) -> np.ndarray:
    """The total, then each part's true answer."""
    out = [float(x.sum())]
    for p in parts:
        if p == "top":
            out.append(float(np.sort(x)[::-1][: -(-x.size // 10)].sum()))
        elif p == "above":
            out.append(float((x >= max(1, math.ceil(1 / eps))).sum()))
        else:
            out.append(float(np.abs(np.diff(x)).sum()))
    return np.array(out)


def features(n: int, eps: float, f: np.ndarray, parts: tuple[str, ...]) -> np.ndarray:
    """As ``dphist.methods.selector.feature_vector``, with one entry per part."""
    total = max(f[0], 0.0)
    signal = eps * total
    v = [math.log2(n), math.log10(eps), math.log10(max(signal, 0.1)),
         math.log10(max(signal / n, 1e-4))]  # fmt: skip
    for p, value in zip(parts, f[1:], strict=True):
        scale = {"top": max(total, 1.0), "above": n, "rough": max(2 * total, 1.0)}[p]
        v.append(min(max(value / scale, 0.0), 1.0))
    return np.array(v)


def score(table, counts, parts, share, exact, pool, draws=4, depth=5) -> dict:
    rng = np.random.default_rng(0)
    labels = [c.label for c in table.candidates]
    eps_all = table.epsilons
    true = [[facts(x, e * (1 - share), parts) for e in eps_all] for x in counts]
    scale = (1 + sum(SENSITIVITY[p] for p in parts)) / share

    def draw(i: int, j: int) -> np.ndarray:
        f = true[i][j] if exact else true[i][j] + rng.laplace(0, scale / eps_all[j], len(parts) + 1)
        return features(table.cells[i].n, eps_all[j] * (1 - share), f, parts)

    out = np.zeros((len(table.cells), len(eps_all), len(WORKLOADS)))
    for held in families(table).values():
        train, test = np.flatnonzero(~held), np.flatnonzero(held)
        for w in range(len(WORKLOADS)):
            rows = [(i, j) for j in range(len(eps_all)) for i in train for _ in range(draws)]
            x = np.array([draw(i, j) for i, j in rows])
            e = np.array([table.errors[i, j, :, w] for i, j in rows])
            c = costs(e, labels, TRAIN_GUARD, GUARD_WEIGHT)
            if pool:
                keep = (e / e.min(axis=1, keepdims=True) <= 1.1).mean(axis=0) >= pool
                keep[[labels.index("identity"), labels.index("HB")]] = True
                c[:, ~keep] = 1e6
            tree = fit_tree(x, c, e, labels, depth, max(2, int(0.03 * x.shape[0])))
            for i in test:
                for j in range(len(eps_all)):
                    for _ in range(draws):
                        node, f = tree, draw(i, j)
                        while "feature" in node:
                            side = "low" if f[node["feature"]] < node["threshold"] else "high"
                            node = node[side]
                        out[i, j, w] += table.errors[i, j, labels.index(node["rank"][0]), w]
    out /= draws * (1 - share) ** 2
    regret = out / table.errors.min(axis=2)
    e = table.errors
    base = np.minimum(e[:, :, labels.index("identity")], e[:, :, labels.index("HB")])
    guard = out / base
    return {
        "geo-mean regret": float(np.exp(np.log(regret).mean())),
        "within 1.5x": float(np.mean(regret <= 1.5)),
        "above 1.2x identity/HB": float(np.mean(guard > 1.2)),
        "above 1.5x": int(np.sum(guard > 1.5)),
        **{k: float(np.exp(np.log(regret[:, :, w]).mean())) for w, k in enumerate(WORKLOADS)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("--share", type=float, default=0.01)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--pool", type=float, default=0.0)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    args = ap.parse_args()
    table = load_table(args.table)
    all_shapes = shapes(None)
    counts = [c.counts(all_shapes) for c in table.cells]
    print(f"{len(table.cells)} histograms; share {args.share:g}; exact {args.exact}; "
          f"pool {args.pool:g}")  # fmt: skip
    for name in args.configs.split(","):
        t0 = time.perf_counter()
        s = score(table, counts, CONFIGS[name], args.share, args.exact, args.pool)
        cells = "; ".join(f"{k} {v:.3g}" for k, v in s.items())
        print(f"{name}: {cells} ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
