"""The issue 16 benchmark database: a message-heavy prebuilt ReAct agent.

10 threads; each runs the agent for ``turns`` model/tool rounds, so its message list grows
by two messages per round (an AI message with a tool call and usage, the tool's answer of
``pad`` characters) and the state reaches ~100 KB. Every round writes two checkpoints, so
10 threads x 99 rounds plus the input checkpoints give ~2,000 checkpoints.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from tests.langgraph.patterns_model import ScriptedModel, ai, cfg

THREADS = 10
TURNS = 99
PAD = 650


def _script(thread: int, turns: int) -> list[Any]:
    calls = [ai(f"t{thread}-ai-{i}", f"step {i}",
                [{"name": "search", "args": {"q": f"t{thread} q{i}"}, "id": f"t{thread}-c{i}"}],
                tokens=200 + 10 * i) for i in range(turns - 1)]  # fmt: skip
    return [*calls, ai(f"t{thread}-ai-end", "final answer", tokens=300)]


def _agent(saver: Any, script: list[Any], pad: int) -> Any:
    @tool
    def search(q: str) -> str:
        """Search the notes."""
        return (f"result for {q}: " + "lorem ipsum dolor sit amet " * (pad // 27 + 1))[:pad]

    return create_react_agent(ScriptedModel(script=script), [search], checkpointer=saver)


def build(saver: Any, threads: int = THREADS, turns: int = TURNS, pad: int = PAD) -> list[str]:
    """Write the benchmark's threads through ``saver``; returns their thread ids."""
    ids = []
    for t in range(threads):
        graph = _agent(saver, _script(t, turns), pad)
        thread = f"react-heavy-{t}"
        graph.invoke({"messages": [HumanMessage(content="research this", id=f"t{t}-h")]},
                     cfg(thread, recursion_limit=4 * turns + 10))  # fmt: skip
        ids.append(thread)
    return ids


def history(saver: Any, threads: list[str]) -> int:
    """Iterate ``get_state_history`` over ``threads`` (the peer being timed); returns the count."""
    graph = _agent(saver, _script(0, 1), PAD)
    return sum(1 for t in threads for _ in graph.get_state_history(cfg(t)))
