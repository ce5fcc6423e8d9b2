"""Responses-API items, as the OpenAI Agents SDK saves them: turns, pending calls, the tape.

A session is a flat list of items (``session.get_items()``). The SDK marks no run
boundaries, so a *turn* starts at each user message, as ``AdvancedSQLiteSession`` numbers
``user_turn_number``: turn 1 is the first user message and what follows it, items before any
user message are turn 0. Inside a turn the model's outputs (``function_call``, assistant
``message``, ``reasoning``) alternate with their inputs (``function_call_output``); each run
of consecutive outputs is one model response.

A ``function_call`` whose ``call_id`` no ``function_call_output`` answers is a pending call:
the tool is running, the process stopped, or the call waits for approval (only a saved
``RunState`` tells which). A tool's failure is stored as the tool's output text; the SDK's
default failure text is recognised as an error, custom failure texts are not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import key_in
from loaders.runtime_rows import parsed_args, tape_row

Item = dict[str, Any]

TOOL_ERROR_TEXTS = frozenset({
    "An error occurred while running the tool. Please try again.",  # up to 0.24
    "An error occurred while running the tool.",  # 0.25 on
})  # fmt: skip
"""The outputs the SDK's default ``failure_error_function`` stores for a tool that raised,
in each version that changed it."""

ERROR_DETAIL = " Error: "
"""What follows the text in 0.2 (``... Please try again. Error: <the exception's text>``)."""


def is_tool_error(output: Any) -> bool:
    """Whether a call's output is the SDK's text for a tool that raised (an output may also
    be a list of content items, which never is): one of :data:`TOOL_ERROR_TEXTS`, alone or,
    as 0.2 wrote it, followed by the exception's text."""
    if not isinstance(output, str):
        return False
    head, detail, _ = output.partition(ERROR_DETAIL)
    return (head if detail else output) in TOOL_ERROR_TEXTS


OUTPUT_TYPES = frozenset({"function_call", "message", "reasoning", "computer_call",
                          "file_search_call", "web_search_call", "custom_tool_call"})  # fmt: skip
"""Item types a model response produces (an assistant ``message`` among them)."""
ANSWER_TYPES = {"function_call_output": "function_call", "custom_tool_call_output":
                "custom_tool_call", "computer_call_output": "computer_call"}  # fmt: skip
"""The output item type of each kind of call, answered by ``call_id``."""


def is_user_message(item: Item) -> bool:
    """A user's input message (it opens a turn), as the SDK's own structure classifies it."""
    return item.get("role") == "user" and item.get("type", "message") == "message"


def is_model_output(item: Item) -> bool:
    """An item the model produced (not an input or a tool's answer)."""
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in OUTPUT_TYPES


def turn_numbers(items: list[Item]) -> list[int]:
    """The turn of each item: the count of user messages up to and including it."""
    out, turn = [], 0
    for item in items:
        turn += is_user_message(item)
        out.append(turn)
    return out


def pending_calls(items: Iterable[Item], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Calls no output answers: the pending tool calls, keyed by an idempotency argument."""
    calls: dict[str, Item] = {}
    answered: set[str] = set()
    for item in items:
        kind = item.get("type")
        if kind in ANSWER_TYPES.values() and item.get("call_id"):
            calls[str(item["call_id"])] = item
        elif kind in ANSWER_TYPES and item.get("call_id"):
            answered.add(str(item["call_id"]))
    out = []
    for cid, call in calls.items():
        if cid in answered:
            continue
        args = parsed_args(call.get("arguments", call.get("input")))
        out.append({"kind": "tool_call", "tool": call.get("name") or call.get("type"),
                    "args": args, "tool_call_id": cid, "idempotency_key": key_in(args, names),
                    "status": "pending"})  # fmt: skip
    return out


def final_text(item: Item) -> str | None:
    """The text of an assistant message (its output_text parts joined)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("text")]
    return "".join(str(p) for p in parts) if parts else None


class TapeBuilder:
    """The ``tool_calls`` rows of one run, built from its items in order.

    A model response is ``kind='model'`` with its request ``{"items": N}`` (the count of
    items the model had been given: the session up to that point) and its response the
    output items; each call is ``kind='tool'`` with its arguments as the request and its
    output as the response (the text the SDK stored), ``error`` set when the output is the
    SDK's failure text.
    """

    def __init__(self, run_id: str, names: tuple[str, ...]) -> None:
        self.run_id = run_id
        self.names = names
        self.rows: list[dict[str, Any]] = []
        self._tools: dict[str, dict[str, Any]] = {}
        self._open: dict[str, Any] | None = None

    def _row(self, call_id: str, step: int, **fields: Any) -> dict[str, Any]:
        row = tape_row(self.run_id, call_id, step, len(self.rows), **fields)
        self.rows.append(row)
        return row

    def add(self, index: int, item: Item, step: int, model: str | None = None) -> None:
        """Note the item at ``index`` of the run's items, in turn ``step``."""
        if is_model_output(item):
            if self._open is None:
                self._open = self._row(f"model:{index}", step, kind="model",
                                       name=model or "model",
                                       request=to_json({"items": index}), outputs=[])  # fmt: skip
            self._open["outputs"].append(item)
            if item.get("type") in ANSWER_TYPES.values() and item.get("call_id"):
                self._tool(item, step)
            return
        self._close()
        kind = item.get("type")
        if kind in ANSWER_TYPES and str(item.get("call_id")) in self._tools:
            row = self._tools[str(item.get("call_id"))]
            output = item.get("output")
            row["response"] = to_json(output)
            row["step_index"] = step
            if is_tool_error(output):
                row["error"] = output

    def _tool(self, call: Item, step: int) -> None:
        cid = str(call["call_id"])
        args = parsed_args(call.get("arguments", call.get("input")))
        row = self._row(f"tool:{cid}", step, kind="tool", name=str(call.get("name") or
                        call.get("type")), request=to_json(args))  # fmt: skip
        row["idempotency_key"] = key_in(args, self.names)
        self._tools[cid] = row

    def _close(self) -> None:
        if self._open is not None:
            self._open["response"] = to_json(self._open.pop("outputs"))
            self._open = None

    def finish(self) -> list[dict[str, Any]]:
        """The rows, in seq order."""
        self._close()
        return self.rows
