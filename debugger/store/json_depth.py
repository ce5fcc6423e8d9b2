"""How deep a JSON document nests, so that the import refuses what nothing could show.

A state nested 100,000 levels deep is valid JSON and DuckDB stores it, but Python's own
parser, DeepDiff and every view recurse once a level and fail on it. The import quarantines
a document nested deeper than :data:`MAX_DEPTH` (docs/store.md); this module lends SQL the
check, ``json_too_deep(VARCHAR) -> BOOLEAN``, vectorised over a batch (Arrow).

Most documents are ruled out by counting their ``[`` and ``{`` (in C, no parse): nesting
deeper than the limit needs more openers than the limit. Only the rest are measured, by
the running depth of their brackets outside strings (numpy over the document's bytes).
"""

from __future__ import annotations

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

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPENERS = np.array([ord("["), ord("{")], dtype=np.uint8)
_BRACKETS = np.array([ord("["), ord("{"), ord("]"), ord("}")], dtype=np.uint8)


def depth(text: str | bytes) -> int:
    """The deepest nesting of brackets in one JSON text, outside its strings."""
    data = text.encode() if isinstance(text, str) else text
    return _depth(np.frombuffer(data, dtype=np.uint8))


def _depth(b: np.ndarray) -> int:
    quotes = np.flatnonzero(b == _QUOTE)
    escaped = [q for q in quotes[b[quotes - 1] == _BACKSLASH] if q > 0 and _odd_run(b, q - 1)]
    if escaped:
        quotes = np.setdiff1d(quotes, np.array(escaped, dtype=quotes.dtype))
    at = np.flatnonzero(np.isin(b, _BRACKETS))
    at = at[np.searchsorted(quotes, at) % 2 == 0]  # an even number of quotes before: outside
    if not at.size:
        return 0
    steps = np.where(np.isin(b[at], _OPENERS), 1, -1)
    return int(np.cumsum(steps).max())


def _odd_run(b: np.ndarray, end: int) -> bool:
    """True when an odd run of backslashes ends at ``end`` (the quote after it is escaped)."""
    start = end
    while start > 0 and b[start - 1] == _BACKSLASH:
        start -= 1
    return (end - start + 1) % 2 == 1


def of_array(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """For each JSON text, whether it nests deeper than :data:`MAX_DEPTH` (NULL: false)."""
    texts = arrays.single_chunk(texts)
    n = len(texts)
    out = np.zeros(n, dtype=bool)
    bounds, data = arrays.string_bounds(texts)
    if data is None or n == 0:
        return arrays.booleans(out)
    raw = data.to_pybytes()
    for i in np.flatnonzero(np.diff(bounds) > 2 * MAX_DEPTH).tolist():
        a, z = int(bounds[i]), int(bounds[i + 1])
        if raw.count(b"[", a, z) + raw.count(b"{", a, z) <= MAX_DEPTH:
            continue
        out[i] = _depth(np.frombuffer(raw, dtype=np.uint8, count=z - a, offset=a)) > MAX_DEPTH
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
