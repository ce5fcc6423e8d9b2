"""Replays of the sample refund desk: the clean run, and the crash replayed with both agents.

The crash at step 7 happened right after ``issue_refund`` and before the checkpoint, so the
original's step 7 has no tape; ``sample_checkpoints.refund_desk.replay_mocks`` answers it
from the payments ledger, read-only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from debugger.errors import MigrationError
from debugger.replay import ReplayReport, replay
from debugger.store import Store
from tests.fixtures.replay import SAMPLE_DATA

AGENT = "sample_checkpoints.refund_desk.agent"
MOCKS = "sample_checkpoints.refund_desk.replay_mocks"
KEY = "refund-T-1077-ORD-1077"
SNAPSHOTS = Path(__file__).parent / "snapshots"


def _ledger_hash() -> str:
    return hashlib.sha256((SAMPLE_DATA / "ledger.sqlite").read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def ledger_before() -> str:
    return _ledger_hash()


@pytest.fixture(scope="module")
def fixed(sample_replay_store: Path, ledger_before: str) -> ReplayReport:
    return replay(sample_replay_store, "crash-at-step-7", 6, f"{AGENT}:fixed_agent", mocks=MOCKS)


@pytest.fixture(scope="module")
def original_code(sample_replay_store: Path, ledger_before: str) -> ReplayReport:
    return replay(sample_replay_store, "crash-at-step-7", 6, f"{AGENT}:agent", mocks=MOCKS)


def test_clean_run_replays_without_divergence(sample_replay_store: Path) -> None:
    report = replay(sample_replay_store, "clean-completed", 0, f"{AGENT}:agent")
    assert report.outcome == "completed" and not report.diverged
    assert [s.step_index for s in report.steps] == list(range(1, 11))
    assert all(s.state_equal for s in report.steps)
    with Store.open(sample_replay_store, read_only=True) as store:
        original = [(c.step_index, c.state_hash, c.budgets.tokens_spent)
                    for c in store.checkpoints("clean-completed")]  # fmt: skip
        replayed = [(c.step_index, c.state_hash, c.budgets.tokens_spent)
                    for c in store.checkpoints(report.replay_run_id)]  # fmt: skip
    assert replayed == original


def test_fixed_agent_diverges_at_the_refund_step(fixed: ReplayReport) -> None:
    first = fixed.first_divergence
    assert fixed.outcome == "diverged" and first is not None
    assert (first.step_index, first.kind) == (7, "missing_call")
    assert first.original and (first.original["name"], first.original["idempotency_key"]) == (
        "issue_refund", KEY,
    )  # fmt: skip
    assert [(w.tool, w.idempotency_key) for w in fixed.missing_writes] == [("issue_refund", KEY)]
    assert fixed.duplicate_writes == [] and fixed.ledger == []
    assert fixed.budgets_start["tokens_spent"] == 893 and fixed.budgets_end["steps_spent"] == 7


def test_original_code_would_have_sent_a_duplicate_refund(original_code: ReplayReport) -> None:
    assert original_code.outcome == "end_of_original" and not original_code.diverged
    [dup] = original_code.duplicate_writes
    assert (dup.tool, dup.idempotency_key, dup.step_index) == ("issue_refund", KEY, 7)
    assert (dup.original_status, dup.matched_by) == ("pending", "idempotency_key")
    [write] = original_code.ledger
    assert write["source"] == "mock" and write["response"]["status"] == "issued"


def test_replays_never_touch_the_payments_ledger(
    fixed: ReplayReport, original_code: ReplayReport, ledger_before: str
) -> None:
    assert _ledger_hash() == ledger_before


def test_an_old_schema_is_migrated_before_the_replay(sample_replay_store: Path) -> None:
    report = replay(sample_replay_store, "schema-v1", 8, f"{AGENT}:agent")
    assert report.migrated_from == 1
    assert report.outcome == "completed" and not report.diverged
    assert all(s.state_equal for s in report.steps)  # the original's states migrate too
    with Store.open(sample_replay_store, read_only=True) as store:
        assert store.checkpoints(report.replay_run_id)[0].schema_version == 3
    with pytest.raises(MigrationError, match="no migration from schema version 0"):
        replay(sample_replay_store, "schema-v0-unmigratable", 1, f"{AGENT}:agent")


def _stable(report: ReplayReport) -> dict[str, Any]:
    d = report.to_dict()
    for key in ("output_dir", "seconds", "replay_run_id", "limits"):
        d.pop(key)
    for key in ("budgets_start", "budgets_end"):
        d[key].pop("wall_clock_ms")
    for step in d["steps"]:
        step.pop("seconds")
        step["replay_checkpoint_id"] = step["replay_checkpoint_id"] and "<replay>@" + str(
            step["step_index"]
        )
    return d


@pytest.mark.parametrize("which", ["fixed", "original_code"])
def test_report_snapshot(
    which: str, request: pytest.FixtureRequest, update_snapshots: bool
) -> None:
    """The report people read, compared with the committed file (--update-snapshots rewrites)."""
    got = _stable(request.getfixturevalue(which))
    path = SNAPSHOTS / f"crash_at_step_7_{which}.json"
    text = json.dumps(got, indent=2, sort_keys=True, default=str) + "\n"
    if update_snapshots:
        path.write_text(text)
    assert path.exists(), f"no snapshot {path.name}: run with --update-snapshots and review it"
    assert json.loads(path.read_text()) == json.loads(text)
