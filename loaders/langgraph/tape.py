"""The ``tool_calls`` tape of a LangGraph run, rebuilt from the messages in its states.

Each AI message is a model call (``kind='model'``): its request is a reference to what the
model was given, ``{"messages": [ids]}``, its response the message, its step the step of the
first checkpoint holding it. The ids are those of the state of the task that wrote the
answer, read from the writes of the checkpoint its superstep started from
(:meth:`Tape.note_writes`): the messages of that checkpoint (a node), or of the ``Send``'s
argument (a ``Send`` branch), then those the task wrote before the answer. Siblings of the
same superstep (other branches, other nodes) are not in it. Without such a write (a state
edited by ``update_state``) the ids are those before the answer in the state holding it.
An AI message the run's input wrote (``__start__``: a subgraph's input from its parent) is
no call of this run. Each tool call of an AI message is a
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
from typing import TYPE_CHECKING, Any

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import (
    CONTROL_WRITES,
    DEFAULT_IDEMPOTENCY_ARG,
    Facts,
    Seen,
    facts_of,
    is_internal,
    is_message,
    key_in,
)
from loaders.langgraph.tasks import NULL_TASK, sends_of, task_name

if TYPE_CHECKING:
    from loaders.langgraph.source import RawWrite


def _key(run: str, call_id: str) -> int:
    digest = hashlib.blake2b(f"{run}\x00{call_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class Tape:
    """Collects the calls of one run while its checkpoints are walked."""

    def __init__(
        self, run_id: str, names: tuple[str, ...] = (DEFAULT_IDEMPOTENCY_ARG,), ns: str = ""
    ) -> None:
        self.run_id = run_id
        self.names = names
        self.ns = ns
        """The run's namespace (``""`` for the root graph)."""
        self.asked: dict[str, list[str] | None] = {}
        """Per AI message id, the ids its model was given (None: the input wrote it)."""
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
                if f.key in self.asked:
                    asked = self.asked.pop(f.key)
                    if asked is not None:  # None: the input's, no call of this run
                        self._model(m, f, step, asked, whole=True)
                    continue
                if before is None:
                    before = [g.key for _, g in messages]
                self._model(m, f, step, before)
        answers = [s for s in new if s[1].kind == "tool"]
        if answers:
            self.answer(answers, step)

    def note_writes(
        self, decoded: list[tuple[RawWrite, Any]], data: dict[str, Any], messages: list[Seen]
    ) -> None:
        """Note what the model that wrote each AI message of this checkpoint's writes was
        given: the task's state (this checkpoint's messages, or its ``Send``'s argument) and
        the messages the task wrote before it. Messages without an id (they get one when
        the state is reduced) cannot be named and are left out.

        Args:
            decoded: the checkpoint's writes, decoded.
            data: the checkpoint (its Sends: :func:`~loaders.langgraph.tasks.sends_of`).
            messages: the checkpoint's messages (``StateScan.messages``).
        """
        by_task: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        for w, v in decoded:
            if w.channel in CONTROL_WRITES or is_internal(w.channel) or w.task_id == NULL_TASK:
                continue
            for m in v if isinstance(v, list) else [v]:
                if is_message(m) and m.get("id"):
                    by_task.setdefault(w.task_id, (w.task_path or "", []))[1].append(m)
        state: list[str] | None = None
        for path, written in by_task.values():
            if not any(m.get("type") in ("ai", "AIMessageChunk") for m in written):
                continue
            name = task_name(path)
            base: list[str]
            if name == "__start__":
                for m in written:
                    self.asked[str(m["id"])] = None
                continue
            if name.startswith("push:"):
                base = _send_messages(sends_of(data), name[5:])
            else:
                if state is None:
                    state = [f.key for _, f in messages]
                base = state
            if len(written) == 1:  # a node's one answer (not an edit of a message it holds)
                mid = str(written[0]["id"])
                if mid not in base:
                    self.asked.setdefault(mid, base)
                continue
            seen = dict.fromkeys(base)
            for m in written:
                mid = str(m["id"])
                if m.get("type") in ("ai", "AIMessageChunk") and mid not in seen:
                    self.asked.setdefault(mid, list(seen))
                seen[mid] = None

    def _model(
        self, m: dict[str, Any], f: Facts, step: int, keys: list[str], whole: bool = False
    ) -> None:
        """Note a model call; ``keys`` is what it was given (``whole``), or the state that
        holds its answer (the ids before the answer)."""
        call_id = f"model:{f.key}"
        if call_id not in self.calls:
            if not whole and f.key in keys:
                keys = keys[: keys.index(f.key)]
            request = to_json({"messages": keys})
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

    def rows(self, made_below: frozenset[str] | set[str] = frozenset()) -> list[dict[str, Any]]:
        """The run's calls in ``seq`` order, but those ``made_below`` (call ids a nested
        namespace holds: its messages flowed up into this run's state), renumbered."""
        out = [r for r in self.calls.values() if r["call_id"] not in made_below]
        if len(out) < len(self.calls):
            for i, r in enumerate(out):
                r["seq"] = i
        return out


def _send_messages(sends: list[dict[str, Any]], index: str) -> list[str]:
    """Ids of the messages a ``Send`` carried (its branch's state), by its index."""
    i = int(index) if index.isdigit() else -1
    arg = sends[i].get("arg") if 0 <= i < len(sends) else None
    if not isinstance(arg, dict):
        return []
    out = []
    for v in arg.values():
        for m in v if isinstance(v, list) else [v]:
            if is_message(m):
                out.append(str(m.get("id")) if m.get("id") else facts_of(m).key)
    return out


def enclosing(ns: str) -> list[str]:
    """The namespaces a namespace is nested in, the root's ``""`` first (none for the root).

    A subgraph sharing a channel of messages with its parent hands its AI messages up: the
    parent's state (and the root's) then holds the same calls. Each call stays on the tape of
    the deepest namespace holding it, the one that made it: the calls of a namespace are left
    out of the tapes of those it is nested in.
    """
    if not ns:
        return []
    parts = ns.split("|")
    return ["|".join(parts[:depth]) for depth in range(len(parts))]
