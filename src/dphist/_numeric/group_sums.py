"""Sums of per-group statistics over ranges of bins, for groups scattered over the bins.

A grouping release (bins labelled by group, each group published as one noisy total
spread over its bins) answers a range with, for each group ``g``, the ``c_g`` of its
``s_g`` bins inside the range. Error terms of such answers are sums over groups of
polynomials in ``c_g``; when the groups are not contiguous runs (after a sort, a
clustering) no tree structure applies, and :func:`group_range_sums` sums them for
many ranges at once with Mo's ordering. Post-processing of public structure: no data,
no noise.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .compact import label_sizes, own_labels

__all__ = ["group_range_sums", "runs_in_order"]


@njit(cache=True)
def runs_in_order(labels):  # pragma: no cover - compiled
    """True when ``labels`` numbers contiguous runs of bins 0, 1, 2, ... from the left
    (each group one run, groups by first bin): one pass, no temporary arrays."""
    if labels.size == 0 or labels[0] != 0:
        return False
    for i in range(1, labels.size):
        step = labels[i] - labels[i - 1]
        if step != 0 and step != 1:
            return False
    return True


def group_range_sums(
    labels: np.ndarray,
    quad: np.ndarray,
    mixed: np.ndarray,
    bound: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    quart: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each range, with ``c_g`` the number of its bins in group ``g`` (size
    ``s_g``): ``sum_g quad_g c_g**2 + mixed_g c_g (s_g - c_g) + quart_g c_g**4`` and
    ``sum_g bound_g [0 < c_g < s_g]`` (the groups it cuts). Groups may be scattered
    over the bins. Mo's ordering: ``O((n + Q) sqrt(n))`` for ``Q`` ranges.
    """
    labels = own_labels(labels)
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    sizes = label_sizes(labels)
    block = max(1, int(labels.size / max(1.0, np.sqrt(max(lo.size, 1)))))
    key = (lo // block) * 2 * (labels.size + 1) + np.where(
        (lo // block) % 2 == 0, hi, labels.size - hi
    )
    order = np.argsort(key, kind="stable")
    coef = np.stack([quad, mixed, np.zeros(sizes.size) if quart is None else quart, bound]).astype(
        np.float64
    )
    return _mo(labels, sizes, np.ascontiguousarray(coef), lo, hi, order)


@njit(cache=True)
def _mo(labels, sizes, coef, qlo, qhi, order):  # pragma: no cover - compiled
    count = np.zeros(sizes.size, dtype=np.int64)
    out_q = np.empty(qlo.size)
    out_b = np.empty(qlo.size)
    sq = 0.0
    sb = 0.0
    cur_lo, cur_hi = 0, 0
    for t in range(order.size):
        q = order[t]
        a, b = qlo[q], qhi[q]
        while cur_hi < b:
            sq, sb = _step(labels[cur_hi], 1, count, sizes, coef, sq, sb)
            cur_hi += 1
        while cur_lo > a:
            cur_lo -= 1
            sq, sb = _step(labels[cur_lo], 1, count, sizes, coef, sq, sb)
        while cur_hi > b:
            cur_hi -= 1
            sq, sb = _step(labels[cur_hi], -1, count, sizes, coef, sq, sb)
        while cur_lo < a:
            sq, sb = _step(labels[cur_lo], -1, count, sizes, coef, sq, sb)
            cur_lo += 1
        out_q[q] = max(sq, 0.0)
        out_b[q] = max(sb, 0.0)
    return out_q, out_b


@njit(cache=True)
def _step(g, delta, count, sizes, coef, sq, sb):  # pragma: no cover - compiled
    c, s = count[g], sizes[g]
    before_b = coef[3, g] if 0 < c < s else 0.0
    x = float(c)
    before_q = coef[0, g] * x * x + coef[1, g] * x * (s - x) + coef[2, g] * x * x * x * x
    c += delta
    count[g] = c
    after_b = coef[3, g] if 0 < c < s else 0.0
    x = float(c)
    after_q = coef[0, g] * x * x + coef[1, g] * x * (s - x) + coef[2, g] * x * x * x * x
    return sq + after_q - before_q, sb + after_b - before_b
