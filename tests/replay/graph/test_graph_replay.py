"""Replaying LangGraph runs in the sandbox, against the recorded model and tools."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from debugger.audit import audit_run
from debugger.diff import diff_refs
from debugger.replay import replay
from debugger.store import Store
from tests.replay.graph.conftest import Listener, Written

DESK = "sample_checkpoints.langgraph_refund.graph"
MOCKS = "sample_checkpoints.langgraph_refund.replay_mocks"
LEDGER = ["REFUND_PAYMENTS"]
"""The sandbox's environment is cleared: the mocks find the ledger through this, passed."""
GRAPHS = "tests.replay.graph.graphs"


def _payments(refund_dir: Path) -> tuple[list[Any], int]:
    con = sqlite3.connect(refund_dir / "payments.sqlite")
    try:
        refunds = con.execute("SELECT * FROM refunds ORDER BY refund_id").fetchall()
        return refunds, con.execute("SELECT count(*) FROM model_calls").fetchone()[0]
    finally:
        con.close()


def _states(store: Path, run_id: str) -> dict[int, Any]:
    with Store.open(store, read_only=True) as s:
        return {c.step_index: c.working_state for c in s.checkpoints(run_id)}


def test_an_unchanged_graph_replays_from_the_middle_without_divergence(lg: Written) -> None:
    before = _payments(lg.refund_dir)
    report = replay(lg.store, "refund-B-2", 2, graph=f"{DESK}:graph")
    assert report.outcome == "completed", report.reason
    assert report.divergences == [] and report.violations == []
    assert [s.step_index for s in report.steps] == [3, 4, 5]
    assert all(s.state_equal for s in report.steps)
    original, replayed = _states(lg.store, "refund-B-2"), _states(lg.store, report.replay_run_id)
    assert {k: v for k, v in original.items() if k >= 2} == replayed
    # every answer came from the recording, none from a real model or tool
    assert [s.calls for s in report.steps] == [1, 1, 1]
    assert all(s.calls == s.calls_from_tape for s in report.steps)
    assert _payments(lg.refund_dir) == before  # no refund paid, no model call billed
    # the refund is a write (by its name): the unchanged code would pay it again
    [dup] = report.duplicate_writes
    assert (dup.tool, dup.idempotency_key, dup.original_status) == (
        "issue_refund", "refund-B-2", "committed")  # fmt: skip
    assert report.budgets_end["tokens_spent"] == 420
    # the replay is a run like any other: the diff and the audit work on it
    with Store.open(lg.store, read_only=True) as s:
        same = diff_refs(s, "refund-B-2:4", f"{report.replay_run_id}:4")
        assert list(same.state) == []
        audit = audit_run(s, report.replay_run_id)
        assert audit.run_id == report.replay_run_id and audit.verdict == "completed"
        assert s.run(report.replay_run_id).replay_of == "refund-B-2"


def test_a_prebuilt_react_agent_replays_every_step_from_the_recording(lg: Written) -> None:
    report = replay(lg.store, "react", 2, graph=f"{GRAPHS}:react_graph")
    assert report.outcome == "completed", report.reason
    assert report.divergences == [] and report.duplicate_writes == []  # lookup reads
    assert len(report.steps) == 5 and all(s.state_equal for s in report.steps)
    assert report.ledger == []


def test_a_functional_api_agent_replays_from_its_input_against_the_recording(
    lg: Written,
) -> None:
    """An ``@entrypoint`` runs in one superstep: its model and tool tasks are answered from
    the tape (the replayed graph's model and tool raise if called), and the state compared
    is its output, as LangGraph's ``values``."""
    report = replay(lg.store, "func-react", -1, graph=f"{GRAPHS}:functional_react_graph")
    assert report.outcome == "completed", report.reason
    assert report.divergences == [] and report.violations == []
    [step] = report.steps
    assert step.step_index == 0 and step.state_equal
    assert step.calls == step.calls_from_tape == 5  # three model calls, two lookups
    original, replayed = _states(lg.store, "func-react"), _states(lg.store, report.replay_run_id)
    assert replayed[0] == original[0] and [m["id"] for m in replayed[0]][-1] == "f-ai-2"


def test_a_chat_entrypoint_replays_a_later_call_with_what_it_saved(lg: Written) -> None:
    """From the input of the second call: the restored ``previous`` (the history the first
    call saved) goes to the entrypoint, and its answer is the recorded one."""
    report = replay(lg.store, "func-chat", 1, graph=f"{GRAPHS}:functional_chat_graph")
    assert report.outcome == "completed", report.reason
    assert report.divergences == []
    [step] = report.steps
    assert step.step_index == 2 and step.state_equal and step.calls_from_tape == 1
    assert _states(lg.store, report.replay_run_id)[2]["id"] == "c-ai-1"
    assert report.budgets_end["tokens_spent"] == 80


