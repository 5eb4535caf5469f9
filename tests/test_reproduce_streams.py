"""The streams reproduction (quick run end to end) and the rules that read it."""

from __future__ import annotations

import csv
import re

import numpy as np

from dphist.lab.reproduce import PAPERS, streams
from dphist.lab.reproduce.streams_claims import CLAIMS, Results, _tested_win
from dphist.streams import WEVENT


def test_quick_report_end_to_end(tmp_path):
    assert PAPERS["streams"] is streams.run
    path = PAPERS["streams"](tmp_path, trials=1, workers=1, quick=True)
    text = path.read_text(encoding="utf-8")
    part = text.split("## Claims\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in part.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    verdicts = [re.split(r"(?<!\\)\|", ln)[4].strip() for ln in rows]
    assert len(rows) >= 5 and set(verdicts) <= {"reproduced", "differs"}
    assert f"{verdicts.count('reproduced')} of {len(rows)} claims reproduced." in text
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (path.parent / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(path.parent / "results.csv", encoding="utf-8") as fh:
        results = list(csv.DictReader(fh))
    names = {r["stream"] for r in results}
    assert {"linear (rough)", "sinusoidal (rough)", "logistic (rough)"} <= names
    assert len(results) == len(names) * len(streams.W_GRID) * len(WEVENT)
    again = PAPERS["streams"](tmp_path, trials=1, workers=1, quick=True)  # reuses the rows
    assert again.read_text(encoding="utf-8").split("## Claims")[1] == text.split("## Claims")[1]


def _results(mae):
    """Results of one stream of 1 bin drifting by 100 per window, at w 10 and 40."""
    data = streams.Stream("s", np.arange(0, 1000, 100)[:, None], "hand")
    rows = [{"stream": "s", "w": w, "mechanism": m, "trial": 0, "mae": v, "published": 0.5}
            for (w, m), v in mae.items()]  # fmt: skip
    return Results(rows, {"s": data}, 1, [], 1)


def test_the_ordering_rule_reads_the_better_of_each_pair_and_explains_a_loss():
    assert CLAIMS[0].rule(_results({})) is None  # search_logs only: absent here
    rule = _tested_win(["s"])
    win = {(w, m): v for w in (10, 40) for m, v in zip(WEVENT, (5, 9, 4, 8), strict=True)}
    assert rule(_results(win)).held
    lose = {**win, (40, "sample"): 3}
    found = rule(_results(lose))
    assert not found.held and found.ours == "1 of 2 cells"
    assert "moves 100 per count" in found.detail and "w/eps = 40" in found.detail


def test_synthetic_shapes_are_seeded_and_shaped():
    a = streams.synthetic("logistic", 200, 5.0, 3)
    np.testing.assert_array_equal(a, streams.synthetic("logistic", 200, 5.0, 3))
    assert a.shape == (200, 1) and a[0, 0] < 1100 and a[-1, 0] > 4900
