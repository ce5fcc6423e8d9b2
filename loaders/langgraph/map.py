"""Mapping one decoded LangGraph checkpoint onto Stepscope's canonical checkpoint columns.

What goes where (docs/langgraph.md says the same for users):

- run: the thread (``<thread_id>``) for the root graph, ``<thread_id>/<checkpoint_ns>`` for a
  subgraph's checkpoints; step: ``metadata.step``; parent: ``parent_checkpoint_id``;
- working state: the channel values, without LangGraph's internal channels (``__start__``,
  ``branch:to:*``, ``join:*``, ``__pregel_tasks``, ...), which are kept in
  ``metadata.internal_channels``; ``metadata.next`` as ``prepare_next_tasks`` finds it;
- status (read by the store's status rule), for a checkpoint that has no child, from its
  writes grouped by task: an ``__error__`` gives ``failed`` with ``metadata.error``; a task
  with an ``__interrupt__`` and no output gives ``parked`` on that question; no next task
  gives ``completed``; nodes due next and no write at all give ``parked`` before them (a
  breakpoint, a recursion limit or a stopped process: LangGraph records none); otherwise no
  status (the store decides). Checkpoints with children keep what happened in
  ``task_errors`` / ``resolved_interrupts``;
- budgets: tokens as :mod:`loaders.langgraph.budgets` counts them; steps spent is
  ``max(step, 0)``; wall clock is the time since the run's first checkpoint;
- pending effects, for a checkpoint with no child: tool calls of AI messages that no tool
  message answers, in the state or in the pending writes (keyed by an idempotency argument);
  the writes finished tasks left are ``metadata.pending_writes``, not effects;
- model version: the last AI message's ``response_metadata.model_name``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from debugger.errors import DecodeError
from debugger.json_text import preview
from loaders.langgraph.decode import SafeDecoder, to_json
from loaders.langgraph.source import RawCheckpoint, RawWrite

CONTROL_WRITES = {"__error__", "__interrupt__", "__resume__", "__scheduled__", "__return__"}
"""Write channels that are signals, not state updates."""


def is_internal(channel: str) -> bool:
    """True for LangGraph's own channels (hidden from the working state, kept in metadata)."""
    return (channel.startswith("__") and channel.endswith("__")) or channel.startswith(
        ("branch:", "join:", "__pregel_", "start:")
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


PUSH_PATH = "~__pregel_push"
PULL_PATH = "~__pregel_pull"
"""The first part of a write's ``task_path``: a Send (by index) or a node (by name)."""


def _trigger_node(channel: str) -> str | None:
    """The node a trigger channel starts (``branch:to:X``, ``join:A+B:X``, ``__start__``)."""
    if channel.startswith("branch:to:"):
        return channel[len("branch:to:") :]
    if channel.startswith("join:"):
        parts = channel.split(":", 2)
        return parts[2] if len(parts) == 3 else None
    return "__start__" if channel == "__start__" else None


def _available(channel: str, values: dict[str, Any]) -> bool:
    """Whether LangGraph's channel can trigger: it holds a value (a join: every source)."""
    if channel not in values:
        return False
    if channel.startswith("join:"):
        seen = values[channel]
        names = set(channel.split(":", 2)[1].split("+"))
        return isinstance(seen, list | set | tuple) and {str(v) for v in seen} >= names
    return True


def _newer(version: Any, seen: Any) -> bool:
    if seen is None:
        return True
    try:
        return bool(version > seen)
    except TypeError:  # a saver mixing int and str versions: compare as text
        return str(version) > str(seen)


def next_tasks(data: dict[str, Any], finished: frozenset[str] = frozenset()) -> list[str]:
    """Nodes the checkpoint runs next, as LangGraph's ``StateSnapshot.next`` lists them.

    As ``prepare_next_tasks`` does: the Sends in ``__pregel_tasks`` first, then each node
    whose trigger channel (``branch:to:X``, ``join:...:X``, ``__start__``) is available and
    newer than the version the node saw, sorted by name (LangGraph sorts the nodes of the
    updated channels; the savers do not keep the channel order). ``finished`` names tasks
    (node names, or ``push:<index>`` for a Send) whose writes are stored: the head leaves
    them out, as ``get_state()`` does.
    """
    values = data.get("channel_values") or {}
    versions = data.get("channel_versions") or {}
    seen_by = data.get("versions_seen") or {}
    out = []
    sends = values.get("__pregel_tasks")
    if isinstance(sends, list):
        for i, v in enumerate(sends):
            if isinstance(v, dict) and v.get("node") and f"push:{i}" not in finished:
                out.append(str(v["node"]))
    updated = data.get("updated_channels")
    channels = updated if isinstance(updated, list) else list(versions)
    pulled = set()
    for channel in channels:
        node = _trigger_node(str(channel))
        if node is None or node in pulled or not _available(channel, values):
            continue
        seen = seen_by.get(node)
        if _newer(versions.get(channel), seen.get(channel) if isinstance(seen, dict) else None):
            pulled.add(node)
    return out + sorted(pulled - finished)


@dataclass(frozen=True, slots=True)
class Facts:
    """What one message contributes to budgets, pending effects and the tape."""

    kind: str
    """``ai``, ``tool`` or another message type."""
    key: str
    """The message id (or a hash of the message when it has none)."""
    tokens: int
    """``usage_metadata.total_tokens`` of an AI message (0 otherwise)."""
    model: str | None
    """``response_metadata.model_name`` of an AI message."""
    calls: tuple[dict[str, Any], ...]
    """Tool calls of an AI message (``{id, name, args}``)."""
    answers: str | None
    """The ``tool_call_id`` a tool message answers."""
    json: bytes
    """The message as JSON text (``to_json``), serialized once per run."""
    fragment: orjson.Fragment = field(compare=False, repr=False)
    """``json`` as an orjson fragment: a state embeds it in its own JSON without re-encoding."""


def _is_message_tag(tag: Any, memo: dict[str, bool] = {}) -> bool:  # noqa: B006 - a cache
    hit = memo.get(tag)
    if hit is None:
        hit = memo[tag] = isinstance(tag, str) and "langchain_core.messages" in tag
    return hit


def is_message(v: Any) -> bool:
    """A LangChain message, as the decoder renders it."""
    return isinstance(v, dict) and _is_message_tag(v.get("__type__"))


def _tokens(m: dict[str, Any]) -> int:
    u = m.get("usage_metadata")
    if not isinstance(u, dict):
        return 0
    t = u.get("total_tokens")
    if isinstance(t, int):
        return t
    return int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0)


