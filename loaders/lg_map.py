"""Mapping one decoded LangGraph checkpoint onto Stepscope's canonical checkpoint columns.

What goes where (docs/langgraph.md says the same for users):

- run: the thread (``<thread_id>``) for the root graph, ``<thread_id>/<checkpoint_ns>`` for a
  subgraph's checkpoints; step: ``metadata.step``; parent: ``parent_checkpoint_id``;
- working state: the channel values, without LangGraph's internal channels (``__start__``,
  ``branch:to:*``, ``__pregel_tasks``, ...), which are kept in ``metadata.internal_channels``;
- status (read by the store's status rule), for a checkpoint that has no child:
  ``__error__`` writes give ``failed`` with ``metadata.error``; an ``__interrupt__`` write not
  yet answered by ``__resume__`` gives ``parked`` with ``metadata.interrupt {value, id}``; no
  next task gives ``completed``; otherwise no status (the store decides: in progress or
  crashed). Checkpoints with children keep what happened in ``task_errors`` /
  ``resolved_interrupts``;
- budgets: tokens are the sum of ``usage_metadata.total_tokens`` of the AI messages in the
  state; steps spent is ``max(step, 0)``; wall clock is the time since the run's first
  checkpoint;
- pending effects: tool calls of AI messages that no tool message answers yet, and, for a
  checkpoint with no child, the writes its finished tasks left;
- model version: the last AI message's ``response_metadata.model_name``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from debugger.errors import DecodeError
from loaders.lg_decode import SafeDecoder
from loaders.lg_source import RawCheckpoint, RawWrite

CONTROL_WRITES = {"__error__", "__interrupt__", "__resume__", "__scheduled__", "__return__"}
"""Write channels that are signals, not state updates."""


def is_internal(channel: str) -> bool:
    """True for LangGraph's own channels (hidden from the working state, kept in metadata)."""
    return (channel.startswith("__") and channel.endswith("__")) or channel.startswith(
        ("branch:", "__pregel_", "start:")
    ) or channel == "__pregel_tasks"  # fmt: skip


def run_id_of(thread_id: str, checkpoint_ns: str) -> str:
    """The run id of a thread's namespace: the thread for the root graph."""
    return thread_id if not checkpoint_ns else f"{thread_id}/{checkpoint_ns}"


def _as_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError(f"{what} is not an object", "")
    return value


def decode_checkpoint(dec: SafeDecoder, ck: RawCheckpoint, saver: str) -> dict[str, Any]:
    """The checkpoint dict with its full ``channel_values`` (blobs joined for Postgres).

    Raises:
        DecodeError: a value cannot be decoded (the message names the channel).
    """
    if saver == "sqlite":
        data = _as_dict(dec.decode(ck.type or "msgpack", ck.checkpoint), "the checkpoint")
    else:
        data = _as_dict(dec.decode("json", ck.checkpoint), "the checkpoint")
        values = dict(data.get("channel_values") or {})
        for channel, type_, blob in ck.blobs:
            try:
                values[channel] = dec.decode(type_, blob)
            except DecodeError as e:
                raise DecodeError(f"{e.message} (channel {channel!r})", e.hint) from e
        data = {**data, "channel_values": values}
    return data


def decode_metadata(dec: SafeDecoder, raw: Any) -> dict[str, Any]:
    """The checkpoint's metadata (JSON text in both savers)."""
    if raw is None:
        return {}
    return _as_dict(dec.decode("json", raw), "the metadata")


def next_tasks(channel_values: dict[str, Any]) -> list[str]:
    """Nodes the checkpoint will run next, as LangGraph's ``StateSnapshot.next`` lists them."""
    out = []
    for name, value in channel_values.items():
        if name.startswith("branch:to:"):
            out.append(name[len("branch:to:") :])
        elif name == "__start__":
            out.append("__start__")
        elif name == "__pregel_tasks" and isinstance(value, list):
            out += [str(v["node"]) for v in value if isinstance(v, dict) and v.get("node")]
    return out


def is_message(v: Any) -> bool:
    """A LangChain message, as the decoder renders it."""
    return (
        isinstance(v, dict)
        and isinstance(v.get("__type__"), str)
        and "langchain_core.messages" in v["__type__"]
    )


