"""Graphs written by the real LangGraph, one per pattern of issue 16 ("What is wrong today").

Each builder takes a checkpointer (``patterns_model.sqlite_saver`` / ``postgres_saver``),
runs its graph on its own thread and returns ``{thread_id: compiled graph}``. ``says``
returns what LangGraph's own API reports for a thread, the reference a Stepscope import is
compared against. Token-spending patterns are in ``patterns_tokens``.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Annotated, Any, TypedDict

from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from tests.langgraph.patterns_model import Graphs, cfg


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(schema: Any = Log) -> Any:
    return StateGraph(schema)


def _step(name: str) -> Any:
    return lambda s: {"log": [name]}


def _chain(saver: Any, **compile_kw: Any) -> Any:
    g = _graph()
    for n in ("a", "b", "c"):
        g.add_node(n, _step(n))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=saver, **compile_kw)


def breakpoint_before(saver: Any) -> Graphs:
    """a. ``interrupt_before=["b"]``: the run stops with next == ("b",)."""
    graph = _chain(saver, interrupt_before=["b"])
    graph.invoke({"log": []}, cfg("bp-before"))
    return {"bp-before": graph}


def breakpoint_after(saver: Any) -> Graphs:
    """a. ``interrupt_after=["b"]``: the run stops after b with next == ("c",)."""
    graph = _chain(saver, interrupt_after=["b"])
    graph.invoke({"log": []}, cfg("bp-after"))
    return {"bp-after": graph}


def two_questions(saver: Any) -> Graphs:
    """b. One node asks twice; the first answered, the run parked on the second."""

    def ask(s: Log) -> dict[str, Any]:
        first = interrupt({"question": "amount?"})
        second = interrupt({"question": f"confirm {first}?"})
        return {"log": [f"{first}/{second}"]}

    g = _graph()
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({"log": []}, cfg("two-questions"))
    graph.invoke(Command(resume=42), cfg("two-questions"))
    return {"two-questions": graph}


def parallel_questions(saver: Any) -> Graphs:
    """c. Two nodes in one superstep each call interrupt(); one answered by its id."""

    def asker(name: str) -> Any:
        def run(s: Log) -> dict[str, Any]:
            return {"log": [f"{name}={interrupt({'question': name})}"]}

        return run

    g = _graph()
    g.add_node("left", asker("left"))
    g.add_node("right", asker("right"))
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge("left", END)
    g.add_edge("right", END)
    graph = g.compile(checkpointer=saver)
    c = cfg("parallel-questions")
    graph.invoke({"log": []}, c)
    left = next(i for i in graph.get_state(c).interrupts if i.value["question"] == "left")
    graph.invoke(Command(resume={left.id: "yes"}), c)
    return {"parallel-questions": graph}


def join_crash(saver: Any) -> Graphs:
    """d. ``add_edge(["a", "b"], "c")`` and c raises."""

    def c_node(s: Log) -> dict[str, Any]:
        raise ValueError("c failed after the join")

    g = _graph()
    g.add_node("a", _step("a"))
    g.add_node("b", _step("b"))
    g.add_node("c", c_node)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "c")
    g.add_edge("c", END)
    graph = g.compile(checkpointer=saver)
    with contextlib.suppress(ValueError):
        graph.invoke({"log": []}, cfg("join-crash"))
    return {"join-crash": graph}


def _flaky_graph(saver: Any, failures: int) -> Any:
    seen = {"n": 0}

    def flaky(s: Log) -> dict[str, Any]:
        seen["n"] += 1
        if seen["n"] <= failures:
            raise ConnectionError(f"attempt {seen['n']} lost the connection")
        return {"log": ["flaky"]}

    g = _graph()
    g.add_node("a", _step("a"))
    g.add_node("flaky", flaky)
    g.add_edge(START, "a")
    g.add_edge("a", "flaky")
    g.add_edge("flaky", END)
    return g.compile(checkpointer=saver)


def retried(saver: Any) -> Graphs:
    """e. A node fails, ``invoke(None)`` retries: one thread recovers, one fails again."""
    graphs: Graphs = {}
    for thread, failures in (("retry-ok", 1), ("retry-failed", 2)):
        graph = _flaky_graph(saver, failures)
        for start in ({"log": []}, None):
            with contextlib.suppress(ConnectionError):
                graph.invoke(start, cfg(thread))
        graphs[thread] = graph
    return graphs


def recursion(saver: Any) -> Graphs:
    """f. A loop stopped by ``GraphRecursionError`` (recursion_limit=4)."""
    g = _graph()
    g.add_node("spin", _step("spin"))
    g.add_edge(START, "spin")
    g.add_conditional_edges("spin", lambda s: "spin", ["spin"])
    graph = g.compile(checkpointer=saver)
    with contextlib.suppress(GraphRecursionError):
        graph.invoke({"log": []}, cfg("recursion", recursion_limit=4))
    return {"recursion": graph}


def _message_tokens(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for m in values.get("messages") or []:
        out.append({"id": m.id, "type": m.type, "usage": getattr(m, "usage_metadata", None),
                    "tool_calls": [c["id"] for c in getattr(m, "tool_calls", None) or []],
                    "tool_call_id": getattr(m, "tool_call_id", None)})  # fmt: skip
    return out


def _snapshot(snap: Any) -> dict[str, Any]:
    conf = snap.config["configurable"]
    tasks = [{"name": t.name, "error": str(t.error) if t.error else None,
              "interrupts": [{"id": getattr(i, "id", None), "value": i.value}
                             for i in t.interrupts],  # no id before LangGraph 0.6
              "subgraph": _snapshot(t.state) if hasattr(t.state, "next") else None}
             for t in snap.tasks]  # fmt: skip
    return {
        "checkpoint_id": conf["checkpoint_id"],
        "ns": conf.get("checkpoint_ns", ""),
        "step": snap.metadata.get("step") if snap.metadata else None,
        "source": snap.metadata.get("source") if snap.metadata else None,
        "next": tuple(snap.next),
        "tasks": tasks,
        "messages": _message_tokens(snap.values),
    }


def says(graph: Any, thread: str, ns: str = "") -> dict[str, Any]:
    """What LangGraph reports for a thread: its head (with subgraphs) and its history.

    Returns:
        ``{"head": snapshot, "history": [snapshot, ...]}``, newest first, each snapshot with
        checkpoint_id, ns, step, source, next, tasks (error, interrupts, subgraph head) and
        the messages' ids, usage and tool call ids.
    """
    c = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    head = _snapshot(graph.get_state(c, subgraphs=True))
    return {"head": head, "history": [_snapshot(s) for s in graph.get_state_history(c)]}
