"""Parsing stored JSON exactly as written: orjson where it is exact, the standard library
where it is not."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from debugger.errors import DecodeError

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
    try:
        return json.loads(text)
    except RecursionError:
        # orjson stops at 1,024 levels, the standard library at Python's recursion limit
        raise too_deep() from None


def too_deep() -> DecodeError:
    """The error for a stored value nested too deeply to read, show or diff.

    The import quarantines such values (``debugger.store.json_depth``); a store an older
    version wrote may still hold one, and every surface then says so in one line.
    """
    return DecodeError(
        "a stored JSON value is nested too deeply to read",
        "re-import its source: values nested deeper than the import's limit are "
        "quarantined with their reason",
    )


PREVIEW_CHARS = 240
"""Longest preview of one value by default (a diff row's old and new, a call's request)."""
ELLIPSIS = "…"
"""What ends a cut preview."""


def dumps(value: Any, indent: bool = False, default: Callable[[Any], Any] = repr) -> str:
    """A value as JSON text, exactly as a person wrote it: NaN and Infinity stay themselves.

    orjson, the fast path, writes non-finite floats as ``null``, so a state that held NaN
    would show as null and a diff from NaN to 1.0 as "null -> 1.0". Any text with a
    ``null`` in it is therefore written again by the standard library, which writes
    ``NaN``, ``Infinity`` and ``-Infinity`` (as Python's ``json`` reads them back). What
    JSON cannot hold (an object, an integer past 64 bits) is written by its ``repr``.

    Args:
        value: any value.
        indent: two spaces a level, one item a line (else compact, no spaces).
        default: what a value JSON cannot hold is written as (dates and times are ISO
            8601 text either way, as orjson writes them).

    Raises:
        DecodeError: the value nests too deeply to write (:func:`too_deep`).
    """
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    fast: bytes | None
    try:
        fast = orjson.dumps(value, option=option, default=default)
    except TypeError:  # integers past 64 bits, circular references
        fast = None
    if fast is not None and b"null" not in fast:
        return fast.decode()
    try:
        return json.dumps(
            value,
            default=lambda v: v.isoformat() if hasattr(v, "isoformat") else default(v),
            ensure_ascii=False,
            indent=2 if indent else None,
            separators=None if indent else (",", ":"),
        )
    except RecursionError:
        if fast is None:
            raise too_deep() from None
        return fast.decode()
    except (TypeError, ValueError):
        return fast.decode() if fast is not None else repr(value)


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as one line of short JSON-like text, cut to ``limit`` characters.

    Strings are quoted (``"1"`` and ``1`` look different), keys keep the value's own order,
    NaN and Infinity show as written (:func:`dumps`), and a cut text ends in a single
    ``…``. What JSON cannot hold (an object, an integer past 64 bits) is shown by its
    ``repr``; newlines never appear, so a preview fits a table cell.

    Args:
        value: any value.
        limit: the longest text returned (at least 1).

    Returns:
        The text, ``limit`` characters or fewer.
    """
    text = dumps(value).replace("\r", "\\r").replace("\n", "\\n")
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
