"""Each synthetic situation yields exactly the findings (rule and step) and verdict it should."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from debugger.audit import audit_records, audit_run, lineage
from debugger.model import AuditReport, Budgets, Checkpoint
from debugger.store import Store
from tests.fixtures.audit import MIGRATIONS

EXPECTED: dict[str, tuple[str, list[tuple[str, int | None]]]] = {
    "healthy-done": ("completed", []),
    "healthy-open": ("resumable", []),
    "gap": ("resumable", [("step-gap", 4)]),
    "backwards": ("completed", [("step-backwards", 2), ("step-repeated", 2),
                                ("step-repeated", 3), ("fork", 3)]),
    "reset": ("resumable_after_checks", [("budget-reset", 3)]),
    "exceeded": ("resumable_after_checks", [("budget-exceeded", 4)]),
    "keyless": ("restart_required", [("pending-effect-without-key", 4)]),
    "unknown": ("resumable_after_checks", [("effect-outcome-unknown", 4)]),
    "twice": ("completed", [("key-executed-twice", 3)]),
    "two-keys": ("completed", [("same-action-different-keys", 3)]),
    "deploy": ("resumable", [("model-version-changed", 2), ("tool-version-changed", 3)]),
    "prose": ("restart_required", [("prose-state", 1)]),
    "missing": ("restart_required", [("missing-schema-version", 2), ("missing-budgets", 2),
                                     ("missing-run-metadata", 2), ("budget-reset", 2)]),
    "parked": ("resumable_after_checks", [("parked-awaiting-approval", 2)]),
    "resumed-no-reauth": ("completed", [("resume-without-reauthorization", 2)]),
    "resumed-reauth": ("completed", [("resumed-after-approval", 2)]),
    "null-state": ("restart_required", [("missing-working-state", 2)]),
    "v0": ("restart_required", [("schema-unreachable", 0)]),
    "v1": ("resumable", []),
    "v1-broken": ("restart_required", [("migration-failed", 0)]),
    "fork": ("resumable", [("step-backwards", 2), ("step-repeated", 2), ("step-repeated", 3),
                           ("fork", 3)]),
}  # fmt: skip


@pytest.fixture(scope="module")
def store(audit_runs: Path) -> Iterator[Store]:
    with Store.open(audit_runs, read_only=True) as s:
        yield s


def _pairs(report: AuditReport) -> list[tuple[str, int | None]]:
    return sorted((f.rule_id, f.step_index) for f in report.findings)


@pytest.mark.parametrize("run_id", sorted(EXPECTED))
def test_each_situation_gives_its_findings_and_verdict(store: Store, run_id: str) -> None:
    verdict, findings = EXPECTED[run_id]
    report = audit_run(store, run_id, MIGRATIONS)
    assert (report.verdict, _pairs(report)) == (verdict, sorted(findings))
    for f in report.findings:
        assert f.message and f.hint and f.severity in ("error", "warning", "info")


def test_every_run_of_the_store_is_covered(store: Store) -> None:
    assert {r.run_id for r in store.run_records()} == set(EXPECTED)


def test_unknown_effect_is_what_a_resume_must_verify(store: Store) -> None:
    report = audit_run(store, "unknown", MIGRATIONS)
    assert (report.resume_from_step, report.next_step) == (4, 5)
    assert [(c.idempotency_key, c.tool, c.status) for c in report.verify_effects] == [
        ("refund-A-17", "issue_refund", "unknown")
    ]
    assert any("refund-A-17" in r for r in report.reasons)


def test_restart_required_says_why_and_plans_no_resume(store: Store) -> None:
    report = audit_run(store, "v0", MIGRATIONS)
    assert report.next_step is None and report.resume_from is None
    assert "no migration from schema version 0" in report.reasons[0]


def test_without_a_registry_an_old_version_is_flagged_unchecked(store: Store) -> None:
    report = audit_run(store, "v0")
    assert _pairs(report) == [("schema-unchecked", 2)]
    assert report.verdict == "resumable_after_checks"
    assert "confirm the current code reads schema version 0" in report.reasons[0]


def test_parked_finding_says_since_when(store: Store) -> None:
    (finding,) = audit_run(store, "parked", MIGRATIONS).findings
    assert "since 2026-11-01 09:02 UTC" in finding.message
    assert "refund over 500 needs approval" in finding.message


def test_resume_without_reauthorization_says_how_long_it_waited(store: Store) -> None:
    (finding,) = audit_run(store, "resumed-no-reauth", MIGRATIONS).findings
    assert "after 4.0 days parked" in finding.message


def test_fork_audits_the_heads_lineage_and_notes_the_branch(store: Store) -> None:
    report = audit_run(store, "fork", MIGRATIONS)
    assert report.lineage == ["fork-c0", "fork-c1", "fork-c4", "fork-c5"]
    assert report.branches == ["fork-c3"]


def test_budget_reset_names_the_drop(store: Store) -> None:
    report = audit_run(store, "reset", MIGRATIONS)
    (finding,) = report.findings
    assert "tokens_spent 200 → 0" in finding.message
    assert any("restore the consumed budgets" in r for r in report.reasons)


def test_audit_is_cached_until_the_run_changes(tmp_path: Path) -> None:
    from loaders import ImportOptions, import_source
    from tests.fixtures.audit import RunSpec, Step, build_store, write_source

    path = build_store(tmp_path, [RunSpec("r", [Step(0), Step(1)])])
    with Store.open(path, read_only=True) as s:
        first = audit_run(s, "r")
        assert audit_run(s, "r") is first
    grown = write_source(tmp_path / "grown.sqlite", [RunSpec("r", [Step(0), Step(1), Step(3)])])
    with Store.open(path) as s:
        import_source(s, str(grown), ImportOptions())
        again = audit_run(s, "r")
    assert again is not first and [f.rule_id for f in again.findings] == ["step-gap"]


def _ckpt(i: int, **kw: object) -> Checkpoint:
    base: dict[str, object] = dict(
        run_id="nb", checkpoint_id=f"c{i}", parent_id=f"c{i - 1}" if i else None,
        step_index=i, schema_version=3, created_at=None, working_state={"i": i},
        state_hash="", state_bytes=0, budgets=Budgets(10 * i, i, 100 * i), pending_effects=[],
        model_version="m", tool_versions={"t": "1"}, metadata={},
    )  # fmt: skip
    base.update(kw)
    return Checkpoint(**base)  # type: ignore[arg-type]


def test_hand_built_records_can_be_audited_without_a_store() -> None:
    report = audit_records("nb", [_ckpt(0), _ckpt(1), _ckpt(2, working_state=None)], [], [])
    assert [(f.rule_id, f.step_index) for f in report.findings] == [("missing-working-state", 2)]
    assert report.verdict == "restart_required"


def test_checkpoints_without_step_positions_need_a_restart() -> None:
    report = audit_records("nb", [_ckpt(0), _ckpt(1, step_index=None)], [], [])
    assert [f.rule_id for f in report.findings] == ["missing-step-position"]
    assert report.verdict == "restart_required" and "1 of 2" in report.reasons[0]


def test_lineage_head_is_the_last_written_checkpoint() -> None:
    ckpts = [_ckpt(0), _ckpt(1), _ckpt(2), _ckpt(9, parent_id="c0", checkpoint_id="x")]
    path, branches = lineage(ckpts)
    assert [c.checkpoint_id for c in path] == ["c0", "x"]
    assert [c.checkpoint_id for c in branches] == ["c2"]
