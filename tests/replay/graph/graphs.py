"""Graphs whose runs the LangGraph replay tests write and replay, with the real LangGraph.

Each ``write_*`` runs a graph on a SqliteSaver and returns the thread ids it wrote. The
replayed side (``*_graph`` factories) is the same graph, except that its models and tools
raise when they are really called: a replay that reached them would fail.
"""

from __future__ import annotations

import operator
import socket
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import create_react_agent
from langgraph.types import Command, Send, interrupt

from tests.langgraph import functional as F
from tests.langgraph.patterns_model import ScriptedModel, ai, cfg, lookup


class Exploding(ScriptedModel):
    """A chat model that fails when it is really called."""

    def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> Any:
        raise RuntimeError("the real model was called")


def _human(mid: str = "human-1", text: str = "hello") -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text, id=mid)]}


# -- a prebuilt ReAct agent, 40 tool rounds --------------------------------------------------
@tool("lookup")
def lookup_exploding(order: str) -> str:
    """Look an order up (fails when really called)."""
    raise RuntimeError("the real lookup tool was called")


def react_script(rounds: int) -> list[AIMessage]:
    """``rounds`` lookups, then a final answer."""
    calls = [ai(f"r-ai-{i}", "", [{"name": "lookup", "args": {"order": f"A-{i}"},
                                   "id": f"call-{i}"}], 100) for i in range(rounds)]  # fmt: skip
    return [*calls, ai(f"r-ai-{rounds}", "All shipped.", tokens=150)]


def write_react(saver: Any, rounds: int = 3, thread: str = "react") -> Any:
    """A ReAct run of ``rounds`` tool calls: ``2 * rounds + 3`` checkpoints."""
    graph: Any = create_react_agent(ScriptedModel(script=react_script(rounds)), [lookup],
                                    checkpointer=saver)  # fmt: skip
    graph.invoke(_human(), cfg(thread, recursion_limit=4 * rounds + 10))
    return graph


def react_graph() -> Any:
    """The same agent for the replay; its model and tool fail if called."""
    return create_react_agent(Exploding(script=[]), [lookup_exploding])


def react_marked_graph() -> Any:
    """The agent again, its lookup marked as a write (``metadata``, as a user would)."""
    marked = lookup_exploding.model_copy(update={"metadata": {"stepscope_write": True}})
    return create_react_agent(Exploding(script=[]), [marked])


def react_real(rounds: int = 40) -> Any:
    """The same agent with its real (scripted) model and tool, for the benchmark's peer."""
    return create_react_agent(ScriptedModel(script=react_script(rounds)), [lookup])


# -- interrupt(): an approval ----------------------------------------------------------------
class Approval(TypedDict):
    log: Annotated[list[str], operator.add]


def _approval_builder() -> Any:
    def plan(s: Approval) -> dict[str, Any]:
        return {"log": ["plan: refund 4200"]}

    def approve(s: Approval) -> dict[str, Any]:
        answer = interrupt({"question": "refund 4200 cents?"})
        return {"log": [f"approved: {answer}"]}

    def act(s: Approval) -> dict[str, Any]:
        return {"log": [f"act after {s['log'][-1]}"]}

    g: Any = StateGraph(Approval)
    for name, fn in (("plan", plan), ("approve", approve), ("act", act)):
        g.add_node(name, fn)
    g.add_edge(START, "plan")
    g.add_edge("plan", "approve")
    g.add_edge("approve", "act")
    g.add_edge("act", END)
    return g


approval_builder = _approval_builder
"""The approval graph, as a builder factory (what ``--graph`` names)."""


def write_approval(saver: Any) -> list[str]:
    """``approved``: interrupted, resumed with "yes", completed; ``waiting``: parked."""
    graph = _approval_builder().compile(checkpointer=saver)
    graph.invoke({"log": []}, cfg("approved"))
    graph.invoke(Command(resume="yes"), cfg("approved"))
    graph.invoke({"log": []}, cfg("waiting"))
    return ["approved", "waiting"]


