"""How deep a JSON document nests, so that the import refuses what nothing could show.

A state nested 100,000 levels deep is valid JSON and DuckDB stores it, but Python's own
parser, DeepDiff and every view recurse once a level and fail on it. The import quarantines
a document nested deeper than :data:`MAX_DEPTH` (docs/store.md); this module lends SQL the
check, ``json_too_deep(VARCHAR) -> BOOLEAN``, vectorised over a batch (Arrow).

A document short of ``2 * MAX_DEPTH`` bytes cannot nest deeper than the limit. The others
are reduced, with bytes methods that run in C, to their brackets outside strings (escape
pairs dropped, every byte but quotes and brackets deleted, the strings between quotes cut
out): a few hundred bytes for a 100 KB state of messages, where a byte-wise numpy pass
over the whole text cost more than a state's decoding. Deeper than the limit needs more
openers than the limit; only then is the running depth summed (numpy, over the brackets).
"""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pyarrow as pa

from debugger.store import arrays

MAX_DEPTH = 200
"""Deepest nesting of a JSON value the import accepts (``{"a": {"b": 1}}`` is 2 deep).

Every surface shows a value this deep (Python's parser, DeepDiff, the views and the app
recurse about twice a level, within Python's default limit of 1,000 frames), and no state
a person reads nests anywhere near it."""

SQL_NAME = "json_too_deep"
"""The SQL function's name while it is registered."""

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
"""A JSON escape pair (``\\"``, ``\\\\``, ``\\n``...), matched left to right as JSON reads them."""
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
"""Every byte but a quote or a bracket (deleted by ``bytes.translate``)."""


def depth(text: str | bytes) -> int:
    """The deepest nesting of brackets in one JSON text, outside its strings."""
    data = text.encode() if isinstance(text, str) else text
    return _depth(_structure(data))


def _structure(data: bytes) -> bytes:
    """The brackets of a JSON text that are outside its strings, in order.

    Escape pairs go first, so that every quote left delimits a string. Two adjacent quotes
    are then dropped (a string without brackets, or the end of one and the start of the
    next: either way the quotes before every other byte stay as many, odd or even); each
    even piece between the quotes left is outside a string.
    """
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    structure = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in structure:
        structure = b"".join(structure.split(b'"')[::2])
    return structure


SHORT_BRACKETS = 128
"""Brackets counted in a Python loop rather than with numpy, whose fixed cost (~15 us) is
most of measuring a small text (a message, a state's skeleton: the LangGraph walk measures
one of each per checkpoint)."""


def _depth(brackets: bytes) -> int:
    """The deepest running depth of a sequence of brackets."""
    if not brackets:
        return 0
    # "[" and "{" have bit 1 set, "]" and "}" do not: +1 for an opener, -1 for a closer
    if len(brackets) < SHORT_BRACKETS:
        depth = deepest = 0
        for c in brackets:
            if c & 2:
                depth += 1
                deepest = max(deepest, depth)
            else:
                depth -= 1
        return deepest
    b = np.frombuffer(brackets, dtype=np.uint8).astype(np.int32)
    return int(np.cumsum((b & 2) - 1).max())


def of_array(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """For each JSON text, whether it nests deeper than :data:`MAX_DEPTH` (NULL: false)."""
    texts = arrays.single_chunk(texts)
    n = len(texts)
    out = np.zeros(n, dtype=bool)
    bounds, data = arrays.string_bounds(texts)
    if data is None or n == 0:
        return arrays.booleans(out)
    raw = memoryview(data)  # each long text is copied out once, the rest never
    for i in np.flatnonzero(np.diff(bounds) > 2 * MAX_DEPTH).tolist():
        brackets = _structure(bytes(raw[int(bounds[i]) : int(bounds[i + 1])]))
        if brackets.count(b"[") + brackets.count(b"{") <= MAX_DEPTH:
            continue
        out[i] = _depth(brackets) > MAX_DEPTH
    return arrays.booleans(out)


def too_deep_sql(text: str) -> str:
    """SQL for whether the JSON text ``text`` nests deeper than :data:`MAX_DEPTH`.

    :func:`of_array`'s own first test (more than twice the limit in bytes, and more
    openers than the limit), done in DuckDB: on its threads, without the GIL, which a
    Python function holds for every vector of every document column of every batch. Only
    the rare text that passes it reaches ``json_too_deep`` (``CASE`` calls it on those rows
    alone).
    """
    openers = f"strlen({text}) - strlen(replace(replace({text}, '[', ''), '{{', ''))"
    return (
        f"(CASE WHEN strlen({text}) > {2 * MAX_DEPTH} AND {openers} > {MAX_DEPTH} "
        f"THEN {SQL_NAME}({text}) ELSE false END)"
    )


def register_once(con: duckdb.DuckDBPyConnection) -> bool:
    """Make ``json_too_deep(VARCHAR) -> BOOLEAN`` callable in SQL on ``con``'s database,
    unless it is already; True if it was registered here (the caller removes it)."""
    try:
        con.create_function(  # type: ignore[call-overload]
            SQL_NAME, of_array, ["VARCHAR"], "BOOLEAN", type="arrow"
        )
    except duckdb.CatalogException:
        return False
    return True
