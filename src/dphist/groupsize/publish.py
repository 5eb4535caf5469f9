"""Publishing hierarchical group-size histograms (Kuo et al. 2018, Algorithm 1).

:func:`publish_group_sizes` seals the data in the privacy kernel, measures every
level with its share of epsilon (one charge per level; the regions of a level are
disjoint, so they compose in parallel), estimates every region (``estimators``), makes
the estimates consistent top-down (``consistency``) and returns a
:class:`GroupSizeRelease` with the per-region integer histograms and the ledger.
With ``rho=`` instead of ``epsilon=`` the release is rho-zCDP: every level gets
discrete Gaussian noise for its L2 sensitivity, and the consistency step weighs the
levels by their Gaussian variances.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .._kernel import (
    Accountant,
    Charge,
    GroupMeasurer,
    NoiseSource,
    PrivateGroupsMeasurer,
    ProtectedGroups,
    as_share,
    gaussian_noise_variance,
    noise_source,
    protect_groups,
    validate_epsilon,
)
from .._kernel.zcdp import approx_dp_epsilon
from ..errors import InputTypeError, ValidationError
from ..guarantee import group_guarantee, unit_terms
from .consistency import top_down
from .counts import consistent_counts
from .estimators import (
    DEFAULT_NORM,
    ESTIMATORS,
    cumulative_estimate,
    naive_estimate,
    ranked_estimate,
    trim,
)
from .hierarchy import GroupSizeData, Hierarchy

__all__ = [
    "DEFAULT_K",
    "Estimates",
    "GroupSizeRelease",
    "Plan",
    "estimate",
    "plan",
    "publish_group_sizes",
    "release",
    "seal",
]

PRIVATE_COUNTS = (
    "; the number of groups per region is private too: neighbours may also add or remove "
    "one empty group (a group with its entities is that many steps), and the released "
    "group counts are noisy"
)

# Public cap on group sizes for the truncated and cumulative measurements: sizes >= K
# are pooled in the last cell. A public choice, never derived from the data; 10**4
# covers households and most group quarters (the paper used 10**5, spec §10.1).
DEFAULT_K = 10_000


@dataclass(frozen=True, eq=False)
class GroupSizeRelease:
    """Private group-size histograms of every region of a hierarchy, and their provenance.

    ``histograms[r][i]`` = released number of groups of size ``i`` in region ``r``
    (``int64``, trailing zeros trimmed; the last possible size ``K`` means "K or more").
    ``estimates`` are the per-region estimates before consistency (also released
    values). ``groups`` are the group counts: public, or with ``group_counts ==
    "private"`` released privately (spec §7.9) with ``counts_epsilon`` of the budget.
    """

    hierarchy: Hierarchy
    histograms: tuple[np.ndarray, ...]
    estimates: tuple[np.ndarray, ...]
    groups: np.ndarray
    methods: tuple[str, ...]
    norms: tuple[str, ...]
    k: int
    m0: int
    merge: str
    level_epsilon: tuple[Fraction, ...]
    ledger: tuple[Charge, ...]
    private: bool
    guarantee: str
    timings: dict[str, float] = field(default_factory=dict)
    privacy_unit: str = "entity"
    max_records: int = 1
    definition: str = "pure"
    group_counts: str = "public"
    counts_epsilon: Fraction = Fraction(0)

    @property
    def epsilon(self) -> Fraction:
        """Total budget spent (exact): epsilon, or rho when ``definition == "zcdp"``."""
        return sum((c.epsilon for c in self.ledger), Fraction(0))

    def epsilon_at(self, delta: float) -> float:
        """The epsilon of the (epsilon, delta)-DP this release implies: its epsilon under
        pure DP; under zCDP the tight conversion of its rho (Canonne, Kamath, Steinke
        2020, Corollary 13)."""
        if self.definition == "zcdp":
            return approx_dp_epsilon(float(self.epsilon), delta)
        return float(self.epsilon)

    def histogram(self, node: int, length: int | None = None) -> np.ndarray:
        """Region ``node``'s histogram, zero-padded to ``length`` sizes if given."""
        h = self.histograms[int(node)]
        if length is None:
            return h.copy()
        if length < h.shape[0]:
            raise ValidationError(f"length must be at least {h.shape[0]}")
        out = np.zeros(int(length), dtype=np.int64)
        out[: h.shape[0]] = h
        return out

    def level(self, level: int) -> list[np.ndarray]:
        """Histograms of the regions of one level, in node order."""
        return [self.histograms[r] for r in self.hierarchy.level_nodes(level)]

    def __repr__(self) -> str:
        mode = "private" if self.private else "NOT PRIVATE (seeded)"
        name = "rho" if self.definition == "zcdp" else "epsilon"
        return (
            f"GroupSizeRelease(regions={len(self.histograms)}, methods={list(self.methods)}, "
            f"{name}={float(self.epsilon):g}, {mode})"
        )