# -- a subgraph and a Send fan-out, each calling the model --------------------------------------
class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class Fan(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    topics: list[str]


def _nested(model: Any) -> Any:
    inner: Any = StateGraph(Chat)
    inner.add_node("think", lambda s: {"messages": [model.invoke(s["messages"])]})
    inner.add_node("answer", lambda s: {"messages": [model.invoke(s["messages"])]})
    inner.add_edge(START, "think")
    inner.add_edge("think", "answer")
    inner.add_edge("answer", END)
    outer: Any = StateGraph(Chat)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    return outer


class Summary(TypedDict):
    summary: str


def _private(model: Any) -> Any:
    """A node running a subgraph whose messages stay private: only its namespace's tape
    records the model calls."""
    inner = _nested(model).compile()

    def research(s: Summary) -> dict[str, Any]:
        out = inner.invoke(_human("priv-human"))
        return {"summary": str(out["messages"][-1].content)}

    g: Any = StateGraph(Summary)
    g.add_node("research", research)
    g.add_edge(START, "research")
    g.add_edge("research", END)
    return g


def _fan(model: Any) -> Any:
    def spread(s: Fan) -> list[Send]:
        return [Send("write", {"messages": s["messages"], "topics": [t]}) for t in s["topics"]]

    def write(s: Fan) -> dict[str, Any]:
        return {"messages": [model.invoke([*s["messages"], HumanMessage(s["topics"][0])])]}

    g: Any = StateGraph(Fan)
    g.add_node("write", write)
    g.add_conditional_edges(START, spread, ["write"])
    g.add_edge("write", END)
    return g


def write_nested_and_fan(saver: Any) -> list[str]:
    """``nested``: a subgraph calling the model twice; ``private``: the same inside a node,
    its messages kept from the root; ``fan``: three Send branches."""
    nested = ScriptedModel(script=[ai("sub-ai-1", "thinking", tokens=100),
                                   ai("sub-ai-2", "done", tokens=200)])  # fmt: skip
    _nested(nested).compile(checkpointer=saver).invoke(_human(), cfg("nested"))
    private = ScriptedModel(script=[ai("priv-ai-1", "thinking", tokens=100),
                                    ai("priv-ai-2", "done", tokens=200)])  # fmt: skip
    _private(private).compile(checkpointer=saver).invoke({"summary": ""}, cfg("private"))
    fan = _fan(TopicModel(script=[]))
    fan.compile(checkpointer=saver).invoke({**_human(), "topics": ["a", "b", "c"]}, cfg("fan"))
    return ["nested", "private", "fan"]


class TopicModel(ScriptedModel):
    """Answers with an AI message named after the topic it is asked about (slowest first:
    the branches finish out of order)."""

    def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> Any:
        import time

        from langchain_core.outputs import ChatGeneration, ChatResult

        topic = str(messages[-1].content)
        time.sleep({"a": 0.06, "b": 0.03}.get(topic, 0.0))
        msg = ai(f"fan-ai-{topic}", f"about {topic}", tokens=50 + 10 * "abc".index(topic))
        return ChatResult(generations=[ChatGeneration(message=msg)])


def nested_graph() -> Any:
    """The subgraph graph for the replay (its model fails if called)."""
    return _nested(Exploding(script=[]))


def private_graph() -> Any:
    """The private-subgraph graph for the replay (its model fails if called)."""
    return _private(Exploding(script=[]))


def fan_graph() -> Any:
    """The fan-out graph for the replay (its model fails if called)."""
    return _fan(Exploding(script=[]))


# -- a node and a tool that reach for the network ----------------------------------------------
PORT = {"value": 0}
"""The port of the test's listening socket (set through $I18_PORT in the child)."""
DB = {"value": ""}
"""The database the ledger node writes (set through $I18_DB in the child)."""


def _port() -> int:
    import os

    return int(os.environ.get("I18_PORT") or PORT["value"])


@tool
def post_refund(order: str) -> str:
    """Post a refund to the gateway (opens a socket)."""
    with socket.create_connection(("127.0.0.1", _port()), timeout=2) as s:
        s.sendall(b"REFUND " + order.encode())
    return "posted"


def _evade_hooks() -> None:
    """What code in a node can do to the in-process hooks (issue 17's first escape): empty
    their tables and replace their checks, so only the kernel is left in the way."""
    from debugger.replay import guard

    guard._NETWORK_EVENTS.clear()
    guard._PATH_EVENTS.clear()
    guard._is_write = lambda mode, flags: False
    guard._check_sqlite = lambda *a: None


def _send(data: bytes, evade: bool) -> None:
    if not evade:
        with socket.create_connection(("127.0.0.1", _port()), timeout=2) as sock:
            sock.sendall(data)
        return
    import _socket  # the C socket type: the guard's patched socket module is not in the way

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        _socket.socket.connect(s, ("127.0.0.1", _port()))
        s.send(data)
    finally:
        s.close()


def _network_builder(model: Any, evade: bool = False) -> Any:
    def agent(s: Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(s["messages"])]}

    def tools(s: Chat) -> dict[str, Any]:
        call = s["messages"][-1].tool_calls[0]  # type: ignore[union-attr]
        return {"messages": [post_refund.invoke({**call, "type": "tool_call"})]}

    def ledger(s: Chat) -> dict[str, Any]:
        # a database connection opened by the node itself: writable, outside the replay
        import os
        import sqlite3

        if evade:
            _evade_hooks()
        try:
            con = sqlite3.connect(os.environ.get("I18_DB") or DB["value"])
            with con:
                con.execute("CREATE TABLE IF NOT EXISTS notes (n TEXT)")
                con.execute("INSERT INTO notes VALUES ('refund posted')")
            con.close()
            text = "noted"
        except (PermissionError, sqlite3.Error) as e:  # the hooks', or a read-only disk's
            text = f"not noted: {type(e).__name__}"
        return {"messages": [AIMessage(content=text, id="ledger-1")]}

    def audit(s: Chat) -> dict[str, Any]:
        # the node itself, not a tool, opens a socket: the sandbox must stop it
        _send(b"AUDIT", evade)
        return {"messages": [AIMessage(content="audited", id="audit-1")]}

    g: Any = StateGraph(Chat)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_node("ledger", ledger)
    g.add_node("audit", audit)
    g.add_edge(START, "agent")
    g.add_edge("agent", "tools")
    g.add_edge("tools", "ledger")
    g.add_edge("ledger", "audit")
    g.add_edge("audit", END)
    return g


