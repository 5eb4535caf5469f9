"""Workload-optimal weighted hierarchies: exact expected error and the best level budgets.

HDMM's principle (McKenna, Miklau, Hay, Machanavajjhala, VLDB 2018, §4: choose the
strategy that minimises the workload's expected squared error under least squares)
applied to the family of ``b``-ary trees that measure every node of level ``l`` with a
share ``w_l`` of epsilon. The family keeps the strategy implicit (``O(N)`` nodes, exact
GLS by two passes, :func:`dphist._numeric.tree.consistency`) so ``N = 10**6`` works; its
``H + 1`` shares and ``b`` are chosen by minimising the exact expected error.

The error is computed on the complete tree over ``b**H >= N`` bins (the bins past ``N``
padded, the workload restricted to the first ``N``). A unit of noise on a node ``u`` of
level ``l`` moves the GLS leaf estimates by a step function that is constant on
``u``'s subtree and on each ring "subtree of ``u``'s ``j``-th ancestor minus that of its
``(j-1)``-th" (the tree's symmetry), so the expected error is
``sum_u v_l f_u' G f_u`` with ``f_u`` a combination of ``l + 1`` nested interval
indicators and ``G`` the workload's Gram matrix; ``1_I' G 1_J`` of nested intervals has
a closed form, and summing it over the nodes of a level once per ``(b, H, N)`` leaves
``O(H**3)`` work per evaluation of the objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._jit import njit
from ..errors import ValidationError
from . import design_cache
from .tree import tree_levels

__all__ = ["WORKLOADS", "TreeDesign", "design_error", "optimal_design"]

WORKLOADS = ("all", "prefix")
NOISES = ("laplace", "gaussian")

# Fan-outs searched by :func:`optimal_design` (above 16 the optimum was never found on
# N = 2**8 .. 2**20; below it every fan-out is tried).
FANOUTS = tuple(range(2, 17))


@dataclass(frozen=True)
class TreeDesign:
    """A fan-out, per-level budget shares (root first, summing to 1) and the expected
    squared error per workload query at epsilon = 1 under Laplace noise."""

    fanout: int
    shares: tuple[float, ...]
    error: float


@lru_cache(maxsize=64)
def pair_sums(fanout: int, height: int, n: int, workload: str) -> np.ndarray:
    """``K[m, d]``: sum over the nodes ``w`` of level ``m`` of ``1_I(w)' G 1_I(a)``, ``a``
    the ``d``-th ancestor of ``w`` (intervals clipped to the first ``n`` bins).
    Time ``O(N H)`` for ``N`` bins, once per design problem (cached)."""
    if workload not in WORKLOADS:
        raise ValidationError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    return _pair_sums(fanout, height, n, workload == "prefix")


@njit(cache=True)
def _pair_sums(fanout, height, n, prefix):  # pragma: no cover - compiled
    out = np.zeros((height + 1, height + 1))
    for m in range(height + 1):
        span = fanout ** (height - m)
        for q in range(-(-n // span)):  # nodes that meet [0, n)
            s, e = q * span, min((q + 1) * span, n)
            p, big_span = q, span
            for d in range(m + 1):
                big_s, big_e = min(p * big_span, n), min((p + 1) * big_span, n)
                out[m, d] += _nested(s, e, big_s, big_e, n, prefix)
                p //= fanout
                big_span *= fanout
    return out


@njit(cache=True)
def _nested(s, e, big_s, big_e, n, prefix):  # pragma: no cover - compiled
    """``1_I' G 1_J`` for nested intervals ``I = [s, e)`` inside ``J = [S, E)`` within
    ``[0, n]``, ``G`` the Gram matrix of the ``n`` prefixes or of all ranges. With
    ``P_k = |I ∩ [0, k)|`` and ``Q_k = |J ∩ [0, k)|`` (ramps), the prefixes give
    ``sum_k P_k Q_k`` and all ranges ``(n + 1) sum_k P_k Q_k - sum_k P_k sum_k Q_k``."""
    a, big_a, d = float(e - s), float(big_e - big_s), float(s - big_s)
    t_a, t_big, t_in = a * (a + 1) / 2, big_a * (big_a + 1) / 2, (e - big_s) * (e - big_s + 1) / 2
    cross = a * (a + 1) * (2 * a + 1) / 6 + d * t_a + a * (t_big - t_in) + a * big_a * (n - big_e)
    if prefix:
        return cross
    return (n + 1) * cross - (t_a + a * (n - e)) * (t_big + big_a * (n - big_e))


def _responses(fanout: int, v: np.ndarray) -> list[np.ndarray]:
    """For each level ``l``, the coefficients ``alpha_j`` (``j = 0 .. l``) of the leaf
    response to a unit of noise on a node of level ``l``: ``sum_j alpha_j 1[j-th
    ancestor's subtree]`` (GLS on the complete tree; ``v`` the level variances)."""
    height = v.size - 1
    span = fanout ** np.arange(height, -1, -1, dtype=np.float64)
    prec = np.where(np.isinf(v), 0.0, 1.0 / v)
    s = np.empty(height + 1)
    s[height] = v[height]
    for m in range(height - 1, -1, -1):
        s[m] = 1.0 / (prec[m] + 1.0 / (fanout * s[m + 1]))
    out = []
    for lev in range(height + 1):
        dz = np.empty(lev + 1)
        dz[0] = s[lev] * prec[lev]
        for j in range(1, lev + 1):
            dz[j] = dz[j - 1] * s[lev - j] / (fanout * s[lev - j + 1])
        c = np.zeros(lev + 2)
        f = dz[lev]
        for j in range(lev, 0, -1):
            r = (f - dz[j - 1]) / fanout
            c[j] = r / span[lev - j + 1]
            f = dz[j - 1] + r
        c[0] = f / span[lev]
        out.append(c[:-1] - c[1:])
    return out


def level_variances(shares: np.ndarray, noise: str = "laplace") -> np.ndarray:
    """Noise variance of a level with budget share ``w`` at a unit budget: Laplace at
    epsilon = 1 gives ``2 / w**2`` (each level a sensitivity-1 partition); the Gaussian
    at rho = 1 gives ``1 / (2 w)`` (squared L2 sensitivity 1 per level). ``inf`` for 0."""
    if noise not in NOISES:
        raise ValidationError(f"noise must be one of {NOISES}, got {noise!r}")
    v = np.full(shares.shape, np.inf)
    if noise == "laplace":
        np.divide(2.0, shares**2, out=v, where=shares > 0)
    else:
        np.divide(0.5, shares, out=v, where=shares > 0)
    return v


def design_error(
    fanout: int, shares, n: int, workload: str = "all", noise: str = "laplace"
) -> float:
    """Expected squared error per workload query at a unit budget (epsilon = 1 for
    Laplace noise, rho = 1 for Gaussian: divide by epsilon**2 or rho) of the
    ``fanout``-ary tree over ``n`` bins with level ``shares`` (root first; 0 leaves a
    level unmeasured, not the leaves)."""
    shares = np.asarray(shares, dtype=np.float64)
    height = tree_levels(n, fanout) - 1
    if shares.shape != (height + 1,) or np.any(shares < 0) or not shares[-1] > 0:
        raise ValidationError(f"shares must be {height + 1} non-negative numbers, leaves > 0")
    v = level_variances(shares, noise)
    return _error(fanout, v, pair_sums(fanout, height, n, workload)) / _queries(n, workload)


def _error(fanout: int, v: np.ndarray, k: np.ndarray) -> float:
    return _error_of_forms(fanout, v, _forms(fanout, k))


def _forms(fanout: int, k: np.ndarray) -> list[np.ndarray]:
    """Per level ``l``, ``S[j, j'] = b**j K[l - j, j' - j]`` for ``j <= j'`` (``b**j``
    nodes of level ``l`` per ``j``-th ancestor), symmetric in ``(j, j')``: the quadratic
    form of a level's response (independent of the shares, so built once per fit)."""
    out = []
    for lev in range(k.shape[0]):
        j = np.arange(lev + 1)
        lo, hi = np.minimum.outer(j, j), np.maximum.outer(j, j)
        out.append(fanout**lo * k[lev - lo, hi - lo])
    return out


def _error_of_forms(fanout: int, v: np.ndarray, forms: list[np.ndarray]) -> float:
    total = 0.0
    for lev, alpha in enumerate(_responses(fanout, v)):
        if np.isinf(v[lev]):
            continue
        total += v[lev] * float(alpha @ forms[lev] @ alpha)
    return total


def _queries(n: int, workload: str) -> int:
    return n * (n + 1) // 2 if workload == "all" else n


# Shares below this are set to 0 (the level is not measured) and the rest rescaled.
_DROP = 1e-3


@lru_cache(maxsize=64)
def optimal_design(n: int, workload: str = "all", noise: str = "laplace") -> TreeDesign:
    """The fan-out in :data:`FANOUTS` and level shares minimising :func:`design_error`.

    Shares are a softmax of ``H + 1`` free parameters fitted by L-BFGS from uniform
    shares; shares under ``1e-3`` become 0 (a level left out: the family then holds
    trees of mixed fan-outs) and the uniform tree is kept when nothing beats it.
    ``noise="gaussian"`` designs for zCDP, where a level's variance falls as ``1/w``
    instead of ``1/w**2``. Depends on public facts only; kept in memory and on disk
    (:mod:`dphist._numeric.design_cache`): a stored design is used only when its key
    matches and its error recomputes exactly, so it equals a fresh fit bit for bit.
    """
    if workload not in WORKLOADS:
        raise ValidationError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    if noise not in NOISES:
        raise ValidationError(f"noise must be one of {NOISES}, got {noise!r}")
    if n < 2:
        return TreeDesign(2, (1.0,), float(level_variances(np.ones(1), noise)[0]))
    key = {"n": int(n), "workload": workload, "noise": noise}
    stored = _from_store(design_cache.read("opt-h", key), n, workload, noise)
    if stored is not None:
        return stored
    best = fit_design(n, workload, noise)
    design_cache.write("opt-h", key, _to_store(best))
    return best


def fit_design(n: int, workload: str, noise: str) -> TreeDesign:
    """:func:`optimal_design` fitted afresh (no cache), for ``n >= 2``."""
    best = None
    for b in FANOUTS:
        height = tree_levels(n, b) - 1
        if b > 2 and tree_levels(n, b - 1) - 1 == height:
            continue  # the same height with more padded bins (Qardaji et al.'s argument)
        uniform = np.full(height + 1, 1.0 / (height + 1))
        for shares in (uniform, _fit(b, height, n, workload, noise)):
            err = design_error(b, shares, n, workload, noise)
            if best is None or err < best.error:
                best = TreeDesign(b, tuple(float(x) for x in shares), err)
    assert best is not None
    return best


def _to_store(design: TreeDesign) -> dict:
    return {"fanout": design.fanout, "shares": [float(w).hex() for w in design.shares],
            "error": float(design.error).hex()}  # fmt: skip


def _from_store(value, n: int, workload: str, noise: str) -> TreeDesign | None:
    """The stored design if it is well formed and its error recomputes exactly."""
    try:
        fanout = value["fanout"]
        shares = tuple(float.fromhex(w) for w in value["shares"])
        error = np.float64(float.fromhex(value["error"]))
        if type(fanout) is not int or fanout not in FANOUTS or not np.isfinite(error):
            return None
        if not all(map(math.isfinite, shares)) or abs(math.fsum(shares) - 1.0) > 1e-9:
            return None
        if design_error(fanout, shares, n, workload, noise) != error:
            return None
    except (TypeError, KeyError, ValueError, ValidationError):
        return None
    return TreeDesign(fanout, shares, error)


def _fit(fanout: int, height: int, n: int, workload: str, noise: str) -> np.ndarray:
    forms = _forms(fanout, pair_sums(fanout, height, n, workload))

    def shares(theta: np.ndarray) -> np.ndarray:
        w = np.exp(theta - theta.max())
        return np.maximum(w / w.sum(), 1e-12)

    from scipy.optimize import minimize  # scipy on first use: not loaded by a publish

    res = minimize(
        lambda t: math.log(_error_of_forms(fanout, level_variances(shares(t), noise), forms)),
        np.zeros(height + 1),
        method="L-BFGS-B",
    )
    w = shares(res.x)
    w[w < _DROP] = 0.0
    return w / w.sum()
