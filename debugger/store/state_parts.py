"""Large states stored as a skeleton plus shared parts, rebuilt byte for byte.

Consecutive checkpoints of an agent mostly repeat each other: a LangGraph state holds the
whole message list again at every step. So a state of ``SPLIT_MIN_BYTES`` or more is cut
into *parts*, its array elements of ``PART_MIN_CHARS`` or more (a message, a document, a
tool result), each stored once in ``state_parts`` under a 64-bit content hash, and a
*skeleton*: the text without the parts, with the character offsets where they go
(``cuts``) and their hashes in order (``refs``). The state is the skeleton with
``part(refs[i])`` put back at ``cuts[i]``; no marker is ever searched for in the text, so
nothing a state holds can be mistaken for a reference.

The cut is made on the parsed value and checked on the text: a state is split only when the
segments and parts, joined, give back exactly the text that was imported (the compact JSON
that orjson writes, which is what the LangGraph loader stores and most writers produce);
any other text (spaces, escapes written another way, NaN, numbers orjson would change) is
stored whole, as before. An array element of ``PART_MAX_CHARS`` or more that is itself an
array or object is not a part: its own elements are, so a list nested in a large element is
shared too (:func:`element_is_part`).

A reader that writes a state's text itself from its elements (the LangGraph flavour) may
make the same cut as it writes, by the same rule, and hand it to the store with the text
(``debugger.contract.GIVEN_STATE_SPLIT``): the store then takes it instead of parsing the
text again. Cut where the writer put the elements, it joins back to the text by
construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import xxhash

SPLIT_MIN_BYTES = 4096
"""States shorter than this (UTF-8 bytes) are stored whole: a part would save little and
every read of such a state (most native states are ~2 KB) would cost a second lookup."""

PART_MIN_CHARS = 256
"""Array elements at least this long (characters of their JSON) are stored once; shorter
ones stay in the skeleton."""

PART_MAX_CHARS = 64 * 1024
"""A container element this long or longer is opened up: its own elements become parts."""

_SIGN = 1 << 63


def text_hash(text: str | bytes) -> str:
    """XXH3-128 of a text's UTF-8, in hex: the store's state hash
    (:func:`debugger.store.state_hash.of_text` is this function), here without that module's
    Arrow imports, for the reads that check a text put together from parts kept in memory."""
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8") if isinstance(text, str) else text)


def element_is_part(chars: int, container: bool) -> bool | None:
    """How the cut treats an array element whose compact JSON is ``chars`` characters long.

    The one rule, for the store's cut and for a reader that cuts as it writes: False, it
    stays in the skeleton; True, it is a part; None, it is opened up (a container of
    ``PART_MAX_CHARS`` or more: its own elements are cut).
    """
    if chars < PART_MIN_CHARS:
        return False
    if chars >= PART_MAX_CHARS and container:
        return None
    return True


def part_hash(text: str | bytes) -> int:
    """The 64-bit content hash of a part's text (XXH3-64 of its UTF-8), as a signed BIGINT."""
    h = xxhash.xxh3_64_intdigest(text.encode("utf-8") if isinstance(text, str) else text)
    return h - (1 << 64) if h >= _SIGN else h


@dataclass(frozen=True)
class Split:
    """A state cut into its skeleton and parts (see the module docstring)."""

    skeleton: str
    """The text without the parts."""
    cuts: list[int]
    """Where each part goes: character offsets into ``skeleton``, ascending."""
    refs: list[int]
    """The parts' hashes, in the order they appear."""
    parts: dict[int, str]
    """Each distinct part's text by hash."""


def split(text: str, nbytes: int | None = None) -> Split | None:
    """Cut ``text`` (a state's JSON) into skeleton and parts; None to store it whole.

    None when the text is short, holds no element worth sharing, is not the compact JSON
    the cut reproduces exactly, or two of its parts share a hash (never seen, but a state
    must come back exactly).

    Args:
        text: The state's JSON text, as imported.
        nbytes: Its length in UTF-8 bytes, when the caller knows it.
    """
    if (nbytes if nbytes is not None else len(text.encode("utf-8"))) < SPLIT_MIN_BYTES:
        return None
    if "[" not in text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    tokens: list[str | int] = []
    parts: dict[int, str] = {}
    try:
        _emit(value, tokens, parts)
    except (_Collision, RecursionError, TypeError, orjson.JSONEncodeError):
        return None
    if not parts:
        return None
    cuts: list[int] = []
    refs: list[int] = []
    run: list[str] = []
    at = 0
    for t in tokens:
        if isinstance(t, int):
            cuts.append(at)
            refs.append(t)
        else:
            run.append(t)
            at += len(t)
    skeleton = "".join(run)
    if join(skeleton, cuts, refs, parts) != text:
        return None
    return Split(skeleton, cuts, refs, parts)


class _Collision(Exception):
    """Two different parts of one state have the same 64-bit hash."""


def _emit(value: Any, out: list[str | int], parts: dict[int, str]) -> None:
    """Append ``value``'s compact JSON to ``out``: text, or the hash of a part."""
    dumps = orjson.dumps
    if isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            out.append(("" if first else ",") + dumps(key).decode() + ":")
            first = False
            if isinstance(item, (dict, list)):
                _emit(item, out, parts)
            else:
                out.append(dumps(item).decode())
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            raw = dumps(item)
            text = raw.decode()
            fate = element_is_part(len(text), isinstance(item, (dict, list)))
            if fate is False:
                out.append(text)
            elif fate is None:
                _emit(item, out, parts)
            else:
                h = part_hash(raw)  # the UTF-8 orjson wrote: no second encoding
                if parts.setdefault(h, text) != text:
                    raise _Collision
                out.append(h)
        out.append("]")
    else:
        out.append(dumps(value).decode())


def join(skeleton: str, cuts: Sequence[int], refs: Sequence[int], parts: Mapping[int, str]) -> str:
    """The state's text from its skeleton and parts.

    Raises:
        KeyError: a referenced part is missing from ``parts``.
    """
    out = []
    prev = 0
    for cut, ref in zip(cuts, refs, strict=True):
        out.append(skeleton[prev:cut])
        out.append(parts[ref])
        prev = cut
    out.append(skeleton[prev:])
    return "".join(out)
