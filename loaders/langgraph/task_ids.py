"""Naming the tasks of writes stored without a ``task_path``, as LangGraph computes their ids.

A pending write names its task by id; which node the task ran is its ``task_path``. The
SQLite saver stored no path before ``langgraph-checkpoint-sqlite`` 3.0 (LangGraph 1.0), and
its later versions add the column to an older file with ``''`` for the rows already there:
every SQLite database written before LangGraph 1.0 has writes whose task is only an id. Yet
the id is no random number: ``prepare_single_task`` derives it from the checkpoint, so the
tasks the checkpoint can start, with LangGraph's own formula, give back the node of each id
(measured on databases LangGraph 0.2, 0.3, 0.4 and 0.6 wrote: ``tests/langgraph/legacy``).

The formula (``langgraph.pregel._algo``): a hash of the checkpoint id's 16 bytes, then the
task's namespace (``<parent ns>|<node>``, the node alone at the root), the step it runs at
(the checkpoint's ``metadata.step`` + 1), the node, and ``__pregel_pull`` with the node's
trigger channels sorted, or ``__pregel_push`` with the index of its ``Send``; the hash is
XXH3-128 for checkpoints of format ``v`` > 1 since LangGraph 0.3, SHA-1 before (both are
tried: they cannot collide on a 128-bit id), printed as a UUID. The trigger channels are the
graph's, which the database does not hold whole: the sets
:func:`~loaders.langgraph.tasks.task_triggers` makes of what it does hold are tried. A write
whose id none of them gives keeps its id as its task's name, as before.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import xxhash

from loaders.langgraph.tasks import NULL_TASK, PULL_PATH, PUSH_PATH, sends_of, task_triggers

if TYPE_CHECKING:
    from loaders.langgraph.source import RawWrite

PULL = PULL_PATH.lstrip("~")
PUSH = PUSH_PATH.lstrip("~")


def _as_uuid(hexdigest: str) -> str:
    h = hexdigest
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _ids(namespace: bytes, parts: Iterable[str]) -> Iterator[str]:
    """The task id both ways LangGraph has computed it (XXH3-128, then SHA-1)."""
    joined = namespace + "".join(parts).encode()
    yield _as_uuid(xxhash.xxh3_128_hexdigest(joined))
    yield _as_uuid(hashlib.sha1(joined, usedforsecurity=False).hexdigest())


def _candidates(data: dict[str, Any], step: int, checkpoint_ns: str) -> Iterator[tuple[str, str]]:
    """``(task id, task_path)`` of every task the checkpoint can start, each way it may be
    computed."""
    try:
        namespace = binascii.unhexlify(str(data.get("id", "")).replace("-", ""))
    except (binascii.Error, ValueError):
        return
    if len(namespace) != 16:
        return

    def ns(node: str) -> str:
        return f"{checkpoint_ns}|{node}" if checkpoint_ns else node

    for i, send in enumerate(sends_of(data)):
        node = str(send["node"])
        path = f"{PUSH_PATH}, {i:010d}"
        for tid in _ids(namespace, (ns(node), str(step), node, PUSH, str(i))):
            yield tid, path
    for node, options in task_triggers(data).items():
        path = f"{PULL_PATH}, {node}"
        for triggers in options:
            for tid in _ids(namespace, (ns(node), str(step), node, PULL, *triggers)):
                yield tid, path


def with_task_paths(
    decoded: list[tuple[RawWrite, Any]], data: dict[str, Any], meta: dict[str, Any],
    checkpoint_ns: str,
) -> list[tuple[RawWrite, Any]]:  # fmt: skip
    """The writes, each whose ``task_path`` is empty given the path of the task its id names
    (left as stored where no task of the checkpoint has its id)."""
    missing = {w.task_id for w, _ in decoded if not w.task_path and w.task_id != NULL_TASK}
    step = meta.get("step")
    if not missing or not isinstance(step, int):
        return decoded
    found: dict[str, str] = {}
    for tid, path in _candidates(data, step + 1, checkpoint_ns):
        if tid in missing:
            found.setdefault(tid, path)
            if len(found) == len(missing):
                break
    if not found:
        return decoded
    return [
        (replace(w, task_path=found[w.task_id]) if w.task_id in found and not w.task_path else w,
         v)
        for w, v in decoded
    ]  # fmt: skip