def write_network(saver: Any) -> list[str]:
    """``network``: a tool and a node that open sockets, run for real against a listener,
    and a node that writes a database (``$I18_DB``)."""
    call = {"name": "post_refund", "args": {"order": "N-1"}, "id": "call-net"}
    model = ScriptedModel(script=[ai("net-ai-1", "", [call], 100)])
    _network_builder(model).compile(checkpointer=saver).invoke(_human(), cfg("network"))
    return ["network"]


def network_graph() -> Any:
    """The network graph for the replay."""
    return _network_builder(Exploding(script=[]))


def evading_network_graph() -> Any:
    """The network graph whose nodes first take the in-process hooks out of the way."""
    return _network_builder(Exploding(script=[]), evade=True)


# -- the functional API: an @entrypoint agent and a chat --------------------------------------
def write_functional(saver: Any) -> list[str]:
    """``func-react``: the functional ReAct agent, two tool rounds; ``func-chat``: a chat
    entrypoint called three times on its thread (tests/langgraph/functional.py)."""
    react = F.react_agent(ScriptedModel(script=F.agent_script()), F.lookup, saver)
    react.invoke([HumanMessage("where are B-0 and B-1?", id="f-human-1")], cfg("func-react"))
    chat = F.chat_entrypoint(ScriptedModel(script=F.chat_script()), saver)
    for i in range(3):
        chat.invoke(HumanMessage(f"question {i}", id=f"c-human-{i}"), cfg("func-chat"))
    return ["func-react", "func-chat"]


def functional_react_graph() -> Any:
    """The functional agent for the replay; its model and tool fail if called."""
    return F.react_agent(Exploding(script=[]), lookup_exploding)


def functional_chat_graph() -> Any:
    """The chat entrypoint for the replay; its model fails if called."""
    return F.chat_entrypoint(Exploding(script=[]))
