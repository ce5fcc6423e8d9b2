"""The replay child's protocol: what the sandboxed child may tell its parent, and nothing more.

The child runs the agent's code in its own interpreter, so anything it sends may have been
written by that code. The protocol is therefore *data only*: states, calls, budgets, the
refusals the in-process hooks saw, and a closed set of reasons to stop. It never carries an
outcome or a sentence the parent would print as a verdict; the parent (``debugger.replay.judge``)
decides the outcome, composes every reason from its own templates and computes the
comparison itself.

Transport: one JSON document a line on a dedicated pipe (``--protocol-fd``), not stdout (the
agent's prints go to ``agent.log``). The parent reads with :class:`Reader`, which enforces a
size limit per message and in total, a schema per message type (unknown or missing keys,
wrong types, values outside their closed sets are refused) and the order of the messages::

    hello (violation)* (ready | setup_error) (step | violation)* end

Anything else ends the replay as ``sandbox_violation`` (:class:`ProtocolError`).

This is the interface a second kind of child (a LangGraph graph's) implements too: write
:func:`Writer.send` messages of the types below, in that order. Its protocol (``graph`` in
:data:`PROTOCOLS`) differs in two places only: each call also says where in the graph it was
made (:data:`GRAPH_CALL_PLACE`), so the parent can look it up on the same namespace's tape,
and its setup can also fail at loading the graph or restoring the checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import IO, Any

import orjson

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""One message (a step with its state and calls) may not exceed this."""
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
"""Everything the child sends may not take more than this in the parent's memory, as
:func:`parsed_size` estimates it before parsing."""
MAX_VIOLATIONS = 10_000
"""Refusals a replay may report: past it the child is flooding the parent, not working."""
MAX_TEXT = 4000
"""Longest free text (an error message, a refusal's description) the parent keeps."""

STOP_REASONS = (
    "done", "parked", "budget", "step_limit", "end_of_original", "diverged", "agent_error",
    "memory",
)  # fmt: skip
"""Why the child's loop stopped (``end.why``); the parent checks and words each one."""
SETUP_PARTS = ("agent", "mocks", "migration")
"""What failed when the child could not set up (``setup_error.what``)."""
GRAPH_SETUP_PARTS = ("mocks", "graph", "restore")
"""The same for a graph's child: the mocks, the graph itself, or restoring the checkpoint."""
VIOLATION_KINDS = ("network", "file_write", "process", "signal")
"""What the in-process hooks refused (``violation.kind``)."""
CALL_SOURCES = ("tape", "mock", "none", "stopped")
"""Where the child says a call's answer came from."""


class ProtocolError(Exception):
    """The child sent something outside the protocol; the message is the parent's own words."""


_Check = Callable[[Any], bool]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _opt_int(v: Any) -> bool:
    return v is None or _int(v)