def facts_of(m: dict[str, Any]) -> Facts:
    """The facts of one decoded message."""
    kind = str(m.get("type"))
    kind = "ai" if kind == "AIMessageChunk" else kind
    text = to_json(m)
    mid = m.get("id")
    key = str(mid) if mid else hashlib.md5(text).hexdigest()[:16]
    tokens, model, answers = 0, None, None
    calls: tuple[dict[str, Any], ...] = ()
    if kind == "tool":
        answers = str(m.get("tool_call_id"))
    elif kind == "ai":
        meta = m.get("response_metadata")
        if isinstance(meta, dict) and (meta.get("model_name") or meta.get("model")):
            model = str(meta.get("model_name") or meta.get("model"))
        calls = tuple(
            tc for tc in m.get("tool_calls") or [] if isinstance(tc, dict) and tc.get("id")
        )
        tokens = _tokens(m)
    return Facts(kind, key, tokens, model, calls, answers, text, orjson.Fragment(text))


Seen = tuple[dict[str, Any], Facts]
"""A message with its facts."""


@dataclass
class StateScan:
    """What a state's messages say, and the state's JSON text (one pass over the state)."""

    messages: list[Seen]
    """The messages in order (top-level values and items of top-level lists)."""
    new: list[Seen]
    """Those not seen earlier in the run (their calls go to the tape)."""
    json: bytes
    """The state as JSON text, equal to ``to_json(state)``."""


