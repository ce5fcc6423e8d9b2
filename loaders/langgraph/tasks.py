"""What a LangGraph checkpoint says of its tasks: the nodes due next, and the run's status.

Both are read from the checkpoint dict and the writes attached to it, the way LangGraph's
``prepare_next_tasks`` and ``StateSnapshot`` read them, without the graph's code (which a
debugger does not have): docs/langgraph.md, "Next" and "Status", states the rules.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from debugger.json_text import preview
from loaders.langgraph.map import CONTROL_WRITES, RETURN, START, is_internal

if TYPE_CHECKING:  # the replay's sandbox child imports this module: no Arrow through source
    from loaders.langgraph.source import RawWrite

PUSH_PATH = "~__pregel_push"
PULL_PATH = "~__pregel_pull"
"""The first part of a write's ``task_path``: a Send (by index) or a node (by name)."""


def trigger_target(channel: str) -> str | None:
    """The node a trigger channel starts, by its name: ``branch:to:X``, ``join:A+B:X``,
    ``__start__``; before LangGraph 0.3 also ``start:X`` and ``branch:<from>:<condition>:X``.
    A node's name cannot hold ``:``, so X is what follows the last one."""
    if channel.startswith(("branch:", "join:", "start:")):
        return channel.rsplit(":", 1)[1] or None
    return "__start__" if channel == "__start__" else None


def _subscribers(seen_by: dict[str, Any]) -> dict[str, list[str]]:
    """Channels that start nodes without naming them, and the nodes they start.

    Before LangGraph 0.3 an edge ``A -> B`` was a channel named ``A`` that B subscribed to
    (every node wrote its own name to it). Which nodes subscribe is the graph's; the
    checkpoint shows it for the nodes that ran since the channel first held a value: a
    node's ``versions_seen`` lists the versions of its trigger channels.
    """
    out: dict[str, list[str]] = {}
    for node, seen in seen_by.items():
        # LangGraph's own entries: __interrupt__ (what a breakpoint saw), __input__
        if isinstance(seen, dict) and node not in ("__interrupt__", "__input__"):
            for channel in seen:
                if trigger_target(str(channel)) is None:
                    out.setdefault(str(channel), []).append(str(node))
    return out


SENDS = "__pregel_tasks"
"""The channel of a checkpoint's ``Send`` packets (format ``v`` 4 on)."""


def sends_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The checkpoint's ``Send`` packets, in order: the ``__pregel_tasks`` channel, or the
    checkpoint's ``pending_sends`` (format ``v`` < 4, LangGraph before 0.5)."""
    sends = (data.get("channel_values") or {}).get(SENDS)
    if not isinstance(sends, list):
        sends = data.get("pending_sends")
    if not isinstance(sends, list):
        return []
    return [s if isinstance(s, dict) else {} for s in sends]


def _node_channels(data: dict[str, Any]) -> dict[str, list[str]]:
    """Each node a channel of the checkpoint can start, with those channels."""
    versions = data.get("channel_versions") or {}
    subs = _subscribers(data.get("versions_seen") or {})
    out: dict[str, list[str]] = {}
    for channel in versions:
        named = trigger_target(str(channel))
        if channel == START:
            nodes = start_nodes(data)
        else:
            nodes = [named] if named is not None else subs.get(str(channel), [])
        for node in nodes:
            out.setdefault(node, []).append(str(channel))
    return out


def task_triggers(data: dict[str, Any]) -> dict[str, list[tuple[str, ...]]]:
    """For each node the checkpoint can start, the sorted trigger channels its task id may
    have been computed with (:mod:`loaders.langgraph.task_ids`).

    The graph's list is not stored: the channels here that start the node, those its
    ``versions_seen`` lists, and both, each also with ``branch:to:<node>``, which LangGraph
    0.3 on gives every node (a join's target has it beside its ``join:`` channel, though
    nothing writes it).
    """
    seen_by = data.get("versions_seen") or {}
    out = {}
    for node, channels in _node_channels(data).items():
        seen = seen_by.get(node)
        known = [str(c) for c in seen] if isinstance(seen, dict) else []
        own = [] if node == "__start__" else [f"branch:to:{node}"]
        options = [tuple(sorted({*c, *o})) for c in (channels, known, [*channels, *known])
                   for o in ([], own)]  # fmt: skip
        out[node] = [t for t in dict.fromkeys(options) if t]
    return out


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


def start_nodes(data: dict[str, Any], ran: Collection[str] = ()) -> list[str]:
    """The nodes the input channel ``__start__`` starts.

    A ``StateGraph`` hands its input to its ``__start__`` node; the functional API hands an
    ``@entrypoint``'s input to the entrypoint itself, a node named after its function. The
    checkpoint names that node only once it has run: by the writes of the input checkpoint's
    own tasks (``ran``: the nodes of its pull tasks that wrote no other trigger explains),
    or, at the input of a later invocation, by ``versions_seen`` (the nodes that saw
    ``__start__``). Else ``__start__``: an entrypoint's input checkpoint with no writes
    (the process stopped before its first) reads as a graph's.
    """
    if ran:
        return sorted(ran)
    seen_by = data.get("versions_seen") or {}
    nodes = [
        str(n)
        for n, seen in seen_by.items()
        if n not in ("__interrupt__", "__input__") and isinstance(seen, dict) and START in seen
    ]
    return sorted(nodes) or [START]


