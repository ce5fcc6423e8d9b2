"""Parsing stored JSON exactly as written: orjson where it is exact, the standard library
where it is not."""

from __future__ import annotations

import json
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
