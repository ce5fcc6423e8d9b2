"""Every command's help has examples; no user-visible hint points at docs/ (a wheel has none)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from debugger.cli import COMMANDS, main
from tests.fixtures.native import stepscope

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [[], *([name] for name in sorted(COMMANDS))])
def test_every_help_has_examples(args: list[str]) -> None:
    result = stepscope(*args, "--help")
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.stdout or "Example:" in result.stdout
    assert result.stdout.startswith("Usage: stepscope")


def test_every_command_module_declares_cmd_the_same_way() -> None:
    ctx = click.Context(main)
    for name in COMMANDS:
        cmd = main.get_command(ctx, name)
        assert isinstance(cmd, click.Command) and cmd.name == name
        params = {p.name for p in cmd.params}
        assert {"store_path", "as_json"} <= params, name


def test_app_and_demo_import_no_other_commands_code() -> None:
    code = (
        "import sys\n"
        "from debugger.cli import main\n"
        "import click\n"
        "ctx = click.Context(main)\n"
        "main.get_command(ctx, 'app'); main.get_command(ctx, 'demo')\n"
        "heavy = ('deepdiff', 'debugger.audit', 'debugger.replay', 'debugger.cli.diff')\n"
        "print([m for m in sys.modules if m.startswith(heavy)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("chosen", [None, "2"])
def test_the_command_runs_blas_on_one_thread_unless_the_user_chose(chosen: str | None) -> None:
    code = (
        "import os, sys\n"
        "from debugger.cli import main\n"
        "main(['--version'], standalone_mode=False)\n"
        "import numpy\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if chosen:
        env["OPENBLAS_NUM_THREADS"] = chosen
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == [chosen or "1", "True"]


def _error_classes() -> set[str]:
    import debugger.errors as errors

    return {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.StepscopeError)
    }


def _hints(path: Path, classes: set[str]) -> list[tuple[int, str]]:
    """The string parts of every argument after the message of a StepscopeError call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name not in classes:
            continue
        args = [*node.args[1:], *(k.value for k in node.keywords if k.arg == "hint")]
        for arg in args:
            for sub in ast.walk(arg):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    found.append((node.lineno, sub.value))
    return found


def test_the_hint_scan_finds_hints() -> None:
    hints = [h for _, h in _hints(REPO / "debugger" / "cli" / "runs.py", _error_classes())]
    assert any("use " in h for h in hints)


def test_no_hint_points_at_docs() -> None:
    classes = _error_classes()
    bad = []
    for package in ("debugger", "loaders"):
        for path in sorted((REPO / package).rglob("*.py")):
            for line, text in _hints(path, classes):
                if "docs/" in text:
                    bad.append(f"{path.relative_to(REPO)}:{line}: {text}")
    assert not bad, "\n".join(bad)
