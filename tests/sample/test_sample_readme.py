"""Every ``stepscope`` command of the tutorial (sample_checkpoints/README.md) works."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from tests.conftest import REPO

README = REPO / "sample_checkpoints" / "README.md"
SKIP = ("stepscope demo", "postgresql://", "/tmp/big")
"""demo has its own test; Postgres needs a server; the synthetic section runs as one chain."""
SYNTHETIC = "## Large synthetic histories"


def tutorial_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("stepscope ") and not any(s in part for s in SKIP):
                    commands.append(part)
    return commands


def test_the_tutorial_has_commands_for_every_scenario() -> None:
    from tests.fixtures.sample import SAMPLE_RUN_IDS

    text = " ".join(tutorial_commands())
    assert [r for r in SAMPLE_RUN_IDS if r not in text] == []


@pytest.fixture(scope="module")
def writable_store(sample_native_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("tutorial") / "demo.duckdb"
    shutil.copy(sample_native_store, target)
    return target


@pytest.mark.parametrize("command", tutorial_commands())
def test_tutorial_command_runs(
    command: str, writable_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # the tutorial's paths are relative to the repository
    args = shlex.split(command)[1:]
    result = CliRunner().invoke(main, args, env={"STEPSCOPE_STORE": str(writable_store)})
    assert result.exit_code == 0, f"{command}\n{result.output}"
    assert result.output.strip()


def test_the_synthetic_history_section_runs_in_order(tmp_path: Path) -> None:
    """Generate, import and list, exactly as the section says, with its paths in tmp_path."""
    section = README.read_text(encoding="utf-8").split(SYNTHETIC, 1)[1]
    block = re.findall(r"```bash\n(.*?)```", section, flags=re.S)[0]
    lines = [ln.strip() for ln in block.replace("\\\n", " ").splitlines() if ln.strip()]
    assert len(lines) == 3, lines
    for line in lines:
        args = shlex.split(line.replace("/tmp/", f"{tmp_path}/"))
        if args[0] == "python":
            done = subprocess.run([sys.executable, *args[1:]], cwd=REPO, capture_output=True,
                                  text=True, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
            continue
        result = CliRunner().invoke(main, args[1:])
        assert result.exit_code == 0, f"{line}\n{result.output}"
    # synth.py makes every sixth run die with an effect in flight
    assert result.output.count(" crashed ") == 33, result.output
