"""Model calls in Send branches, in a subgraph several nodes share, and in nested subgraphs,
written by the real LangGraph (issue 16: the tape's requests and the budgets' roll-up).

Same contract as ``patterns``: a builder takes a checkpointer and returns
``{thread_id: compiled graph}``. The model of these graphs records, for each answer, what it
was given and where LangGraph ran it (the calling task's graph namespace and step, from the
runnable config LangGraph sets): the reference a tape is compared against.
"""

from __future__ import annotations

import itertools
import threading
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send

from tests.langgraph.patterns_model import Graphs, ai, cfg


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class Fan(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    topics: list[str]


class Summary(TypedDict):
    summary: str


CALLS: dict[str, dict[str, Any]] = {}
"""Per answer id, what the model was given and where it ran: ``{"given": [ids], "ns",
"step", "tokens"}`` (``ns``: the namespace of the graph whose task called it)."""
_LOCK = threading.Lock()
_COUNT = itertools.count()


class RecordingModel(BaseChatModel):
    """Answers each call with a new AI message ``<label>-<n>`` and notes it in ``CALLS``."""

    label: str
    tokens: int = 100

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:  # fmt: skip
        from langchain_core.runnables.config import var_child_runnable_config

        config = var_child_runnable_config.get() or {}
        task_ns = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
        step = (config.get("metadata") or {}).get("langgraph_step")
        with _LOCK:
            mid = f"{self.label}-{next(_COUNT)}"
            CALLS[mid] = {"given": [m.id for m in messages], "step": step, "tokens": self.tokens,
                          "ns": task_ns.rsplit("|", 1)[0] if "|" in task_ns else ""}  # fmt: skip
        return ChatResult(generations=[ChatGeneration(message=ai(mid, mid, tokens=self.tokens))])


def _ask(model: RecordingModel) -> Any:
    return lambda s: {"messages": [model.invoke(s["messages"])]}


def send_calls(saver: Any) -> Graphs:
    """Three Send branches, each given its own topic message, each calling the model twice
    (the second time with its first answer); then a node that reads them all."""
    model = RecordingModel(label="send", tokens=40)

    def spread(s: Fan) -> list[Send]:
        return [Send("write", {"topics": [t], "messages": [*s["messages"],
                HumanMessage(t, id=f"topic-{t}")]}) for t in s["topics"]]  # fmt: skip

    def write(s: Fan) -> dict[str, Any]:
        first = model.invoke(s["messages"])
        return {"messages": [first, model.invoke([*s["messages"], first])]}

    g = StateGraph(Fan)
    g.add_node("write", write)
    g.add_node("merge", _ask(model))
    g.add_conditional_edges(START, spread, ["write"])
    g.add_edge("write", "merge")
    g.add_edge("merge", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("go", id="send-human")], "topics": ["a", "b", "c"]},
                 cfg("send-calls"))  # fmt: skip
    return {"send-calls": graph}


def _thinker(label: str, tokens: int) -> Any:
    model = RecordingModel(label=label, tokens=tokens)
    inner = StateGraph(Chat)
    inner.add_node("think", _ask(model))
    inner.add_node("answer", _ask(model))
    inner.add_edge(START, "think")
    inner.add_edge("think", "answer")
    inner.add_edge("answer", END)
    return inner.compile()


def shared_subgraph_calls(saver: Any) -> Graphs:
    """One compiled subgraph (two model calls) is the node of ``a`` and ``b``, which run in
    the same step, then of ``c``; a root node calls the model before them, so each
    subgraph's input holds an AI message of the root."""
    sub = _thinker("shared", 100)
    g = StateGraph(Chat)
    g.add_node("lead", _ask(RecordingModel(label="lead", tokens=10)))
    for name in ("a", "b", "c"):
        g.add_node(name, sub)
    g.add_edge(START, "lead")
    g.add_edge("lead", "a")
    g.add_edge("lead", "b")
    g.add_edge(["a", "b"], "c")
    g.add_edge("c", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("go", id="shared-human")]}, cfg("shared-calls"))
    return {"shared-calls": graph}


def nested_calls(saver: Any) -> Graphs:
    """root -> child -> grandchild: ``shared`` shares ``messages`` at every level (each level
    calls the model); ``private`` runs each level inside a node, its messages kept from the
    level above (only the namespaces hold its AI messages)."""
    deep = StateGraph(Chat)
    deep.add_node("deep", _ask(RecordingModel(label="gc", tokens=400)))
    deep.add_edge(START, "deep")
    deep.add_edge("deep", END)
    child = StateGraph(Chat)
    child.add_node("think", _ask(RecordingModel(label="child", tokens=100)))
    child.add_node("gc", deep.compile())
    child.add_edge(START, "think")
    child.add_edge("think", "gc")
    child.add_edge("gc", END)
    root = StateGraph(Chat)
    root.add_node("lead", _ask(RecordingModel(label="root", tokens=10)))
    root.add_node("child", child.compile())
    root.add_edge(START, "lead")
    root.add_edge("lead", "child")
    root.add_edge("child", END)
    shared = root.compile(checkpointer=saver)
    shared.invoke({"messages": [HumanMessage("go", id="nested-human")]}, cfg("nested-shared"))
    return {"nested-shared": shared, "nested-private": _private_nest(saver)}


def _private_nest(saver: Any) -> Any:
    deep = StateGraph(Chat)
    deep.add_node("deep", _ask(RecordingModel(label="pgc", tokens=400)))
    deep.add_edge(START, "deep")
    deep.add_edge("deep", END)
    deep_c = deep.compile()

    def dig(s: Chat) -> dict[str, Any]:
        out = deep_c.invoke({"messages": [HumanMessage("dig", id="pgc-human")]})
        return {"messages": [HumanMessage(str(out["messages"][-1].content), id="pdug")]}

    child = StateGraph(Chat)
    child.add_node("think", _ask(RecordingModel(label="pchild", tokens=100)))
    child.add_node("dig", dig)
    child.add_edge(START, "think")
    child.add_edge("think", "dig")
    child.add_edge("dig", END)
    child_c = child.compile()

    def research(s: Summary) -> dict[str, Any]:
        out = child_c.invoke({"messages": [HumanMessage("look", id="pchild-human")]})
        return {"summary": str(out["messages"][-1].content)}

    root = StateGraph(Summary)
    root.add_node("research", research)
    root.add_edge(START, "research")
    root.add_edge("research", END)
    graph = root.compile(checkpointer=saver)
    graph.invoke({"summary": ""}, cfg("nested-private"))
    return graph


PATTERNS = (send_calls, shared_subgraph_calls, nested_calls)
