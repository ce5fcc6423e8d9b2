"""Issue 16 patterns that spend tokens or call tools, written by the real LangGraph.

Same contract as ``patterns``: a builder takes a checkpointer and returns
``{thread_id: compiled graph}``; ``patterns.says`` reads LangGraph's view of a thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.types import Send

from tests.langgraph.patterns_model import Graphs, ScriptedModel, ai, cfg


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class Fan(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    topics: list[str]


def _graph(schema: Any = Chat) -> Any:
    return StateGraph(schema)


def _hello(mid: str = "human-1") -> dict[str, Any]:
    return {"messages": [HumanMessage(content="hello", id=mid)]}


def subgraph_tokens(saver: Any) -> Graphs:
    """g. The root spends nothing itself; a subgraph's model calls spend 100 + 200 tokens."""
    inner = _graph()
    inner.add_node("think", lambda s: {"messages": [ai("sub-ai-1", "thinking", tokens=100)]})
    inner.add_node("answer", lambda s: {"messages": [ai("sub-ai-2", "done", tokens=200)]})
    inner.add_edge(START, "think")
    inner.add_edge("think", "answer")
    inner.add_edge("answer", END)
    outer = _graph()
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    graph = outer.compile(checkpointer=saver)
    graph.invoke(_hello(), cfg("subgraph-tokens"))
    return {"subgraph-tokens": graph}


class Summary(TypedDict):
    summary: str


def subgraph_private_tokens(saver: Any) -> Graphs:
    """g. The subgraph keeps its messages to itself: the root's state holds no AI message."""
    inner = _graph()
    inner.add_node("think", lambda s: {"messages": [ai("priv-ai-1", "thinking", tokens=100)]})
    inner.add_node("answer", lambda s: {"messages": [ai("priv-ai-2", "done", tokens=200)]})
    inner.add_edge(START, "think")
    inner.add_edge("think", "answer")
    inner.add_edge("answer", END)
    compiled = inner.compile()

    def research(s: Summary) -> dict[str, Any]:
        out = compiled.invoke(_hello("priv-human"))
        return {"summary": str(out["messages"][-1].content)}

    outer = _graph(Summary)
    outer.add_node("research", research)
    outer.add_edge(START, "research")
    outer.add_edge("research", END)
    graph = outer.compile(checkpointer=saver)
    graph.invoke({"summary": ""}, cfg("subgraph-private"))
    return {"subgraph-private": graph}