def test_the_fix_diverges_where_the_original_paid_and_the_baseline_pays_again(
    lg: Written,
) -> None:
    before = _payments(lg.refund_dir)
    fixed = replay(lg.store, "refund-A-7", 3, graph=f"{DESK}:fixed_graph", mocks=MOCKS, env=LEDGER)
    assert fixed.outcome == "diverged"
    assert fixed.first_divergence is not None
    assert fixed.first_divergence.step_index == 4
    assert fixed.first_divergence.message == (
        "step 4: the original made the write issue_refund (key refund-A-7); the replay did not"
    )
    assert fixed.duplicate_writes == []
    assert [(w.tool, w.idempotency_key, w.original_status) for w in fixed.missing_writes] == [
        ("issue_refund", "refund-A-7", "unknown")]  # fmt: skip
    with Store.open(lg.store, read_only=True) as s:
        [looked_up] = s.tool_calls(fixed.replay_run_id)
    assert (looked_up.name, looked_up.response["refund_id"]) == ("find_refund", "RF-1")
    assert fixed.violations == []
    original = replay(lg.store, "refund-A-7", 3, graph=f"{DESK}:graph", mocks=MOCKS, env=LEDGER)
    [dup] = original.duplicate_writes
    assert (dup.tool, dup.idempotency_key, dup.step_index, dup.original_status) == (
        "issue_refund", "refund-A-7", 4, "unknown")  # fmt: skip
    [write] = original.ledger
    assert write["source"] == "mock" and write["response"]["refund_id"] == "RF-SANDBOX"
    assert _payments(lg.refund_dir) == before


def test_an_interrupt_is_answered_with_the_recorded_resume_value(lg: Written) -> None:
    report = replay(lg.store, "approved", 0, graph=f"{GRAPHS}:approval_builder")
    assert report.outcome == "completed", report.reason
    assert report.divergences == []
    assert all(s.state_equal for s in report.steps)
    final = _states(lg.store, report.replay_run_id)[3]
    assert final["log"] == ["plan: refund 4200", "approved: yes", "act after approved: yes"]


def test_an_unanswered_interrupt_parks_or_takes_the_given_answer(lg: Written) -> None:
    parked = replay(lg.store, "waiting", 1, graph=f"{GRAPHS}:approval_builder")
    assert parked.outcome == "parked"
    assert "refund 4200 cents?" in parked.reason
    answered = replay(lg.store, "waiting", 1, mode="lenient",
                      graph=f"{GRAPHS}:approval_builder", resume=["no"])  # fmt: skip
    assert answered.outcome == "completed", answered.reason
    log = _states(lg.store, answered.replay_run_id)[3]["log"]
    assert log[-2:] == ["approved: no", "act after approved: no"]


def _network_replay(
    lg: Written,
    listener: Listener,
    monkeypatch: pytest.MonkeyPatch,
    factory: str,
    isolation: str,
) -> tuple[Any, Path, bytes]:
    """Replay the ``network`` thread aiming at the test's listener and database, both passed
    with --env; the database's directory is on the import path, so the kernel sandbox
    shows it (read-only) and the replay's writes meet the mount, not an absent file."""
    notes = Path(os.environ["I18_DB"])
    monkeypatch.syspath_prepend(str(notes.parent))
    before = notes.read_bytes()
    report = replay(lg.store, "network", 0, mode="lenient", graph=f"{GRAPHS}:{factory}",
                    isolation=isolation, env=["I18_DB", "I18_PORT"])  # fmt: skip
    return report, notes, before


def test_a_socket_or_a_database_in_a_node_is_contained_by_the_kernel_and_explained(
    lg: Written, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, notes, before = _network_replay(lg, listener, monkeypatch, "network_graph", "kernel")
    assert report.isolation == "kernel"
    assert listener.received == [] and notes.read_bytes() == before  # the guarantee
    # the hooks' explanation: what the nodes tried, named
    assert report.outcome == "agent_error" and report.last_step == 3
    assert "step 4 raised NetworkBlocked" in report.reason
    kinds = [(v.step_index, v.kind) for v in report.violations]
    assert kinds == [(3, "file_write"), (4, "network")]
    assert f"127.0.0.1:{listener.port}" in report.violations[1].detail
    # the node that met the refused database went on, as it would offline: its state differs
    [state] = [d for d in report.divergences if d.kind == "state"]
    assert state.step_index == 3
    assert "not noted: WriteBlocked" in str(state.diff)
    # the tool's call (step 2) was answered from the recording: its socket never opened
    [write] = report.ledger
    assert (write["name"], write["source"]) == ("post_refund", "tape")


@pytest.mark.parametrize("isolation", ["kernel", "hooks"])
def test_nodes_that_take_the_hooks_away_are_still_contained_by_the_kernel(
    lg: Written, listener: Listener, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    factory = "evading_network_graph"
    report, notes, before = _network_replay(lg, listener, monkeypatch, factory, isolation)
    if isolation == "hooks":  # the attack is real: the in-process guard alone lets it out
        deadline = time.monotonic() + 5
        while not listener.received and time.monotonic() < deadline:
            time.sleep(0.05)  # the listener's thread takes what arrived
        assert listener.received == [b"AUDIT"] and notes.read_bytes() != before
        assert report.violations == []
        return
    assert listener.received == [] and notes.read_bytes() == before
    assert report.outcome == "agent_error" and report.last_step == 3
    assert report.reason.startswith("step 4 raised ")
    [state] = [d for d in report.divergences if d.kind == "state"]
    assert "not noted: OperationalError" in str(state.diff)  # the read-only mount said no


@pytest.mark.parametrize(
    ("thread", "factory"),
    [("nested", "nested_graph"), ("private", "private_graph"), ("fan", "fan_graph")],
)
def test_a_subgraph_and_a_send_fan_out_replay_with_their_namespaces(
    lg: Written, thread: str, factory: str
) -> None:
    report = replay(lg.store, thread, -1, graph=f"{GRAPHS}:{factory}")
    assert report.outcome == "completed", report.reason
    assert report.divergences == []
    assert all(s.state_equal for s in report.steps)
    calls = sum(s.calls for s in report.steps)
    assert calls == sum(s.calls_from_tape for s in report.steps) == (3 if thread == "fan" else 2)
