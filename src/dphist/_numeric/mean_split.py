"""Typed helpers of the deviation kernels (:mod:`dphist._numeric.deviation`): the
mean of a bucket split so that integer input keeps its integer part exact, the last
step from the count and sum of the low values to ``dev``, and a sentinel above every
mean. Each is a numba overload chosen by the input's dtype (integer or float); the
Python bodies are never run.
"""

from __future__ import annotations

import numpy as np

from .._jit import on_load

__all__ = ["above_all", "dev_from_low", "mean_split"]

_EXACT_NUM = 2.0**51  # integers below this are exact in float64, even doubled


def mean_split(total, length):  # pragma: no cover - only the jitted overload is used
    raise NotImplementedError


def dev_from_low(c, s, q, r, length):  # pragma: no cover - only the jitted overload is used
    raise NotImplementedError


def above_all(vals):  # pragma: no cover - only the jitted overload is used
    raise NotImplementedError


def _register_overloads() -> None:
    """The typed forms of the three helpers above (numba needed: run on load)."""
    from numba import types
    from numba.extending import overload

    @overload(above_all)
    def _ol_sentinel(vals):
        """A value above every mean: pads the sorted distinct values."""
        if isinstance(vals.dtype, types.Integer):
            return lambda vals: np.iinfo(np.int64).max
        return lambda vals: np.inf

    @overload(mean_split)
    def _ol_mean_split(total, length):
        if isinstance(total, types.Integer):

            def impl(total, length):
                q = total // length  # floor division, also for negative totals
                return q, total - q * length

            return impl

        def impl(total, length):
            return total / length, 0.0

        return impl

    @overload(dev_from_low)
    def _ol_finish(c, s, q, r, length):
        """dev from the count c and sum s of the values <= mean = q + r/length."""
        if isinstance(s, types.Integer):

            def impl(c, s, q, r, length):
                a = c * q - s  # exact: sum over the low values of (q - x_i) >= 0
                fl = float(length)
                if float(a) * fl + fl * fl < _EXACT_NUM:
                    # length * dev / 2 = a * length + c * r (c * r < length**2) is an
                    # integer below 2**51: one correctly rounded division.
                    return 2.0 * (a * length + c * r) / length
                return 2.0 * (a + (c * r) / length)

            return impl

        def impl(c, s, q, r, length):
            return 2.0 * (c * q - s)

        return impl


on_load(_register_overloads)
