"""The original's checkpoint, restored into the replay's in-memory checkpointer.

The store keeps, for each LangGraph checkpoint, its id, step, working state, internal
channels (``metadata.internal_channels``), the nodes due next (``metadata.next``) and, at a
head, the writes finished tasks left (``metadata.pending_writes``). It does not keep the
channel versions, and needs not: the versions are rebuilt so that LangGraph's own
``prepare_next_tasks`` finds exactly the stored ``next`` (every channel at version 1, the
trigger channels of the nodes due next at version 2, every node having seen version 1),
and :func:`restore` checks that ``graph.get_state()`` agrees before anything runs.

The checkpoint keeps its original id, and :func:`pinned_ids` gives the replay's later
checkpoints the ids the original had at the same step and namespace. LangGraph derives
task ids (hence subgraph namespaces, interrupt ids, and which pending write belongs to
which task) from the checkpoint id, so the replay's tasks are the original's tasks.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from debugger.replay.graph.revive import coerce, revive
from loaders.langgraph.map import END, START
from loaders.langgraph.tasks import PULL_PATH, task_name, trigger_target

_V1 = f"{1:032}.{0.0:016}"
_V2 = f"{2:032}.{0.0:016}"


class RestoreError(ValueError):
    """The checkpoint cannot be restored faithfully in this graph."""


def replay_saver() -> Any:
    """The replay's checkpointer: in memory, never the application's own.

    Its serializer may import the user's classes: the child runs the user's graph anyway.
    """
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=True))


def _channel_type(graph: Any, name: str) -> Any:
    channel = graph.channels.get(name)
    return getattr(channel, "typ", None) if channel is not None else None


def restored_values(graph: Any, state: Any, internal: dict[str, Any]) -> dict[str, Any]:
    """Channel values as Python objects: the working state and the internal channels.

    An ``@entrypoint``'s state (the functional API) is its output, not channels: it is in
    the internal ``__end__`` channel already.
    """
    from langgraph.channels import NamedBarrierValue, NamedBarrierValueAfterFinish

    values: dict[str, Any] = {}
    channels = state.items() if isinstance(state, dict) and END not in graph.channels else ()
    for name, stored in channels:
        values[name] = coerce(revive(stored), _channel_type(graph, name), stored)
    for name, stored in internal.items():
        value = revive(stored)
        channel = graph.channels.get(name)
        if isinstance(channel, NamedBarrierValue | NamedBarrierValueAfterFinish):
            value = set(value or ())
        values[name] = value
    return values


def legacy_channels(graph: Any, internal: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The trigger channels of a checkpoint LangGraph 0.2 wrote (format ``v`` < 3) under the
    names the graph has, and the nodes they start.

    Before LangGraph 0.3, an edge into ``X`` was a channel ``start:X`` (from START),
    ``branch:A:cond:X`` (a conditional edge), or, for a plain edge ``A -> X``, the channel
    named after ``A``; LangGraph 0.3 named each ``branch:to:X``, and renames them itself
    when it loads such a checkpoint, given the graph (``_migrate_checkpoint``). Each is
    ephemeral: it holds a value only in the checkpoint of the step that wrote it, so each
    one held starts its targets next. The graph names the targets of ``A``'s channel (its
    edges), which the database does not when ``X`` had not run yet (docs/langgraph.md,
    Limits): a node found here is due even where the stored ``next`` could not name it.
    """
    nodes = set(graph.nodes)
    plain: dict[str, list[str]] = {}
    for a, b in getattr(getattr(graph, "builder", None), "edges", ()) or ():
        if b in nodes:
            plain.setdefault(a, []).append(b)
    out: dict[str, Any] = {}
    woken: list[str] = []
    for name, value in internal.items():
        # the names 0.3 changed (a join's, ``join:A+B:X``, it kept)
        named = name.startswith("start:") or (name.startswith("branch:") and name.count(":") == 3)
        target = trigger_target(name) if named else None
        if target in nodes:
            targets = [str(target)]
        elif name in nodes and name != "__start__":  # START's channel is the input
            targets = plain.get(name, [])
        else:
            out[name] = value
            continue
        for node in targets:
            out.setdefault(f"branch:to:{node}", value)
            if node not in woken:
                woken.append(node)
    return out, woken


def finished_pulls(pending_writes: list[dict[str, Any]], due: list[str]) -> list[str]:
    """The nodes whose tasks finished in the checkpoint's step (their writes are pending)
    and so are not due: the stored ``next`` leaves them out, as ``get_state()`` does.

    They are made due all the same, so that LangGraph finds each one's writes by its task
    id, takes them instead of running the node again, and applies them with the step's,
    as it does for the original checkpoint; left out, the writes would match no task and
    be lost (the tool answer of a step whose other task failed).
    """
    out: list[str] = []
    for w in pending_writes:
        path = str(w.get("task_path") or "")
        node = task_name(path)
        if path.startswith(PULL_PATH) and node != path and node not in due and node not in out:
            out.append(node)
    return out


