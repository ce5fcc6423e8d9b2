"""What the audit asks of a working state: is it there and structured, and is it prose.

Two rules (``missing-working-state``, ``prose-state``) look at every checkpoint's state, and
only at its shape. Building every state of a 50,000-step run as Python objects to answer
that costs more than the rest of the audit together, so a stored state is answered from its
text: the top level is split into its members' texts (msgspec ``Raw``) and only a member that
could be long free text is parsed. Hand-built records (notebooks, tests) carry parsed states
and are answered from those; both ways give the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from debugger.json_text import loads

__all__ = ["LONG_TEXT", "StateFacts", "facts_of", "facts_of_text", "prose_state"]

LONG_TEXT = 200
"""A string value this long with spaces reads as prose, not as a field."""
PROSE_SPACES = 20
"""Spaces a long string needs to read as prose."""

_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_QUOTE = ord('"')


@dataclass(frozen=True, slots=True)
class StateFacts:
    """The shape of one working state, as the audit's rules need it."""

    structured: bool
    """An object, an array or a string was checkpointed (not nothing, not a bare number)."""
    prose: bool
    """The state is free text rather than fields (see :func:`prose_state`)."""


def _is_prose(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= LONG_TEXT and value.count(" ") >= PROSE_SPACES


def _mostly_prose(values: list[Any]) -> bool:
    return bool(values) and sum(_is_prose(v) for v in values) * 2 > len(values)


def prose_state(state: Any) -> bool:
    """Whether a working state is prose rather than structure.

    A top-level string is prose; so is a dict or list most of whose top-level values are long
    free text (a transcript pasted into one field, say), because a resume cannot read fields
    out of it.
    """
    if isinstance(state, str):
        return True
    values = list(state.values()) if isinstance(state, dict) else state
    return isinstance(values, list) and _mostly_prose(values)


def facts_of(state: Any) -> StateFacts:
    """The facts of a parsed working state (None: no state was checkpointed)."""
    return StateFacts(
        isinstance(state, dict | list | str), state is not None and prose_state(state)
    )


def facts_of_text(text: str | None) -> StateFacts:
    """The facts of a stored working state's JSON text, the same as :func:`facts_of` gives.

    Only members whose text starts a string at least ``LONG_TEXT`` characters long are
    parsed (escapes only lengthen a string's text, so no prose member is skipped).
    """
    if text is None:
        return StateFacts(False, False)
    first = text.lstrip()[:1]
    try:
        if first == "{":
            members = list(_OBJECT.decode(text).values())
        elif first == "[":
            members = _ARRAY.decode(text)
        else:
            return _parsed_facts(text)
    except msgspec.DecodeError:  # what msgspec refuses (NaN, Infinity): the parsed way
        return _parsed_facts(text)
    except RecursionError:  # nested deeper than any parser here goes: its members are unread
        return StateFacts(True, False)
    values = [_member(m) for m in members]
    return StateFacts(True, _mostly_prose(values))


def _parsed_facts(text: str) -> StateFacts:
    try:
        return facts_of(loads(text))
    except RecursionError:
        return StateFacts(True, False)


def _member(raw: msgspec.Raw) -> Any:
    view = memoryview(raw)
    if len(view) < LONG_TEXT or view[0] != _QUOTE:
        return None
    return loads(view)