def send_tokens(saver: Any) -> Graphs:
    """g. Send fan-out: three branches each add one AI message of 50, 60, 70 tokens."""

    def spread(s: Fan) -> list[Send]:
        return [Send("write", {"topics": [t], "messages": []}) for t in s["topics"]]

    def write(s: Fan) -> dict[str, Any]:
        t = s["topics"][0]
        return {"messages": [ai(f"send-ai-{t}", t, tokens=50 + 10 * "abc".index(t))]}

    g = _graph(Fan)
    g.add_node("write", write)
    g.add_conditional_edges(START, spread, ["write"])
    g.add_edge("write", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({**_hello(), "topics": ["a", "b", "c"]}, cfg("send-tokens"))
    return {"send-tokens": graph}


def trimmed(saver: Any) -> Graphs:
    """h. Three model calls (100 + 200 + 300), then the oldest AI message removed."""
    g = _graph()
    for i in (1, 2, 3):
        g.add_node(
            f"m{i}", lambda s, i=i: {"messages": [ai(f"trim-ai-{i}", f"t{i}", tokens=100 * i)]}
        )
    g.add_node("trim", lambda s: {"messages": [RemoveMessage(id="trim-ai-1")]})
    g.add_edge(START, "m1")
    g.add_edge("m1", "m2")
    g.add_edge("m2", "m3")
    g.add_edge("m3", "trim")
    g.add_edge("trim", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke(_hello(), cfg("trimmed"))
    return {"trimmed": graph}


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order} shipped"


def _refund_tool(fail: bool) -> Any:
    @tool
    def refund(order: str, amount: int, idempotency_key: str) -> str:
        """Refund an order."""
        if fail:
            raise ConnectionError("payment gateway unreachable")
        return f"refunded {amount} on {order}"

    return refund


def react_clean(saver: Any) -> Graphs:
    """i. A prebuilt ReAct agent: a tool call, its answer, a final reply; completed."""
    model = ScriptedModel(script=[
        ai("react-ai-1", "", [{"name": "lookup", "args": {"order": "A-1"}, "id": "call-1"}], 120),
        ai("react-ai-2", "It shipped.", tokens=180),
    ])  # fmt: skip
    graph = create_react_agent(model, [lookup], checkpointer=saver)
    graph.invoke(_hello(), cfg("react-clean"))
    return {"react-clean": graph}


def react_keyed_crash(saver: Any) -> Graphs:
    """i. The agent calls ``refund`` with an idempotency_key and the tool raises."""
    call = {"name": "refund", "id": "call-refund",
            "args": {"order": "A-2", "amount": 30, "idempotency_key": "refund-A-2-30"}}  # fmt: skip
    model = ScriptedModel(script=[ai("keyed-ai-1", "", [call], 150)])
    tools = ToolNode([_refund_tool(fail=True)], handle_tool_errors=False)
    graph = create_react_agent(model, tools, checkpointer=saver)
    with contextlib.suppress(ConnectionError):
        graph.invoke(_hello(), cfg("react-keyed-crash"))
    return {"react-keyed-crash": graph}


def fork_edited_call(saver: Any) -> Graphs:
    """j. Interrupted before the tools, the AI's call is edited (same id), then run."""
    model = ScriptedModel(script=[
        ai("fork-ai-1", "", [{"name": "lookup", "args": {"order": "A-1"}, "id": "call-f"}], 100),
        ai("fork-ai-2", "Done.", tokens=100),
    ])  # fmt: skip
    graph = create_react_agent(model, [lookup], checkpointer=saver, interrupt_before=["tools"])
    c = cfg("fork-edited")
    graph.invoke(_hello(), c)
    old: Any = graph.get_state(c).values["messages"][-1]
    call = {"name": "lookup", "args": {"order": "B-9"}, "id": "call-f"}
    edited = AIMessage(content="", id=old.id, usage_metadata=old.usage_metadata, tool_calls=[call])
    graph.update_state(c, {"messages": [edited]})
    graph.invoke(None, c)
    return {"fork-edited": graph}


def tool_answered_in_failed_step(saver: Any) -> Graphs:
    """k. One superstep runs a ToolNode (answers call-k) and a node that raises."""

    def boom(s: Chat) -> dict[str, Any]:
        raise RuntimeError("audit logger down")

    call = {"name": "lookup", "args": {"order": "K-1"}, "id": "call-k"}
    g = _graph()
    g.add_node("model", lambda s: {"messages": [ai("k-ai-1", "", [call], 90)]})
    g.add_node("tools", ToolNode([lookup]))
    g.add_node("boom", boom)
    g.add_edge(START, "model")
    g.add_edge("model", "tools")
    g.add_edge("model", "boom")
    g.add_edge("tools", END)
    g.add_edge("boom", END)
    graph = g.compile(checkpointer=saver)
    with contextlib.suppress(RuntimeError):
        graph.invoke(_hello(), cfg("failed-step-tool"))
    return {"failed-step-tool": graph}


class Live:
    """l. A graph run in a background thread, one node at a time, each node waiting for a go.

    ``step()`` lets the next node run and waits until its checkpoint is written, so a test
    can import the database between steps and after ``finish()``.
    """

    def __init__(self, saver: Any, steps: int = 4, thread: str = "live") -> None:
        self.thread, self.steps = thread, steps
        self._go, self._done = threading.Semaphore(0), threading.Semaphore(0)
        self.graph = self._build(saver)
        self._runner = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _build(self, saver: Any) -> Any:
        def node(i: int) -> Callable[[Chat], dict[str, Any]]:
            def run(s: Chat) -> dict[str, Any]:
                self._go.acquire()
                if i == self.steps - 1:
                    self._done.release()
                    raise RuntimeError("live run failed on its last step")
                return {"messages": [ai(f"live-ai-{i}", f"s{i}", tokens=10 * (i + 1))]}

            return run

        g = _graph()
        names = [f"n{i}" for i in range(self.steps)]
        for i, name in enumerate(names):
            g.add_node(name, node(i))
        for a, b in zip([START, *names], [*names, END], strict=True):
            g.add_edge(a, b)
        return g.compile(checkpointer=self._signal(saver))

    def _signal(self, saver: Any) -> Any:
        put = saver.put

        def put_and_signal(*a: Any, **kw: Any) -> Any:
            out = put(*a, **kw)
            if a[2].get("source") == "loop" and a[2].get("step", -1) >= 1:
                self._done.release()
            return out

        saver.put = put_and_signal
        return saver

    def _run(self) -> None:
        try:
            self.graph.invoke(_hello(), cfg(self.thread))
        except RuntimeError as e:
            self.error = e

    def start(self) -> None:
        """Start the run; it waits before its first node."""
        self._runner.start()

    def step(self, timeout: float = 30.0) -> None:
        """Let one node run and wait for what it wrote (its checkpoint or its error)."""
        self._go.release()
        if not self._done.acquire(timeout=timeout):
            raise TimeoutError("the live graph did not write its step")

    def finish(self, timeout: float = 30.0) -> None:
        """Run the remaining nodes and wait for the thread to end."""
        while self._runner.is_alive():
            self._go.release()
            self._runner.join(timeout=0.2)
            timeout -= 0.2
            if timeout <= 0:
                raise TimeoutError("the live graph did not finish")


def live(saver: Any) -> Graphs:
    """l. The live run driven to its end at once (for the plain pattern list)."""
    run = Live(saver)
    run.start()
    run.finish()
    return {run.thread: run.graph}


PATTERNS = (subgraph_tokens, subgraph_private_tokens, send_tokens, trimmed, react_clean,
            react_keyed_crash, fork_edited_call, tool_answered_in_failed_step, live)  # fmt: skip
