"""The replay engine on small recorded runs: alignment, divergences, writes, budgets, storage."""

from __future__ import annotations

from pathlib import Path

import pytest

import debugger
from debugger.errors import NotFound, StoreError
from debugger.replay import ReplayReport, replay
from debugger.store import Store
from tests.fixtures.replay import RecordedRuns

AGENTS = "tests.replay.agents"


@pytest.fixture(scope="module")
def clean(recorded_runs: RecordedRuns) -> ReplayReport:
    return replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:ledger_agent")


def test_unchanged_agent_from_step_0_has_no_divergence(clean: ReplayReport) -> None:
    assert clean.outcome == "completed"
    assert not clean.diverged and clean.first_divergence is None
    assert [s.step_index for s in clean.steps] == [1, 2, 3, 4, 5]
    assert all(s.state_equal for s in clean.steps)
    assert all(s.calls == s.calls_from_tape for s in clean.steps)
    assert [s.replay_tokens for s in clean.steps] == [s.original_tokens for s in clean.steps]


def test_replay_is_stored_as_a_run_with_identical_states(
    clean: ReplayReport, recorded_runs: RecordedRuns
) -> None:
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        run = store.run(clean.replay_run_id)
        original = {c.step_index: c.state_hash for c in store.checkpoints("ledger-done")}
        replayed = {c.step_index: c.state_hash for c in store.checkpoints(clean.replay_run_id)}
        calls = store.tool_calls(clean.replay_run_id)
        effects = store.effects(clean.replay_run_id)
    assert clean.replay_run_id.startswith("ledger-done~replay-")
    assert (run.replay_of, run.replay_from_step, run.status) == ("ledger-done", 0, "completed")
    assert replayed == original
    assert len(calls) == 11 and sum(c.is_write for c in calls) == 1
    assert [(e.tool, e.idempotency_key, e.result["sandboxed"]) for e in effects] == [
        ("pay", "pay-A1", True)
    ]


def test_rerunning_a_keyed_write_is_reported_as_a_duplicate(clean: ReplayReport) -> None:
    [dup] = clean.duplicate_writes
    assert (dup.tool, dup.idempotency_key, dup.step_index) == ("pay", "pay-A1", 3)
    assert (dup.original_status, dup.matched_by) == ("committed", "idempotency_key")
    assert [w["name"] for w in clean.ledger] == ["pay"]
    assert clean.missing_writes == []


def test_budgets_continue_from_the_checkpoint(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 2, f"{AGENTS}:ledger_agent")
    assert report.budgets_start["tokens_spent"] == 14
    assert report.budgets_start["steps_spent"] == 2
    assert [s.replay_tokens for s in report.steps] == [21, 28, 35]
    assert report.budgets_end["steps_spent"] == 5
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        first = store.checkpoints(report.replay_run_id)[0]
    assert (first.step_index, first.budgets.tokens_spent, first.budgets.steps_spent) == (2, 14, 2)


def test_the_runs_own_limits_still_apply(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-limited", 2, f"{AGENTS}:ledger_agent")
    assert report.outcome == "budget_exhausted"
    assert report.last_step == 4 and "step budget" in report.reason
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        assert store.run(report.replay_run_id).status == "budget_exhausted"


def test_strict_mode_stops_at_a_call_with_different_arguments(
    recorded_runs: RecordedRuns,
) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 1, f"{AGENTS}:renamed_arg_agent")
    first = report.first_divergence
    assert report.outcome == "diverged" and first is not None
    assert (first.step_index, first.kind) == (2, "different_args")
    assert first.call and first.call["request"] == {"sku": "sku-2"}
    assert first.original and first.original["request"] == {"item": "sku-2"}
    assert first.diff, "the argument diff is part of the divergence"
    assert len(report.divergences) == 1 and report.last_step == 1
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        run = store.run(report.replay_run_id)
    assert run.status == "failed" and "diverged" in (run.last_error or "")


def test_lenient_mode_goes_on_with_mocks(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:renamed_arg_agent",
                    mocks="tests.replay.mocks_ok", mode="lenient")  # fmt: skip
    assert report.outcome == "completed" and report.last_step == 5
    assert {d.kind for d in report.divergences} >= {"different_args", "state"}
    assert report.first_divergence and report.first_divergence.step_index == 1
    assert {c["source"] for c in report.ledger} == {"mock"}


def test_lenient_mode_without_a_mock_returns_an_error_to_the_agent(
    recorded_runs: RecordedRuns,
) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:renamed_arg_agent",
                    mode="lenient")  # fmt: skip
    assert report.outcome == "agent_error"
    assert "NoRecordedAnswer" in report.reason and "price" in report.reason
    assert report.agent_error and "NoRecordedAnswer" in report.agent_error


def test_a_missing_write_is_a_divergence(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 2, f"{AGENTS}:no_pay_agent")
    kinds = [(d.step_index, d.kind) for d in report.divergences]
    assert kinds == [(3, "missing_call"), (3, "state")]
    assert [w.idempotency_key for w in report.missing_writes] == ["pay-A1"]
    assert report.duplicate_writes == []
    state = report.divergences[1]
    assert any("receipt" in row["path"] for row in state.diff)


def test_crashed_step_is_matched_by_key_against_its_effects(
    recorded_runs: RecordedRuns,
) -> None:
    report = replay(recorded_runs.store_path, "ledger-crash", 2, f"{AGENTS}:ledger_agent",
                    mocks="tests.replay.mocks_crash")  # fmt: skip
    assert report.outcome == "end_of_original" and not report.diverged
    [dup] = report.duplicate_writes
    assert (dup.idempotency_key, dup.original_status, dup.step_index) == ("pay-B2", "pending", 3)
    statuses = {c["status"] for c in report.ledger}
    assert statuses == {"matched"}


def test_unknown_run_and_step_are_not_found(recorded_runs: RecordedRuns) -> None:
    with pytest.raises(NotFound, match="no run 'nope'"):
        replay(recorded_runs.store_path, "nope", 0, f"{AGENTS}:ledger_agent")
    with pytest.raises(NotFound, match="no step 42"):
        replay(recorded_runs.store_path, "ledger-done", 42, f"{AGENTS}:ledger_agent")


def test_a_read_only_store_is_refused_with_a_hint(recorded_runs: RecordedRuns) -> None:
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        with pytest.raises(StoreError, match="read-only"):
            replay(store, "ledger-done", 0, f"{AGENTS}:ledger_agent")
        # the same process holding it read-only: opening by path must say so, in one line
        with pytest.raises(StoreError, match="held by another process or connection"):
            replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:ledger_agent")


def test_notebook_entry_points(recorded_runs: RecordedRuns, tmp_path: Path) -> None:
    assert callable(debugger.replay)
    with Store.open(recorded_runs.store_path, read_only=False) as store:
        report = debugger.replay(store, "ledger-done", 4, f"{AGENTS}:ledger_agent",
                                 output_dir=tmp_path / "out")  # fmt: skip
        assert store.run(report.replay_run_id).replay_of == "ledger-done"
    assert isinstance(report, ReplayReport) and report.outcome == "completed"
    assert Path(report.output_dir) == (tmp_path / "out").resolve()
    assert {p.name for p in Path(report.output_dir).iterdir()} >= {
        "report.json", "replay.sqlite", "agent.log", "input.json",
    }  # fmt: skip
