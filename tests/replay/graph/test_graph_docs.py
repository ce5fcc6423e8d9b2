"""docs/replay.md's LangGraph section, run for real on the database its script writes."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from tests.conftest import REPO

DOC = REPO / "docs" / "replay.md"
VARIABLE = ("steps run:", "output:")
"""Output lines that vary between runs (wall-clock budgets, absolute paths)."""


def _section() -> str:
    return DOC.read_text().split("\n## LangGraph\n", 1)[1]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), flags=re.S)


def _commands() -> list[tuple[str, list[str]]]:
    found = []
    for block in _blocks("console"):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, *output = chunk.strip("\n").split("\n")
            found.append((command, output))
    return found


def _python_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_worked_example_prints_what_the_doc_shows(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = _commands()
    assert [c.split()[0] for c, _ in commands] == ["python", "export", "stepscope", "stepscope",
                                                   "stepscope"]  # fmt: skip
    for command, expected in commands:
        argv = shlex.split(command)
        if argv[0] == "python":
            done = subprocess.run([sys.executable, *argv[1:]], cwd=workdir, env=_python_env(),
                                  capture_output=True, text=True)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines() == expected
            continue
        if argv[0] == "export":
            for item in argv[1:]:
                name, _, value = item.partition("=")
                value = value.replace("$PWD", str(workdir))
                monkeypatch.setenv(name, value)
                if name == "PYTHONPATH":  # what the shell's stepscope would import from
                    monkeypatch.syspath_prepend(value)
            continue
        result = CliRunner().invoke(main, argv[1:])
        assert result.exit_code == 0, (command, result.output)
        got = [re.sub(r"~replay-\d+", "~replay-N", x) for x in result.stdout.splitlines()]
        for line in expected:
            if not line.startswith(VARIABLE):
                assert re.sub(r"~replay-\d+", "~replay-N", line) in got, (command, line, got)
    assert _ledger(workdir) == (2, 5)  # the original's two refunds and five model calls


def _ledger(workdir: Path) -> tuple[int, int]:
    import sqlite3

    con = sqlite3.connect(workdir / "payments.sqlite")
    try:
        refunds = con.execute("SELECT count(*) FROM refunds").fetchone()[0]
        return refunds, con.execute("SELECT count(*) FROM model_calls").fetchone()[0]
    finally:
        con.close()


def test_the_notebook_example_runs(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sample_checkpoints.langgraph_refund.__main__ import write

    monkeypatch.setenv("REFUND_PAYMENTS", str(workdir / "payments.sqlite"))
    monkeypatch.syspath_prepend(str(workdir))  # the ledger's directory, shown to the sandbox
    db = write(workdir)
    assert CliRunner().invoke(main, ["import", str(db)]).exit_code == 0
    [code] = _blocks("python")
    scope: dict[str, object] = {}
    exec(compile(code, str(DOC), "exec"), scope)
    fixed, original = scope["fixed"], scope["original"]
    assert fixed.outcome == "diverged"  # type: ignore[attr-defined]
    assert fixed.first_divergence.step_index == 4  # type: ignore[attr-defined]
    assert original.duplicate_writes[0].idempotency_key == "refund-A-7"  # type: ignore[attr-defined]