def _versions(graph: Any, values: dict[str, Any], due: list[str]) -> tuple[dict[str, Any], ...]:
    sends = values.get("__pregel_tasks") or []
    pushed = [getattr(s, "node", None) for s in sends]
    pulled = list(due)
    for node in pushed:
        if node in pulled:
            pulled.remove(node)
    versions = dict.fromkeys(values, _V1)
    seen: dict[str, dict[str, Any]] = {"__input__": {}}
    for name, node in graph.nodes.items():
        triggers = list(getattr(node, "triggers", ()) or ())
        seen[name] = dict.fromkeys(triggers, _V1)
        if name in pulled:
            for t in triggers:
                if t in values:
                    versions[t] = _V2
    return versions, seen


def restore(graph: Any, saver: Any, thread_id: str, start: dict[str, Any]) -> dict[str, Any]:
    """Put the starting checkpoint (and its pending writes) into ``saver``.

    Args:
        graph: the compiled graph on ``saver``.
        saver: the replay's checkpointer.
        thread_id: the thread the replay runs on.
        start: ``checkpoint_id``, ``step``, ``ts``, ``v``, ``source``, ``state``,
            ``internal``, ``next`` and ``pending_writes`` of the original's checkpoint.

    Returns:
        The config of the restored checkpoint.

    Raises:
        RestoreError: LangGraph would not run the stored ``next`` from it.
        ReviveError: a value's class cannot be imported or built.
    """
    internal = start.get("internal") or {}
    due = list(start.get("next") or [])
    v = int(start.get("v") or 4)
    if v < 3:  # LangGraph 0.2's channel names, renamed here: the checkpoint is then v 4's
        internal, woken = legacy_channels(graph, internal)
        due += [node for node in woken if node not in due]
        v = 4
    if START in due and START not in graph.nodes:
        # an entrypoint's input that an older LangGraph wrote (no task paths in the file):
        # the file cannot name the node the input starts, the graph does
        due = [n for n in due if n != START] + [
            name for name, node in graph.nodes.items() if START in getattr(node, "triggers", ())
        ]
    values = restored_values(graph, start["state"], internal)
    due += finished_pulls(start.get("pending_writes") or [], due)
    versions, seen = _versions(graph, values, due)
    checkpoint = {"v": v, "id": start["checkpoint_id"],
                  "ts": str(start.get("ts") or ""), "channel_values": values,
                  "channel_versions": versions, "versions_seen": seen,
                  "updated_channels": None}  # fmt: skip
    metadata: dict[str, Any] = {"source": start.get("source") or "loop", "step": int(start["step"]),
                "parents": {}}  # fmt: skip
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    saved = saver.put(config, checkpoint, metadata, versions)
    tasks: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for w in start.get("pending_writes") or []:
        key = (str(w["task_id"]), str(w.get("task_path") or ""))
        tasks.setdefault(key, []).append((str(w["channel"]), revive(w["value"])))
    for (task_id, path), writes in tasks.items():
        saver.put_writes(saved, writes, task_id, path)
    got = list(graph.get_state(saved).next)
    if sorted(got) != sorted(due):
        why = "the graph's nodes or edges are not those of the run"
        if int(start.get("v") or 4) < 4 and "__pregel_tasks" not in values:
            why += (" (or the store was imported before Stepscope kept the Sends of a "
                    "LangGraph < 0.5 checkpoint: import the database again)")  # fmt: skip
        raise RestoreError(
            f"restored in this graph, checkpoint {start['checkpoint_id']} would run "
            f"{got or 'nothing'} next, where the original ran {due or 'nothing'}: {why}"
        )
    return dict(saved)


_pin = threading.local()


@contextlib.contextmanager
def pinned_ids(ids: dict[tuple[str, int], str]) -> Iterator[None]:
    """While open, a checkpoint LangGraph creates at (namespace, step) gets the original's id.

    Only for pairs in ``ids``; patches ``SyncPregelLoop._put_checkpoint`` and the
    ``create_checkpoint`` it calls, and undoes both on exit.
    """
    from langgraph.pregel import _loop

    loop: Any = _loop  # create_checkpoint is not exported
    put, create = _loop.SyncPregelLoop._put_checkpoint, loop.create_checkpoint

    def put_pinned(self: Any, metadata: Any) -> Any:
        exiting = metadata is self.checkpoint_metadata
        ns = str(self.config.get("configurable", {}).get("checkpoint_ns", ""))
        _pin.id = None if exiting else ids.get((ns, int(self.step)))
        try:
            return put(self, metadata)
        finally:
            _pin.id = None

    def create_pinned(checkpoint: Any, channels: Any, step: int, **kw: Any) -> Any:
        want = getattr(_pin, "id", None)
        if kw.get("id") is None and want:
            kw["id"], _pin.id = want, None
        return create(checkpoint, channels, step, **kw)

    _loop.SyncPregelLoop._put_checkpoint = put_pinned  # type: ignore[method-assign]
    loop.create_checkpoint = create_pinned
    try:
        yield
    finally:
        _loop.SyncPregelLoop._put_checkpoint = put  # type: ignore[method-assign]
        loop.create_checkpoint = create
