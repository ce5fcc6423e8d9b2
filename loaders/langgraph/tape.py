"""The ``tool_calls`` tape of a LangGraph run, rebuilt from the messages in its states.

Each AI message is a model call (``kind='model'``): its request is a reference to what the
model was given, ``{"messages": [ids of the messages before it]}``, its response the message,
its step the step of the first checkpoint holding it. Each tool call of an AI message is a
tool call (``kind='tool'``, request = the arguments) on the step that ran it: the step of the
checkpoint where its tool message first appears, or of the checkpoint whose pending writes
hold that tool message (a superstep that failed after the tool finished). Response is the
tool message's content (``{"content", "artifact"}`` when it has an artifact), ``error`` its
content when its status is ``error``. A call still unanswered stays on its AI message's step.

A call edited under the same id (``update_state`` on the AI message) is a second row: calls
are keyed by call id and arguments, and a tool message answers the arguments last asked
under its id.
``seq`` numbers calls in the order they first appear. ``idempotency_key`` is read from the
arguments (:func:`loaders.langgraph.map.key_in`); LangGraph does not say which tools write,
so ``is_write`` is false.
"""

from __future__ import annotations

import hashlib
from typing import Any

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import DEFAULT_IDEMPOTENCY_ARG, Facts, Seen, key_in


def _key(run: str, call_id: str) -> int:
    digest = hashlib.blake2b(f"{run}\x00{call_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class Tape:
    """Collects the calls of one run while its checkpoints are walked."""

    def __init__(self, run_id: str, names: tuple[str, ...] = (DEFAULT_IDEMPOTENCY_ARG,)) -> None:
        self.run_id = run_id
        self.names = names
        self.calls: dict[str, dict[str, Any]] = {}
        self._tool_rows: dict[str, dict[bytes, str]] = {}
        """Per tool call id, the row id of each distinct argument text."""
        self._latest: dict[str, str] = {}
        """Per tool call id, the row of the arguments last asked (what a tool message answers)."""

    def _add(self, call_id: str, step: int, **fields: Any) -> dict[str, Any]:
        row = self.calls.get(call_id)
        if row is None:
            row = {"_key": _key(self.run_id, call_id), "run_id": self.run_id,
                   "call_id": call_id, "step_index": step, "seq": len(self.calls),
                   "idempotency_key": None, "is_write": False, **fields}  # fmt: skip
            self.calls[call_id] = row
        return row

    def observe(self, messages: list[Seen], new: list[Seen], step: int) -> None:
        """Note the calls of one checkpoint's state.

        Args:
            messages: the state's messages in order (``StateScan.messages``).
            new: those first seen in this run (``StateScan.new``).
            step: the checkpoint's step.
        """
        before: list[str] | None = None
        for m, f in new:
            if f.kind == "ai":
                if before is None:
                    before = [g.key for _, g in messages]
                self._model(m, f, step, before)
        answers = [s for s in new if s[1].kind == "tool"]
        if answers:
            self.answer(answers, step)

    def _model(self, m: dict[str, Any], f: Facts, step: int, keys: list[str]) -> None:
        call_id = f"model:{f.key}"
        if call_id not in self.calls:
            upto = keys.index(f.key) if f.key in keys else len(keys)
            request = to_json({"messages": keys[:upto]})
            self._add(call_id, step, kind="model", name=f.model or "model", request=request,
                      response=f.json, error=None)  # fmt: skip
        for tc in f.calls:
            self._tool(tc, step)

    def _tool(self, tc: dict[str, Any], step: int) -> str:
        args = to_json(tc.get("args"))
        rows = self._tool_rows.setdefault(str(tc["id"]), {})
        row_id = rows.get(args)
        if row_id is None:
            row_id = f"tool:{tc['id']}" if not rows else f"tool:{tc['id']}#{len(rows)}"
            rows[args] = row_id
            self._add(row_id, step, kind="tool", name=str(tc.get("name")), request=args,
                      response=None, error=None)  # fmt: skip
            self.calls[row_id]["idempotency_key"] = key_in(tc.get("args"), self.names)
        self._latest[str(tc["id"])] = row_id
        return row_id

    def answer(self, answers: list[Seen], step: int) -> None:
        """Attach tool messages to the calls they answer, on the step that ran them.

        A tool message answers the arguments last asked under its call id (the walk reads
        checkpoints in the order they were written, so an edit comes before its answer).

        Args:
            answers: the tool messages to attach (new in the state, or pending writes).
            step: the step they first appear at.
        """
        for m, f in answers:
            row_id = self._latest.get(str(f.answers))
            if row_id is None:
                continue
            row = self.calls[row_id]
            if row["response"] is not None:
                continue
            content = m.get("content")
            artifact = m.get("artifact")
            shown = content if artifact is None else {"content": content, "artifact": artifact}
            row.update(response=to_json(shown), step_index=step)
            if m.get("status") == "error":
                row["error"] = content if isinstance(content, str) else to_json(content).decode()

    def fail(self, call_id: str, error: str, step: int) -> None:
        """Mark an unanswered call with the error of the task that ran it (a tool that
        raised without a ``ToolNode`` turning the exception into a tool message), on the
        step of the checkpoint the failed superstep started from."""
        row_id = self._latest.get(call_id)
        if row_id is not None and self.calls[row_id]["response"] is None:
            self.calls[row_id].update(error=error, step_index=step)

    def rows(self) -> list[dict[str, Any]]:
        """The run's calls in ``seq`` order."""
        return list(self.calls.values())
