"""Each runtime's docs page: its console example runs on the committed fixtures and prints
what the page says, and every quarantine reason the flavour gives is on the page."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from tests.conftest import REPO
from tests.test_docs import examples, pattern

PAGES = {"openai_agents": "openai-agents.md", "pydantic_ai": "pydantic-ai.md",
         "crewai": "crewai.md"}  # fmt: skip
"""Runtime fixture directory -> its docs page."""


@pytest.mark.parametrize("rt", sorted(PAGES))
def test_console_example_runs(rt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tests" / "runtimes" / rt).mkdir(parents=True)
    (tmp_path / "tests" / "runtimes" / rt / "data").symlink_to(
        REPO / "tests" / "runtimes" / rt / "data"
    )
    monkeypatch.chdir(tmp_path)
    cases = examples((REPO / "docs" / PAGES[rt]).read_text(encoding="utf-8"))
    assert len(cases) >= 2
    for command, expected in cases:
        argv = shlex.split(command)
        result = CliRunner().invoke(main, argv[1:])
        assert result.exit_code == 0, (command, result.output, result.exception)
        actual = "".join(line.rstrip() + "\n" for line in result.output.splitlines())
        assert pattern(expected).fullmatch(actual), f"{command}\n--- got:\n{actual}"


@pytest.mark.parametrize("rt", sorted(PAGES))
def test_every_quarantine_reason_is_documented(rt: str) -> None:
    text = " ".join((REPO / "docs" / PAGES[rt]).read_text(encoding="utf-8").split())
    reasons: list[str] = []
    for path in (REPO / "loaders" / rt).glob("*.py"):
        source = path.read_text(encoding="utf-8")
        reasons += re.findall(r'problem = "([^"{]+)"', source)
        reasons += re.findall(r'Message\([^)]*"(message_data is not [^"(]+)', source)
        reasons += re.findall(r'^[A-Z_]+ = "(not [^"]+)"', source, flags=re.M)
        reasons += re.findall(r'return None, f?"([a-z_]+ is not [^"({]+)', source)
    assert reasons
    missing = [r.strip() for r in reasons if r.strip() not in text]
    assert not missing, f"docs/{PAGES[rt]} lacks: {missing}"