class MessageMemo:
    """Facts of messages already seen in this run, by object identity.

    The decoder hands back the same object for a message repeated in every checkpoint, so
    each message is analysed and serialized once per run; a state's JSON embeds the
    messages' text as fragments, so it is not serialized again. The memo keeps a
    reference to each message, so an ``id()`` cannot be reused while it is remembered; it
    forgets everything past a size.
    """

    LIMIT = 20_000

    def __init__(self) -> None:
        self._seen: dict[int, Seen] = {}

    def scan(self, state: dict[str, Any]) -> StateScan:
        """The facts of the state's messages, their sums, and the state's JSON text."""
        if len(self._seen) > self.LIMIT:
            self._seen.clear()
        seen = self._seen
        out: list[Seen] = []
        new: list[Seen] = []
        shadow: dict[str, Any] = {}
        for name, value in state.items():
            if isinstance(value, list):
                items: list[Any] = []
                for m in value:
                    hit = seen.get(id(m))
                    if hit is None:
                        if not is_message(m):
                            items.append(m)
                            continue
                        hit = seen[id(m)] = (m, facts_of(m))
                        new.append(hit)
                    out.append(hit)
                    items.append(hit[1].fragment)
                shadow[name] = items
                continue
            hit = seen.get(id(value))
            if hit is None and is_message(value):
                hit = seen[id(value)] = (value, facts_of(value))
                new.append(hit)
            if hit is None:
                shadow[name] = value
            else:
                out.append(hit)
                shadow[name] = hit[1].fragment
        return StateScan(out, new, to_json(shadow))


IDEMPOTENCY_ARGS = "STEPSCOPE_IDEMPOTENCY_ARGS"
"""Setting: more tool-call argument names that carry an idempotency key (comma-separated)."""
DEFAULT_IDEMPOTENCY_ARG = "idempotency_key"


def idempotency_args(extra: str | None = None) -> tuple[str, ...]:
    """Argument names read as a tool call's idempotency key, ``idempotency_key`` first.

    Args:
        extra: comma-separated names (default: ``$STEPSCOPE_IDEMPOTENCY_ARGS``).
    """
    raw = os.environ.get(IDEMPOTENCY_ARGS, "") if extra is None else extra
    names = [n.strip() for n in raw.split(",") if n.strip()]
    return tuple(dict.fromkeys([DEFAULT_IDEMPOTENCY_ARG, *names]))


