"""Parsing stored JSON exactly as written: orjson where it is exact, the standard library
where it is not."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

_DIGITS = str.maketrans("0123456789-", "ddddddddddd")
_BYTE_DIGITS = bytes.maketrans(b"0123456789-", b"ddddddddddd")
_LONG_NUMBER = "d" * 20
"""20 digits (or a minus and 19): a number orjson may turn into a float, as it keeps integers
exact only within 64 bits. Found with translate, which is several times faster than a
regular expression over a digit-heavy 1 MB state."""
_LONG_NUMBER_BYTES = _LONG_NUMBER.encode()


def loads(text: str | bytes | memoryview | None, default: Any = None) -> Any:
    """Parse stored JSON exactly as written (``default`` for None).

    orjson is fast but turns integers beyond 64 bits into floats and refuses NaN, Infinity
    and 1e400 (which DuckDB accepts); such documents are parsed by the standard library.
    Any buffer is accepted (the text of one member, as ``msgspec.Raw`` gives it).
    """
    if text is None:
        return default
    if isinstance(text, str):
        exact = _LONG_NUMBER not in text.translate(_DIGITS)
    else:
        text = bytes(text)
        exact = _LONG_NUMBER_BYTES not in text.translate(_BYTE_DIGITS)
    if exact:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


PREVIEW_CHARS = 240
"""Longest preview of one value by default (a diff row's old and new, a call's request)."""
ELLIPSIS = "…"
"""What ends a cut preview."""


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as one line of short JSON-like text, cut to ``limit`` characters.

    Strings are quoted (``"1"`` and ``1`` look different), keys keep the value's own order,
    and a cut text ends in a single ``…``. What JSON cannot hold (an object, an integer past
    64 bits) is shown by its ``repr``; newlines never appear, so a preview fits a table cell.

    Args:
        value: any value.
        limit: the longest text returned (at least 1).

    Returns:
        The text, ``limit`` characters or fewer.
    """
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=repr).decode()
    except TypeError:  # integers past 64 bits, circular references
        try:
            text = json.dumps(value, default=repr, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            text = repr(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while parsed JSON is built and read.

    Parsing and diffing a large state, or auditing a long run, allocates many dicts and
    lists, and every burst of allocations triggers collections that traverse them all, which
    can take longer than the work itself. Parsed JSON has no reference cycles, so nothing is
    lost by collecting afterwards. Only re-enabled if it was enabled (threads may nest).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
