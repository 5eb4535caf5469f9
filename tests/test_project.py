"""The project's promises to a newcomer: two commands, and CI runs the README's."""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, flags=re.S)


def test_readme_shows_exactly_two_commands():
    commands = readme_commands()
    assert len(commands) == 2
    assert "dphist demo" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert readme_commands()[1] in ci.splitlines()


def test_no_research_dataset_is_committed():
    names = {p.name for p in ROOT.rglob("*.txt") if ".venv" not in str(p)}
    assert not names & {"search_logs.txt", "nettrace.txt", "social_network.txt"}


def _blocks(kind: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"```{kind}\n(.+?)\n```", text, flags=re.S)


def test_readme_python_snippets_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _blocks("python")
    assert blocks
    scope: dict = {}
    for code in blocks:
        exec(compile(code, "README.md", "exec"), scope)
    # the table shown is the one the snippet writes
    (shown,) = [b for b in _blocks("text") if b.startswith("bin,label")]
    assert (tmp_path / "ages_table.csv").read_text().strip() == shown.strip()


def test_readme_publish_commands_run(tmp_path, monkeypatch, capsys):
    """Every ``dphist publish`` and ``dphist budget`` line of the README, in order, on
    small files with its columns and a budget store of their own."""
    import duckdb
    import numpy as np

    from dphist import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPHIST_BUDGET_STORE", str(tmp_path / "budgets.sqlite"))
    rng = np.random.default_rng(0)
    ages, ids = rng.integers(0, 100, 300), rng.integers(0, 50, 300)
    places = rng.choice(["north", "south", "east", "west"], 300)
    rows = [f"{a},p{p},{r}" for a, p, r in zip(ages, ids, places, strict=True)]
    (tmp_path / "visits.csv").write_text("age,patient,region\n" + "\n".join(rows) + "\n")
    regions = ", ".join(f"('{r}')" for r in rng.choice(["north", "south", "east"], 50))
    duckdb.sql(f"COPY (SELECT * FROM (VALUES {regions}) AS t(region)) TO 'sales.parquet'")

    (tmp_path / "survey.csv").write_bytes("age;région\n34;Île\n51;Zoë\n".encode("latin-1"))
    lines = [
        shlex.split(line.split("#")[0])
        for block in _blocks("bash")
        for line in block.splitlines()
        if line.startswith(("dphist publish", "dphist budget"))
    ]
    assert len(lines) >= 3
    for args in lines:
        code = cli.main(args[1:])
        assert code == 0, (args, capsys.readouterr().err)
