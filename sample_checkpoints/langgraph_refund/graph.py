"""The refund desk as a LangGraph graph: an agent node, a tools node, a scripted model.

The tools are real: they read and write the payments ledger (``$REFUND_PAYMENTS``, default
``payments.sqlite`` in the working directory). The model is scripted (a pure function of
the conversation), and each real call of it is counted in the ledger's ``model_calls``
table, as a bill would count it, so a replay that called it would show.

``graph`` is the code that ran: its ``issue_refund`` pays whatever it is asked to pay.
``fixed_graph`` looks the idempotency key up (``find_refund``) before paying, and answers a
call whose refund exists with that refund instead of paying again.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode


def payments_path() -> Path:
    """The payments ledger the tools use."""
    return Path(os.environ.get("REFUND_PAYMENTS") or "payments.sqlite").resolve()


def _ledger(read_only: bool = False) -> sqlite3.Connection:
    path = payments_path()
    if read_only:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE IF NOT EXISTS refunds (refund_id TEXT PRIMARY KEY, order_id TEXT,"
        " amount_cents INTEGER, idempotency_key TEXT);"
        "CREATE TABLE IF NOT EXISTS model_calls (n INTEGER);"
    )
    return con


ORDERS = {"A-7": 4200, "B-2": 1999}


class GatewayTimeout(TimeoutError):
    """The payment gateway took the refund and did not answer in time."""


TIMEOUT_ON: set[str] = set()
"""Orders whose refund the gateway sends and then times out on (the incident)."""


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    with _ledger(read_only=True):  # the order system is read-only here
        pass
    return {"order_id": order_id, "total_cents": ORDERS[order_id], "charged_twice": True}


@tool
def issue_refund(order_id: str, amount_cents: int, idempotency_key: str) -> dict[str, Any]:
    """Refund an order through the payment gateway."""
    con = _ledger()
    with con:
        n = con.execute("SELECT count(*) FROM refunds").fetchone()[0]
        refund_id = f"RF-{n + 1}"
        con.execute("INSERT INTO refunds VALUES (?, ?, ?, ?)",
                    (refund_id, order_id, amount_cents, idempotency_key))  # fmt: skip
    con.close()
    if order_id in TIMEOUT_ON:
        raise GatewayTimeout(f"the gateway did not confirm the refund of {order_id}")
    return {"refund_id": refund_id, "status": "issued"}


@tool
def find_refund(idempotency_key: str) -> dict[str, Any] | None:
    """The refund already issued under an idempotency key, if any."""
    con = _ledger(read_only=True)
    try:
        row = con.execute("SELECT refund_id, order_id, amount_cents FROM refunds "
                          "WHERE idempotency_key = ?", (idempotency_key,)).fetchone()  # fmt: skip
    finally:
        con.close()
    return None if row is None else {"refund_id": row[0], "order_id": row[1],
                                     "amount_cents": row[2]}  # fmt: skip


def _script(order: str, n: int) -> AIMessage:
    key = f"refund-{order}"
    amount = ORDERS[order]
    calls = [
        [{"name": "lookup_order", "args": {"order_id": order}, "id": f"call-lookup-{order}"}],
        [{"name": "issue_refund", "id": f"call-refund-{order}",
          "args": {"order_id": order, "amount_cents": amount, "idempotency_key": key}}],
    ]  # fmt: skip
    usage = {"input_tokens": 80 + 40 * n, "output_tokens": 20, "total_tokens": 100 + 40 * n}
    if n < len(calls):
        return AIMessage(content="", id=f"ai-{order}-{n + 1}", tool_calls=calls[n],
                         usage_metadata=usage)  # fmt: skip
    return AIMessage(content=f"Refunded {amount} cents on {order}.", id=f"ai-{order}-{n + 1}",
                     usage_metadata=usage)  # fmt: skip


class ScriptedChat(BaseChatModel):
    """Answers from a script, by the order named in the first message and the turn."""

    @property
    def _llm_type(self) -> str:
        return "scripted-refund-desk"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:  # fmt: skip
        con = _ledger()
        with con:
            con.execute("INSERT INTO model_calls VALUES (1)")
        con.close()
        order = str(messages[0].content).split()[2].rstrip(",")
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        return ChatResult(generations=[ChatGeneration(message=_script(order, turn))])


MODEL = ScriptedChat()


class Desk(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _agent(state: Desk) -> dict[str, Any]:
    return {"messages": [MODEL.invoke(state["messages"])]}


def _route(state: Desk) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


TOOLS = [lookup_order, issue_refund]


def _fixed_tools(state: Desk) -> dict[str, Any]:
    """Look the key up before paying: an existing refund answers the call."""
    by_name = {t.name: t for t in TOOLS}
    out = []
    for call in state["messages"][-1].tool_calls:  # type: ignore[union-attr]
        key = call["args"].get("idempotency_key")
        done = find_refund.invoke({"idempotency_key": key}) if key else None
        if done:
            out.append(ToolMessage(content=str(done), tool_call_id=call["id"], name=call["name"]))
        else:
            out.append(by_name[call["name"]].invoke({**call, "type": "tool_call"}))
    return {"messages": out}


def build(fixed: bool = False) -> Any:
    """The graph builder (``fixed``: with the key check before paying)."""
    g: Any = StateGraph(Desk)
    g.add_node("agent", _agent)
    g.add_node("tools", _fixed_tools if fixed else ToolNode(TOOLS, handle_tool_errors=False))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", _route, ["tools", END])
    g.add_edge("tools", "agent")
    return g


graph = build().compile()
"""The code that ran (compiled without a checkpointer: the replay brings its own)."""


def fixed_graph() -> Any:
    """The fix, as a factory (a builder or a compiled graph work the same)."""
    return build(fixed=True)