# ------------------------------------------------------------------ parameters


def _per_level(value: object, n_levels: int, name: str) -> list:
    if isinstance(value, str) or value is None:
        return [value] * n_levels
    if isinstance(value, Sequence):
        if len(value) != n_levels:
            raise ValidationError(f"{name} must have one entry per level ({n_levels})")
        return list(value)
    raise InputTypeError(f"{name} must be a string or a sequence of strings (one per level)")


@dataclass(frozen=True, eq=False)
class Plan:
    """A group-size release's public parameters, all checked before anything is read."""

    data: GroupSizeData
    epsilon: Fraction
    methods: tuple[str, ...]
    norms: tuple[str, ...]
    levels: tuple[Fraction, ...]
    k: int
    m0: int
    merge: str
    definition: str = "pure"
    counts: tuple[Fraction, ...] = ()  # per level, when the group counts are private

    @property
    def private_counts(self) -> bool:
        return bool(self.counts)


def plan(
    data: object,
    *,
    epsilon: object = None,
    rho: object = None,
    method: str | Sequence[str] = "cumulative",
    K: int = DEFAULT_K,
    m0: int = 0,
    norm: str | Sequence[str] | None = None,
    level_epsilon: Sequence[object] | None = None,
    merge: str = "weighted",
    group_counts_share: object = None,
) -> Plan:
    """Validate every public parameter of :func:`publish_group_sizes` (same meaning)."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], Hierarchy):
        data = GroupSizeData.from_leaf_sizes(*data)
    if not isinstance(data, GroupSizeData):
        raise InputTypeError("data must be a GroupSizeData (or a (Hierarchy, per-leaf sizes) pair)")
    n_levels = data.hierarchy.n_levels
    if (epsilon is None) == (rho is None):
        raise ValidationError("give either epsilon= (pure DP) or rho= (zCDP), exactly one")
    definition = "pure" if rho is None else "zcdp"
    eps = validate_epsilon(epsilon) if rho is None else validate_epsilon(rho, name="rho")
    methods = _per_level(method, n_levels, "method")
    for m in methods:
        if m not in ESTIMATORS:
            raise ValidationError(
                f"method must be one of {', '.join(map(repr, ESTIMATORS))}; got {m!r}"
            )
    norms = [
        DEFAULT_NORM[m] if n is None else n
        for m, n in zip(methods, _per_level(norm, n_levels, "norm"), strict=True)
    ]
    for n in norms:
        if n not in ("l1", "l2"):
            raise ValidationError(f"norm must be 'l1' or 'l2'; got {n!r}")
    counts: tuple[Fraction, ...] = ()
    if group_counts_share is not None:
        share = as_share(group_counts_share, name="group_counts_share")
        if not 0 < share < 1:
            raise ValidationError("group_counts_share must lie strictly between 0 and 1")
        if set(methods) != {"cumulative"}:
            raise ValidationError(
                "private group counts need the cumulative method at every level (the ranked "
                "and naive measurements depend on the number of groups)"
            )
        counts = (eps * share / n_levels,) * n_levels
    levels = _level_epsilons(level_epsilon, eps - sum(counts, Fraction(0)), n_levels)
    k, m0 = _size_bounds(K, m0)
    if merge not in ("weighted", "mean"):
        raise ValidationError(f"merge must be 'weighted' or 'mean'; got {merge!r}")
    return Plan(
        data, eps, tuple(methods), tuple(norms), tuple(levels), k, m0, merge, definition, counts
    )


def _level_epsilons(level_epsilon: object, eps: Fraction, n_levels: int) -> list[Fraction]:
    if level_epsilon is None:
        return [eps / n_levels] * n_levels
    if isinstance(level_epsilon, str) or not isinstance(level_epsilon, Sequence):
        raise InputTypeError("level_epsilon must be a sequence of numbers (one per level)")
    if len(level_epsilon) != n_levels:
        raise ValidationError(f"level_epsilon must have one entry per level ({n_levels})")
    levels = [validate_epsilon(e, name="level_epsilon") for e in level_epsilon]
    if sum(levels, Fraction(0)) > eps:
        raise ValidationError(
            "level_epsilon must add up to at most epsilon (less the group counts' share)"
        )
    return levels


def _size_bounds(k: object, m0: object) -> tuple[int, int]:
    for name, v in (("K", k), ("m0", m0)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise InputTypeError(f"{name} must be an integer (a public parameter)")
    k, m0 = int(k), int(m0)
    if m0 < 0:
        raise ValidationError(f"m0 must be >= 0; got {m0}")
    if k <= m0:
        raise ValidationError(f"K must exceed m0; got K={k}, m0={m0}")
    return k, m0


def _estimate_level(measurer, groups, level, method, norm, eps, k, m0, block):
    """Measure one level (one charge) and estimate each of its regions with ``groups``
    groups each (public counts, or private ones: then by the measurement of
    :class:`~dphist._kernel.group_counts.PrivateGroupsMeasurer`, ``Hc = G - R``)."""
    out = {}
    if isinstance(measurer, PrivateGroupsMeasurer):
        for r, noisy in measurer.reverse_cumulative(level, k, m0, epsilon=eps, block=block):
            hc = int(groups[r]) - noisy
            out[r] = trim(cumulative_estimate(hc, int(groups[r]), k=k, norm=norm, m0=m0))
    elif method == "ranked":
        for r, noisy in measurer.ranked(level, epsilon=eps, block=block):
            out[r] = trim(ranked_estimate(noisy, norm=norm, m0=m0, k=k))
    elif method == "cumulative":
        for r, noisy in measurer.cumulative(level, k, m0, epsilon=eps, block=block):
            out[r] = trim(cumulative_estimate(noisy, int(groups[r]), k=k, norm=norm, m0=m0))
    else:
        for r, noisy in measurer.truncated(level, k, epsilon=eps, block=block):
            # sizes below the public minimum m0 are known to be empty: fit the rest
            h = naive_estimate(noisy[m0:], int(groups[r]))
            out[r] = trim(np.concatenate((np.zeros(m0, dtype=np.int64), h)))
    return out


@dataclass(frozen=True, eq=False)
class Estimates:
    """One run of a plan: per-region estimates, the consistent histograms, timings."""

    estimates: list[np.ndarray]
    histograms: list[np.ndarray]
    timings: dict[str, float]
    groups: np.ndarray


def _private_counts(plan: Plan, measurer: PrivateGroupsMeasurer, tag: str) -> np.ndarray:
    """Every region's number of groups, released (one charge per level) and made whole,
    non-negative and consistent (:func:`~dphist.groupsize.counts.consistent_counts`)."""
    h = plan.data.hierarchy
    noisy = np.zeros(h.n_nodes)
    for level, eps in enumerate(plan.counts):
        block = f"{tag}level {level} group counts"
        for r, value in measurer.group_counts(level, epsilon=eps, block=block):
            noisy[r] = float(value[0])
    return consistent_counts(h, noisy)


def estimate(plan: Plan, measurer: GroupMeasurer, *, tag: str = "") -> Estimates:
    """Measure every level of ``plan`` through ``measurer`` (one charge per level, and
    one more per level for private group counts), estimate every region and make the
    estimates consistent top-down."""
    h = plan.data.hierarchy
    estimates: dict[int, np.ndarray] = {}
    timings = {}
    if plan.private_counts:
        assert isinstance(measurer, PrivateGroupsMeasurer)
        t0 = time.perf_counter()
        groups = _private_counts(plan, measurer, tag)
        timings["group counts"] = time.perf_counter() - t0
    else:
        groups = measurer.data.groups
    for level in range(h.n_levels):
        t0 = time.perf_counter()
        method = plan.methods[level]
        estimates.update(
            _estimate_level(
                measurer, groups, level, method, plan.norms[level], plan.levels[level],
                plan.k, plan.m0, f"{tag}level {level} ({method})",
            )
        )  # fmt: skip
        timings[f"level {level}"] = time.perf_counter() - t0
    est = [estimates[r] for r in range(h.n_nodes)]
    t0 = time.perf_counter()
    cells = None
    if plan.definition == "zcdp":  # the Gaussian variance of one cell of each level
        k2 = measurer.data.max_records**2
        cells = [
            gaussian_noise_variance(Fraction(2 if m == "naive" else 1) * k2, rho)
            for m, rho in zip(plan.methods, plan.levels, strict=True)
        ]
    final = top_down(
        h, est, plan.methods, [float(e) for e in plan.levels], rule=plan.merge,
        cell_variance=cells,
    )  # fmt: skip
    timings["consistency"] = time.perf_counter() - t0
    return Estimates(est, final, timings, np.array(groups, dtype=np.int64))


def measurer_for(plan: Plan, budget: Accountant, noise: NoiseSource, max_records: int = 1):
    """A :class:`GroupMeasurer` of ``plan``'s sealed data under its definition (one that
    never reads the number of groups but to measure it, when that is private)."""
    kind = PrivateGroupsMeasurer if plan.private_counts else GroupMeasurer
    return kind(seal(plan.data, max_records), budget, noise, definition=plan.definition)


def seal(data: GroupSizeData, max_records: int = 1) -> ProtectedGroups:
    """The group sizes sealed in the kernel (``max_records``: records per privacy unit)."""
    return protect_groups(
        data.hierarchy.parent, data.offsets, data.sizes, data.counts, max_records=max_records
    )


def release(
    plan: Plan, run: Estimates, ledger: Sequence[Charge], noise: NoiseSource,
    unit: tuple[str, int] = ("entity", 1),
) -> GroupSizeRelease:  # fmt: skip
    """The :class:`GroupSizeRelease` of one run of ``plan`` with its ledger."""
    private = noise.private
    guarantee = group_guarantee(private, *unit, plan.definition)
    if plan.private_counts and private:
        guarantee += PRIVATE_COUNTS
    return GroupSizeRelease(
        hierarchy=plan.data.hierarchy,
        histograms=tuple(run.histograms),
        estimates=tuple(run.estimates),
        groups=run.groups.copy(),
        methods=plan.methods,
        norms=plan.norms,
        k=plan.k,
        m0=plan.m0,
        merge=plan.merge,
        level_epsilon=plan.levels,
        ledger=tuple(ledger),
        private=private,
        guarantee=guarantee,
        timings=run.timings,
        privacy_unit=unit[0],
        max_records=unit[1],
        definition=plan.definition,
        group_counts="private" if plan.private_counts else "public",
        counts_epsilon=sum(plan.counts, Fraction(0)),
    )


def publish_group_sizes(
    data: GroupSizeData,
    *,
    epsilon: object = None,
    rho: object = None,
    method: str | Sequence[str] = "cumulative",
    K: int = DEFAULT_K,
    m0: int = 0,
    norm: str | Sequence[str] | None = None,
    level_epsilon: Sequence[object] | None = None,
    merge: str = "weighted",
    rng: object = None,
    privacy_unit: str | None = None,
    max_records: int = 1,
    group_counts_share: object = None,
) -> GroupSizeRelease:
    """Release every region's group-size histogram under epsilon-DP or rho-zCDP (spec §7.2).

    Parameters
    ----------
    data : GroupSizeData
        The hierarchy and the groups' sizes (or a ``(Hierarchy, per-leaf sizes)`` pair).
    epsilon : number
        Total budget, read exactly as written (pure epsilon-DP).
    rho : number, instead of ``epsilon``
        Total budget of zero-concentrated DP: every level gets exact discrete Gaussian
        noise for its squared L2 sensitivity (2 for naive, 1 otherwise) and rho's add
        up over the levels; ``level_epsilon`` then holds a rho per level.
    method : "cumulative", "ranked" or "naive", or one per level (root first)
        Estimator per level (spec §6.3, §6.2, §6.1).
    K : int
        Public cap for the cumulative and naive measurements (default ``DEFAULT_K``);
        sizes ``>= K`` are released as ``K``. Never taken from the data.
    m0 : int
        Public minimum group size (e.g. 1 for households): cells below it are not
        measured and a smaller group is reported at size ``m0`` (never refused).
    norm : "l1", "l2", or one per level
        Isotonic-regression norm; default l1 for cumulative, l2 for ranked.
    level_epsilon : sequence of numbers, optional
        Budget per level (default ``epsilon / levels`` each, exactly).
    merge : "weighted" or "mean"
        Inverse-variance merge (the method) or plain averaging (the baseline).
    group_counts_share : number in (0, 1), optional
        Treat the number of groups per region as private too (spec §7.9): this share
        of the budget releases noisy group counts (split evenly over the levels), made
        whole, non-negative and consistent (:mod:`dphist.groupsize.counts`), which then
        stand for ``G_r``; the sizes are measured as groups of size ``>= i``, which no
        empty group changes (:mod:`dphist._kernel.group_counts`). Cumulative method only.
        Neighbours may then also add or remove one empty group. Default: counts public,
        as in the paper.
    rng : None, int or numpy.random.Generator
        None: secure noise. A seed or Generator: reproducible, ``private=False``.
    privacy_unit, max_records : str or None, int
        When one unit (a person) may contribute up to ``max_records`` entity records
        (already bounded, e.g. by :func:`dphist.ingest.read_group_tables`), its name and
        that bound: every sensitivity is multiplied by it.

    Privacy: each level's measurement is (its epsilon)-DP, or (its rho)-zCDP, for
    neighbours differing by one entity (parallel composition over the disjoint regions
    of the level; see ``dphist._kernel.groups``); levels compose sequentially, the rest
    is post-processing. The ledger holds one exact charge per level.
    """
    p = plan(
        data, epsilon=epsilon, rho=rho, method=method, K=K, m0=m0, norm=norm,
        level_epsilon=level_epsilon, merge=merge, group_counts_share=group_counts_share,
    )  # fmt: skip
    noise = noise_source(rng)
    unit, bound = unit_terms(privacy_unit, max_records)
    unit = "entity" if unit == "record" else unit
    budget = Accountant(p.epsilon, label="group sizes")
    measurer = measurer_for(p, budget, noise, bound)
    return release(p, estimate(p, measurer), budget.ledger, noise, (unit, bound))
