"""Real LangGraph graphs for the tests, each writing one scenario through a given checkpointer.

Every scenario function takes a checkpointer, runs its graph on its own thread(s) and returns
``{thread_id: compiled graph}`` so a test can ask the graph for ``get_state_history``.
Nothing here is mocked: these are the graphs and savers an application would use.
"""

from __future__ import annotations

import contextlib
import enum
import operator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel

from tests.langgraph.functional import FUNCTIONAL_SCENARIOS, FUNCTIONAL_STATUS
from tests.langgraph.handoff import HANDOFF_STATUS, handoff

Graphs = dict[str, Any]


class Counter(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def _graph(schema: Any) -> Any:
    """A StateGraph, typed loosely (LangGraph's node overloads defeat mypy on plain functions)."""
    return StateGraph(schema)


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _linear_graph(saver: Any, fail_at: str | None = None) -> Any:
    def node(name: str) -> Any:
        def run(s: Counter) -> dict[str, Any]:
            if name == fail_at:
                raise ValueError(f"{name} failed on n={s['n']}")
            return {"n": s["n"] + 1, "log": [name]}

        return run

    g = _graph(Counter)
    for name in ("a", "b", "c"):
        g.add_node(name, node(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=saver)


def linear(saver: Any) -> Graphs:
    """START -> a -> b -> c -> END, completed."""
    graph = _linear_graph(saver)
    graph.invoke({"n": 0, "log": []}, _cfg("linear"))
    return {"linear": graph}


def raises(saver: Any) -> Graphs:
    """Node b raises: the run stops after a with an ``__error__`` write."""
    graph = _linear_graph(saver, fail_at="b")
    with contextlib.suppress(ValueError):
        graph.invoke({"n": 0, "log": []}, _cfg("raises"))
    return {"raises": graph}


def durability(saver: Any) -> Graphs:
    """``durability='exit'``: only the last checkpoint is written, of a completed run and of
    one whose node b raised; ``'async'``: every checkpoint, written while the next step runs."""
    graphs = {}
    for mode, fail_at in (("exit", None), ("exit", "b"), ("async", None)):
        thread = f"durable-{mode}-{'failed' if fail_at else 'done'}"
        graph = _linear_graph(saver, fail_at=fail_at)
        with contextlib.suppress(ValueError):
            graph.invoke({"n": 0, "log": []}, _cfg(thread), durability=mode)
        graphs[thread] = graph
    return graphs


def parallel_fail(saver: Any) -> Graphs:
    """Two nodes in one step: ``good`` finishes, ``bad`` raises; good's writes stay pending."""

    def bad(s: Counter) -> dict[str, Any]:
        raise RuntimeError("carrier API timed out")

    g = _graph(Counter)
    g.add_node("good", lambda s: {"log": ["good"]})
    g.add_node("bad", bad)
    g.add_edge(START, "good")
    g.add_edge(START, "bad")
    g.add_edge("good", END)
    g.add_edge("bad", END)
    graph = g.compile(checkpointer=saver)
    with contextlib.suppress(RuntimeError):
        graph.invoke({"n": 0, "log": []}, _cfg("parallel-fail"))
    return {"parallel-fail": graph}


class Approval(TypedDict):
    amount: int
    decision: str


def _approval_graph(saver: Any) -> Any:
    def ask(s: Approval) -> dict[str, Any]:
        answer = interrupt({"question": "refund?", "amount": s["amount"]})
        return {"decision": "approved" if answer else "rejected"}

    def pay(s: Approval) -> dict[str, Any]:
        return {"decision": s["decision"] + " and paid"}

    g = _graph(Approval)
    g.add_node("ask", ask)
    g.add_node("pay", pay)
    g.add_edge(START, "ask")
    g.add_edge("ask", "pay")
    g.add_edge("pay", END)
    return g.compile(checkpointer=saver)


def approval(saver: Any) -> Graphs:
    """An interrupt() pause left parked, and the same pause resumed to the end."""
    graph = _approval_graph(saver)
    graph.invoke({"amount": 42, "decision": ""}, _cfg("approval-parked"))
    graph.invoke({"amount": 7, "decision": ""}, _cfg("approval-resumed"))
    graph.invoke(Command(resume=True), _cfg("approval-resumed"))
    return {"approval-parked": graph, "approval-resumed": graph}


def fork(saver: Any) -> Graphs:
    """A run, then update_state on an old checkpoint (fork) and a replay from another."""
    graph = _linear_graph(saver)
    cfg = _cfg("fork")
    graph.invoke({"n": 0, "log": []}, cfg)
    history = list(graph.get_state_history(cfg))
    after_a = next(s for s in history if s.metadata["step"] == 1)
    forked = graph.update_state(after_a.config, {"n": 100, "log": ["edited"]})
    graph.invoke(None, forked)
    after_b = next(s for s in history if s.metadata["step"] == 2)
    graph.invoke(None, after_b.config)  # replay from an old checkpoint
    return {"fork": graph}


class Inner(TypedDict):
    text: str
    hops: int


class Outer(TypedDict):
    text: str
    hops: int


def subgraph(saver: Any) -> Graphs:
    """A parent whose middle node is a compiled subgraph (its own namespace)."""
    inner = _graph(Inner)
    inner.add_node("up", lambda s: {"text": s["text"].upper(), "hops": s["hops"] + 1})
    inner.add_node("mark", lambda s: {"text": s["text"] + "!", "hops": s["hops"] + 1})
    inner.add_edge(START, "up")
    inner.add_edge("up", "mark")
    inner.add_edge("mark", END)
    outer = _graph(Outer)
    outer.add_node("prep", lambda s: {"text": s["text"].strip(), "hops": s["hops"] + 1})
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "prep")
    outer.add_edge("prep", "inner")
    outer.add_edge("inner", END)
    graph = outer.compile(checkpointer=saver)
    graph.invoke({"text": "  hello ", "hops": 0}, _cfg("subgraph"))
    return {"subgraph": graph}


class FanOut(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]


def send(saver: Any) -> Graphs:
    """Send fan-out: one task per item, results gathered by a reducer."""

    def spread(s: FanOut) -> list[Send]:
        return [Send("square", {"items": [i], "results": []}) for i in s["items"]]

    g = _graph(FanOut)
    g.add_node("square", lambda s: {"results": [s["items"][0] ** 2]})
    g.add_conditional_edges(START, spread, ["square"])
    g.add_edge("square", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({"items": [1, 2, 3], "results": []}, _cfg("send"))
    return {"send": graph}


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Ticket(BaseModel):
    id: int
    subject: str
    opened: datetime
    priority: Priority


@dataclass
class Customer:
    name: str
    tier: int
    since: datetime


class Rich(TypedDict):
    ticket: Ticket
    customer: Customer
    due: datetime
    tags: set[str]
    messages: Annotated[list[AnyMessage], add_messages]


WHEN = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)


def _ai(text: str, calls: list[dict[str, Any]], tokens: tuple[int, int], mid: str) -> AIMessage:
    return AIMessage(
        content=text, id=mid, tool_calls=calls,
        usage_metadata={"input_tokens": tokens[0], "output_tokens": tokens[1],
                        "total_tokens": sum(tokens)},
        response_metadata={"model_name": "gpt-test-1"},
    )  # fmt: skip


def rich(saver: Any) -> Graphs:
    """State with a pydantic model, a dataclass, a datetime, a set and messages with tools."""

    def agent(s: Rich) -> dict[str, Any]:
        turns = sum(isinstance(m, AIMessage) for m in s["messages"])
        if turns == 0:
            call = {"name": "lookup_order", "args": {"order": "A-17"}, "id": "call-1"}
            return {"messages": [_ai("", [call], (120, 20), "ai-1")], "tags": {"vip", "refund"}}
        return {"messages": [_ai("Refund approved.", [], (200, 30), "ai-2")],
                "ticket": s["ticket"].model_copy(update={"priority": Priority.LOW})}  # fmt: skip

    def tools(s: Rich) -> dict[str, Any]:
        last: Any = s["messages"][-1]
        return {"messages": [ToolMessage(content='{"status": "shipped"}', id="tool-1",
                                         tool_call_id=last.tool_calls[0]["id"])]}  # fmt: skip

    def route(s: Rich) -> str:
        last = s["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = _graph(Rich)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=saver)
    start = {
        "ticket": Ticket(id=7, subject="Refund", opened=WHEN, priority=Priority.HIGH),
        "customer": Customer(name="Ada", tier=2, since=WHEN),
        "due": WHEN,
        "tags": {"refund"},
        "messages": [HumanMessage(content="Where is my refund?", id="human-1")],
    }
    graph.invoke(start, _cfg("rich"))
    return {"rich": graph}


SCENARIOS = (linear, raises, parallel_fail, approval, fork, subgraph, send, rich,
             durability, handoff, *FUNCTIONAL_SCENARIOS)  # fmt: skip
EXPECTED_STATUS = {
    "linear": "completed", "raises": "failed", "parallel-fail": "failed",
    "approval-parked": "parked",
    "approval-resumed": "completed", "fork": "completed", "subgraph": "completed",
    "send": "completed", "rich": "completed",
    "durable-exit-done": "completed", "durable-exit-failed": "failed",
    "durable-async-done": "completed",
    **HANDOFF_STATUS, **FUNCTIONAL_STATUS,
}  # fmt: skip


def write_all(saver: Any) -> Graphs:
    """Run every scenario through ``saver``."""
    graphs: Graphs = {}
    for scenario in SCENARIOS:
        graphs.update(scenario(saver))
    return graphs
