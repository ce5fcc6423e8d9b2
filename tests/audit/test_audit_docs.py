"""docs/audit.md and docs/migrations.md stay true: every rule documented and able to fire,
the console examples print what the commands print, the Python example runs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.audit import RULE_IDS, audit_records, audit_run
from debugger.cli import main
from debugger.migrations import SETTINGS, RestartRequired
from debugger.model import Budgets, Checkpoint
from debugger.store import Store
from tests.conftest import REPO
from tests.fixtures.audit import MIGRATIONS, SAMPLE_MIGRATIONS

AUDIT_MD = (REPO / "docs" / "audit.md").read_text(encoding="utf-8")
MIGRATIONS_MD = (REPO / "docs" / "migrations.md").read_text(encoding="utf-8")


def test_every_rule_has_a_section_with_an_example() -> None:
    sections = re.findall(r"^#### `([a-z-]+)`\n(.*?)(?=^#|\Z)", AUDIT_MD, re.M | re.S)
    assert [rule for rule, _ in sections] == list(RULE_IDS)
    for rule, body in sections:
        if rule == "pending-effect-without-key" or "```" in body:
            assert f" {rule}: " in body, f"the example of {rule} shows another rule"


def test_every_rule_fires_on_the_sample_or_synthetic_runs(
    audit_runs: Path, audit_sample_store: Path
) -> None:
    fired: set[str] = set()
    for path, module in ((audit_runs, MIGRATIONS), (audit_sample_store, SAMPLE_MIGRATIONS)):
        with Store.open(path, read_only=True) as store:
            for run in store.run_records():
                for registry in (module, None):
                    fired |= {f.rule_id for f in audit_run(store, run.run_id, registry).findings}
    unplaced = Checkpoint("r", "c", None, None, 3, None, {}, "", 0, Budgets(0, 0, 0), [], "m",  # type: ignore[arg-type]
                          {"t": "1"}, {})  # fmt: skip
    fired |= {f.rule_id for f in audit_records("r", [unplaced], [], []).findings}
    assert fired == set(RULE_IDS)


def _console_blocks(text: str) -> list[tuple[list[str], str]]:
    blocks = []
    for body in re.findall(r"```console\n(.*?)```", text, re.S):
        command, _, output = body.partition("\n")
        assert command.startswith("$ stepscope ")
        blocks.append((command[len("$ stepscope ") :].split(), output))
    return blocks


@pytest.mark.parametrize("doc", ["audit.md", "migrations.md"])
def test_console_examples_print_what_the_docs_show(
    audit_sample_store: Path, monkeypatch: pytest.MonkeyPatch, doc: str
) -> None:
    monkeypatch.setenv("STEPSCOPE_STORE", str(audit_sample_store))
    blocks = _console_blocks((REPO / "docs" / doc).read_text(encoding="utf-8"))
    assert blocks
    for args, output in blocks:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == output


def test_the_refusal_shown_in_the_docs_is_the_real_one(audit_sample_store: Path) -> None:
    result = CliRunner().invoke(main, ["migrate", "--store", str(audit_sample_store)])
    assert result.exit_code == 2 and result.stderr.strip() in MIGRATIONS_MD


def test_python_example_of_migrations_runs(audit_sample_store: Path, tmp_path: Path) -> None:
    shutil.copy(audit_sample_store, tmp_path / "stepscope.duckdb")  # the example's store
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", MIGRATIONS_MD, re.S) if "open(" in c]
    with pytest.raises(RestartRequired, match="no migration from schema version 0"):
        exec(compile(code, "docs/migrations.md", "exec"), {"__name__": "doc_example"})


def test_python_example_of_audit_runs(audit_sample_store: Path, tmp_path: Path) -> None:
    shutil.copy(audit_sample_store, tmp_path / "stepscope.duckdb")
    (code,) = re.findall(r"```python\n(.*?)```", AUDIT_MD, re.S)
    scope: dict[str, object] = {"__name__": "doc_example"}
    exec(compile(code, "docs/audit.md", "exec"), scope)
    report = scope["report"]
    assert report.verdict == "resumable_after_checks"  # type: ignore[attr-defined]


def test_settings_are_documented() -> None:
    for name, _default, _help in SETTINGS:
        assert f"`{name}`" in MIGRATIONS_MD
    for option in ("--migrations MODULE", "--all", "--json", "--dry-run"):
        assert option in AUDIT_MD + MIGRATIONS_MD
