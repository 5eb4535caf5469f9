"""A Markdown report of a reproduction: settings, claims, sections, tables, figures.

A :class:`Report` collects content in order and :meth:`Report.write` renders it to
``report.md`` in a folder, atomically. The claim table compares a paper's statements
with our figures; each claim gets a verdict, ``"reproduced"`` or ``"differs"``, and
a reason.

Example
-------
>>> from dphist.lab.reproduce.report import Report
>>> rep = Report("Demo", settings={"trials": 2, "epsilons": [0.1, 1.0], "seed": 0})
>>> rep.section("Setting", "Two methods on a toy histogram.")
>>> rep.table([{"method": "identity", "mse": 2.0}, {"method": "uniform", "mse": 9.5}])
>>> rep.claim("identity beats uniform", "Fig. 1", "2.0 vs 9.5", True, "lower MSE")
>>> "| identity beats uniform | Fig. 1 | 2.0 vs 9.5 | reproduced | lower MSE |" in rep.render()
True
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._io import atomic_write
from ...errors import ValidationError

__all__ = ["DIFFERS", "REPRODUCED", "Report", "Verdict", "claim_lines", "markdown_table"]

REPRODUCED = "reproduced"
DIFFERS = "differs"


def _cell(value: Any, floatfmt: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return format(value, floatfmt)
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    floatfmt: str = ".4g",
) -> str:
    """Rows (dicts) as a GitHub-flavoured Markdown table; columns default to the first row's.

    Floats use ``floatfmt``, NaN shows as "–", and ``|`` in cells is escaped.
    """
    if not rows:
        return "_(no rows)_\n"
    cols = list(columns) if columns is not None else list(rows[0])
    head = "| " + " | ".join(_cell(c, floatfmt) for c in cols) + " |"
    rule = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(_cell(r.get(c), floatfmt) for c in cols) + " |" for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


@dataclass(frozen=True)
class Verdict:
    """One row of the claim table: a statement of the paper checked against our run."""

    claim: str
    paper: str
    ours: str
    verdict: str
    why: str


class Report:
    """Collects the parts of a reproduction report and writes them as Markdown.

    Parameters
    ----------
    title : str
        Heading of the report (e.g. the paper's short citation).
    settings : mapping, optional
        Run settings shown at the top (trials, epsilons, seed, ...). The dphist
        version, Python version and the run time are added when writing.
    """

    def __init__(self, title: str, *, settings: Mapping[str, Any] | None = None):
        self.title = title
        self.settings: dict[str, Any] = dict(settings or {})
        self.claims: list[Verdict] = []
        self._blocks: list[tuple[str, Any]] = []
        self._started = time.perf_counter()
        self._figures: list[Path] = []

    # ------------------------------------------------------------------ content

    def section(self, heading: str, text: str = "") -> None:
        """Start a section (``##`` heading) with optional Markdown text."""
        self._blocks.append(("section", (heading, text)))

    def text(self, markdown: str) -> None:
        """Append a paragraph of Markdown."""
        self._blocks.append(("text", markdown))

    def table(
        self,
        rows: Sequence[Mapping[str, Any]],
        columns: Sequence[str] | None = None,
        *,
        caption: str | None = None,
        floatfmt: str = ".4g",
    ) -> None:
        """Append rows as a Markdown table (see :func:`markdown_table`)."""
        self._blocks.append(("table", (list(rows), columns, caption, floatfmt)))

    def figure(self, path: str | os.PathLike[str], caption: str = "") -> None:
        """Append an image; its link is made relative to the folder the report is written to."""
        self._blocks.append(("figure", (Path(path), caption)))

    def claim(self, claim: str, paper: str, ours: str, verdict: bool | str, why: str) -> None:
        """Add a row to the claim table.

        ``verdict`` is ``True``/``"reproduced"`` or ``False``/``"differs"``.
        """
        if isinstance(verdict, bool):
            verdict = REPRODUCED if verdict else DIFFERS
        if verdict not in (REPRODUCED, DIFFERS):
            raise ValidationError(
                f"verdict must be {REPRODUCED!r} or {DIFFERS!r} (or a bool), got {verdict!r}"
            )
        self.claims.append(Verdict(claim, paper, ours, verdict, why))

    # ------------------------------------------------------------------ output

    def _settings_rows(self) -> list[dict[str, Any]]:
        from ... import __version__

        info = {
            **self.settings,
            "dphist version": __version__,
            "python": platform.python_version(),
            "written (UTC)": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
            "run time (s)": round(time.perf_counter() - self._started, 1),
        }
        return [{"setting": k, "value": _show(v)} for k, v in info.items()]

    def render(self, folder: str | os.PathLike[str] | None = None) -> str:
        """The report as Markdown; figure links are relative to ``folder`` when given."""
        base = None if folder is None else Path(folder).resolve()
        out = [f"# {self.title}\n", "## Settings\n", markdown_table(self._settings_rows())]
        if self.claims:
            rows = [c.__dict__ for c in self.claims]
            held = sum(c.verdict == REPRODUCED for c in self.claims)
            out += [
                "## Claims\n",
                f"{held} of {len(self.claims)} claims reproduced.\n",
                markdown_table(rows, ["claim", "paper", "ours", "verdict", "why"]),
            ]
        for kind, payload in self._blocks:
            if kind == "section":
                heading, text = payload
                out.append(f"## {heading}\n")
                if text:
                    out.append(text.rstrip() + "\n")
            elif kind == "text":
                out.append(payload.rstrip() + "\n")
            elif kind == "table":
                rows, columns, caption, floatfmt = payload
                if caption:
                    out.append(f"*{caption}*\n")
                out.append(markdown_table(rows, columns, floatfmt=floatfmt))
            else:
                path, caption = payload
                link = _relative(path, base)
                out.append(f"![{caption}]({link})\n")
                if caption:
                    out.append(f"*{caption}*\n")
        return "\n".join(out)

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``report.md`` into ``folder`` (created if missing), atomically; return its path."""
        target_dir = Path(folder)
        target_dir.mkdir(parents=True, exist_ok=True)
        text = self.render(target_dir)
        target = target_dir / "report.md"
        atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return target


def claim_lines(markdown: str) -> list[str]:
    """The claim table of a written report, one line a claim: the verdict, the claim
    and our figure (what ``dphist reproduce`` prints after each report)."""
    lines = markdown.splitlines()
    if "## Claims" not in lines:
        return []
    out = []
    for line in lines[lines.index("## Claims") + 1 :]:
        if line.startswith("## "):
            break
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 5 and cells[3] in (REPRODUCED, DIFFERS):
            out.append(f"{cells[3]}: {cells[0]} (ours: {cells[2]})")
    return out


def _relative(path: Path, base: Path | None) -> str:
    if base is None:
        return path.as_posix()
    try:
        return Path(os.path.relpath(path.resolve(), base)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)
