"""LangGraph functional-API chats that save their history, written by the real package
(tests/store/test_metadata_split.py, and the source of ``data/store_v5.duckdb.gz``).

Each call of :func:`tests.langgraph.functional.chat_entrypoint` returns the model's answer
and saves the whole history (``entrypoint.final(save=...)``), which LangGraph keeps in the
``__previous__`` channel of every checkpoint: the history grows by two messages a call.
``chat-b``'s model fails at its last call (a failed head with the history it had).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from tests.langgraph.functional import chat_entrypoint

WORDS = "the parcel left the depot this morning and the refund follows it. "


class ChatModel:
    """Answers of ~800 characters, numbered; raises at call ``fail_at`` (1-based)."""

    def __init__(self, prefix: str, fail_at: int | None = None) -> None:
        self.prefix, self.fail_at, self.calls = prefix, fail_at, 0

    def invoke(self, history: list[Any]) -> AIMessage:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("model endpoint unavailable")
        return AIMessage(
            f"{self.prefix} answer {self.calls}: {WORDS * 12}",
            id=f"{self.prefix}-ai-{self.calls}",
            usage_metadata={"input_tokens": 30, "output_tokens": 10, "total_tokens": 40},
            response_metadata={"model_name": "chat-model-1"},
        )


def question(thread: str, i: int) -> HumanMessage:
    return HumanMessage(f"{thread} question {i}: where is my order? " * 8, id=f"{thread}-h-{i}")


def chat_source(
    path: Path, calls: int = 6, threads: tuple[str, ...] = ("chat-a", "chat-b")
) -> Path:
    """A SqliteSaver file of ``threads`` chats of ``calls`` calls (``chat-b`` fails at its
    last). Returns ``path``."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(con)
        for thread in threads:
            model = ChatModel(thread, fail_at=calls if thread == "chat-b" else None)
            chat = chat_entrypoint(model, saver)
            for i in range(calls):
                try:
                    chat.invoke(question(thread, i), {"configurable": {"thread_id": thread}})
                except RuntimeError:
                    break
        con.commit()
    finally:
        con.close()
    return path


def go_on(path: Path, thread: str, first: int, calls: int) -> None:
    """``calls`` more calls on ``thread`` of the file at ``path`` (a live database that
    gains checkpoints after an import)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(path, check_same_thread=False)
    try:
        chat = chat_entrypoint(ChatModel(f"{thread}-more"), SqliteSaver(con))
        for i in range(first, first + calls):
            chat.invoke(question(thread, i), {"configurable": {"thread_id": thread}})
        con.commit()
    finally:
        con.close()
