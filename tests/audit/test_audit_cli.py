"""``stepscope audit``: one run as text or JSON, every run with --all, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from debugger.cli import main
from tests.fixtures.audit import MIGRATIONS


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_audit_one_run_as_text(audit_runs: Path) -> None:
    code, out, _ = _run("audit", "unknown", "--store", str(audit_runs))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "unknown: resumable after checks"
    assert "next step 5, verify first: refund-A-17 (issue_refund)" in out
    assert "WARNING step    4  effect-outcome-unknown:" in out and "hint: look up key" in out


def test_audit_one_run_as_json(audit_runs: Path) -> None:
    code, out, _ = _run("audit", "v0", "--json", "--migrations", MIGRATIONS,
                        "--store", str(audit_runs))  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["run_id", "verdict", "reasons", "findings", "resume_from",
                         "resume_from_step", "next_step", "verify_effects", "lineage",
                         "branches"]  # fmt: skip
    assert doc["verdict"] == "restart_required"
    assert doc["findings"][0]["rule_id"] == "schema-unreachable"


def test_audit_all(audit_runs: Path) -> None:
    code, out, _ = _run("audit", "--all", "--json", "--store", str(audit_runs))
    assert code == 0
    verdicts = {r["run_id"]: r["verdict"] for r in json.loads(out)["runs"]}
    assert verdicts["keyless"] == "restart_required" and verdicts["healthy-done"] == "completed"
    code, out, _ = _run("audit", "--all", "--store", str(audit_runs))
    assert code == 0 and "keyless" in out and "restart required" in out


def test_audit_errors_are_one_line(audit_runs: Path) -> None:
    for args in (["audit", "nope"], ["audit"], ["audit", "gap", "--all"],
                 ["audit", "gap", "--migrations", "no.such"]):  # fmt: skip
        code, _, err = _run(*args, "--store", str(audit_runs))
        assert code == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1 and "Hint:" in err
