"""Large metadata stored as a stub in its row and its text split into shared parts.

A checkpoint's ``metadata`` is usually small. LangGraph's functional API is the exception:
a chat that saves its history (``entrypoint.final(save=...)``) keeps it in the
``__previous__`` channel, which the LangGraph loader puts in ``metadata.internal_channels``,
so every checkpoint's metadata holds the whole conversation again (a store about the size of
its SqliteSaver file, where a graph's message lists are stored once). Such a document is
stored the way a large state is:

- its whole text is cut by the states' rule (:func:`debugger.store.state_parts.split`) into
  a skeleton and parts, in ``split_states`` under the key ``-1 - ckpt_key`` (states have
  the non-negative keys), its parts shared with every state and document of the store;
- ``checkpoint_rows.metadata`` keeps a *stub*: the same document with ``internal_channels``
  replaced by ``{"__type__": "stepscope.split_metadata", "hash": <XXH3-128 of the text>}``.
  Every other key stays in place, so the SQL that reads metadata where it lies (a run's
  status, error and limits: :mod:`debugger.store.derive`) reads the stub unchanged.
  ``internal_channels`` is read by Python only (a LangGraph replay restores them).

Reads put the text back (:func:`debugger.store.reads.with_split_metadata`, and the
``checkpoints`` view); the hash checks a text put together from parts kept in memory. Only
documents of ``SPLIT_MIN_BYTES`` or more with ``internal_channels`` and a part worth sharing
are stored so; the others stay whole, as every document did before store version 6.
"""

from __future__ import annotations

from typing import Any

import duckdb
import orjson

from debugger.json_text import loads
from debugger.store import state_parts

MARK = "stepscope.split_metadata"
"""The ``__type__`` of the stub's ``internal_channels``."""

MOVED_KEY = "internal_channels"
"""The one key of a document the stub stands in for."""

CANDIDATES = (
    f"strlen(metadata) >= {state_parts.SPLIT_MIN_BYTES} AND contains(metadata, '\"{MOVED_KEY}\":')"
)
"""SQL on ``checkpoint_rows``: the documents worth a look (read back for the cut)."""


def key(ckpt_key: int) -> int:
    """The ``split_states`` key of a checkpoint's metadata."""
    return -1 - ckpt_key


def stub_hash(text: str | None) -> str | None:
    """The hash a stub names; None when ``text`` is not a stub (nearly always, found by a
    substring test without parsing)."""
    if text is None or MARK not in text:
        return None
    doc = loads(text)
    moved = doc.get(MOVED_KEY) if isinstance(doc, dict) else None
    if (
        isinstance(moved, dict)
        and len(moved) == 2
        and moved.get("__type__") == MARK
        and isinstance(moved.get("hash"), str)
    ):
        return str(moved["hash"])
    return None


def _stub(text: str) -> str | None:
    """The stub of a document, or None when it has no ``internal_channels`` at its top."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or MOVED_KEY not in doc:
        return None
    doc[MOVED_KEY] = {"__type__": MARK, "hash": state_parts.text_hash(text)}
    try:
        return orjson.dumps(doc).decode()
    except orjson.JSONEncodeError:  # nested past orjson's writing depth: stays whole
        return None


def split(
    con: duckdb.DuckDBPyConnection,
    first: int | None,
    last: int | None,
    where: str = "",
    params: list[Any] | None = None,
) -> int:
    """Store the large metadata of the rows of ``checkpoint_rows`` with ``ckpt_key`` from
    ``first`` to ``last`` (and ``where``, an extra ``AND ...``) as stubs and split texts, in
    the caller's transaction; returns how many.

    The rows are read back from the store in one statement. The bounds go into it as
    literals, which DuckDB checks against each row group's bounds: only the row groups of
    the range are read (a join or a subquery would scan the whole table, and test every
    document's length). Their ``split_states`` rows under the metadata's key must not exist
    yet (a re-import that rewrites a document deletes them first). Uses the temp tables of
    :mod:`debugger.store.state_write` (``_split``, ``_new_parts``), created anew.
    """
    if first is None or last is None:
        return 0
    # the writes' modules here, not at the top: the reads import this one, without Arrow
    import pyarrow as pa

    from debugger.store import arrays, state_write

    rows = con.execute(
        f"SELECT ckpt_key, metadata FROM checkpoint_rows "
        f"WHERE ckpt_key BETWEEN {int(first)} AND {int(last)} {where} AND {CANDIDATES}",
        params or [],
    ).fetchall()
    stubs: dict[int, str] = {}
    texts = []
    for ckpt_key, text in rows:
        stub = _stub(text)
        if stub is not None:
            stubs[key(int(ckpt_key))] = stub
            texts.append((key(int(ckpt_key)), text, len(text.encode("utf-8"))))
    if not texts:
        return 0
    state_write.start(con)
    if not state_write.cut_texts(con, texts) or not state_write.settle(con):
        return 0
    kept = [int(r[0]) for r in con.execute("SELECT ckpt_key FROM _split").fetchall()]
    keys = [key(k) for k in kept]
    values = [stubs[k] for k in kept]
    table = pa.Table.from_arrays(
        [
            arrays.or_pa_array(arrays.int64s(keys), keys, pa.int64()),
            arrays.or_pa_array(arrays.utf8(values), values, pa.large_string()),
        ],
        names=["ckpt_key", "stub"],
    )
    con.register("_stubs_in", table)
    try:
        con.execute(
            "UPDATE checkpoint_rows AS c SET metadata = s.stub FROM _stubs_in s "
            "WHERE c.ckpt_key = s.ckpt_key"
        )
    finally:
        con.unregister("_stubs_in")
    con.execute("INSERT INTO split_states SELECT * FROM _split ORDER BY ckpt_key")
    return len(kept)
