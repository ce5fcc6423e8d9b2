"""docs/diff.md cannot fall behind: its Python blocks and console examples run here.

Python blocks run in order in one namespace holding ``store_path`` (a store imported from
the sample histories); console blocks run each ``$ stepscope ...`` line in-process and
compare its output line by line (``...`` matches any text).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from debugger.cli import main
from debugger.store import Store
from loaders import ImportOptions, import_source

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "diff.md"
SAMPLE = REPO / "sample_checkpoints" / "data" / "native.sqlite"

pytestmark = pytest.mark.skipif(
    not SAMPLE.exists(), reason="sample_checkpoints/data/native.sqlite not built"
)


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diff-docs") / "sample.duckdb"
    with Store.open(path, read_only=False) as store:
        import_source(store, str(SAMPLE), ImportOptions())
    return path


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)


def test_python_blocks_run(sample_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"store_path": sample_store}
    code = blocks("python")
    assert len(code) >= 3
    try:
        for block in code:
            exec(compile(block, str(DOC), "exec"), namespace)
    finally:
        if "store" in namespace:
            namespace["store"].close()
    assert "crash-at-step-7:6 -> crash-resumed:6" in capsys.readouterr().out


def test_console_examples_match(sample_store: Path) -> None:
    examples = blocks("console")
    assert examples
    for block in examples:
        command, *expected = block.splitlines()
        assert command.startswith("$ stepscope ")
        args = shlex.split(command[len("$ stepscope ") :])
        result = CliRunner().invoke(main, [*args, "--store", str(sample_store)])
        got = (result.stdout + result.stderr).splitlines()
        want = [line.rstrip() for line in expected]
        assert result.exit_code == (2 if want[0].startswith("error:") else 0), command
        assert len(got) == len(want), (command, got)
        for g, w in zip(got, want, strict=True):
            assert re.fullmatch(".*".join(map(re.escape, w.split("..."))), g.rstrip()), (g, w)


def test_help_examples_run(sample_store: Path) -> None:
    help_text = CliRunner().invoke(main, ["diff", "--help"]).output
    lines = [
        ln.strip() for ln in help_text.splitlines() if ln.strip().startswith("stepscope diff ")
    ]
    assert len(lines) >= 3
    for line in lines:
        args = shlex.split(line)[1:]
        result = CliRunner().invoke(main, [*args, "--store", str(sample_store)])
        assert result.exit_code == 0, (line, result.output)
