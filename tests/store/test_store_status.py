"""The run status rule of docs/status.md, one test per rule, in its order of precedence."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import debugger
from debugger.model import Run
from debugger.store import derive
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite

OLD = "2026-01-01T10:00:"  # far in the past: such a run without a status is stale


def step(s: int, metadata: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    row = dict(native_rows(1, 1)[0], run_id="r", step_index=s, created_at=f"{OLD}{s:02d}")
    row["metadata"] = json.dumps(metadata or {})
    return {**row, **changes}


def ago(minutes: int) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes)).isoformat()


def derived(tmp_path: Path, rows: list[dict[str, Any]], effects: list[Any] | None = None) -> Run:
    """Import the rows (and effects) of run ``r`` and return its derived record."""
    src = write_native_sqlite(tmp_path / "src.sqlite", rows, effects or [])
    with debugger.open(tmp_path / "s.duckdb", read_only=False) as store:
        import_source(store, str(src))
        return store.run("r")


def effect(step_index: int, key: str, status: str) -> dict[str, Any]:
    return {"run_id": "r", "step_index": step_index, "idempotency_key": key,
            "tool": "issue_refund", "args": "{}", "status": status, "result": None,
            "created_at": f"{OLD}{step_index:02d}"}  # fmt: skip


def test_rule1_metadata_status_at_the_head_wins(tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0), step(1, {"status": "parked", "error": "boom"},
                                              pending_effects='[{"tool": "t"}]')])  # fmt: skip
    assert (run.status, run.status_reason) == ("parked", "metadata.status at the head checkpoint")


def test_rule1_only_the_head_counts_and_unknown_statuses_fall_through(tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0, {"status": "completed"}), step(1, {"status": "Weird"})])
    assert run.status == "crashed"  # stale, rule 6: the earlier "completed" is not the head


def test_rule1_is_case_insensitive(tmp_path: Path) -> None:
    assert derived(tmp_path, [step(0, {"status": "COMPLETED"})]).status == "completed"


def test_rule2_error_means_failed(tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0), step(1, {"error": "ToolTimeout: ledger"})])
    assert (run.status, run.last_error) == ("failed", "ToolTimeout: ledger")


def test_rule2_an_earlier_error_is_kept_as_last_error_only(tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0, {"error": "retry me"}), step(1, {"status": "completed"})])
    assert (run.status, run.last_error) == ("completed", "retry me")


@pytest.mark.parametrize(
    "metadata", [{"interrupt": {"reason": "approval"}}, {"awaiting_approval": True}]
)
def test_rule3_interrupt_means_parked(metadata: dict[str, Any], tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0), step(1, metadata)])
    assert (run.status, run.status_reason) == ("parked", "interrupted, waiting for input")


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        ({"tokens": 100}, "token limit reached"),
        ({"steps": 1}, "step limit reached"),
        ({"wall_clock_ms": 1500}, "wall-clock limit reached"),
    ],
)
def test_rule4_a_budget_at_its_limit(limits: dict[str, int], reason: str, tmp_path: Path) -> None:
    head = step(1, {"limits": limits}, tokens_spent=100, steps_spent=1, wall_clock_ms=1500)
    run = derived(tmp_path, [step(0), head])
    assert (run.status, run.status_reason) == ("budget_exhausted", reason)
    assert run.limits == limits


def test_rule4_below_the_limits_is_not_exhausted(tmp_path: Path) -> None:
    head = step(1, {"limits": {"tokens": 101, "steps": 2}}, tokens_spent=100, steps_spent=1,
                created_at=ago(1))  # fmt: skip
    assert derived(tmp_path, [step(0), head]).status == "in_progress"


def test_rule5_pending_effects_at_the_head_mean_crashed(tmp_path: Path) -> None:
    pending = json.dumps([{"tool": "issue_refund", "idempotency_key": "k"}])
    run = derived(tmp_path, [step(0), step(1, pending_effects=pending, created_at=ago(1))])
    assert (run.status, run.pending_count) == ("crashed", 1)
    assert run.status_reason == "stopped with 1 effect(s) in flight"


def test_rule5_an_open_effect_at_or_after_the_head_means_crashed(tmp_path: Path) -> None:
    rows = [step(0), step(1, created_at=ago(1))]
    run = derived(tmp_path, rows, [effect(1, "k", "unknown")])
    assert (run.status, run.status_reason) == ("crashed", "stopped with 1 effect(s) in flight")


def test_rule5_an_effect_resolved_through_its_key_is_not_open(tmp_path: Path) -> None:
    rows = [step(0), step(1, created_at=ago(1))]
    run = derived(tmp_path, rows, [effect(1, "k", "pending"), effect(1, "k", "committed")])
    assert run.status == "in_progress"


def test_rule5_an_open_effect_before_the_head_step_does_not_count(tmp_path: Path) -> None:
    rows = [step(0), step(1, created_at=ago(1))]
    assert derived(tmp_path, rows, [effect(0, "k", "unknown")]).status == "in_progress"


def test_rule6_a_silent_head_older_than_an_hour_is_crashed(tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0), step(1, created_at=ago(90))])
    assert run.status == "crashed"
    assert run.status_reason == "no terminal status and no checkpoint for over 3600 s"


def test_rule7_a_recent_head_without_status_is_in_progress(tmp_path: Path) -> None:
    run = derived(tmp_path, [step(0), step(1, created_at=ago(5))])
    assert (run.status, run.status_reason) == ("in_progress", "no terminal status yet")


def test_rule7_a_head_without_a_time_is_never_stale(tmp_path: Path) -> None:
    assert derived(tmp_path, [step(0, created_at=None)]).status == "in_progress"


def test_rule6_is_applied_when_reading_not_only_when_importing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # derived as in_progress (head 30 minutes old); once the head is older than the
    # limit, reads say crashed without a new import. A smaller limit stands in for time.
    assert derived(tmp_path, [step(0, created_at=ago(30))]).status == "in_progress"
    monkeypatch.setattr(derive, "STALE_AFTER_SECONDS", 600)
    with debugger.open(tmp_path / "s.duckdb") as store:
        assert store.run("r").status == "crashed"
        assert [r.run_id for r in store.run_records(status="crashed")] == ["r"]
        assert list(store.runs(status="crashed")["status"]) == ["crashed"]
        assert store.runs(status="in_progress").empty


def test_the_head_is_the_checkpoint_written_last_even_on_a_fork(tmp_path: Path) -> None:
    # re-run from step 1 after step 3 failed: the fork's step 2 is newer than step 3
    fork = step(2, {"status": "completed"}, created_at=f"{OLD}59", working_state='{"f": 1}')
    rows = [step(0), step(1), step(2), step(3, {"error": "boom"}), fork]
    run = derived(tmp_path, rows)
    assert (run.status, run.last_step, run.checkpoint_count) == ("completed", 2, 5)
    with debugger.open(tmp_path / "s.duckdb") as store:
        assert store.checkpoint("r").working_state == {"f": 1}
        assert store.checkpoint("r", 2).working_state == {"f": 1}  # newest at that step


def test_rules_match_the_docs() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "status.md").read_text()
    for phrase in ("metadata.status", "metadata.error", "metadata.interrupt",
                   "awaiting_approval", "metadata.limits", "pending", "unknown",
                   f"{derive.STALE_AFTER_SECONDS // 60} minutes", "in_progress"):  # fmt: skip
        assert phrase in doc, phrase
