"""Private views, the two measurement primitives, and the pipeline runner.

A block that has a budget share receives a :class:`PrivateView`: the only way to
learn anything about the true counts. When one privacy unit may contribute up to
``K = data.max_records`` records, the view scales every sensitivity by ``K`` itself
(linear measurements add noise for ``K`` times the query's sensitivity; selections
run at ``epsilon / K``, group privacy), so no block can forget it. Each measurement

1. derives the sensitivity from the query (never from the caller),
2. fixes the exact rational noise scale,
3. charges the block's budget slice -- which raises :class:`BudgetExceededError`
   naming the block and primitive if it would overspend -- and only then
4. reads the counts, answers the query and adds exact discrete Laplace noise.

:func:`run_pipeline` resolves every block's share before any data is read, hands a
view only to blocks with a positive share, and closes each view when its block
returns, so a view kept by a block is useless afterwards.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from .._numeric.deviation import (
    l1_partition_pow2,
    l1_partition_streamed,
    pow2_deviations,
    window_deviations,
)
from .._numeric.tree import TreeLayout, best_cut
from ..errors import CompositionError, InternalError
from .budget import Accountant, Charge, as_fraction, resolve_shares
from .data import ProtectedCounts
from .noise import NoiseSource, discrete_laplace_variance, lattice_parameters, rational_scale
from .operators import Query
from .partition import certified_full_partition, lazy_supported, reference_full_partition
from .selection import (
    fourier_coefficients,
    php_partition,
    report_noisy_min,
    structure_first_boundaries,
)

__all__ = ["Measurement", "PrivateView", "run_pipeline"]


@dataclass(frozen=True, eq=False)
class Measurement:
    """Noisy answers to one query; ``variance`` is the noise variance of each answer.

    ``variance`` is one number when every answer has the same noise, else an array.
    ``scale`` is the noise scale of an unweighted answer.
    """

    values: np.ndarray
    query: Query
    epsilon: Fraction
    scale: Fraction
    variance: float | np.ndarray

    def __post_init__(self) -> None:
        self.values.flags.writeable = False


class PrivateView:
    """A block's handle on the protected counts, charged against its budget slice."""

    __slots__ = ("_budget", "_data", "_k", "_noise", "_open", "block")

    def __init__(self, data: ProtectedCounts, budget: Accountant, noise: NoiseSource, block: str):
        self._data = data
        self._budget = budget
        self._noise = noise
        self._open = True
        self._k = data.max_records  # records per privacy unit: every sensitivity times K
        self.block = block

    def __repr__(self) -> str:
        return f"PrivateView(block={self.block!r}, n={self.n}, remaining={self.remaining})"

    def __reduce__(self):
        raise TypeError("private views cannot be pickled or copied")

    @property
    def n(self) -> int:
        """Number of bins (public)."""
        return self._data.n

    @property
    def remaining(self) -> Fraction:
        """Budget this block has left."""
        return self._budget.remaining

    def _epsilon(self, epsilon: object) -> Fraction:
        if not self._open:
            raise InternalError(f"block {self.block!r} used its view after it returned")
        if epsilon is None:
            return self._budget.remaining
        return as_fraction(epsilon, name="epsilon")

    def _check(self, query: Query) -> None:
        if not isinstance(query, Query):
            raise InternalError(f"block {self.block!r} passed a non-query {type(query).__name__}")
        if query.n != self.n:
            raise InternalError(f"query over {query.n} bins on a view of {self.n} bins")

    def measure(self, query: Query, *, epsilon: object = None) -> Measurement:
        """Answer ``query`` with exact discrete Laplace noise of scale >= sensitivity/epsilon.

        ``epsilon`` defaults to all the budget the block has left. For a weighted query
        answer ``q`` gets scale ``sensitivity / (w_q epsilon)``: the privacy loss of one
        record is ``sum_q w_q epsilon / sensitivity <= epsilon`` over the answers it
        enters.
        """
        eps = self._epsilon(epsilon)
        self._check(query)
        sensitivity = query.sensitivity * self._k
        weights = getattr(query, "weights", None)
        if weights is None:
            plan = [(slice(None), rational_scale(sensitivity, eps))]
        else:  # answer q gets scale sensitivity / (w_q * eps): one sampler call per weight
            w_arr = np.array(weights, dtype=object)
            plan = [
                (np.flatnonzero(w_arr == w), rational_scale(sensitivity, eps * w))
                for w in sorted(set(weights))
            ]
        t, s = rational_scale(sensitivity, eps)
        self._budget.charge(
            Charge(
                self.block,
                "discrete_laplace",
                eps,
                sensitivity,
                Fraction(t, s),
                query.size,
                query.describe(),
            )
        )
        noisy = query.apply(self._data._read())
        variance = np.empty(query.size)
        for idx, (ti, si) in plan:
            noisy[idx] += self._noise.discrete_laplace(ti, si, variance[idx].size)
            variance[idx] = discrete_laplace_variance(ti, si)
        if weights is None:
            variance = float(variance[0])
        return Measurement(noisy, query, eps, Fraction(t, s), variance)

    def measure_real(self, query: Query, *, epsilon: object = None) -> Measurement:
        """Release a real-valued statistic by the lattice Laplace mechanism.

        The value is rounded to a power-of-two lattice ``g`` and ``g`` times exact
        discrete Laplace noise is added; the charged sensitivity includes the
        rounding (``sensitivity + changed * g``). See ``noise.lattice_parameters``.
        """
        eps = self._epsilon(epsilon)
        self._check(query)
        changed = min(query.changed * self._k, query.size)
        g, sensitivity, t, s = lattice_parameters(query.sensitivity * self._k, eps, changed)
        scale = g * Fraction(t, s)
        self._budget.charge(
            Charge(
                self.block, "lattice_laplace", eps, sensitivity, scale, query.size, query.describe()
            )
        )
        exact = np.asarray(query.apply_real(self._data._read()), dtype=np.float64)
        gf = float(g)
        noisy = np.rint(exact / gf) * gf + gf * self._noise.discrete_laplace(t, s, query.size)
        return Measurement(noisy, query, eps, scale, gf * gf * discrete_laplace_variance(t, s))

    def noisy_partition(
        self,
        family: str | TreeLayout,
        *,
        penalty: float | np.ndarray,
        epsilon: object = None,
        mode: str = "certified",
        order: np.ndarray | None = None,
    ) -> np.ndarray:
        """Choose a grouping by noisy L1 costs (DAWA's partition; Kellaris S1, S~, S1+H).

        Candidates: ``"all"`` intervals (S1), ``"pow2"`` intervals of power-of-two
        length at every start (S~), or the nodes of a :class:`TreeLayout` (S1+H).
        Each candidate ``B`` costs ``dev(B) + penalty + eta_B`` with ``dev`` the L1
        deviation around the mean; the cheapest partition (or tree cut) is returned;
        the noisy costs themselves are never released. ``penalty`` is a public
        constant per group (an array over tree nodes for a tree). With a public
        ``order`` (a permutation from an earlier release) the candidates are intervals
        of the reordered bins.

        Privacy (``mode="certified"``; methods framework A.2). One record changes
        ``dev(B)`` by at most ``D_B = 2(1 - 1/|B|)`` for every ``B`` containing it.
        Fix an output; let ``B*`` be its group containing the changed bin. Shifting
        only ``eta_{B*}`` by ``s = delta_{B*} - min_{B' != B*} delta_{B'}`` keeps that
        output optimal (every competitor has exactly one group containing the bin), so
        the output probabilities differ by at most ``exp(|s| / sigma_{B*})`` with
        ``|s| <= D_{B*} + D* + 2g`` (``D*`` the largest ``D_B``, ``g`` the lattice of the
        rounded costs). Noise of scale ``sigma_B = (D_B + D* + 2g)/epsilon`` (``"pow2"``,
        tree) or the largest such scale for every candidate (``"all"``) therefore gives
        epsilon-DP. With one scale the ``"all"`` noises are i.i.d., so each step of its
        DP only needs the minimum and first minimiser over the candidates; those are
        sampled exactly without drawing every noise (``partition.py``, kernel NOTES).
        Ties cannot break the argument: the dynamic programs break ties by a fixed order
        on partitions.

        ``mode="reference"`` reproduces the public DAWA code (scale
        ``(2 - 1/|B| - 1/N)/epsilon``, no noise on single bins, costs floored at
        ``penalty``), which is *not* epsilon-DP; its charge is marked uncertified
        and releases that use it are not private.
        """
        if mode not in ("certified", "reference"):
            raise InternalError(f"unknown partition noise mode {mode!r}")
        charged = self._epsilon(epsilon)
        eps = charged / self._k  # group privacy: one unit moves up to K records
        n = self.n
        if order is not None:
            order = _permutation(order, n)
        tree = family if isinstance(family, TreeLayout) else None
        if tree is None and family not in ("all", "pow2"):
            raise InternalError(f"unknown candidate family {family!r}")
        if tree is not None:
            longest = int((tree.hi - tree.lo).max())
        else:
            longest = n if family == "all" else 1 << (n.bit_length() - 1)
        d_star = 2 - Fraction(2, longest)
        g = Fraction(1, 1 << 40) if d_star == 0 else _lattice_step(d_star)
        certified = mode == "certified"
        top_scale = (2 * d_star + 2 * g) / eps if certified else Fraction(2) / eps
        self._budget.charge(
            Charge(
                self.block,
                "noisy_partition",
                charged,
                (2 * d_star + 2 * g) * self._k,
                top_scale,
                0,
                f"L1 partition over {family if tree is None else 'tree nodes'} (n={n}, {mode})",
                certified,
            )
        )
        x = self._data._read()
        if order is not None:
            x = x[order]
        if tree is not None:
            return self._tree_cut(x, tree, eps, g, d_star, penalty, certified)
        if family == "pow2":
            return self._pow2_partition(x, eps, g, d_star, penalty, certified)
        return self._full_partition(x, eps, g, d_star, penalty, certified)

    def _lattice_noise(self, scale: Fraction, g: Fraction, size: int) -> np.ndarray:
        """``size`` draws of g * DiscreteLaplace(scale / g), as floats."""
        t, s = rational_scale(scale / g, Fraction(1))
        return float(g) * self._noise.discrete_laplace(t, s, size).astype(np.float64)

    def _noisy_costs(self, dev, lengths, eps, g, d_star, penalty, certified, n):
        """dev (rounded to the lattice) + penalty + noise, per candidate length."""
        gf = float(g)
        out = np.rint(dev / gf) * gf
        for length in np.unique(lengths):
            idx = lengths == length
            d_b = 2 - Fraction(2, int(length))
            if certified:
                scale = (d_b + d_star + 2 * g) / eps
            elif length == 1:
                continue
            else:
                scale = (2 - Fraction(1, int(length)) - Fraction(1, n)) / eps
            out[idx] += self._lattice_noise(scale, g, int(idx.sum()))
        out += penalty
        return out if certified else np.maximum(out, penalty)

    def _pow2_partition(self, x, eps, g, d_star, penalty, certified):
        lengths, dev = pow2_deviations(x)
        fits = np.arange(self.n)[None, :] <= (self.n - lengths)[:, None]
        costs = np.full(dev.shape, np.inf)
        flat_len = np.broadcast_to(lengths[:, None], dev.shape)[fits]
        costs[fits] = self._noisy_costs(
            dev[fits], flat_len, eps, g, d_star, penalty, certified, self.n
        )
        return l1_partition_pow2(costs)

    def _full_partition(self, x, eps, g, d_star, penalty, certified):
        n = self.n
        scale = (2 * d_star + 2 * g) / eps
        gf = float(g)
        if certified:
            # Same noise law, sampled lazily (partition.py): only the pair (min, argmin)
            # of each right end is drawn, never all N (N + 1) / 2 noises.
            t, s = rational_scale(scale / g, Fraction(1))
            if np.ndim(penalty) == 0 and lazy_supported(t, s):
                return certified_full_partition(x, float(penalty), gf, t, s, self._noise.bits)
            return reference_full_partition(x, penalty, gf, t, s, self._noise)

        def to_costs(b0: int, dev: np.ndarray) -> np.ndarray:
            ends = np.arange(b0, b0 + dev.shape[0])[:, None]
            valid = np.arange(n)[None, :] <= ends
            out = np.full(dev.shape, np.inf)
            lengths = (ends - np.arange(n)[None, :] + 1)[valid]
            out[valid] = self._noisy_costs(dev[valid], lengths, eps, g, d_star, penalty, False, n)
            return out

        return l1_partition_streamed(x, to_costs, prefer_singleton=True)

    def _tree_cut(self, x, tree, eps, g, d_star, penalty, certified):
        prefix = np.concatenate(([0], np.cumsum(x)))
        dev = np.empty(tree.n_nodes)
        for level in range(tree.n_levels):
            sl = tree.level_slice(level)
            lo, hi = tree.lo[sl], tree.hi[sl]
            width = int((hi - lo).max())
            if width == 1:
                dev[sl] = 0.0
                continue
            windows = window_deviations(x, width)
            full = (hi - lo) == width
            dev[sl] = np.where(full, windows[np.minimum(lo, windows.size - 1)], np.nan)
            for k in np.flatnonzero(~full):  # the truncated right-edge node
                a, b = int(lo[k]), int(hi[k])
                seg = x[a:b].astype(np.float64)
                dev[sl.start + k] = np.abs(seg - (prefix[b] - prefix[a]) / (b - a)).sum()
        lengths = tree.hi - tree.lo
        costs = self._noisy_costs(dev, lengths, eps, g, d_star, penalty, certified, self.n)
        return best_cut(tree, costs)

    def _charge_selection(
        self, eps: Fraction, sensitivity: Fraction, size: int, what: str
    ) -> Fraction:
        """Charge ``eps`` for a selection of one-record sensitivity ``sensitivity``; the
        epsilon to run it at (``eps / K``: group privacy over a unit's K records)."""
        scaled = Fraction(sensitivity) * self._k
        self._budget.charge(
            Charge(self.block, "noisy_min", eps, scaled, 2 * scaled / eps, size, what)
        )
        return eps / self._k

    def structure_first(self, k: int, bound: int, *, epsilon: object = None) -> np.ndarray:
        """StructureFirst's ``k`` buckets, chosen privately (see ``selection``).

        ``bound`` is the public upper bound F on a count used for the scores'
        sensitivity ``2F + 1``. Returns the bucket starts.
        """
        eps = self._charge_selection(
            self._epsilon(epsilon),
            Fraction(2 * bound + 1),
            max(k - 1, 0),
            f"StructureFirst boundaries (k={k}, F={bound})",
        )
        return structure_first_boundaries(self._data._read(), k, bound, eps, self._noise)

    def hierarchical_partition(
        self, *, count_epsilon: Fraction, max_clusters: int, epsilon: object = None
    ) -> np.ndarray:
        """P-HPartition's clusters, chosen privately (see ``selection``)."""
        eps = self._charge_selection(
            self._epsilon(epsilon), Fraction(2), 0, f"P-HPartition (max {max_clusters})"
        )
        later = Fraction(count_epsilon) / self._k  # the counts' noise grows with K too
        return php_partition(self._data._read(), eps, later, max_clusters, self._noise)

    def fourier_size(self, *, noise_epsilon: Fraction, epsilon: object = None) -> int:
        """EFPA's number of kept Fourier coefficients, by report-noisy-min.

        Candidates ``K = 1, 3, 5, ...`` and ``N``; score ``||v[K:]||_2 + sqrt(2) K /
        noise_epsilon`` (discarded energy plus the expected L2 norm of the noise on
        ``K`` coefficients). One record moves ``v`` by a unit vector, so the data term
        has sensitivity 1.
        """
        n = self.n
        candidates = np.unique(np.append(np.arange(1, n + 1, 2), n))
        eps = self._charge_selection(self._epsilon(epsilon), Fraction(1), 1, f"EFPA size (n={n})")
        v = fourier_coefficients(self._data._read())
        tail = np.sqrt(np.append(np.cumsum((v * v)[::-1])[::-1], 0.0))
        later = float(noise_epsilon) / self._k  # the coefficients' noise grows with K too
        scores = tail[candidates] + math.sqrt(2.0) * candidates / later
        return int(candidates[report_noisy_min(scores, Fraction(1), eps, self._noise)])

    def close(self) -> None:
        self._open = False


