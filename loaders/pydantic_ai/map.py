"""A pydantic-ai message history onto checkpoints (one per model response) and the tape.

What goes where (docs/pydantic-ai.md says the same for users):

- run: the file (its path without ``.json``); step: the model response, counted from 1;
  step 0 is the requests before the first response (the prompt). Checkpoint ``k`` holds the
  history up to response ``k`` and the requests after it (the tool returns it led to);
- working state: ``{"messages": [...]}``, the messages as ``ModelMessagesTypeAdapter``
  dumps them;
- budgets: tokens, the responses' ``usage`` (input + output) summed; steps, the responses
  so far; wall clock, from the first message's timestamp to the checkpoint's latest;
- model version: the last response's ``model_name``;
- pending effects: tool calls no ``tool-return`` or ``retry-prompt`` answers (keyed by an
  idempotency argument);
- status, at the head: ``parked`` when the file carries the run's ``DeferredToolRequests``
  (approvals or external calls awaited); ``failed`` when the last message is in state
  ``interrupted`` (a request: a tool raised or the run was cancelled while its results were
  gathered; a response: cut off, or over a usage limit); ``completed`` when the last message
  is a response without tool calls, or the return of an output tool; otherwise none (the
  store decides: pending calls make it ``crashed``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import key_in, ms_between
from loaders.runtime_rows import (
    JsonDocument,
    RunRows,
    parsed_args,
    stable_key,
    tape_row,
    with_state,
)

Message = dict[str, Any]

OUTPUT_TOOL_RETURN = "Final result processed."
"""What pydantic-ai returns to an output tool's call (``final_result``) when it ends the run."""
ERROR_OUTCOMES = frozenset({"failed", "retried", "denied", "interrupted"})
"""Tool-return outcomes that are not a result: the tape's ``error`` gets the content."""


def is_message(m: Any) -> bool:
    """A request or response as ``ModelMessagesTypeAdapter`` dumps it."""
    return isinstance(m, dict) and m.get("kind") in ("request", "response") and "parts" in m


def _parts(m: Message) -> list[dict[str, Any]]:
    return [p for p in m.get("parts") or [] if isinstance(p, dict)]


def _calls(m: Message) -> list[dict[str, Any]]:
    return [p for p in _parts(m) if p.get("part_kind") == "tool-call" and p.get("tool_call_id")]


def _answers(m: Message) -> list[dict[str, Any]]:
    kinds = ("tool-return", "retry-prompt")
    return [p for p in _parts(m) if p.get("part_kind") in kinds and p.get("tool_call_id")]


def _tokens(m: Message) -> int:
    """A response's input and output tokens; before pydantic-ai 0.7 ``request_tokens`` and
    ``response_tokens`` (or their ``total_tokens`` alone)."""
    u = m.get("usage")
    if not isinstance(u, dict):
        return 0
    if "input_tokens" in u or "output_tokens" in u:
        return int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0)
    both = int(u.get("request_tokens") or 0) + int(u.get("response_tokens") or 0)
    return both or int(u.get("total_tokens") or 0)


def _time(value: Any) -> datetime | None:
    """A timestamp; one without a zone is UTC (pydantic-ai writes UTC), so any two compare."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _stamp(m: Message) -> datetime | None:
    """A message's time; a request without one (pydantic-ai before 1.x) has its parts'."""
    if m.get("timestamp") is not None:
        return _time(m.get("timestamp"))
    times = [t for p in _parts(m) if (t := _time(p.get("timestamp"))) is not None]
    return max(times) if times else None


class _Seen:
    """What the messages so far say: calls and their answers, the latest time, the run ids.

    Kept as the walk goes, so each checkpoint costs its own messages, not the whole history.
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.calls: dict[str, dict[str, Any]] = {}
        self.answered: set[str] = set()
        self.latest: datetime | None = None
        self.run_ids: dict[str, None] = {}

    def add(self, m: Message) -> None:
        for p in _calls(m):
            self.calls[str(p["tool_call_id"])] = p
        self.answered.update(str(p["tool_call_id"]) for p in _answers(m))
        stamp = _stamp(m)
        if stamp is not None and (self.latest is None or stamp > self.latest):
            self.latest = stamp
        if m.get("run_id"):
            self.run_ids[str(m["run_id"])] = None

    def pending(self) -> list[dict[str, Any]]:
        """Tool calls of the responses so far that no return or retry prompt answers."""
        out = []
        for cid, p in self.calls.items():
            if cid in self.answered:
                continue
            args = parsed_args(p.get("args"))
            key = key_in(args, self.names)
            out.append({"kind": "tool_call", "tool": p.get("tool_name"), "args": args,
                        "tool_call_id": p["tool_call_id"], "idempotency_key": key,
                        "status": "pending"})  # fmt: skip
        return out


def _deferred(deferred: dict[str, Any]) -> dict[str, Any]:
    asks = [p for p in deferred.get("approvals") or [] if isinstance(p, dict)]
    external = [p for p in deferred.get("calls") or [] if isinstance(p, dict)]
    interrupts: list[dict[str, Any]] = []
    named = []
    for how, group in (("approve", asks), ("run externally", external)):
        for p in group:
            action = f"{how} {p.get('tool_name')}"
            named.append(f"{action} ({p.get('tool_call_id')})")
            value = {"action": action, "tool": p.get("tool_name"),
                     "arguments": parsed_args(p.get("args"))}  # fmt: skip
            interrupts.append({"id": p.get("tool_call_id"), "value": value})
    first: Any = interrupts[0] if interrupts else True
    return {"status": "parked", "status_reason": f"deferred tool calls: {', '.join(named)}",
            "interrupts": interrupts, "interrupt": first}  # fmt: skip


