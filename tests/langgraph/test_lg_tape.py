"""The tape and pending calls of LangGraph runs, against LangGraph's own history.

A model call's request names the messages before its answer; a tool call sits on the step
whose checkpoint (state, or pending writes of a failed superstep) first holds its answer;
an edited call is a row of its own; an answered call is never pending.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode, create_react_agent

from debugger.model import ToolCall
from debugger.store import Store
from loaders.langgraph.map import idempotency_args, key_in
from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.lg_import import SAVERS, Build, Built, builder
from tests.langgraph.patterns_model import ScriptedModel, ai, cfg


@pytest.fixture(params=SAVERS)
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Build]:
    yield from builder(request, tmp_path)


def _tape(got: Built, thread: str) -> list[ToolCall]:
    with Store.open(got.store, read_only=True) as store:
        return store.tool_calls(thread)


def _pending(got: Built, thread: str) -> list[list[Any]]:
    with Store.open(got.store, read_only=True) as store:
        return [c.pending_effects for c in store.checkpoints(thread)]


def _oldest_first(got: Built, thread: str) -> list[dict[str, Any]]:
    return list(reversed(got.says[thread]["history"]))


def _answered_at(got: Built, thread: str, call_id: str) -> int:
    """The step of the first snapshot whose messages hold the tool message of ``call_id``."""
    for s in _oldest_first(got, thread):
        if any(m["tool_call_id"] == call_id for m in s["messages"]):
            return int(s["step"])
    raise AssertionError(f"LangGraph never answered {call_id}")


def test_model_request_is_what_the_model_was_given(build: Build) -> None:
    got = build(T.react_clean)
    models = [c for c in _tape(got, "react-clean") if c.kind == "model"]
    expected = []
    for mid in ("react-ai-1", "react-ai-2"):
        first = next(s for s in _oldest_first(got, "react-clean")
                     if any(m["id"] == mid for m in s["messages"]))  # fmt: skip
        ids = [m["id"] for m in first["messages"]]
        expected.append((first["step"], {"messages": ids[: ids.index(mid)]}))
    assert [(c.step_index, c.request) for c in models] == expected


def test_tool_call_sits_on_the_step_that_ran_it(build: Build) -> None:
    got = build(T.react_clean)
    tools = [c for c in _tape(got, "react-clean") if c.kind == "tool"]
    tool_msg = got.values["react-clean"]["messages"][2]
    assert [(c.name, c.step_index, c.response, c.error) for c in tools] == [
        ("lookup", _answered_at(got, "react-clean", "call-1"), tool_msg.content, None)
    ]
    assert all(p == [] for p in _pending(got, "react-clean"))


def test_unanswered_keyed_call_is_a_pending_effect_with_its_key(build: Build) -> None:
    got = build(T.react_keyed_crash)
    call = got.values["react-keyed-crash"]["messages"][-1].tool_calls[0]
    with Store.open(got.store, read_only=True) as store:
        head = store.checkpoint("react-keyed-crash")
        tape = store.tool_calls("react-keyed-crash")
    assert head.checkpoint_id == got.says["react-keyed-crash"]["head"]["checkpoint_id"]
    assert [(e["tool_call_id"], e["args"], e["idempotency_key"]) for e in head.pending_effects] == [
        (call["id"], call["args"], call["args"]["idempotency_key"])
    ]
    tool = next(c for c in tape if c.kind == "tool")
    assert (tool.response, tool.idempotency_key) == (None, call["args"]["idempotency_key"])


def test_edited_call_keeps_both_rows(build: Build) -> None:
    got = build(T.fork_edited_call)
    history = _oldest_first(got, "fork-edited")
    asked = next(s for s in history if s["source"] == "loop" and s["next"] == ("tools",))
    answer = got.values["fork-edited"]["messages"][2]
    edited = got.values["fork-edited"]["messages"][1].tool_calls[0]
    tools = [c for c in _tape(got, "fork-edited") if c.kind == "tool"]
    assert [(c.request, c.response, c.step_index) for c in tools] == [
        ({"order": "A-1"}, None, asked["step"]),
        (edited["args"], answer.content, _answered_at(got, "fork-edited", "call-f")),
    ]
    assert all(p == [] for p in _pending(got, "fork-edited"))


def test_call_answered_by_a_pending_write_is_answered(build: Build) -> None:
    got = build(T.tool_answered_in_failed_step)
    head = got.says["failed-step-tool"]["head"]
    # LangGraph's head values already hold the finished tools task's answer
    answer = next(m for m in got.values["failed-step-tool"]["messages"] if m.type == "tool")
    tools = [c for c in _tape(got, "failed-step-tool") if c.kind == "tool"]
    assert [(c.step_index, c.response) for c in tools] == [(head["step"], answer.content)]
    with Store.open(got.store, read_only=True) as store:
        cp = store.checkpoint("failed-step-tool")
    assert cp.pending_effects == []
    assert [w["task_path"] for w in cp.metadata["pending_writes"]] != []


def test_answered_sibling_write_is_not_pending(build: Build) -> None:
    got = build(P.parallel_questions)
    head = got.says["parallel-questions"]["head"]
    done = [t["name"] for t in head["tasks"] if not t["interrupts"] and t["error"] is None]
    with Store.open(got.store, read_only=True) as store:
        cp = store.checkpoint("parallel-questions")
    assert cp.pending_effects == []
    assert done == ["left"] and cp.metadata["pending_writes"]


def test_idempotency_argument_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSCOPE_IDEMPOTENCY_ARGS", "request_id, dedupe")
    names = idempotency_args()
    assert names == ("idempotency_key", "request_id", "dedupe")
    assert key_in({"order": "A", "dedupe": 7}, names) == "7"
    assert key_in({"order": "A", "request_id": "r-1", "dedupe": 7}, names) == "r-1"
    assert key_in({"order": "A"}, names) is None


def _artifact_and_error(saver: Any) -> dict[str, Any]:
    @tool(response_format="content_and_artifact")
    def fetch(order: str) -> tuple[str, dict[str, Any]]:
        """Fetch an order with its raw record."""
        return f"order {order}", {"raw": {"order": order, "rows": 2}}

    @tool
    def charge(order: str) -> str:
        """Charge an order."""
        raise ValueError(f"card declined for {order}")

    calls = [{"name": "fetch", "args": {"order": "Z-1"}, "id": "call-a"},
             {"name": "charge", "args": {"order": "Z-1"}, "id": "call-e"}]  # fmt: skip
    model = ScriptedModel(script=[ai("ae-ai-1", "", calls, 50), ai("ae-ai-2", "ok", tokens=20)])
    tools = ToolNode([fetch, charge], handle_tool_errors=True)
    graph = create_react_agent(model, tools, checkpointer=saver)
    graph.invoke({"messages": [("user", "go")]}, cfg("artifact-error"))
    return {"artifact-error": graph}


def test_tool_artifact_and_error(build: Build) -> None:
    got = build(_artifact_and_error)
    answers = {m.tool_call_id: m for m in got.values["artifact-error"]["messages"]
               if m.type == "tool"}  # fmt: skip
    tools = {c.request["order"] + c.name: c for c in _tape(got, "artifact-error")
             if c.kind == "tool"}  # fmt: skip
    fetched, charged = tools["Z-1fetch"], tools["Z-1charge"]
    ok, bad = answers["call-a"], answers["call-e"]
    assert fetched.response == {"content": ok.content, "artifact": ok.artifact}
    assert fetched.error is None
    assert bad.status == "error" and (charged.response, charged.error) == (bad.content, bad.content)
    assert fetched.step_index == charged.step_index == _answered_at(got, "artifact-error", "call-a")
