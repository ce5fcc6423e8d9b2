"""A scripted chat model and the helpers the pattern graphs share.

The model answers from a fixed script (AI messages with ids, tool calls and usage), so a
prebuilt ReAct agent runs deterministically through the real LangGraph code paths.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

Graphs = dict[str, Any]
Builder = Callable[[Any], Graphs]


def cfg(thread: str, **extra: Any) -> dict[str, Any]:
    """A run config for ``thread``."""
    return {"configurable": {"thread_id": thread}, **extra}


def ai(
    mid: str, text: str = "", calls: Sequence[dict[str, Any]] = (), tokens: int = 100
) -> AIMessage:
    """An AI message with an id, tool calls and usage (``tokens`` split 4:1 in/out)."""
    out = tokens // 5
    return AIMessage(
        content=text, id=mid, tool_calls=list(calls),
        usage_metadata={"input_tokens": tokens - out, "output_tokens": out, "total_tokens": tokens},
    )  # fmt: skip


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order} shipped"


class ScriptedModel(BaseChatModel):
    """Returns its script's messages in order, one per call (the last one repeats)."""

    script: list[AIMessage]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kw: Any) -> ChatResult:  # fmt: skip
        msg = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=msg)])


@contextlib.contextmanager
def sqlite_saver(path: Path | str) -> Iterator[Any]:
    """A SqliteSaver writing the file at ``path``, open for the block."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(str(path), check_same_thread=False)
    try:
        yield SqliteSaver(con)
    finally:
        con.close()


@contextlib.contextmanager
def postgres_saver(url: str) -> Iterator[Any]:
    """A PostgresSaver on the database at ``url`` (tables created), open for the block."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver
