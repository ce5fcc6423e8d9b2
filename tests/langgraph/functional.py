"""LangGraph's functional API (``@entrypoint`` and ``@task``), run by the real package.

An entrypoint's checkpoints differ from a ``StateGraph``'s: its state is the value it
returned (the ``__end__`` channel; any value, here a message list, a message and a text),
its input goes to a node named after its function, and its ``@task`` calls write their
results at the input checkpoint. The agent is LangGraph's documented functional ReAct
agent: a model task and a tool task in a loop.
"""

from __future__ import annotations

import contextlib
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.func import entrypoint, task
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from tests.langgraph.patterns_model import Graphs, ScriptedModel, ai, cfg, lookup


@tool("lookup")
def lookup_down(order: str) -> str:
    """Look an order up, while the order service is down."""
    raise RuntimeError("order service unavailable")


def agent_script() -> list[AIMessage]:
    """Two lookups, then the answer."""
    calls = [ai(f"f-ai-{i}", "", [{"name": "lookup", "args": {"order": f"B-{i}"},
                                   "id": f"f-call-{i}"}], 100) for i in range(2)]  # fmt: skip
    return [*calls, ai("f-ai-2", "Both shipped.", tokens=150)]


def react_agent(model: Any, lookup_tool: Any, checkpointer: Any = None, ask: bool = False) -> Any:
    """The functional ReAct agent; with ``ask``, each tool call waits for an approval."""

    @task
    def call_model(messages: list[BaseMessage]) -> Any:
        return model.invoke(messages)

    @task
    def call_tool(call: dict[str, Any]) -> ToolMessage:
        if ask and not interrupt({"question": f"run {call['name']}({call['args']})?"}):
            return ToolMessage("refused", tool_call_id=call["id"], id=f"refused-{call['id']}")
        message: ToolMessage = lookup_tool.invoke(call)
        return message.model_copy(update={"id": f"tool-{call['id']}"})

    @entrypoint(checkpointer=checkpointer)
    def agent(messages: Any) -> Any:
        response = call_model(messages).result()
        while response.tool_calls:
            answers = [call_tool(c).result() for c in response.tool_calls]
            messages = add_messages(messages, [response, *answers])
            response = call_model(messages).result()
        return add_messages(messages, response)

    return agent


def _hello(mid: str = "f-human-1") -> list[BaseMessage]:
    return [HumanMessage("where are B-0 and B-1?", id=mid)]


def functional_agent(saver: Any) -> Graphs:
    """``func-agent``: two tool rounds, completed; ``func-agent-down``: the tool raises."""
    done = react_agent(ScriptedModel(script=agent_script()), lookup, saver)
    done.invoke(_hello(), cfg("func-agent"))
    down = react_agent(ScriptedModel(script=agent_script()), lookup_down, saver)
    with contextlib.suppress(RuntimeError):
        down.invoke(_hello(), cfg("func-agent-down"))
    return {"func-agent": done, "func-agent-down": down}


def functional_approval(saver: Any) -> Graphs:
    """The agent asking before each tool call: ``func-ask-parked`` waits on the first
    question; ``func-ask-resumed`` is answered twice and completes."""
    parked = react_agent(ScriptedModel(script=agent_script()), lookup, saver, ask=True)
    parked.invoke(_hello(), cfg("func-ask-parked"))
    resumed = react_agent(ScriptedModel(script=agent_script()), lookup, saver, ask=True)
    resumed.invoke(_hello(), cfg("func-ask-resumed"))
    resumed.invoke(Command(resume=True), cfg("func-ask-resumed"))
    resumed.invoke(Command(resume=True), cfg("func-ask-resumed"))
    return {"func-ask-parked": parked, "func-ask-resumed": resumed}


def chat_entrypoint(model: Any, checkpointer: Any = None) -> Any:
    """A chat entrypoint: it returns the answer (a message) and saves the history for its
    next call on the thread (``previous``)."""

    @task
    def answer(history: list[BaseMessage]) -> Any:
        return model.invoke(history)

    @entrypoint(checkpointer=checkpointer)
    def chat(message: BaseMessage, *, previous: list[BaseMessage] | None = None) -> Any:
        history = [*(previous or []), message]
        reply = answer(history).result()
        return entrypoint.final(value=reply, save=[*history, reply])

    return chat


CHAT_ANSWER = "the parcel left the depot this morning and the refund follows it. " * 36
"""~2.4 KB: from the second call on, what the chat saves makes a document the store splits
(``debugger.store.metadata_split``), on every saver the scenarios run on."""


def chat_script() -> list[AIMessage]:
    return [ai(f"c-ai-{i}", f"answer {i}: {CHAT_ANSWER}", tokens=40) for i in range(3)]


def functional_chat(saver: Any) -> Graphs:
    """``func-chat``: three calls on one thread; ``func-text``: an entrypoint returning a
    text; ``func-retried``: a task fails, the thread is invoked again and completes."""
    talk = chat_entrypoint(ScriptedModel(script=chat_script()), saver)
    for i in range(3):
        talk.invoke(HumanMessage(f"question {i}", id=f"c-human-{i}"), cfg("func-chat"))

    def upper(text: str) -> str:
        return text.upper()

    shout: Any = entrypoint(checkpointer=saver)(upper)
    shout.invoke("quiet please", cfg("func-text"))

    failures = {"left": 1}

    @task
    def charge(order: str) -> str:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("card declined")
        return f"charged {order}"

    def pay(order: str) -> dict[str, Any]:
        return {"order": order, "receipt": charge(order).result()}

    checkout: Any = entrypoint(checkpointer=saver)(pay)

    with contextlib.suppress(RuntimeError):
        checkout.invoke("C-1", cfg("func-retried"))
    checkout.invoke(None, cfg("func-retried"))
    return {"func-chat": talk, "func-text": shout, "func-retried": checkout}


FUNCTIONAL_SCENARIOS = [functional_agent, functional_approval, functional_chat]

FUNCTIONAL_STATUS = {
    "func-agent": "completed", "func-agent-down": "failed", "func-ask-parked": "parked",
    "func-ask-resumed": "completed", "func-chat": "completed", "func-text": "completed",
    "func-retried": "completed",
}  # fmt: skip