def key_in(args: Any, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that the arguments carry, as text (None when none is set)."""
    if not isinstance(args, dict):
        return None
    for n in names:
        v = args.get(n)
        if v is not None and v != "":
            return v if isinstance(v, str) else to_json(v).decode()
    return None


def tool_messages(decoded: list[tuple[RawWrite, Any]]) -> list[Seen]:
    """Tool messages in a checkpoint's writes (a finished tools task's pending answer)."""
    out: list[Seen] = []
    for w, v in decoded:
        if w.channel in CONTROL_WRITES or is_internal(w.channel):
            continue
        for m in v if isinstance(v, list) else [v]:
            if is_message(m) and m.get("type") == "tool":
                out.append((m, facts_of(m)))
    return out


def unanswered_tool_calls(
    facts: list[Seen], names: tuple[str, ...] = (DEFAULT_IDEMPOTENCY_ARG,)
) -> list[dict[str, Any]]:
    """Tool calls of AI messages that no tool message answers: pending calls (in flight).

    ``facts`` holds the state's messages and any tool message of the pending writes; a call's
    ``idempotency_key`` is the value of the first of ``names`` among its arguments.
    """
    answered = {f.answers for _, f in facts if f.answers}
    calls = {tc["id"]: tc for _, f in facts for tc in f.calls if tc["id"] not in answered}
    return [
        {"kind": "tool_call", "tool": tc.get("name"), "args": tc.get("args"),
         "tool_call_id": cid, "idempotency_key": key_in(tc.get("args"), names),
         "status": "pending"}
        for cid, tc in calls.items()
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


TASK_SIGNALS = {"__error__", "__error_source_node__", "__interrupt__", "__resume__"}
"""Writes that say what happened to a task, not what it produced (LangGraph's own set)."""


@dataclass
class TaskWrites:
    """What one task of the checkpoint's superstep wrote."""

    name: str
    """The node (``push:<index>`` for a Send whose node the path does not name)."""
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    resumes: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    produced: bool = False
    """Some write is output: the task finished (LangGraph leaves it out of ``next``)."""


def _task_name(path: str) -> str:
    parts = [p.strip() for p in path.split(",")]
    if parts[0] == PULL_PATH and len(parts) > 1:
        return parts[1]
    if parts[0] == PUSH_PATH and len(parts) > 1:
        return f"push:{parts[1]}"
    return path


def task_writes(decoded: list[tuple[RawWrite, Any]]) -> list[TaskWrites]:
    """The writes of each task (the caller's own writes, ``Command(resume=...)``, left out)."""
    tasks: dict[str, TaskWrites] = {}
    for w, v in decoded:
        if w.task_id == NULL_TASK:
            continue
        t = tasks.setdefault(w.task_id, TaskWrites(_task_name(w.task_path or w.task_id)))
        if w.channel == "__interrupt__":
            t.interrupts += _interrupts([v])
        elif w.channel == "__resume__":
            t.resumes += v if isinstance(v, list) else [v]
        elif w.channel == "__error__":
            t.errors.append(str(v))
        elif w.channel not in TASK_SIGNALS:
            t.produced = True
    return list(tasks.values())


def finished_tasks(tasks: list[TaskWrites]) -> frozenset[str]:
    """Names of the tasks whose output is stored (``next_tasks``' ``finished``)."""
    return frozenset(t.name for t in tasks if t.produced)


def _paused(nexts: list[str], step: int | None) -> str:
    where = f" at step {step}" if step is not None else ""
    nodes = ", ".join(nexts)
    return (
        f"paused before node {nodes}{where}, nothing written after it: a breakpoint "
        "(interrupt_before / interrupt_after), a recursion limit, or a process that stopped "
        "or is still running (LangGraph records none of these)"
    )


def status_fields(
    tasks: list[TaskWrites], has_child: bool, nexts: list[str], step: int | None = None
) -> dict[str, Any]:
    """The metadata keys the store's status rule reads, from the checkpoint's task writes.

    A task's ``__interrupt__`` write holds its current question; the question is open while
    the task has produced nothing (its earlier questions were answered by ``__resume__``).
    """
    # a task that raised and then, retried on the same checkpoint, produced its output: the
    # error is superseded (LangGraph shows it nowhere)
    errors = [e for t in tasks if not t.produced for e in t.errors]
    waiting = [t for t in tasks if not t.produced and t.interrupts]
    open_q = [t.interrupts[-1] for t in waiting]
    done_q = [i for t in tasks if t.produced for i in t.interrupts]
    resumes = [r for t in tasks for r in t.resumes]
    out: dict[str, Any] = {}
    if has_child:
        if errors:
            out["task_errors"] = errors
        if open_q or done_q:
            out["resolved_interrupts"] = done_q + open_q
            out["resume"] = resumes
        return out
    if errors:
        out.update(status="failed", error="; ".join(errors))
    elif open_q:
        question = preview(open_q[0].get("value"), 120)
        out.update(status="parked", interrupt=open_q[0],
                   status_reason=f"interrupt() in node {waiting[0].name} waits for an answer "
                   f"(Command(resume=...)): {question}")  # fmt: skip
        if len(open_q) > 1:
            out["interrupts"] = open_q
    elif not nexts:
        out["status"] = "completed"
    elif not any(t.produced for t in tasks):
        out.update(status="parked", status_reason=_paused(nexts, step), paused_before=nexts)
    if done_q and not errors:
        out.update(resolved_interrupts=done_q, resume=resumes)
    return out


def pending_writes(decoded: list[tuple[RawWrite, Any]]) -> list[dict[str, Any]]:
    """Writes of finished tasks not yet applied (only meaningful at a checkpoint's leaf).

    They are not pending effects: the task has finished, and LangGraph applies its writes on
    resume without running it again (``metadata.pending_writes`` keeps them).
    """
    return [
        {"task_id": w.task_id, "task_path": w.task_path, "idx": w.idx, "channel": w.channel,
         "value": v}
        for w, v in decoded
        if w.channel not in CONTROL_WRITES and not is_internal(w.channel)
    ]  # fmt: skip
