"""A multi-agent handoff, as LangGraph's documentation builds one, run by the real package.

Two prebuilt ReAct agents are subgraph nodes of a parent graph; the triage agent's tool
hands the conversation to the refunds agent with ``Command(goto=..., graph=Command.PARENT)``
(what ``langgraph-supervisor`` and ``langgraph-swarm`` do). The tool's node raises that
command out of the subgraph: the subgraph's last checkpoint still has the node due, with no
write of its own, and the parent's task that ran the subgraph finishes with the command's
update.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, create_react_agent
from langgraph.types import Command

from tests.langgraph.patterns_model import Graphs, ScriptedModel, ai, cfg


def handoff_tool(agent: str) -> Any:
    """The documented handoff tool: the conversation so far and the tool's answer go to
    ``agent``, a node of the parent graph."""

    @tool(f"transfer_to_{agent}")
    def transfer(
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        """Hand the conversation over."""
        answer = ToolMessage(f"transferred to {agent}", tool_call_id=tool_call_id,
                             name=f"transfer_to_{agent}", id=f"answer-{tool_call_id}")  # fmt: skip
        return Command(goto=agent, graph=Command.PARENT,
                       update={"messages": [*state["messages"], answer]})  # fmt: skip

    return transfer


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def handoff(saver: Any) -> Graphs:
    """``handoff``: triage hands over to refunds, which refunds and answers."""
    triage_script = [ai("triage-ai-0", "", [{"name": "transfer_to_refunds", "args": {},
                                             "id": "handoff-1"}], 50)]  # fmt: skip
    refunds_script = [
        ai("refunds-ai-0", "", [{"name": "refund", "args": {"order": "A-1"}, "id": "rf-1"}], 60),
        ai("refunds-ai-1", "Refunded A-1.", tokens=70),
    ]
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in 1.0
        warnings.simplefilter("ignore")
        triage = create_react_agent(ScriptedModel(script=triage_script),
                                    [handoff_tool("refunds")], name="triage")  # fmt: skip
        refunds = create_react_agent(ScriptedModel(script=refunds_script), [refund],
                                     name="refunds")  # fmt: skip
    g: Any = StateGraph(MessagesState)
    g.add_node("triage", triage, destinations=("refunds",))
    g.add_node("refunds", refunds)
    g.add_edge(START, "triage")
    g.add_edge("refunds", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("refund A-1 please", id="user-1")]}, cfg("handoff"))
    return {"handoff": graph}


HANDOFF_STATUS = {"handoff": "completed"}
