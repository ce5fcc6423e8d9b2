"""The ``tool_calls`` tape of a LangGraph run, rebuilt from the messages in its states.

Each AI message is a model call (``kind='model'``, response = the message); each of its tool
calls is a tool call (``kind='tool'``, request = the arguments), answered by the tool message
with the same ``tool_call_id`` (response = its content; ``error`` when its status is
``error``). A call's step is the step of the first checkpoint whose state holds it, and
``seq`` numbers calls in the order they first appear. LangGraph records no idempotency keys
and does not say which tools write, so ``idempotency_key`` is empty and ``is_write`` false.
"""

from __future__ import annotations

import hashlib
from typing import Any

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import Facts


def _key(run: str, call_id: str) -> int:
    digest = hashlib.blake2b(f"{run}\x00{call_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class Tape:
    """Collects the calls of one run while its checkpoints are walked."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.calls: dict[str, dict[str, Any]] = {}

    def _add(self, call_id: str, step: int, **fields: Any) -> dict[str, Any]:
        row = self.calls.get(call_id)
        if row is None:
            row = {"_key": _key(self.run_id, call_id), "run_id": self.run_id,
                   "call_id": call_id, "step_index": step, "seq": len(self.calls),
                   "idempotency_key": None, "is_write": False, **fields}  # fmt: skip
            self.calls[call_id] = row
        return row

    def observe(self, facts: list[tuple[dict[str, Any], Facts]], step: int) -> None:
        """Note the calls of one checkpoint's messages (calls already noted are skipped)."""
        for m, f in facts:
            if f.kind == "ai":
                self._model(m, f, step)
            elif f.kind == "tool":
                self._answer(m, f)

    def _model(self, m: dict[str, Any], f: Facts, step: int) -> None:
        call_id = f"model:{f.key}"
        if call_id in self.calls:
            return
        self._add(call_id, step, kind="model", name=f.model or "model", request=None,
                  response=f.json, error=None)  # fmt: skip
        for tc in f.calls:
            self._add(f"tool:{tc['id']}", step, kind="tool", name=str(tc.get("name")),
                      request=to_json(tc.get("args")), response=None,
                      error=None)  # fmt: skip

    def _answer(self, m: dict[str, Any], f: Facts) -> None:
        row = self.calls.get(f"tool:{f.answers}")
        if row is None or row["response"] is not None:
            return
        row["response"] = to_json(m.get("content"))
        if m.get("status") == "error":
            content = m.get("content")
            row["error"] = content if isinstance(content, str) else to_json(content).decode()

    def rows(self) -> list[dict[str, Any]]:
        """The run's calls in ``seq`` order."""
        return list(self.calls.values())