def head_status(
    messages: list[Message], deferred: dict[str, Any] | None, pending: bool
) -> dict[str, Any]:
    """The status fields of the head checkpoint (none when the history does not say).

    Args:
        messages: the whole history.
        deferred: the saved ``DeferredToolRequests``, if any.
        pending: whether a tool call is still unanswered at the end.
    """
    if deferred and (deferred.get("approvals") or deferred.get("calls")):
        return _deferred(deferred)
    last = messages[-1] if messages else {}
    if last.get("state") == "interrupted":
        why = (
            "the model's response was cut off or crossed a usage limit"
            if last.get("kind") == "response"
            else "the run stopped while gathering tool results (a tool raised, or the run was "
            "cancelled); pydantic-ai keeps no error text"
        )
        return {"status": "failed", "status_reason": why, "error": why}
    if pending:
        return {}
    if last.get("kind") == "response":
        return {"status": "completed", "status_reason": "the last response has no tool call"}
    answers = _answers(last)
    if answers and all(p.get("content") == OUTPUT_TOOL_RETURN for p in answers):
        return {"status": "completed", "status_reason": "an output tool ended the run"}
    return {"waiting_for": "the model's next response"}


class _Tape:
    def __init__(self, run_id: str, names: tuple[str, ...]) -> None:
        self.run_id, self.names = run_id, names
        self.rows: list[dict[str, Any]] = []
        self.tools: dict[str, dict[str, Any]] = {}

    def _row(self, call_id: str, step: int, **fields: Any) -> dict[str, Any]:
        row = tape_row(self.run_id, call_id, step, len(self.rows), **fields)
        self.rows.append(row)
        return row

    def add(self, index: int, m: Message, step: int) -> None:
        if m.get("kind") == "response":
            name = m.get("model_name") or "model"
            request = to_json({"messages": index})
            self._row(f"model:{index}", step, kind="model", name=name, request=request,
                      response=to_json(_parts(m)))  # fmt: skip
            for p in _calls(m):
                args = parsed_args(p.get("args"))
                row = self._row(f"tool:{p['tool_call_id']}", step, kind="tool",
                                name=str(p.get("tool_name")), request=to_json(args))  # fmt: skip
                row["idempotency_key"] = key_in(args, self.names)
                self.tools[str(p["tool_call_id"])] = row
            return
        for p in _answers(m):
            found = self.tools.get(str(p["tool_call_id"]))
            if found is None or found["response"] is not None:
                continue
            row = found
            row["response"] = to_json(p.get("content"))
            outcome = p.get("outcome") if p.get("part_kind") == "tool-return" else "retried"
            if outcome in ERROR_OUTCOMES:
                content = p.get("content")
                row["error"] = content if isinstance(content, str) else to_json(content).decode()


def map_history(
    doc: JsonDocument,
    messages: list[Message],
    deferred: dict[str, Any] | None,
    names: tuple[str, ...],
    schema_version: int | None = None,
) -> RunRows:
    """The rows of one history file: a checkpoint per model response (and step 0), the tape."""
    run_id = doc.stem
    out = RunRows()
    responses = [i for i, m in enumerate(messages) if m.get("kind") == "response"]
    starts = ([0] if not responses or responses[0] > 0 else []) + responses
    ends = [s - 1 for s in starts[1:]] + [len(messages) - 1]
    tape = _Tape(run_id, names)
    seen = _Seen(names)
    first = _stamp(messages[0]) if messages else None
    first_ts = first.isoformat() if first else None
    tokens, model, parent = 0, None, None
    for n, (start, end) in enumerate(zip(starts, ends, strict=True)):
        step = n + (1 if responses and responses[0] == 0 else 0)
        step_msgs = messages[start : end + 1]
        for i, m in enumerate(step_msgs, start):
            tape.add(i, m, step)
            seen.add(m)
        reply = step_msgs[0] if step_msgs[0].get("kind") == "response" else {}
        tokens += _tokens(reply)
        model = reply.get("model_name") or model
        ts = seen.latest.isoformat() if seen.latest else None
        pending = seen.pending()
        last = end == len(messages) - 1
        meta: dict[str, Any] = {
            "pydantic_ai": {"file": doc.name, "run_ids": list(seen.run_ids),
                            "conversation_id": step_msgs[-1].get("conversation_id")},
            **({"usage": reply.get("usage"), "finish_reason": reply.get("finish_reason")}
               if reply else {}),
            **(head_status(messages, deferred, bool(pending)) if last else {}),
        }  # fmt: skip
        cid = f"{run_id}#step-{step}"
        row = {"_key": stable_key(run_id, cid), "run_id": run_id, "checkpoint_id": cid,
               "parent_id": parent, "step_index": step, "schema_version": schema_version,
               "created_at": ts or doc.modified, "tokens_spent": tokens, "steps_spent": step,
               "wall_clock_ms": ms_between(first_ts, ts), "pending_effects": to_json(pending),
               "model_version": model, "tool_versions": None,
               "metadata": to_json(meta)}  # fmt: skip
        out.checkpoints.append(with_state(row, to_json({"messages": messages[: end + 1]})))
        parent = cid
    out.tape = tape.rows
    return out
