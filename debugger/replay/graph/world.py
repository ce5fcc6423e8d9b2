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
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

from debugger.replay.sandbox import SandboxContext, missing_divergences
from debugger.replay.tape import Match, Tape, TapeEntry, canonical
from loaders.langgraph.map import facts_of, is_message

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


def messages(state: Any) -> list[dict[str, Any]]:
    """The messages of a (decoded) state, in order: those of its channels, or an
    entrypoint's output that is a message or a list (the loader's rule)."""
    if is_message(state) or isinstance(state, list):
        values: Any = [state]
    elif isinstance(state, dict):
        values = state.values()
    else:
        return []
    return [m for value in values for m in (value if isinstance(value, list) else [value])
            if is_message(m)]  # fmt: skip


def message_facts(state: Any, known: Container[str] = ()) -> dict[str, Any]:
    """Facts of the messages in a (decoded) state, by message id, but for ``known`` ids."""
    out = {}
    for m in messages(state):
        if m.get("id") not in known:
            f = facts_of(m)
            out[f.key] = f
    return out


def last_step(data: dict[str, Any]) -> int | None:
    """The original's last step: its last checkpoint, or the step after its head when it
    parked on ``interrupt()`` (the question was recorded there)."""
    steps = [data.get("original_last_step"), data["graph"].get("last_step")]
    known = [int(s) for s in steps if s is not None]
    return max(known) if known else None


class GraphWorld:
    """The recorded world of a graph run, consulted the same way by the child (to answer)
    and by the parent (to judge what the child reports): the root's tape, one tape per
    subgraph namespace, and the budget rules of a LangGraph run.

    Calls are looked up in the order they were made; a call says where it was made
    (``protocol.GRAPH_CALL_PLACE``), which picks the namespace's tape and step and the
    ``Send`` branch. When a step's interrupted nodes are resumed (``resumes`` grows), the
    root entries the step matched so far may be matched again: the node runs from its start.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        g = data["graph"]
        self.root = GraphTape(data["tape"], int(data["from_step"]), data.get("effects") or [],
                              [int(k) for k in data["original"]],
                              new_ids=g.get("new_ids"))  # fmt: skip
        self.ns_tapes = {
            ns: GraphTape(t["tape"], -(2**31), new_ids=t.get("new_ids"))
            for ns, t in (g.get("namespaces") or {}).items()
        }
        self.last = last_step(data)
        self.seen = message_facts(data["start"]["state"])
        self._step: int | None = None
        self._resumes = 0
        self._matched: list[TapeEntry] = []

    def classify(self, call: dict[str, Any], beyond: bool) -> tuple[str, TapeEntry | None]:
        """As :func:`~debugger.replay.sandbox.classify`, on the tape where the call was made."""
        step = int(call["step_index"])
        if step != self._step:
            self._step, self._resumes, self._matched = step, 0, []
        if int(call["resumes"]) > self._resumes:
            for entry in self._matched:
                entry.used = False
            self._resumes, self._matched = int(call["resumes"]), []
        if beyond:
            return "beyond_original", None
        tape, at = self.root, step
        ns, ns_step = call["ns"], call["ns_step"]
        if ns and ns in self.ns_tapes and ns_step is not None:
            tape, at = self.ns_tapes[ns], int(ns_step)
        tape.push_index = call["push"]
        try:
            match = tape.match(at, call["kind"], call["name"], call["request"],
                               call["idempotency_key"])  # fmt: skip
        finally:
            tape.push_index = None
        if tape is self.root and match.entry is not None:
            self._matched.append(match.entry)
        if match.status == "unexpected" and self.root.is_partial(step):
            return "unrecorded", None
        return match.status, match.entry

    def missing(self, step: int, state: Any) -> list[dict[str, Any]]:
        """Divergences for the root's recorded calls of ``step`` never made. A recorded
        model call whose answer is in the state anyway is not missing: the tape infers
        model calls from AI messages, which a node may also write itself."""
        ids = {m.get("id") for m in messages(state)}
        for entry in self.root.by_step.get(step, []):
            response = entry.response
            if not entry.used and entry.kind == "model" and isinstance(response, dict):
                entry.used = response.get("id") in ids
        return missing_divergences(self.root, step)

    @staticmethod
    def steps_spent(step: int, before: int) -> int:
        """A LangGraph checkpoint's steps spent is its step (the loader's rule)."""
        return max(step, 0)

    def tokens(self, calls: list[dict[str, Any]], state: Any) -> int:
        """Tokens the step spent: the usage of AI messages new in its state, each message
        once by id (the loader's rule, so the replay's budgets compare with the original's)."""
        facts = message_facts(state, self.seen)
        self.seen.update(facts)
        return sum(f.tokens for f in facts.values() if f.kind == "ai")


@dataclass
class GraphContext(SandboxContext):
    """The sandbox context of a graph replay: calls looked up in the :class:`GraphWorld`."""

    world: GraphWorld | None = None
    answers: dict[str, Any] = field(default_factory=dict)
    """Recorded tool messages (decoded JSON) by tool call id."""
    writes: tuple[str, ...] = ()
    """Tool names given as writes (``--writes``)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Parallel tasks of a superstep call in from several threads."""
    resumes: int = 0
    """How many times this step's interrupted nodes have been resumed."""
    place: dict[str, Any] = field(default_factory=dict)

    def begin_step(self, step_index: int, beyond_original: bool) -> None:
        """Start collecting the calls of one step."""
        super().begin_step(step_index, beyond_original)
        self.resumes = 0

    def _place(self) -> dict[str, Any]:
        return {**self.place, "resumes": self.resumes}

    def _classify(self, record: dict[str, Any]) -> tuple[str, TapeEntry | None]:
        assert self.world is not None
        return self.world.classify(record, self.beyond_original)

    def graph_call(self, kind: str, name: str, request: Any, key: str | None, write: bool,
                   where: tuple[str, int | None, int | None] = ("", None, None),
                   ) -> tuple[Any, str | None]:  # fmt: skip
        """One call from the graph, answered and noted; returns the answer and its source
        (``tape`` or ``mock``). ``where``: the namespace, its step, and the ``Send`` index
        of the calling task."""
        ns, ns_step, push = where
        with self.lock:
            self.place = {"ns": ns, "ns_step": ns_step, "push": push}
            answer = self._call(kind, name, request, key, write)
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