def _permutation(order: object, n: int) -> np.ndarray:
    """``order`` as an int64 permutation of ``range(n)``, or InternalError."""
    arr = np.asarray(order)
    if arr.shape != (n,) or arr.dtype.kind not in "iu":
        raise InternalError(f"a bin order must be {n} integers; got shape {arr.shape}")
    arr = arr.astype(np.int64)
    seen = np.zeros(n, dtype=bool)
    inside = (arr >= 0) & (arr < n)
    seen[arr[inside]] = True
    if not (inside.all() and seen.all()):
        raise InternalError("a bin order must be a permutation of the bins")
    return arr


def _lattice_step(d_star: Fraction) -> Fraction:
    """Largest power of two at most ``d_star * 2**-21``: rounding costs to it inflates
    the coupling bound by a relative 2**-20 at most."""
    target = d_star / (1 << 21)
    step = Fraction(1)
    while step > target:
        step /= 2
    return step


class Block(Protocol):
    """What the runner needs of a block: a unique name, a share and a run method."""

    name: str
    share: Any

    def run(self, state: Any, view: PrivateView | None) -> Any: ...


def run_pipeline(
    data: ProtectedCounts,
    blocks: Sequence[Block],
    start: Callable[[dict[str, Fraction]], Any],
    *,
    epsilon: Fraction,
    budget: Accountant,
    noise: NoiseSource,
) -> tuple[Any, dict[str, float]]:
    """Run ``blocks`` in order; each spends at most its share of ``epsilon``.

    All shares are resolved (and may fail) before any block runs; ``start(plan)``
    builds the initial state from the public per-block budgets. A block with share
    zero gets ``view=None``. Returns the final state and seconds spent per block.
    """
    names = [b.name for b in blocks]
    if len(set(names)) != len(names):
        raise CompositionError(f"block names must be unique within a method; got {names}")
    plan = resolve_shares(epsilon, {b.name: b.share for b in blocks})
    state = start(dict(plan))
    timings: dict[str, float] = {}
    for block in blocks:
        eps = plan[block.name]
        view = None
        if eps > 0:
            view = PrivateView(data, budget.child(eps, label=block.name), noise, block.name)
        start = time.perf_counter()
        try:
            state = block.run(state, view)
        finally:
            if view is not None:
                view.close()
        timings[block.name] = time.perf_counter() - start
    return state, timings
