"""docs/replay.md's examples, run for real: the commands print what the page says they print."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from tests.conftest import REPO

DOC = REPO / "docs" / "replay.md"
VARIABLE = ("steps run:", "output:")
"""Output lines that vary between runs (wall-clock budgets, absolute paths)."""


def _blocks(lang: str) -> list[str]:
    # the LangGraph section runs on its own database (tests/replay/graph/test_graph_docs.py)
    text = DOC.read_text().split("\n## LangGraph\n")[0]
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _commands() -> list[tuple[list[str], list[str]]]:
    found = []
    for block in _blocks("console"):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, *output = chunk.strip("\n").split("\n")
            found.append((shlex.split(command), output))
    return found


def _normal(line: str) -> str:
    return re.sub(r"~replay-\d+", "~replay-N", line)


@pytest.fixture
def store(sample_replay_store: Path, tmp_path: Path) -> Path:
    path = tmp_path / "stepscope.duckdb"
    shutil.copy(sample_replay_store, path)
    return path


def test_every_documented_command_prints_what_the_doc_shows(store: Path) -> None:
    commands = _commands()
    assert [c[0][1] for c in commands] == ["import", "replay", "replay", "replay"]
    assert commands[0][0] == ["stepscope", "import", "sample_checkpoints/data/native.sqlite"]
    assert (REPO / commands[0][0][2]).is_file()
    for argv, expected in commands[1:]:
        result = CliRunner().invoke(main, [*argv[1:], "--store", str(store)])
        got = [_normal(line) for line in (result.stdout + result.stderr).splitlines()]
        for line in expected:
            if not line.startswith(VARIABLE):
                assert _normal(line) in got, (argv, line, got)


def test_the_notebook_example_runs(store: Path) -> None:
    [code] = [b for b in _blocks("python") if "from debugger.replay import replay" in b]
    scope: dict[str, object] = {}
    exec(compile(code, str(DOC), "exec"), scope)
    report = scope["report"]
    assert report.outcome == "diverged"  # type: ignore[attr-defined]
    assert report.first_divergence.message.startswith(  # type: ignore[attr-defined]
        "step 7: the original made the write issue_refund"
    )
    assert report.duplicate_writes == []  # type: ignore[attr-defined]
    [dup] = scope["original"].duplicate_writes  # type: ignore[attr-defined]
    assert (dup.tool, dup.idempotency_key) == ("issue_refund", "refund-T-1077-ORD-1077")


def test_every_cli_option_is_documented() -> None:
    text = DOC.read_text()
    command = main.commands["replay"]
    for param in command.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("--") and opt not in ("--help",):
                assert f"`{opt}" in text, f"{opt} is not in docs/replay.md"
