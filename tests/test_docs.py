"""The docs cannot fall behind the code.

- Every command of the ``stepscope`` group (including those other areas register) and every
  one of its options has its place in docs/cli.md, and so does every ``ImportOptions`` field.
- Every ```` ```console ```` block of docs/cli.md runs: each ``$ stepscope ...`` line is run
  in-process, in order, in a scratch directory holding ``sample_checkpoints/``, and its
  output must match the lines below it (``...`` matches any text on a line; a line that is
  only ``...`` matches any number of lines). Output starting with ``error:`` means exit 2.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from debugger.cli import main
from loaders import ImportOptions

REPO = Path(__file__).resolve().parent.parent
CLI_DOC = REPO / "docs" / "cli.md"


def sections(text: str) -> dict[str, str]:
    """``## stepscope NAME`` sections of docs/cli.md, by command name."""
    parts = re.split(r"^## stepscope (\S+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_command_and_option_is_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    docs = sections(text)
    missing = []
    for name, cmd in sorted(main.commands.items()):
        if name not in docs:
            missing.append(f"section '## stepscope {name}'")
            continue
        common = text.split("## stepscope ", 1)[0]  # --store, --json, --help
        for param in cmd.params:
            if not isinstance(param, click.Option):
                continue
            for opt in [*param.opts, *param.secondary_opts]:
                if f"`{opt}" not in docs[name] and f"`{opt}" not in common:
                    missing.append(f"{name} {opt}")
    assert not missing, f"docs/cli.md lacks: {', '.join(missing)}"


def test_import_options_fields_are_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    for f in dataclasses.fields(ImportOptions):
        assert f"| `{f.name}` |" in text, f"ImportOptions.{f.name} is not in docs/cli.md"


def examples(text: str) -> list[tuple[str, list[str]]]:
    """(command line, expected output lines) of every console block, in order."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```", text, flags=re.M | re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line.rstrip())
    return out


def pattern(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def test_the_matcher_can_fail() -> None:
    assert pattern(["a ... c", "..."]).fullmatch("a b c\nd\ne\n")
    assert not pattern(["a ... c"]).fullmatch("a b d\n")
    assert not pattern(["x"]).fullmatch("x\ny\n")


def test_console_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sample_checkpoints").symlink_to(REPO / "sample_checkpoints")
    monkeypatch.chdir(tmp_path)
    cases = examples(CLI_DOC.read_text(encoding="utf-8"))
    assert len(cases) >= 10
    runner = CliRunner()
    for command, expected in cases:
        argv = shlex.split(command)
        assert argv[0] == "stepscope", command
        result = runner.invoke(main, argv[1:])
        want_exit = 2 if expected and expected[0].startswith("error:") else 0
        assert result.exit_code == want_exit, (command, result.output, result.exception)
        actual = "".join(line.rstrip() + "\n" for line in result.output.splitlines())
        if expected:
            assert pattern(expected).fullmatch(actual), f"{command}\n--- got:\n{actual}"


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the sample histories (native SQLite)."""
    from debugger.store import Store
    from loaders import import_source

    path = tmp_path_factory.mktemp("docs") / "sample.duckdb"
    with Store.open(path) as store:
        import_source(store, str(REPO / "sample_checkpoints" / "data" / "native.sqlite"))
    return path


def test_store_doc_names_every_table_and_column(sample_store: Path) -> None:
    import debugger

    text = (REPO / "docs" / "store.md").read_text(encoding="utf-8")
    with debugger.open(sample_store) as store:
        tables = store.sql(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'main'"
        )
    missing = sorted(f"{t}.{c}" for t, c in tables if f"`{t}`" not in text or f"`{c}`" not in text)
    assert not missing, f"docs/store.md lacks: {', '.join(missing)}"


def test_store_sql_examples_run(sample_store: Path) -> None:
    import debugger

    text = (REPO / "docs" / "store.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sql\n(.*?)^```", text, flags=re.M | re.S)
    assert len(blocks) >= 5
    with debugger.open(sample_store) as store:
        for sql in blocks:
            assert store.sql(sql), sql