def next_tasks(
    data: dict[str, Any], finished: frozenset[str] = frozenset(), ran: Collection[str] = ()
) -> list[str]:
    """Nodes the checkpoint runs next, as LangGraph's ``StateSnapshot.next`` lists them.

    As ``prepare_next_tasks`` does: the Sends (:func:`sends_of`) first, then each node
    whose trigger channel (``branch:to:X``, ``join:...:X``, ``__start__``; the older names
    :func:`trigger_target` and :func:`_subscribers` read) is available and newer than the
    version the node saw, sorted by name (LangGraph sorts the nodes of the
    updated channels; the savers do not keep the channel order). ``finished`` names tasks
    (node names, or ``push:<index>`` for a Send) whose writes are stored: the head leaves
    them out, as ``get_state()`` does. ``ran`` names the nodes of the pull tasks that wrote
    at this checkpoint, which tell what ``__start__`` started (:func:`start_nodes`).
    """
    values = data.get("channel_values") or {}
    versions = data.get("channel_versions") or {}
    seen_by = data.get("versions_seen") or {}
    out = []
    for i, v in enumerate(sends_of(data)):
        if v.get("node") and f"push:{i}" not in finished:
            out.append(str(v["node"]))
    updated = data.get("updated_channels")
    channels = updated if isinstance(updated, list) else list(versions)
    subs = _subscribers(seen_by)
    pulled = set()
    starts: list[str] = []
    if START in channels and _available(START, values):
        explained = {trigger_target(str(c)) for c in channels if c != START}
        explained |= {n for c in channels for n in subs.get(str(c), [])}
        starts = start_nodes(data, [n for n in ran if n not in explained])
    for channel in channels:
        named = trigger_target(str(channel))
        if channel == START:
            nodes = starts
        else:
            nodes = [named] if named is not None else subs.get(str(channel), [])
        if not nodes or not _available(channel, values):
            continue
        for node in nodes:
            seen = seen_by.get(node)
            if node not in pulled and _newer(
                versions.get(channel), seen.get(channel) if isinstance(seen, dict) else None
            ):
                pulled.add(node)
    return out + sorted(pulled - finished)


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


def task_name(path: str) -> str:
    """The task a write's ``task_path`` names: the node, or ``push:<index>`` for a Send."""
    parts = [p.strip() for p in path.split(",")]
    if parts[0] == PULL_PATH and len(parts) > 1:
        return parts[1]
    if parts[0] == PUSH_PATH and len(parts) > 1:
        # the index as next_tasks names it (the path pads it: 0000000003)
        return f"push:{int(parts[1])}" if parts[1].isdigit() else f"push:{parts[1]}"
    return path


def task_writes(decoded: list[tuple[RawWrite, Any]]) -> list[TaskWrites]:
    """The writes of each task (the caller's own writes, ``Command(resume=...)``, left out)."""
    tasks: dict[str, TaskWrites] = {}
    for w, v in decoded:
        if w.task_id == NULL_TASK:
            continue
        t = tasks.setdefault(w.task_id, TaskWrites(task_name(w.task_path or w.task_id)))
        if w.channel == "__interrupt__":
            t.interrupts += _interrupts([v])
        elif w.channel == "__resume__":
            t.resumes += v if isinstance(v, list) else [v]
        elif w.channel == "__error__":
            t.errors.append(str(v))
        elif w.channel not in TASK_SIGNALS:
            t.produced = True
    return list(tasks.values())


def produced_ids(decoded: list[tuple[RawWrite, Any]]) -> set[str]:
    """Ids of the tasks that wrote output at the checkpoint (they finished)."""
    return {
        w.task_id for w, _ in decoded if w.task_id != NULL_TASK and w.channel not in TASK_SIGNALS
    }


def parent_task(ns: str) -> tuple[str, str]:
    """The namespace a subgraph's namespace is nested in, and the id of the task there that
    ran it (``"a:1|b:2"``: ``("a:1", "2")``)."""
    parent, _, own = ns.rpartition("|")
    return parent, own.partition(":")[2]


def agent_of(data: dict[str, Any], ns: str, functional: bool, ran: Collection[str]) -> str | None:
    """The run's agent, where the checkpoint names one: a subgraph's is the node that runs
    it (``triage`` for ``triage:<task id>``: in a multi-agent graph, the agent), an
    entrypoint's is the function it is named after; a graph's root names none."""
    if ns:
        return ns.rpartition("|")[2].partition(":")[0] or None
    if functional:
        nodes = start_nodes(data, [n for n in ran if n != START])
        return nodes[0] if nodes != [START] else None
    return None


