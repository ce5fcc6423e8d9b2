"""The recorded world of a LangGraph run, as the replay's chat models and tools consult it.

A LangGraph tape is rebuilt from the messages (docs/langgraph.md, "The tape"): a model
call's request is the ids of the messages before its answer, a tool call's request its
arguments. The replay answers

- a chat-model call with the recorded AI message (the very message, id and usage included),
  matched to the request: the ids of the messages the model is given, compared with the
  recorded ones without the messages first written in the same step (parallel branches of a
  ``Send`` fan-out and a subgraph sharing the messages record their siblings there);
- a tool call with the recorded tool message of the same tool call id (so the state gets the
  same message, id included), else the recorded call of the same name and arguments, else
  the mocks module (a function named after the tool, called with its arguments).

Writes are never executed (no tool is: every answer comes from the recording or a mock) and
go to the ledger. Which tools write: ``--writes`` names them; a tool's
``metadata={"stepscope_write": True | False}`` marks it; otherwise a tool is a write unless
its name reads as a read (:data:`READ_VERBS`).
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from debugger.replay.sandbox import SandboxContext
from debugger.replay.tape import Match, Tape, TapeEntry, canonical

READ_VERBS = ("get", "lookup", "find", "search", "list", "read")
"""A tool whose name is one of these, or starts with one and ``_``, reads (is no write)."""
_READ = re.compile(rf"^({'|'.join(READ_VERBS)})(_|$)", re.IGNORECASE)
WRITE_MARK = "stepscope_write"
"""The key of a tool's ``metadata`` that marks it a write (True) or a read (False)."""


def reads_by_name(name: str) -> bool:
    """The default rule: the name reads as a read (``get_order``, ``lookup``, ...)."""
    return bool(_READ.match(name))


def is_write(name: str, writes: Iterable[str] = (), mark: bool | None = None) -> bool:
    """Whether a tool writes: named in ``writes``, else its mark, else the name rule."""
    if name in set(writes):
        return True
    if mark is not None:
        return mark
    return not reads_by_name(name)


class GraphTape(Tape):
    """The tape of one namespace, matching model calls on their request's ids.

    A recorded model request lists the ids before the answer in the merged state, which
    also holds messages that siblings wrote in the same step; those are left out on both
    sides before comparing. Tool calls prefer the recorded call with equal arguments.
    Tool errors are not raised again: the recorded tool message carries them (status
    ``error``), as the graph's ToolNode wrote it.
    """

    def __init__(self, entries: list[dict[str, Any]], from_step: int, *args: Any,
                 new_ids: dict[int, list[str]] | None = None, **kw: Any) -> None:  # fmt: skip
        super().__init__(entries, from_step, *args, **kw)
        self.new_ids = {int(k): set(v) for k, v in (new_ids or {}).items()}
        for entries_ in self.by_step.values():
            for e in entries_:
                if e.kind == "tool":
                    e.error = None

    push_index: int | None = None
    """The ``Send`` index of the task calling now: the i-th branch gets the i-th of the
    step's recorded answers to the same request (writes apply in task order)."""

    def _ranked(self, step: int, mine: bytes) -> list[TapeEntry]:
        entries = self.by_step.get(step, [])
        return [e for e in entries if e.kind == "model" and self._strip(step, e.request) == mine]

    def _strip(self, step: int, request: Any) -> bytes:
        new = self.new_ids.get(step, set())
        ids = request.get("messages") if isinstance(request, dict) else None
        if not isinstance(ids, list):
            return canonical(request)
        return canonical({"messages": [i for i in ids if i not in new]})

    def match(self, step: int, kind: str, name: str, request: Any, key: str | None = None) -> Match:
        """As :meth:`Tape.match`, with the request rules above."""
        candidates = [
            e
            for e in self.by_step.get(step, [])
            if not e.used and e.kind == kind and (kind == "model" or e.name == name)
        ]
        if not candidates:
            return Match("unexpected", None)
        if kind == "model":
            mine = self._strip(step, request)
            same = [e for e in candidates if self._strip(step, e.request) == mine]
            ranked = self._ranked(step, mine)
            if self.push_index is not None and self.push_index < len(ranked):
                same = [e for e in [ranked[self.push_index]] if not e.used] or same
        else:
            mine = canonical(request)
            same = [e for e in candidates if e._canon == mine]
            if key is not None:
                same = [e for e in same if e.idempotency_key == key] or same
        entry = (same or candidates)[0]
        entry.used = True
        return Match("matched" if same else "different_args", entry)


@dataclass
class GraphContext(SandboxContext):
    """The sandbox context of a graph replay: the root's tape plus one per subgraph."""

    ns_tapes: dict[str, Tape] = field(default_factory=dict)
    """Tapes of the original's subgraph namespaces (``<node>:<task id>``)."""
    answers: dict[str, Any] = field(default_factory=dict)
    """Recorded tool messages (decoded JSON) by tool call id."""
    writes: tuple[str, ...] = ()
    """Tool names given as writes (``--writes``)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Parallel tasks of a superstep call in from several threads."""

    def where(self, ns: str, ns_step: int | None) -> tuple[Tape, int] | None:
        """The tape and step a call made in namespace ``ns`` is looked up on."""
        tape = self.ns_tapes.get(ns) if ns else None
        if tape is None or ns_step is None:
            return None
        return tape, ns_step

    def graph_call(self, kind: str, name: str, request: Any, key: str | None, write: bool,
                   where: tuple[str, int | None, int | None] = ("", None, None),
                   ) -> tuple[Any, str | None]:  # fmt: skip
        """One call from the graph, answered and noted; returns the answer and its source
        (``tape`` or ``mock``). ``where``: the namespace, its step, and the ``Send`` index
        of the calling task."""
        ns, ns_step, push = where
        with self.lock:
            found = self.where(ns, ns_step)
            tape = found[0] if found else self.tape
            if isinstance(tape, GraphTape):
                tape.push_index = push
            try:
                answer = self._call(kind, name, request, key, write, found)
            finally:
                if isinstance(tape, GraphTape):
                    tape.push_index = None
            return answer, self.calls[-1].get("source")

    @staticmethod
    def _call_mock(mock: Any, kind: str, request: Any, key: str | None, is_write: bool) -> Any:
        """A graph's tool mock takes the tool's arguments, writes too (the key is one of
        them); the model's mock takes the request (``{"messages": [ids]}``)."""
        if not callable(mock):
            return copy.deepcopy(mock)
        if kind == "model":
            return mock(copy.deepcopy(request))
        return mock(**(copy.deepcopy(request) if isinstance(request, dict) else {}))

    def unused_model_entries(self) -> list[TapeEntry]:
        """This step's recorded model calls the replay did not make (yet)."""
        return [
            e
            for e in self.tape.by_step.get(self.step_index, [])
            if not e.used and e.kind == "model"
        ]
