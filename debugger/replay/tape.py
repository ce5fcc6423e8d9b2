"""The original run's tape, as the sandbox consults it: one cursor per aligned step.

A replay from checkpoint ``k`` re-executes steps ``k+1, k+2, ...``; replay step ``s`` is
aligned with the original's step ``s``, so a call made during replay step ``s`` is looked up
among the original's calls of that same step. Within the step, calls are matched in order by
kind and name (and by idempotency key for writes, whatever their order); the first unused
candidate is consumed. Equal arguments make a match, anything else is a divergence.

The runtime commits a step's tape with its checkpoint, so a step the original died in (a
crash after a write, before the checkpoint) has no tape: only its effects rows, written
before each write ran. Such a step is *partial*: its writes are known (from the effects) and
are matched by key, but its reads and model calls are unknown, so a call not found there is
"unrecorded", not a divergence.

This module runs inside the sandbox child: it imports nothing heavier than orjson.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

MatchStatus = Literal["matched", "different_args", "unexpected"]


def canonical(value: Any) -> bytes:
    """JSON bytes with sorted keys, so that equal values compare equal and 1, 1.0, True don't.

    Plain ``==`` would equate ``1``, ``1.0`` and ``True``; two calls are the same only when
    the runtime would have written the same JSON for them.
    """
    return orjson.dumps(
        value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=_fallback
    )


def _fallback(obj: Any) -> Any:
    if isinstance(obj, tuple | set | frozenset):
        return list(obj)
    return repr(obj)


def as_json(value: Any) -> Any:
    """The value as the runtime would have stored it (a JSON round trip)."""
    return orjson.loads(canonical(value))


@dataclass
class TapeEntry:
    """One recorded call of the original run."""

    step_index: int
    seq: int
    kind: str
    name: str
    request: Any
    response: Any
    error: str | None
    idempotency_key: str | None
    is_write: bool
    recorded: bool = True
    """False for a write known only from its effects row: no answer was recorded."""
    used: bool = False
    _canon: bytes = field(default=b"", repr=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TapeEntry:
        """Build from a ToolCall's dict (``ToolCall.to_dict()``)."""
        entry = cls(
            step_index=int(d["step_index"]),
            seq=int(d["seq"]),
            kind=str(d["kind"]),
            name=str(d["name"]),
            request=d.get("request"),
            response=d.get("response"),
            error=d.get("error"),
            idempotency_key=d.get("idempotency_key"),
            is_write=bool(d.get("is_write")),
        )
        entry._canon = canonical(entry.request)
        return entry

    @classmethod
    def from_effect(cls, d: dict[str, Any]) -> TapeEntry:
        """A write of a partial step, from its effects row (an ``Effect.to_dict()``)."""
        committed = d.get("status") == "committed"
        entry = cls(
            step_index=int(d["step_index"]),
            seq=-1,
            kind="tool",
            name=str(d["tool"]),
            request=d.get("args"),
            response=d.get("result") if committed else None,
            error=None,
            idempotency_key=d.get("idempotency_key"),
            is_write=True,
            recorded=committed,
        )
        entry._canon = canonical(entry.request)
        return entry

    def brief(self) -> dict[str, Any]:
        """The call as the report shows it."""
        return {
            "seq": self.seq,
            "step_index": self.step_index,
            "kind": self.kind,
            "name": self.name,
            "request": self.request,
            "idempotency_key": self.idempotency_key,
            "is_write": self.is_write,
        }


@dataclass(frozen=True)
class Match:
    """Result of looking a call up on the tape."""

    status: MatchStatus
    entry: TapeEntry | None


class Tape:
    """The original's calls after the replay's starting step, grouped by step."""

    def __init__(
        self,
        entries: list[dict[str, Any]],
        from_step: int,
        effects: Iterable[dict[str, Any]] = (),
        checkpoint_steps: Iterable[int] = (),
    ) -> None:
        self.by_step: dict[int, list[TapeEntry]] = {}
        self.partial_steps: set[int] = set()
        effects = list(effects)
        for d in sorted(entries, key=lambda e: (int(e["seq"]), int(e["step_index"]))):
            entry = TapeEntry.from_dict(d)
            if entry.step_index > from_step:
                self.by_step.setdefault(entry.step_index, []).append(entry)
        self.checkpoint_steps = set(checkpoint_steps)
        for d in effects:
            step = int(d["step_index"])
            if step > from_step and step not in self.checkpoint_steps and step not in self.by_step:
                self.partial_steps.add(step)
        for d in effects:
            if int(d["step_index"]) in self.partial_steps:
                entry = TapeEntry.from_effect(d)
                self.by_step.setdefault(entry.step_index, []).append(entry)

    def is_partial(self, step: int) -> bool:
        """True for a step the original died in: only its writes are known."""
        return step in self.partial_steps

    @property
    def last_step(self) -> int | None:
        """The last step with recorded calls or writes, or None for an empty tape."""
        return max(self.by_step) if self.by_step else None

    def match(self, step: int, kind: str, name: str, request: Any, key: str | None = None) -> Match:
        """Find and consume the original call that this call replays.

        Model calls match on kind only (the recorded name is whatever model answered);
        writes with a key prefer the recorded write with the same key.
        """
        candidates = [
            e
            for e in self.by_step.get(step, [])
            if not e.used and e.kind == kind and (kind == "model" or e.name == name)
        ]
        if key is not None:
            keyed = [e for e in candidates if e.idempotency_key == key]
            candidates = keyed or candidates
        if not candidates:
            return Match("unexpected", None)
        entry = candidates[0]
        entry.used = True
        same = entry._canon == canonical(request)
        return Match("matched" if same else "different_args", entry)
