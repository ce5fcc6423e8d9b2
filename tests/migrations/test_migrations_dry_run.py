"""``stepscope migrate --dry-run``: per version counts, failures with their checkpoint, and
stored rows never changed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from debugger.migrations import dry_run, load_registry
from debugger.store import Store
from tests.fixtures.audit import MIGRATIONS


def _rows_digest(path: Path) -> str:
    with Store.open(path, read_only=True) as store:
        parts = []
        for table in ("checkpoint_rows", "large_states", "effects", "tool_calls", "runs"):
            rows = store.sql(f"SELECT * FROM {table} ORDER BY ALL")
            parts.append(repr(rows))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_reports_every_version(audit_runs: Path) -> None:
    with Store.open(audit_runs, read_only=True) as store:
        report = dry_run(store, load_registry(MIGRATIONS))  # type: ignore[arg-type]
    by = {v.version: v for v in report.versions}
    assert sorted(by, key=lambda v: -1 if v is None else v) == [None, 0, 1, 3]
    assert (by[0].restart_required, by[0].clean, by[0].path) == (3, 0, [])
    assert (by[1].checkpoints, by[1].clean, by[1].failed) == (4, 3, 1)
    (failure,) = by[1].failures
    assert (failure.run_id, failure.checkpoint_id, failure.step_index) == (
        "v1-broken",
        "v1-broken-c0",
        0,
    )
    assert "KeyError" in failure.error
    assert by[None].restart_required == 1 and by[3].clean == by[3].checkpoints
    assert report.total == sum(v.checkpoints for v in report.versions) and not report.ok


def test_cli_dry_run_changes_no_stored_row(audit_runs: Path) -> None:
    before, file_before = _rows_digest(audit_runs), audit_runs.read_bytes()
    code, out, _ = _run("migrate", "--dry-run", "--migrations", MIGRATIONS, "--json",
                        "--store", str(audit_runs))  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"module", "current_version", "total", "ok", "versions"}
    assert {v["version"]: v["failed"] for v in doc["versions"]}[1] == 1
    assert _rows_digest(audit_runs) == before
    assert hashlib.sha256(audit_runs.read_bytes()).digest() == hashlib.sha256(file_before).digest()


def test_cli_dry_run_text(audit_runs: Path) -> None:
    code, out, _ = _run("migrate", "--dry-run", "--migrations", MIGRATIONS,
                        "--store", str(audit_runs))  # fmt: skip
    assert code == 0
    assert "failed on v1-broken step 0 (v1-broken-c0): tests.migrations.registry_ok.v1_to_v2" in out
    assert "restart required: no migration from schema version 0" in out


def test_setting_names_the_module_for_the_cli(
    audit_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_MIGRATIONS", MIGRATIONS)
    code, out, _ = _run("migrate", "--dry-run", "--json", "--store", str(audit_runs))
    assert code == 0 and json.loads(out)["module"] == MIGRATIONS


@pytest.mark.parametrize(
    ("args", "words"),
    [(["migrate"], "never rewrites stored checkpoints"),
     (["migrate", "--dry-run"], "no migrations module named"),
     (["migrate", "--dry-run", "--migrations", "no.such.module"], "cannot import")],
)  # fmt: skip
def test_cli_refuses_with_one_line_and_a_hint(
    audit_runs: Path, args: list[str], words: str
) -> None:
    code, _, err = _run(*args, "--store", str(audit_runs))
    assert code == 2
    assert words in err and "Hint:" in err and err.count("\n") == 1
