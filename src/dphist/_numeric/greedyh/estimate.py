"""Least-squares group totals from a GreedyH strategy's noisy answers (GLS on its tree)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..._jit import njit
from ...errors import InputTypeError, ValidationError
from .strategy import GreedyHStrategy

# --------------------------------------------------------------------------- estimation


def _check_strategy(strategy: object) -> GreedyHStrategy:
    if not isinstance(strategy, GreedyHStrategy):
        raise InputTypeError(
            f"strategy must be a GreedyHStrategy from greedy_h, got {type(strategy).__name__}"
        )
    return strategy


def _float_vector(values: ArrayLike, name: str, length: int) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D numeric array: {exc}") from None
    if arr.shape != (length,):
        raise ValidationError(f"{name} must have shape ({length},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} contains NaN or infinite values")
    return arr


@njit(cache=True)
def _tree_gls(parent, weight, y):  # pragma: no cover - compiled
    """GLS estimate of every query's range total and its variance (unit answer noise).

    Query ``q`` observes its range total ``T_q`` as ``y_q / w_q`` with variance
    ``1 / w_q^2``. A virtual root (index ``Q``) without a measurement holds the
    top-level queries. Up, in reverse pre-order: ``z_v, s_v`` = estimate of ``T_v``
    from the answers in ``v``'s subtree and its variance; a childless query gives
    ``z = y/w``, ``s = 1/w^2``; otherwise, with ``S, W`` the sums of the children's
    ``z, s``, ``z = (w y + S/W) / (w^2 + 1/W)``, ``s = 1 / (w^2 + 1/W)``. Down, in
    pre-order, with ``g = s_u / W`` for child ``u`` of ``v``:
    ``est_u = z_u + g (est_v - S)`` and ``var_u = g (W - s_u) + g^2 var_v``, where
    ``W - s_u`` is summed over the siblings (no cancellation). This is exact GLS:
    given ``T_v`` the children's subtrees are independent of every other answer, and
    ``T_u`` given ``T_v`` and the subtree answers is normal with mean
    ``z_u + g (T_v - S)`` and variance ``s_u (1 - g)``. ``O(Q)``.
    """
    q = parent.size
    z = np.empty(q)
    s = np.empty(q)
    sum_z = np.zeros(q + 1)
    sum_s = np.zeros(q + 1)
    later = np.empty(q)  # summed s of the later siblings
    for i in range(q - 1, -1, -1):
        par = parent[i] if parent[i] >= 0 else q
        w = weight[i]
        if i == q - 1 or parent[i + 1] != i:
            z[i] = y[i] / w
            s[i] = 1.0 / (w * w)
        else:
            prec = 1.0 / sum_s[i]
            z[i] = (w * y[i] + prec * sum_z[i]) / (w * w + prec)
            s[i] = 1.0 / (w * w + prec)
        later[i] = sum_s[par]
        sum_z[par] += z[i]
        sum_s[par] += s[i]
    est = np.empty(q)
    var = np.empty(q)
    earlier = np.zeros(q + 1)  # summed s of the earlier children, per parent
    for i in range(q):
        par = parent[i]
        if par < 0:
            est[i] = z[i]
            var[i] = s[i]
        else:
            g = s[i] / sum_s[par]
            est[i] = z[i] + g * (est[par] - sum_z[par])
            var[i] = g * (earlier[par] + later[i]) + g * g * var[par]
            earlier[par] += s[i]
    return est, var


def _per_group(strategy: GreedyHStrategy, values: np.ndarray, power: int) -> np.ndarray:
    """Spread the values of the childless queries evenly over their groups."""
    parent = strategy._parent
    q = strategy.n_queries
    childless = np.ones(q, dtype=bool)
    childless[:-1] = parent[1:] != np.arange(q - 1)
    sizes = strategy.hi[childless] - strategy.lo[childless]
    return np.repeat(values[childless] / sizes.astype(np.float64) ** power, sizes)


def estimate_totals(strategy: GreedyHStrategy, answers: ArrayLike) -> np.ndarray:
    """Least-squares group totals from the strategy's answers.

    ``answers[k]`` is the (noisy) answer to query ``k`` of ``strategy``:
    ``weight[k] * sum_{lo[k] <= g < hi[k]} T_g`` plus noise of equal variance for all
    queries. Returns the least-squares solution ``(A^T A)^+ A^T y`` (Li et al., PVLDB
    2014, Section 4): generalised least squares on the strategy's tree, each query
    observing its range total with variance ``1 / weight^2`` (see
    :func:`total_variances`). Where ``A`` has full column rank this is the ordinary
    least-squares solution; inside a query without sub-queries that covers several
    groups (a GreedyH node kept whole) the query's total is spread evenly (the
    minimum-norm solution). ``O(#queries + |G|)`` time and memory.
    """
    st = _check_strategy(strategy)
    y = _float_vector(answers, "answers", st.n_queries)
    est, _ = _tree_gls(st._parent, st.weight, y)
    return _per_group(st, est, 1)


def total_variances(strategy: GreedyHStrategy) -> np.ndarray:
    """Variance of each group total of :func:`estimate_totals` per unit answer variance.

    The diagonal of ``(A^T A)^+``: multiply by the variance of one weighted answer
    (``2 / eps2**2`` for ``Lap(1/eps2)``). Inside a query kept whole over ``n``
    groups each group gets the query total's variance divided by ``n^2``, like its
    estimate the total divided by ``n``. ``O(#queries + |G|)``.
    """
    st = _check_strategy(strategy)
    _, var = _tree_gls(st._parent, st.weight, np.zeros(st.n_queries))
    return _per_group(st, var, 2)


def strategy_answers(strategy: GreedyHStrategy, totals: ArrayLike) -> np.ndarray:
    """Noiseless answers ``weight[k] * sum_{lo[k] <= g < hi[k]} totals[g]`` of every query.

    Computed from prefix sums of ``totals`` in ``O(#queries + |G|)``.
    """
    st = _check_strategy(strategy)
    t = _float_vector(totals, "totals", st.n_groups)
    prefix = np.concatenate(([0.0], np.cumsum(t)))
    return st.weight * (prefix[st.hi] - prefix[st.lo])