def _text(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= MAX_TEXT


def _opt_text(v: Any) -> bool:
    return v is None or _text(v)


def _any(v: Any) -> bool:
    return True


def _one_of(values: tuple[str, ...]) -> _Check:
    return lambda v: v in values


def _budgets(v: Any) -> bool:
    keys = {"steps_spent", "tokens_spent", "wall_clock_ms"}
    return isinstance(v, dict) and set(v) == keys and all(_int(x) for x in v.values())


def _effects(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(e, dict) for e in v)


def _originals(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and all(isinstance(k, str) for k in v))


_CALL: dict[str, _Check] = {
    "step_index": _int, "seq": _int, "kind": _one_of(("tool", "model")), "name": _text,
    "request": _any, "idempotency_key": _opt_text, "is_write": lambda v: isinstance(v, bool),
    "source": _one_of(CALL_SOURCES), "response": _any, "error": _opt_text,
}  # fmt: skip
"""A call as the child made it: the parent matches it against the tape itself."""

GRAPH_CALL_PLACE: dict[str, _Check] = {
    "ns": _text, "ns_step": _opt_int, "push": _opt_int, "resumes": _int,
}  # fmt: skip
"""What a graph's call adds: the subgraph namespace it was made in (``""`` for the root),
that namespace's own step, the ``Send`` index of the calling task, and how many times the
step's interrupted nodes had been resumed when it was made (a resumed node runs again from
its start, so its recorded calls may be answered again)."""


def _calls_of(schema: dict[str, _Check]) -> _Check:
    return lambda v: isinstance(v, list) and all(_matches(c, schema) for c in v)


def _schemas(call: dict[str, _Check], setup_parts: tuple[str, ...]) -> dict[str, dict[str, _Check]]:
    return {
        "hello": {"pid": _int},
        "violation": {"kind": _one_of(VIOLATION_KINDS), "detail": _text, "step_index": _int},
        "setup_error": {
            "what": _one_of(setup_parts),
            "message": _text,
            "hint": _text,
            "traceback": _text,
        },
        "ready": {
            "state": _any,
            "schema_version": _opt_int,
            "migrated_from": _opt_int,
            "originals": _originals,
        },
        "step": {
            "step_index": _int,
            "partial": lambda v: isinstance(v, bool),
            "state": _any,
            "budgets": _budgets,
            "calls": _calls_of(call),
            "pending_effects": _effects,
            "seconds": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "error": _opt_text,
        },
        "end": {"why": _one_of(STOP_REASONS), "step_index": _int, "detail": _opt_text},
    }


SCHEMAS = _schemas(_CALL, SETUP_PARTS)
"""Every message type and its keys; a message has exactly these keys plus ``type``."""
PROTOCOLS: dict[str, dict[str, dict[str, _Check]]] = {
    "agent": SCHEMAS,
    "graph": _schemas({**_CALL, **GRAPH_CALL_PLACE}, GRAPH_SETUP_PARTS),
}
"""The schemas by the kind of child: a native agent's, or a LangGraph graph's."""

_NEXT: dict[str | None, tuple[str, ...]] = {
    None: ("hello",),
    "hello": ("violation", "ready", "setup_error"),
    "ready": ("violation", "step", "end"),
    "step": ("violation", "step", "end"),
    "setup_error": (),
    "end": (),
}
"""Which message types may follow each (``violation`` keeps the state it arrived in)."""


_PRINTED = {"violation": ("detail",), "setup_error": ("message", "hint", "traceback")}
"""Free text the parent prints as it came: made one printable line (no terminal escapes)."""


def _matches(value: Any, schema: dict[str, _Check]) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == set(schema)
        and all(check(value[k]) for k, check in schema.items())
    )


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """Free text from the child made safe to show: one line, printable, at most ``limit``."""
    flat = " ".join(text.split())
    flat = "".join(c if c.isprintable() else "?" for c in flat)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def parsed_size(line: bytes) -> int:
    """An upper estimate of the memory a message takes once parsed, counted on its bytes.

    JSON is far smaller than the Python objects it becomes (``[],`` is 3 bytes and a 64-byte
    list): a bound on the bytes alone lets a 30 MB message cost the parent gigabytes. Every
    container and string is charged what its object costs, every byte what a number costs.
    """
    containers = line.count(b"[") + line.count(b"{")
    return 8 * len(line) + 100 * containers + 30 * line.count(b'"')


class Writer:
    """The child's end: one message a line on the protocol descriptor."""

    def __init__(self, fd: int) -> None:
        # buffered: a flush writes the whole message even where the pipe takes it in parts
        self._stream = os.fdopen(fd, "wb")

    def send(self, message_type: str, /, **fields: Any) -> None:
        """Send one message (its keys must be those of ``SCHEMAS[message_type]``)."""
        line = orjson.dumps({"type": message_type, **fields}, default=repr,
                            option=orjson.OPT_NON_STR_KEYS)  # fmt: skip
        self._stream.write(line + b"\n")
        self._stream.flush()


class Reader:
    """The parent's end: yields valid messages in order; raises :class:`ProtocolError`."""

    def __init__(self, stream: IO[bytes], protocol: str = "agent") -> None:
        self._stream = stream
        self._schemas = PROTOCOLS[protocol]
        self._total = 0
        self._state: str | None = None
        self.count = 0
        self._violations = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            line = self._stream.readline(MAX_MESSAGE_BYTES + 1)
            if not line:
                return
            self.count += 1
            if len(line) > MAX_MESSAGE_BYTES or not line.endswith(b"\n"):
                raise ProtocolError(f"message {self.count} is too long or unterminated")
            self._total += parsed_size(line)
            if self._total > MAX_TOTAL_BYTES:
                raise ProtocolError(f"its messages would take more than {MAX_TOTAL_BYTES >> 20} "
                                    "MB of the parent's memory")  # fmt: skip
            yield self._check(line)

    def _check(self, line: bytes) -> dict[str, Any]:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise ProtocolError(f"message {self.count} is not JSON") from None
        kind = message.get("type") if isinstance(message, dict) else None
        if not isinstance(kind, str) or kind not in self._schemas:
            raise ProtocolError(f"message {self.count} has no known type")
        if kind not in _NEXT[self._state]:
            after = self._state or "the start"
            raise ProtocolError(f"message {self.count} ({kind}) is out of order after {after}")
        body = {k: v for k, v in message.items() if k != "type"}
        if not _matches(body, self._schemas[kind]):
            raise ProtocolError(f"message {self.count} ({kind}) does not match its schema")
        if kind in _PRINTED:  # the child's clip() is the child's: the parent's own
            body = {k: clip(v) if k in _PRINTED[kind] else v for k, v in body.items()}
        if kind != "violation":
            self._state = kind
        else:
            self._violations += 1
            if self._violations > MAX_VIOLATIONS:
                raise ProtocolError(f"it reported more than {MAX_VIOLATIONS} refusals")
        return {"type": kind, **body}
