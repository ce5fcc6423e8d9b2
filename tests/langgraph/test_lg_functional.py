"""LangGraph's functional API (``@entrypoint`` / ``@task``), imported from the real package's
databases (the scenarios of tests/langgraph/functional.py, on SqliteSaver and PostgresSaver).

Every checkpoint's state, ``next`` and the runs' statuses are compared with LangGraph's own
``get_state_history`` by test_langgraph_history.py; here: what an entrypoint's checkpoints
carry besides (the model and tool calls of its tasks, tokens, calls in flight at a failed or
parked head, the errors and questions said once, what it saved for its next call).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from debugger.audit import audit_run
from debugger.store import Store, metadata_split
from tests.langgraph.conftest import Written
from tests.langgraph.functional import CHAT_ANSWER

pytestmark = pytest.mark.postgres


def _calls(w: Written, run: str) -> list[tuple[int, str, str, str | None]]:
    with Store.open(w.store_path, read_only=True) as store:
        return [(t.step_index, t.kind, t.name, t.error) for t in store.tool_calls(run)]


def test_the_state_is_what_the_entrypoint_returned(written: Written) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        agent = store.checkpoints("func-agent")
        text = store.checkpoints("func-text")
        chat = store.checkpoints("func-chat")
    # before it first returned, LangGraph's values are None; then its output
    assert [c.working_state for c in text] == [None, "QUIET PLEASE"]
    assert agent[0].working_state is None
    assert [m["id"] for m in agent[-1].working_state] == [
        "f-human-1", "f-ai-0", "tool-f-call-0", "f-ai-1", "tool-f-call-1", "f-ai-2"]  # fmt: skip
    # a chat returning its answer (a message) and saving the history for the next call
    head = chat[-1]
    assert head.working_state["id"] == "c-ai-2"
    internal = head.metadata["internal_channels"]
    assert internal["__end__"] == {"__type__": "stepscope.same_as", "of": "working_state"}
    assert [m["id"] for m in internal["__previous__"]] == [
        "c-human-0", "c-ai-0", "c-human-1", "c-ai-1", "c-human-2", "c-ai-2"]  # fmt: skip
    # the entrypoint's node is named after its function: the input starts it, and it is
    # the run's agent
    assert [c.metadata["next"] for c in agent] == [["agent"], []]
    with Store.open(written.store_path, read_only=True) as store:
        assert [store.run(r).agent for r in ("func-agent", "func-chat", "func-text")] == [
            "agent", "chat", "upper"]  # fmt: skip
    assert [c.metadata["next"] for c in chat] == [["chat"], [], ["chat"], [], ["chat"], []]


def test_a_chat_s_saved_history_is_split_into_shared_parts(written: Written) -> None:
    """From its second call, what the chat saved makes a document the store keeps as a stub
    and shared parts (debugger.store.metadata_split); it reads back whole (every checkpoint
    against LangGraph's get_state_history: test_langgraph_history.py)."""
    con = duckdb.connect(str(written.store_path), read_only=True)
    try:
        stubs = con.execute(
            "SELECT step_index FROM checkpoint_rows WHERE run_id = 'func-chat' "
            f"AND contains(metadata, '{metadata_split.MARK}') ORDER BY step_index"
        ).fetchall()
    finally:
        con.close()
    assert [s for (s,) in stubs] == [2, 3, 4]
    with Store.open(written.store_path, read_only=True) as store:
        saved = store.checkpoint("func-chat", 4).metadata["internal_channels"]["__previous__"]
    assert [m["id"] for m in saved] == [
        "c-human-0", "c-ai-0", "c-human-1", "c-ai-1", "c-human-2", "c-ai-2"]  # fmt: skip
    assert all(m["content"].endswith(CHAT_ANSWER) for m in saved if m["type"] == "ai")


def test_model_and_tool_calls_of_the_tasks_are_on_the_tape(written: Written) -> None:
    assert _calls(written, "func-agent") == [
        (0, "model", "model", None), (0, "tool", "lookup", None),
        (0, "model", "model", None), (0, "tool", "lookup", None), (0, "model", "model", None),
    ]  # fmt: skip
    with Store.open(written.store_path, read_only=True) as store:
        assert store.run("func-agent").budgets.tokens_spent == 350
        # one answer per call on the thread, its usage counted once; what the model was
        # given: the history the entrypoint saved, then the new question
        assert store.run("func-chat").budgets.tokens_spent == 120
        asked = [(t.kind, t.request) for t in store.tool_calls("func-chat")]
        assert asked == [
            ("model", {"messages": ["c-human-0"]}),
            ("model", {"messages": ["c-human-0", "c-ai-0", "c-human-1"]}),
            ("model", {"messages": ["c-human-0", "c-ai-0", "c-human-1", "c-ai-1", "c-human-2"]}),
        ]
        # at a head where the entrypoint failed, the model was given its input
        [model, _] = store.tool_calls("func-agent-down")
        assert model.request == {"messages": ["f-human-1"]}


def test_a_failed_head_shows_what_its_tasks_did(written: Written) -> None:
    """The tool raised inside the entrypoint: its output was never returned, so only the
    tasks' results (kept by LangGraph, not run again on resume) say what happened."""
    error = "RuntimeError('order service unavailable')"
    assert _calls(written, "func-agent-down") == [
        (-1, "model", "model", None), (-1, "tool", "lookup", error)]  # fmt: skip
    with Store.open(written.store_path, read_only=True) as store:
        run = store.run("func-agent-down")
        head = store.checkpoint("func-agent-down")
        report = audit_run(store, "func-agent-down")
    assert run.status == "failed" and run.last_error == error  # said once, not per task
    assert run.budgets.tokens_spent == 100  # the model call that answered before the failure
    assert [(p["tool"], p["args"]) for p in head.pending_effects] == [("lookup", {"order": "B-0"})]
    # the model's answer is a finished task's write: LangGraph hands it back on resume
    [kept] = head.metadata["pending_writes"]
    assert (kept["channel"], kept["value"]["id"]) == ("__return__", "f-ai-0")
    # in doubt as any tool call that raised (no key); not the state, which LangGraph keeps
    assert report.verdict == "restart_required"
    assert [r for r in report.reasons if "lookup" in r] == report.reasons


@pytest.mark.parametrize("run", ["func-agent-down", "func-ask-parked", "func-text"])
def test_an_entrypoint_s_output_is_not_judged_as_its_resume_state(
    written: Written, run: str
) -> None:
    """Before it returned its state is None (as LangGraph's values), and a text output is
    not prose to resume from: a resume starts from the input, the tasks' results and what
    the entrypoint saved, which LangGraph keeps."""
    with Store.open(written.store_path, read_only=True) as store:
        report = audit_run(store, run)
    rules = {f.rule_id for f in report.findings}
    assert not rules & {"missing-working-state", "prose-state"}, report.findings


def test_a_question_in_a_task_parks_the_entrypoint(written: Written) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        run = store.run("func-ask-parked")
        head = store.checkpoint("func-ask-parked")
    assert run.status == "parked"
    # the task and its entrypoint both record the question: one question, the entrypoint's
    assert run.status_reason.startswith("interrupt() in node agent waits for an answer")
    assert "interrupts" not in head.metadata
    assert head.metadata["interrupt"]["value"] == {"question": "run lookup({'order': 'B-0'})?"}
    assert [p["tool"] for p in head.pending_effects] == ["lookup"]
    assert _calls(written, "func-ask-parked") == [
        (-1, "model", "model", None), (-1, "tool", "lookup", None)]  # fmt: skip


def test_a_failed_task_retried_by_a_new_invoke(written: Written) -> None:
    """The task raised, ``invoke(None)`` ran the entrypoint again on the same checkpoint and
    the task's second attempt returned: the error is superseded, as a retried node's is."""
    with Store.open(written.store_path, read_only=True) as store:
        [start, done] = store.checkpoints("func-retried")
        run = store.run("func-retried")
    assert start.metadata["next"] == ["pay"] and "task_errors" not in start.metadata
    assert done.working_state == {"order": "C-1", "receipt": "charged C-1"}
    assert run.status == "completed" and run.last_error is None


def test_the_timeline_compares_an_entrypoint_s_first_state_with_nothing(written: Written) -> None:
    """The first checkpoint is compared with an empty state of its own kind: None before the
    entrypoint returned is no change (compared with an object it read ``{} -> null``)."""
    from debugger.pages_data.timeline import view_of

    with Store.open(written.store_path, read_only=True) as store:
        [first, done] = store.checkpoints("func-text")
        assert view_of(store, first, None).diff == []
        [change] = view_of(store, done, first).diff
    assert (change["path"], change["kind"], change["new"]) == (
        "root",
        "type_changes",
        '"QUIET PLEASE"',
    )


def test_hostile_entrypoint_values_are_read_or_quarantined(tmp_path: Path) -> None:
    """Outputs and task results built to break the reader, written by the real SqliteSaver:
    a value nested past the limit is quarantined with its reason, a dict that only claims to
    be a message (wrong types everywhere) counts nothing, NaN reads as null; nothing raises."""
    import sqlite3

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    from loaders import import_source

    ai = "pydantic:langchain_core.messages.ai.AIMessage"
    deep: list[Any] = []
    for _ in range(250):
        deep = [deep]
    cases: dict[str, Any] = {
        "nan": float("nan"),
        "deep": deep,
        "fake": {"__type__": ai, "usage_metadata": {"total_tokens": "lots"}, "tool_calls": "x",
                 "id": 5},
        "fakes": [{"__type__": ai, "usage_metadata": "x", "tool_calls": [{"id": None}]}],
        "bytes": b"\x00\xff",
    }  # fmt: skip
    db = tmp_path / "hostile.sqlite"
    con = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(con)
    for thread, value in cases.items():
        ck = empty_checkpoint()
        ck["channel_values"], ck["channel_versions"] = {"__start__": "in"}, {"__start__": 1}
        cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        first = saver.put(cfg, ck, {"source": "input", "step": -1, "parents": {}}, {"__start__": 1})
        path = "~__pregel_push, ~__pregel_pull, agent, 0000000000, 0000000001"
        saver.put_writes(first, [("__return__", value)], "task-1", path)
        out = empty_checkpoint()
        out["channel_values"] = {"__end__": value, "__previous__": value}
        out["channel_versions"] = {"__start__": 2, "__end__": 2, "__previous__": 2}
        out["versions_seen"] = {"agent": {"__start__": 1}}
        saver.put(first, out, {"source": "loop", "step": 0, "parents": {}}, {"__end__": 2})
    con.close()
    with Store.open(tmp_path / "s.duckdb") as store:
        report = import_source(store, str(db))
        assert report.total.quarantined == 1
        assert report.quarantine_reasons == {"working_state is nested deeper than 200 levels": 1}
        assert [c.step_index for c in store.checkpoints("deep")] == [-1]
        assert store.checkpoint("nan").working_state is None
        assert store.checkpoint("bytes").working_state is not None
        for thread in ("fake", "fakes"):
            assert store.run(thread).budgets.tokens_spent == 0
            assert store.run(thread).status == "completed"
            audit_run(store, thread)


def test_the_timeline_page_shows_an_entrypoint_s_steps(lg_sqlite: Written) -> None:
    """As a person opens them: the input checkpoint holds no state yet, the next call's
    answer is the change, the steps read as one span."""
    from tests.ui.helpers import html_bodies, open_app, texts

    at = open_app(lg_sqlite.store_path, "timeline", run="func-text", step="-1")
    assert not at.exception and not at.error
    page = texts(at)
    assert "The first checkpoint holds no working state yet." in page
    assert "steps -1\u20130 (2 checkpoints)" in page
    at = open_app(lg_sqlite.store_path, "timeline", run="func-chat", step="2")
    assert not at.exception and not at.error
    assert "compared with step 1" in texts(at)
    assert any("answer 1" in body for body in html_bodies(at))  # the diff table