def handed_up(nexts: list[str], step: int | None) -> dict[str, Any]:
    """The status of a subgraph's head whose due nodes ran with no write here while the
    parent's task that ran the subgraph finished: they handed their result to the parent
    graph (``Command(graph=Command.PARENT)``: a multi-agent handoff)."""
    where = f" at step {step}" if step is not None else ""
    return {
        "status": "completed",
        "status_reason": f"node {', '.join(nexts)}{where} handed control to the parent graph "
        "(Command(graph=Command.PARENT)): the parent's task that ran this subgraph finished",
        "handed_up": nexts,
    }


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


def shown_name(name: str, sends: list[dict[str, Any]]) -> str:
    """A task's name for a person: a ``Send``'s (``push:<index>``) is the node it started
    (the prebuilt agent sends each tool call to ``tools``)."""
    index = name[5:] if name.startswith("push:") else ""
    if index.isdigit() and int(index) < len(sends) and sends[int(index)].get("node"):
        return str(sends[int(index)]["node"])
    return name


def status_fields(
    tasks: list[TaskWrites],
    has_child: bool,
    nexts: list[str],
    step: int | None = None,
    sends: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The metadata keys the store's status rule reads, from the checkpoint's task writes.

    A task's ``__interrupt__`` write holds its current question; the question is open while
    the task has produced nothing (its earlier questions were answered by ``__resume__``).
    ``sends`` (:func:`sends_of`) name the nodes of the ``Send`` tasks in the reasons.
    """
    # a task that raised and then, retried on the same checkpoint, produced its output: the
    # error is superseded (LangGraph shows it nowhere). A functional-API task's error or
    # question is also its entrypoint's (each writes it): said once, by the entrypoint
    tasks = sorted(tasks, key=lambda t: t.name.startswith("push:"))
    errors = list(dict.fromkeys(e for t in tasks if not t.produced for e in t.errors))
    waiting = [t for t in tasks if not t.produced and t.interrupts]
    open_q = _distinct([t.interrupts[-1] for t in waiting])
    done_q = _distinct([i for t in tasks if t.produced for i in t.interrupts])
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
        node = shown_name(waiting[0].name, sends or [])
        out.update(status="parked", interrupt=open_q[0],
                   status_reason=f"interrupt() in node {node} waits for an answer "
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


def _distinct(interrupts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interrupts, each id once (one without an id is its own)."""
    seen: set[str] = set()
    out = []
    for i in interrupts:
        key = i.get("id")
        if key is None or str(key) not in seen:
            out.append(i)
        if key is not None:
            seen.add(str(key))
    return out


def call_errors(tasks: list[TaskWrites], data: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """The errors of the tasks that raised, for the tool calls they were running.

    A ``Send`` task (``push:<i>``) whose argument names a tool call (the prebuilt agent's
    ``tool_call``) ran that call; any other task that raised (a ``ToolNode`` pulled by its
    node) ran the calls still unanswered.

    Returns:
        Errors by tool call id, and the error of the other failed tasks (None if none).
    """
    sends = sends_of(data)
    by_call: dict[str, str] = {}
    other = []
    for t in tasks:
        if t.produced or not t.errors:
            continue
        calls = []
        if t.name.startswith("push:") and t.name[5:].isdigit() and int(t.name[5:]) < len(sends):
            calls = _send_calls(sends[int(t.name[5:])].get("arg"))
        for call in calls:
            by_call[str(call["id"])] = "; ".join(t.errors)
        if not calls:
            other += t.errors
    return by_call, "; ".join(dict.fromkeys(other)) or None


def _send_calls(arg: Any) -> list[dict[str, Any]]:
    """The tool calls a ``Send``'s argument hands its node: the prebuilt agent's
    ``{"tool_call": ...}`` (LangGraph 0.5 on), or a list of calls (before)."""
    calls = [arg.get("tool_call")] if isinstance(arg, dict) else arg
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, dict) and c.get("id") and "args" in c]


def pulled_nodes(decoded: list[tuple[RawWrite, Any]]) -> frozenset[str]:
    """The nodes whose pull tasks wrote at the checkpoint (``next_tasks``' ``ran``)."""
    return frozenset(
        task_name(w.task_path) for w, _ in decoded if (w.task_path or "").startswith(PULL_PATH)
    )


def pending_writes(decoded: list[tuple[RawWrite, Any]]) -> list[dict[str, Any]]:
    """Writes of finished tasks not yet applied (only meaningful at a checkpoint's leaf).

    They are not pending effects: the task has finished, and LangGraph applies its writes on
    resume without running it again (``metadata.pending_writes`` keeps them). A functional
    API task's result (``__return__``) is one: LangGraph hands it back on resume in place of
    calling the task.
    """
    return [
        {"task_id": w.task_id, "task_path": w.task_path, "idx": w.idx, "channel": w.channel,
         "value": v}
        for w, v in decoded
        if w.channel == RETURN or (w.channel not in CONTROL_WRITES and not is_internal(w.channel))
    ]  # fmt: skip
