"""Statistics of the outputs that events threshold: coordinates, ranges, classifiers,
joint tails, Fourier coefficients and categories."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .bounds import MAX_CATEGORIES, MAX_SHIFTED, TOL
from .mechanisms import Outputs

if TYPE_CHECKING:  # annotations only: neighbours.py imports this module
    from .neighbours import Neighbour


def row_keys(rows: np.ndarray) -> list[bytes]:
    rows = np.ascontiguousarray(rows)
    return [r.tobytes() for r in rows]


def pattern_bits(labels: np.ndarray) -> np.ndarray:
    """Partition pattern of each row as packed bits of the pairwise equalities."""
    n = labels.shape[1]
    j, k = np.triu_indices(n, 1)
    return np.packbits(labels[:, j] == labels[:, k], axis=1)


class _Categorical:
    """A categorical statistic: codes learned on the search runs (unseen -> -1)."""

    def __init__(self, name: str, describe: Callable[[int], str]):
        self.name = name
        self.describe = describe
        self.index: dict[bytes, int] = {}

    def fit(self, keys: list[bytes]) -> np.ndarray:
        codes = np.empty(len(keys), dtype=np.int64)
        for r, key in enumerate(keys):
            codes[r] = self.index.setdefault(key, len(self.index))
        return codes

    def codes(self, keys: list[bytes]) -> np.ndarray:
        get = self.index.get
        return np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))


class Features:
    """The statistic catalogue for one pair, with parameters frozen on the search runs."""

    def __init__(self, pair: Neighbour, a: Outputs, b: Outputs):
        self.pair = pair
        ya, yb = a.values, b.values
        self.m = ya.shape[1]
        self.per_bin = self.m == pair.x.size
        i = pair.bin
        pooled = np.vstack([ya, yb])
        self.mean = pooled.mean(axis=0)
        sd = np.sqrt(0.5 * (ya.var(axis=0) + yb.var(axis=0)))
        self.sd = np.where(sd > TOL, sd, 1.0)
        diff = yb.mean(axis=0) - ya.mean(axis=0)
        se = np.sqrt((ya.var(axis=0) + yb.var(axis=0)) / ya.shape[0])
        moved = np.abs(diff) > 4 * np.maximum(se, TOL)
        self.sign = np.where(diff != 0, np.sign(diff), float(pair.sign))
        self.half_shift = np.maximum(np.abs(diff) / 2, TOL)
        self.mid = 0.5 * (ya.mean(axis=0) + yb.mean(axis=0))
        # sets for the joint-tail statistics
        sets: list[tuple[str, np.ndarray]] = []
        order = np.argsort(-np.abs(diff) / np.maximum(se, TOL), kind="stable")
        shifted = np.sort(order[: min(MAX_SHIFTED, int(moved.sum()))])
        if shifted.size >= 2:
            sets.append((f"moved {_idx(shifted)}", shifted))
        if self.per_bin:
            windows = [(lo, 2) for lo in (i - 1, i)] + [(lo, 3) for lo in (i - 1, i - 2, i)]
            windows.append((i - 2, 4))
            for lo, width in windows:
                if lo >= 0 and lo + width <= self.m:
                    sets.append((f"window {lo}:{lo + width}", np.arange(lo, lo + width)))
        labels = [lab for lab in (a.labels, b.labels) if lab is not None]
        if labels and self.per_bin:
            group = _modal_group(np.vstack(labels), i)
            if group.size >= 2:
                sets.append((f"group {_idx(group)}", group))
        unique_sets: dict[bytes, tuple[str, np.ndarray]] = {}
        for name, s in sets:
            unique_sets.setdefault(s.tobytes(), (name, s))
        self.sets = list(unique_sets.values())
        self.clip_sets = [(n_, s) for n_, s in self.sets if n_.startswith(("moved", "group"))]
        # linear classifiers (E2): mean difference and Fisher's discriminant
        self.directions: list[tuple[str, np.ndarray]] = []
        if self.m >= 2 and np.any(diff != 0):
            self.directions.append(("mean-difference projection", diff))
            live = sd > TOL
            if live.sum() >= 2:
                cov = 0.5 * (np.cov(ya[:, live], rowvar=False) + np.cov(yb[:, live], rowvar=False))
                ridge = 1e-6 * np.trace(cov) / live.sum()
                w = np.zeros(self.m)
                w[live] = np.linalg.solve(cov + ridge * np.eye(int(live.sum())), diff[live])
                self.directions.append(("Fisher projection", w))
        # which structural indicators vary on the search runs
        self.eq_pairs = []
        self.zero_bins = []
        if self.per_bin:
            eq = np.isclose(pooled[:, 1:], pooled[:, :-1], rtol=TOL, atol=TOL)
            self.eq_pairs = [j for j in range(self.m - 1) if 0 < eq[:, j].mean() < 1]
            zero = np.isclose(pooled, 0.0, atol=TOL)
            self.zero_bins = [j for j in range(self.m) if 0 < zero[:, j].mean() < 1]
        self.has_labels = bool(labels)
        self._fit_fourier(ya, yb)
        # categorical statistics
        self.categoricals: list[_Categorical] = []
        self._fit_categoricals(a, b)

    def _fit_fourier(self, ya: np.ndarray, yb: np.ndarray) -> None:
        """The Fourier view (E5): coefficients that moved, whether the number of
        retained coefficients varies (a spectral method's choice of K)."""
        self.fourier = self.per_bin and self.m >= 2
        self.f_sets: list[tuple[str, np.ndarray]] = []
        self.f_count = False
        if not self.fourier:
            return
        fa, fb = fourier(ya), fourier(yb)
        sd = np.sqrt(0.5 * (fa.var(axis=0) + fb.var(axis=0)))
        self.f_sd = np.where(sd > TOL, sd, 1.0)
        diff = fb.mean(axis=0) - fa.mean(axis=0)
        se = np.maximum(np.sqrt((fa.var(axis=0) + fb.var(axis=0)) / fa.shape[0]), TOL)
        self.f_sign = np.where(diff != 0, np.sign(diff), 1.0)
        self.f_half = np.maximum(np.abs(diff) / 2, TOL)
        self.f_mid = 0.5 * (fa.mean(axis=0) + fb.mean(axis=0))
        moved = int((np.abs(diff) > 2 * se).sum())
        order = np.argsort(-np.abs(diff) / se, kind="stable")
        shifted = np.sort(order[: min(MAX_SHIFTED, moved)])
        if shifted.size >= 2:
            self.f_sets.append((f"moved Fourier coefficients {_idx(shifted)}", shifted))
        kept = np.concatenate([retained(fa), retained(fb)])
        self.f_count = bool(np.any(kept != kept[0]))

    def _fourier_statistics(self, y: np.ndarray, add: Callable[[str, np.ndarray], None]) -> None:
        c = fourier(y)
        for r in range(self.m):
            add(f"Fourier c[{r}]", c[:, r])
        if self.f_count:
            add("number of retained Fourier coefficients", retained(c))
        for name, s in self.f_sets:
            z = self.f_sign[s] * (c[:, s] - self.f_mid[s]) / self.f_sd[s]
            add(f"min over {name} of signed z", z.min(axis=1))
            h = self.f_half[s]
            dev = np.clip(self.f_sign[s] * (c[:, s] - self.f_mid[s]), -h, h) / self.f_sd[s]
            add(f"clipped likelihood ratio over {name}", dev.sum(axis=1))

    # ---- numeric statistics
    def numeric(self, out: Outputs) -> tuple[list[str], np.ndarray]:
        y = out.values
        cols: list[np.ndarray] = []
        names: list[str] = []

        def add(name: str, values: np.ndarray) -> None:
            names.append(name)
            cols.append(np.asarray(values, dtype=np.float64))

        i = self.pair.bin
        for j in range(self.m):
            add(f"y[{j}]", y[:, j])
        if self.per_bin:
            n = self.m
            prefix = np.concatenate([np.zeros((y.shape[0], 1)), np.cumsum(y, axis=1)], axis=1)
            spans = set()
            for lo in range(i + 1):
                for hi in range(i + 1, n + 1):
                    if hi - lo >= 2:
                        spans.add((lo, hi))
            for hi in range(2, n + 1):
                spans.add((0, hi))
            for lo, hi in sorted(spans):
                add(f"sum y[{lo}:{hi}]", prefix[:, hi] - prefix[:, lo])
            for j in range(n):
                if j != i:
                    add(f"y[{i}] - y[{j}]", y[:, i] - y[:, j])
            add(f"rank of y[{i}]", (y > y[:, [i]]).sum(axis=1))
            srt = np.sort(y, axis=1)
            gaps = np.abs(np.diff(srt, axis=1)) > TOL * np.maximum(1.0, np.abs(srt[:, 1:]))
            add("number of distinct values", 1 + gaps.sum(axis=1))
            for j in self.eq_pairs:
                add(f"[y[{j}] == y[{j + 1}]]", np.isclose(y[:, j], y[:, j + 1], TOL, TOL))
            for j in self.zero_bins:
                add(f"[y[{j}] == 0]", np.isclose(y[:, j], 0.0, atol=TOL))
        for name, w in self.directions:
            add(name, y @ w)
        for name, s in self.sets:
            z = self.sign[s] * (y[:, s] - self.mid[s]) / self.sd[s]
            add(f"min over {name} of signed z", z.min(axis=1))
            add(f"max over {name} of signed z", z.max(axis=1))
        for name, s in self.clip_sets:
            h = self.half_shift[s]
            dev = np.clip(self.sign[s] * (y[:, s] - self.mid[s]), -h, h) / self.sd[s]
            add(f"clipped likelihood ratio over {name}", dev.sum(axis=1))
        if self.fourier:
            self._fourier_statistics(y, add)
        if out.labels is not None and self.per_bin:
            lab = out.labels
            add("number of groups", np.array([np.unique(r).size for r in lab]))
            add(f"size of the group of bin {i}", (lab == lab[:, [i]]).sum(axis=1))
        return names, np.column_stack(cols)

    # ---- categorical statistics
    def _fit_categoricals(self, a: Outputs, b: Outputs) -> None:
        both = [a, b]
        runs = a.runs + b.runs
        cands: list[tuple[_Categorical, Callable[[Outputs], list[bytes]]]] = []
        if self.has_labels and self.per_bin:

            def pattern(o: Outputs) -> list[bytes]:
                if o.labels is None:
                    return [b"none"] * o.runs
                return row_keys(pattern_bits(o.labels))

            cands.append((_Categorical("grouping", lambda c: f"grouping #{c}"), pattern))

        def full(o: Outputs) -> list[bytes]:
            return row_keys(np.round(o.values, 9) + 0.0)

        cands.append((_Categorical("output", lambda c: f"output vector #{c}"), full))

        def top(o: Outputs) -> list[bytes]:
            return row_keys(np.argmax(o.values, axis=1))

        if self.m >= 2:
            cands.append((_Categorical("argmax", lambda c: f"argmax #{c}"), top))
        self._keyers = []
        self._search_codes = []
        for cat, keyer in cands:
            keys = keyer(both[0]) + keyer(both[1])
            codes = cat.fit(keys)
            if len(cat.index) > min(MAX_CATEGORIES, runs // 4) or len(cat.index) < 2:
                continue
            inverse = {v: k for k, v in cat.index.items()}
            if cat.name == "argmax":
                cat.describe = lambda c, inv=inverse: (
                    f"argmax = {int(np.frombuffer(inv[c], dtype=np.int64)[0])}"
                )
            self.categoricals.append(cat)
            self._keyers.append(keyer)
            self._search_codes.append((codes[: a.runs], codes[a.runs :]))

    def categorical_codes(self, out: Outputs) -> list[np.ndarray]:
        return [
            cat.codes(keyer(out))
            for cat, keyer in zip(self.categoricals, self._keyers, strict=True)
        ]


def fourier(y: np.ndarray) -> np.ndarray:
    """Each row of ``y`` in the orthonormal real Fourier basis, by frequency: the
    constant row, then a cosine and a sine row per frequency, and for an even
    length the alternating row (the layout EFPA releases; Acs et al., ICDM 2012, §5)."""
    n = y.shape[1]
    f = np.fft.rfft(y, axis=1)
    out = np.empty(y.shape)
    out[:, 0] = f[:, 0].real / math.sqrt(n)
    half = (n - 1) // 2
    scale = math.sqrt(2.0 / n)
    out[:, 1 : 2 * half + 1 : 2] = f[:, 1 : half + 1].real * scale
    out[:, 2 : 2 * half + 2 : 2] = -f[:, 1 : half + 1].imag * scale
    if n % 2 == 0:
        out[:, n - 1] = f[:, n // 2].real / math.sqrt(n)
    return out


def retained(c: np.ndarray) -> np.ndarray:
    """Number of leading Fourier coefficients up to the last non-zero one, per row
    (zero means rounding-level, relative to the row's largest coefficient)."""
    tol = 1e-9 * np.maximum(1.0, np.abs(c).max(axis=1, initial=0.0))
    nonzero = np.abs(c) > tol[:, None]
    last = c.shape[1] - np.argmax(nonzero[:, ::-1], axis=1)
    return np.where(nonzero.any(axis=1), last, 0)


def _idx(s: np.ndarray) -> str:
    return "{" + ",".join(str(int(v)) for v in s) + "}"


def _modal_group(labels: np.ndarray, i: int) -> np.ndarray:
    """Bins sharing bin i's group in the most frequent grouping pattern."""
    keys = row_keys(pattern_bits(labels))
    counts: dict[bytes, int] = {}
    first: dict[bytes, int] = {}
    for r, k in enumerate(keys):
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, r)
    best = max(counts, key=lambda k: counts[k])
    row = labels[first[best]]
    return np.flatnonzero(row == row[i])
