"""The stream's ledger: each window's own charge and the total over the ``w`` windows
ending there, enforced before anything is read.

w-event privacy (Kellaris, Papadopoulos, Xiao, Papadias, PVLDB 2014, Def. 4 and
Theorem 3): a stream of window mechanisms, each ``eps_i``-DP on its own window and
drawing fresh randomness, protects any sequence of events (of one record or one privacy
unit) within ``w`` consecutive windows with ``eps`` whenever every ``w`` consecutive
windows satisfy ``eps_{i-w+1} + ... + eps_i <= eps``. :class:`SlidingLedger` holds that
invariant: window ``i``'s kernel accountant gets the cap ``eps - (eps_{i-w+1} + ... +
eps_{i-1})``, so a mechanism that asks for more is refused by the kernel before it reads
the window. With ``w = 1`` this is the event-level periodic release: each window at
most ``eps``, windows composing in parallel (a record lies in one window).

Only the last ``w - 1`` charges are kept: memory does not grow with the stream.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .._kernel import Accountant, Charge
from .._kernel.budget import exact_text
from ..errors import ValidationError

__all__ = ["SlidingLedger", "WindowEntry", "check_w"]


def check_w(w: object) -> int:
    """The window count ``w`` of w-event privacy: an integer >= 1."""
    if isinstance(w, bool) or not isinstance(w, int) or w < 1:
        raise ValidationError(f"w (windows protected together) must be an integer >= 1; got {w!r}")
    return int(w)


@dataclass(frozen=True)
class WindowEntry:
    """One line of the stream's ledger.

    ``spent`` is what window ``index`` itself charged; ``span`` the total over the ``w``
    windows ending at it (for a continual counter: the one charge of its horizon, which
    covers every window). ``unit`` is "epsilon" or "rho".
    """

    index: int
    start: float | None
    end: float | None
    kind: str
    charges: tuple[Charge, ...]
    spent: Fraction
    span: Fraction
    cap: Fraction
    w: int
    unit: str
    source: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: exact amounts as text beside floats."""
        return {
            "window": self.index,
            "start": self.start,
            "end": self.end,
            "kind": self.kind,
            "repeats": self.source,
            "unit": self.unit,
            "spent": float(self.spent),
            "spent_exact": exact_text(self.spent),
            "w": self.w,
            "span_total": float(self.span),
            "span_total_exact": exact_text(self.span),
            "cap": exact_text(self.cap),
            "charges": [c.to_dict() for c in self.charges],
        }


class SlidingLedger:
    """Per-window caps so that any ``w`` consecutive windows spend at most ``cap``."""

    def __init__(self, cap: Fraction, w: int, unit: str = "epsilon"):
        self.cap = Fraction(cap)
        self.w = check_w(w)
        self.unit = unit
        self._recent: deque[Fraction] = deque(maxlen=self.w - 1 if self.w > 1 else 0)
        self._next = 0

    @property
    def next_window(self) -> int:
        return self._next

    def available(self) -> Fraction:
        """What the next window may spend: the cap less the ``w - 1`` windows before it."""
        return self.cap - sum(self._recent, Fraction(0))

    def account(self) -> Accountant:
        """The kernel accountant of the next window, capped by :meth:`available`."""
        return Accountant(self.available(), label=f"window {self._next}")

    def state(self) -> dict[str, Any]:
        """JSON-safe: the next window and the charges of the ``w - 1`` before it."""
        return {"next": self._next, "recent": [str(x) for x in self._recent]}

    def restore(self, state: dict[str, Any]) -> None:
        self._next = int(state["next"])
        self._recent.clear()
        self._recent.extend(Fraction(x) for x in state["recent"])

    def close_unknown(self, bound: Fraction, **fields: Any) -> WindowEntry:
        """Record the next window at ``bound``, the most it can have charged (a window
        interrupted mid-release: what it spent is not known)."""
        bound = min(Fraction(bound), self.available())
        entry = WindowEntry(
            self._next, charges=(), spent=bound, span=bound + sum(self._recent, Fraction(0)),
            cap=self.cap, w=self.w, unit=self.unit, **fields,
        )  # fmt: skip
        if self.w > 1:
            self._recent.append(bound)
        self._next += 1
        return entry

    def close(self, account: Accountant, **fields: Any) -> WindowEntry:
        """Record the next window's charges (all of ``account``'s ledger) and return its line."""
        charges = account.ledger
        spent = sum((c.epsilon for c in charges), Fraction(0))
        span = spent + sum(self._recent, Fraction(0))
        if span > self.cap:  # the accountant's cap makes this impossible
            raise ValidationError(
                f"window {self._next} would bring {self.w} windows to {exact_text(span)} > "
                f"{exact_text(self.cap)}"
            )
        entry = WindowEntry(
            self._next, charges=charges, spent=spent, span=span, cap=self.cap, w=self.w,
            unit=self.unit, **fields,
        )  # fmt: skip
        if self.w > 1:
            self._recent.append(spent)
        self._next += 1
        return entry
