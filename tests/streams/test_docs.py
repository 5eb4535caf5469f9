"""The stream notes' Python examples run as written."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "streams.md"


def test_stream_notes_snippets_run(capsys):
    blocks = re.findall(r"```python\n(.+?)\n```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 3  # the Spark one runs in tests/streams/test_spark_stream.py
    scope: dict = {}
    for code in blocks[:2]:
        exec(compile(code, "docs/streams.md", "exec"), scope)
    assert capsys.readouterr().out.count("\n") == 3  # one line per window
    assert len(scope["s"].ledger) == 2