def messages(state: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """LangChain messages held in the state's top-level lists, in order."""
    for value in state.values():
        if isinstance(value, list):
            yield from (m for m in value if is_message(m))
        elif is_message(value):
            yield value


def usage(state: dict[str, Any]) -> tuple[int, str | None]:
    """Tokens spent (sum over distinct AI messages) and the last model name seen."""
    total, seen, model = 0, set(), None
    for m in messages(state):
        if m.get("type") not in ("ai", "AIMessageChunk"):
            continue
        key = m.get("id") or id(m)
        if key in seen:
            continue
        seen.add(key)
        u = m.get("usage_metadata")
        if isinstance(u, dict):
            t = u.get("total_tokens")
            if not isinstance(t, int):
                t = int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0)
            total += t
        meta = m.get("response_metadata")
        if isinstance(meta, dict) and (meta.get("model_name") or meta.get("model")):
            model = str(meta.get("model_name") or meta.get("model"))
    return total, model


def unanswered_tool_calls(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool calls of AI messages with no tool message answering them (in flight)."""
    calls: dict[str, dict[str, Any]] = {}
    answered = set()
    for m in messages(state):
        if m.get("type") == "tool":
            answered.add(m.get("tool_call_id"))
        for tc in m.get("tool_calls") or []:
            if isinstance(tc, dict) and tc.get("id"):
                calls[tc["id"]] = tc
    return [
        {"kind": "tool_call", "tool": tc.get("name"), "args": tc.get("args"),
         "tool_call_id": cid, "idempotency_key": None, "status": "pending"}
        for cid, tc in calls.items() if cid not in answered
    ]  # fmt: skip


def ms_between(start: str | None, end: str | None) -> int:
    """Milliseconds from one ISO timestamp to another (0 when either is unknown)."""
    try:
        a, b = datetime.fromisoformat(str(start)), datetime.fromisoformat(str(end))
    except ValueError:
        return 0
    return max(0, int((b - a).total_seconds() * 1000))


def _interrupts(values: list[Any]) -> list[dict[str, Any]]:
    out = []
    for v in values:
        for item in v if isinstance(v, list) else [v]:
            if isinstance(item, dict) and "value" in item:
                out.append({"value": item.get("value"), "id": item.get("id")})
            else:
                out.append({"value": item, "id": None})
    return out


NULL_TASK = "00000000-0000-0000-0000-000000000000"
"""Task id of writes made by the caller (``Command(resume=...)``), not by a node."""


def _resumes(decoded: list[tuple[RawWrite, Any]]) -> list[Any]:
    """Answers to interrupts: what the interrupted tasks received, else the caller's command."""
    by_task: list[Any] = []
    by_caller: list[Any] = []
    for w, v in decoded:
        if w.channel != "__resume__":
            continue
        if w.task_id == NULL_TASK:
            by_caller.append(v)
        else:
            by_task += v if isinstance(v, list) else [v]
    return by_task or by_caller


def status_fields(
    decoded: list[tuple[RawWrite, Any]], has_child: bool, nexts: list[str]
) -> dict[str, Any]:
    """The metadata keys the store's status rule reads, from the checkpoint's writes."""
    errors = [str(v) for w, v in decoded if w.channel == "__error__"]
    interrupts = _interrupts([v for w, v in decoded if w.channel == "__interrupt__"])
    resumes = _resumes(decoded)
    out: dict[str, Any] = {}
    if has_child:
        if errors:
            out["task_errors"] = errors
        if interrupts:
            out["resolved_interrupts"] = interrupts
            out["resume"] = resumes
        return out
    if errors:
        out.update(status="failed", error="; ".join(errors))
    elif interrupts and not resumes:
        out.update(status="parked", interrupt=interrupts[0])
        if len(interrupts) > 1:
            out["interrupts"] = interrupts
    elif interrupts:
        out.update(resolved_interrupts=interrupts, resume=resumes)
    elif not nexts:
        out["status"] = "completed"
    return out


def pending_writes(decoded: list[tuple[RawWrite, Any]]) -> list[dict[str, Any]]:
    """Writes of finished tasks not yet applied (only meaningful at a checkpoint's leaf)."""
    return [
        {"kind": "write", "task_id": w.task_id, "task_path": w.task_path, "idx": w.idx,
         "channel": w.channel, "value": v, "idempotency_key": None, "status": "pending"}
        for w, v in decoded
        if w.channel not in CONTROL_WRITES and not is_internal(w.channel)
    ]  # fmt: skip
