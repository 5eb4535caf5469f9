"""The project's promises to a newcomer: two commands, and CI runs the README's."""

import re
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
