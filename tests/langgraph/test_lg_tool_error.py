"""A tool that raises (no ToolNode error handling): the call stays unanswered, and its tape row
carries the error LangGraph recorded for the task that ran it.

Two shapes, on both savers: the prebuilt agent (each tool call is a ``Send`` task of its own,
so the error belongs to the call it carried) and a hand-built graph whose ``tools`` node runs
a ``ToolNode`` (one pulled task running every call).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph.lg_import import SAVERS, open_saver
from tests.langgraph.patterns_model import ScriptedModel, ai, cfg


@tool
def refund(order: str) -> str:
    """Refund an order."""
    raise RuntimeError(f"payment gateway down for {order}")


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


CALLS = [{"name": "lookup", "args": {"order": "A-1"}, "id": "call-ok"},
         {"name": "refund", "args": {"order": "A-1"}, "id": "call-bad"}]  # fmt: skip


def _prebuilt(saver: Any) -> Any:
    from langgraph.prebuilt import create_react_agent

    model = ScriptedModel(script=[ai("te-ai-1", "", CALLS, 50), ai("te-ai-2", "done")])
    return create_react_agent(model, [lookup, refund], checkpointer=saver)


def _hand_built(saver: Any) -> Any:
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    model = ScriptedModel(script=[ai("te-ai-1", "", CALLS, 50), ai("te-ai-2", "done")])
    g: Any = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([lookup, refund], handle_tool_errors=False))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


@pytest.fixture(params=SAVERS)
def written(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[dict[str, Any], Path]]:
    """Both graphs run into the failing tool; LangGraph's head task errors, and the store."""
    source, opened = open_saver(request, tmp_path, "lgtoolerr")
    errors: dict[str, Any] = {}
    with opened as saver:
        for thread, build in (("prebuilt", _prebuilt), ("hand-built", _hand_built)):
            graph = build(saver)
            with pytest.raises(RuntimeError, match="payment gateway down"):
                graph.invoke({"messages": [HumanMessage("refund A-1", id="h")]}, cfg(thread))
            head = graph.get_state(cfg(thread))
            errors[thread] = {"step": head.metadata["step"],
                              "tasks": [(t.name, t.error) for t in head.tasks]}  # fmt: skip
        store = tmp_path / "s.duckdb"
        with Store.open(store) as st:
            import_source(st, source, ImportOptions())
    yield errors, store


@pytest.mark.parametrize("thread", ["prebuilt", "hand-built"])
def test_unanswered_call_carries_the_task_error(
    written: tuple[dict[str, Any], Path], thread: str
) -> None:
    errors, store = written
    lg = errors[thread]
    failed = [str(e) for _, e in lg["tasks"] if e is not None]
    assert len(failed) == 1 and "payment gateway down for A-1" in failed[0]
    with Store.open(store, read_only=True) as st:
        calls = {c.name: c for c in st.tool_calls(thread) if c.kind == "tool"}
        run = st.run(thread)
    bad = calls["refund"]
    assert bad.response is None
    assert bad.error is not None and "payment gateway down for A-1" in bad.error
    assert bad.error == run.last_error  # the same text the run's status reports
    assert bad.step_index == lg["step"]
    if thread == "prebuilt":  # its own Send task: the call that worked is answered
        assert calls["lookup"].error is None and calls["lookup"].response is not None
    else:  # one task ran both calls and wrote nothing: both failed with it
        assert calls["lookup"].error == bad.error
