"""A paper's claims as data, checked against a reproduction's results.

A :class:`Claim` names the statement, where the paper makes it, how we check it (the
measurement, stated in every report row) and a rule: a small function that reads the
reproduction's results and returns a :class:`Finding` (held or not, our figure, and
the reason with its numbers), or ``None`` when the run lacks what the claim is about
(e.g. a data set the quick mode leaves out). :func:`check` records every claim in a
:class:`~dphist.lab.reproduce.report.Report`, whose "why" column reads
``how; reproduced; ...`` or ``how; differs because ...``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .report import Report

__all__ = ["Claim", "Finding", "check"]


@dataclass(frozen=True)
class Finding:
    """What a rule found: whether the claim held, our figure, and why (with numbers).

    ``detail`` follows "reproduced;" or "differs because"; ``context`` (optional)
    comes before the verdict, e.g. the per-cell figures the rule read; ``paper``
    (optional) is the paper's own figure on the data compared, shown after the reference.
    """

    held: bool
    ours: str
    detail: str
    context: str = ""
    paper: str = ""


@dataclass(frozen=True)
class Claim:
    """One statement of a paper and the rule that checks it against our results."""

    statement: str
    reference: str
    how: str
    rule: Callable[[Any], Finding | None]

    def why(self, finding: Finding) -> str:
        parts = [self.how, finding.context] if finding.context else [self.how]
        verdict = "reproduced; " if finding.held else "differs because "
        return "; ".join(p for p in parts if p) + "; " + verdict + finding.detail


def check(report: Report, claims: Iterable[Claim], results: Any) -> None:
    """Apply every claim's rule to ``results`` and record the row in ``report``."""
    for claim in claims:
        finding = claim.rule(results)
        if finding is None:
            continue
        ref = f"{claim.reference} ({finding.paper})" if finding.paper else claim.reference
        report.claim(claim.statement, ref, finding.ours, finding.held, claim.why(finding))
