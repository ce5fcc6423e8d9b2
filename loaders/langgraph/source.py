"""Raw rows of a LangGraph checkpointer database, one checkpoint at a time with its writes.

Both savers are read with flat, ordered scans: checkpoints, their writes and the set of
checkpoints that have children, each ordered by ``(thread_id, checkpoint_ns, checkpoint_id)``
and merged in one pass. Memory stays bounded by a batch, whatever the size of a thread.
Postgres sorts with ``COLLATE "C"`` so that its order is Python's (byte) order.

SqliteSaver keeps the whole checkpoint, state included, in one blob. PostgresSaver keeps
primitive channel values inline in ``checkpoint->'channel_values'`` and every other value in
``checkpoint_blobs``, keyed by the channel version named in ``channel_versions``; the join is
done on the server, the way PostgresSaver itself does it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from loaders.arrow_rows import Undecodable
from loaders.base import Dialect, SqlReader
from loaders.filter import RunFilter, quote_text, run_sql

SQLITE_TABLES = {"checkpoints", "writes"}
POSTGRES_TABLES = {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"}
CHECKPOINT_COLUMNS = {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id"}
UNREAD_WRITES = ("__pregel_tasks",)
"""Write channels whose values are not read (only that the task wrote them)."""
FETCH = 500
"""Rows a fetch; a checkpoint row can hold a whole state (tens of KB)."""
FIRST_FETCHES = (20, 100)
"""The first fetches' rows: the walk starts on a few rows rather than waiting for the
server to send 500 whole states (~0.1 s sooner on Postgres)."""
_UUID_EPOCH = 0x01B21DD213814000
"""100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch."""


def uuid6_floor(when: datetime) -> str:
    """The smallest text of a version-6 UUID made at or after ``when``.

    LangGraph names checkpoints with version-6 UUIDs (``langgraph.checkpoint.base.id``):
    the first 60 bits are the time, written most significant first, so comparing the text
    compares the times, and ``checkpoint_id >= uuid6_floor(t)`` selects the checkpoints
    written since ``t`` with the key the savers index, without decoding a row.
    """
    micros = (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    ticks = micros * 10 + _UUID_EPOCH
    high = (ticks >> 12) & 0xFFFFFFFFFFFF
    return f"{high >> 16:08x}-{high & 0xFFFF:04x}-6{ticks & 0xFFF:03x}"


@dataclass
class RawWrite:
    """One pending write of a task, as stored."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    value: bytes | None
    unreadable: str | None = None
    """Why a field of the row cannot be read as stored (text that is not UTF-8), if so."""


@dataclass
class RawCheckpoint:
    """One checkpoint row with what the merge found for it."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str | None
    checkpoint: Any
    """SQLite: the serialized blob. Postgres: the JSON text of the checkpoint."""
    metadata: Any
    """JSON text (bytes or str)."""
    blobs: list[tuple[str, str | None, bytes | None]] = field(default_factory=list)
    """Postgres only: (channel, type, blob) of the non-inline channel values."""
    writes: list[RawWrite] = field(default_factory=list)
    has_child: bool = False
    unreadable: str | None = None
    """Why a field of the row cannot be read as stored (text that is not UTF-8), if so."""

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity and merge key."""
        return (self.thread_id, self.checkpoint_ns, self.checkpoint_id)


def saver_kind(reader: SqlReader) -> Dialect | None:
    """``sqlite`` or ``postgres`` when the reader holds that saver's tables, else None.

    Each saver writes to its own database, so the reader's dialect says which to look for.
    """
    tables = set(reader.tables())
    if "checkpoints" not in tables:
        return None
    if not set(reader.columns("checkpoints")) >= CHECKPOINT_COLUMNS:
        return None
    wanted = (
        POSTGRES_TABLES - {"checkpoint_migrations"}
        if reader.dialect == "postgres"
        else SQLITE_TABLES
    )
    return reader.dialect if tables >= wanted else None


class _Side:
    """An ordered stream merged against the checkpoints' order."""

    def __init__(self, rows: Iterator[Sequence[Any]], width: int) -> None:
        self.rows = rows
        self.width = width
        self.head: Sequence[Any] | None = next(self.rows, None)

    def take(self, key: tuple[str, ...]) -> list[Sequence[Any]]:
        """Rows whose first ``width`` columns equal ``key``; skips rows ordered before it."""
        out = []
        while self.head is not None:
            k = tuple(self.head[: self.width])
            try:
                later = k > key
            except TypeError:  # an id that is not text (see readable): as its shown text
                k = readable(k, _CHECKPOINT_FIELDS)[0]
                later = k > key
            if later:
                break
            if k == key:
                out.append(self.head)
            self.head = next(self.rows, None)
        return out


def _flat(batches: Iterator[list[Any]]) -> Iterator[Any]:
    return itertools.chain.from_iterable(batches)


class LangGraphTables:
    """Ordered access to the checkpoints of either saver through a reader."""

    def __init__(self, reader: SqlReader, rows: RunFilter | None = None) -> None:
        self.reader = reader
        self.saver: Dialect = reader.dialect
        self.rows = rows or RunFilter()

    def _where(self, alias: str = "") -> str:
        """The threads ``--run``/``--since`` select, as a condition (a thread is a run; its
        subgraphs' namespaces come with it)."""
        col = f"{alias}thread_id"
        parts = [run_sql(self.rows.runs, self.saver, col)] if self.rows.runs else []
        if self.rows.since is not None:
            bound = quote_text(uuid6_floor(self.rows.since), self.saver)
            c = ' COLLATE "C"' if self.saver == "postgres" else ""
            parts.append(
                f"{col} IN (SELECT thread_id FROM checkpoints WHERE checkpoint_id{c} >= {bound})"
            )
        return " AND ".join(parts) or "TRUE"

    def _stream(self, sql: str) -> Iterator[Any]:
        sizes = itertools.chain(FIRST_FETCHES, itertools.repeat(FETCH))
        return _flat(self.reader.stream(sql, size=sizes, what="the LangGraph tables"))

    def count(self) -> int | None:
        """Number of checkpoints, for progress (None when only some runs are read)."""
        return None if self.rows else self.reader.count("checkpoints")

    def _order(self, cols: str) -> str:
        if self.saver == "postgres":
            return ", ".join(f'{c} COLLATE "C"' for c in cols.split(", "))
        return cols

    def _checkpoint_sql(self) -> str:
        order = self._order("c.thread_id, c.checkpoint_ns, c.checkpoint_id")
        if self.saver == "sqlite":
            return (
                "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, "
                f"c.type, c.checkpoint, c.metadata FROM checkpoints c WHERE {self._where('c.')} "
                f"ORDER BY {order}"
            )
        # Sorted first (a plain subquery, fenced by OFFSET 0) so the sort does not carry the
        # blobs; each blob is then fetched by its full primary key (LIMIT 1 keeps the planner
        # from flattening the lookup into a hash of every blob of the thread, once per
        # checkpoint: quadratic, and what makes PostgresSaver.list slow on long threads).
        return f"""
            SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id,
                   c.type, c.checkpoint::text, c.metadata::text,
                   (SELECT array_agg(array[v.key::bytea, b.type::bytea, b.blob])
                      FROM jsonb_each_text(c.checkpoint -> 'channel_versions') v
                      CROSS JOIN LATERAL (
                          SELECT x.type, x.blob FROM checkpoint_blobs x
                           WHERE x.thread_id = c.thread_id AND x.checkpoint_ns = c.checkpoint_ns
                             AND x.channel = v.key AND x.version = v.value
                           LIMIT 1) b
                     WHERE b.type IS DISTINCT FROM 'empty')
            FROM (SELECT * FROM checkpoints c WHERE {self._where("c.")}
                  ORDER BY {order} OFFSET 0) c"""

    def _writes_sql(self) -> str:
        table = "writes" if self.saver == "sqlite" else "checkpoint_writes"
        value = "value" if self.saver == "sqlite" else "blob"
        cols = set(self.reader.columns(table))
        path = "task_path" if "task_path" in cols else "''"
        order = self._order("thread_id, checkpoint_ns, checkpoint_id, task_id")
        # A task's Sends (__pregel_tasks) are in the next checkpoint's channel values too,
        # where they are read; the write's copy (with the prebuilt agent, the whole state
        # once per tool call) would only be decoded to be thrown away. Not so in Postgres
        # for a checkpoint of format v < 4 (LangGraph before 0.5): PostgresSaver stored its
        # children's Sends nowhere else (``pending_sends``, which SqliteSaver kept in the
        # checkpoint, were these writes), so they are read there.
        unread = ", ".join(f"'{c}'" for c in UNREAD_WRITES)
        kept = "NULL"
        if self.saver == "postgres":
            kept = (
                f"CASE WHEN (SELECT (c.checkpoint->>'v')::int FROM checkpoints c "
                "WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns "
                f"AND c.checkpoint_id = w.checkpoint_id) < 4 THEN {value} END"
            )
        return (
            f"SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, {path}, idx, channel, "
            f"type, CASE WHEN channel IN ({unread}) THEN {kept} ELSE {value} END "
            f"FROM {table} w WHERE {self._where()} ORDER BY {order}, idx"
        )

    def _parents_sql(self) -> str:
        where = f"parent_checkpoint_id IS NOT NULL AND {self._where()}"
        if self.saver == "sqlite":
            return (
                "SELECT DISTINCT thread_id, checkpoint_ns, parent_checkpoint_id FROM checkpoints "
                f"WHERE {where} ORDER BY 1, 2, 3"
            )
        return (
            'SELECT DISTINCT thread_id COLLATE "C", checkpoint_ns COLLATE "C", '
            f'parent_checkpoint_id COLLATE "C" FROM checkpoints WHERE {where} ORDER BY 1, 2, 3'
        )

    def checkpoints(self) -> Iterator[RawCheckpoint]:
        """Every checkpoint in (thread, namespace, id) order, with writes and child flag."""
        writes = _Side(self._stream(self._writes_sql()), 3)
        parents = _Side(self._stream(self._parents_sql()), 3)
        for raw in self._stream(self._checkpoint_sql()):
            row, unreadable = readable(raw, _CHECKPOINT_FIELDS)
            ck = RawCheckpoint(
                thread_id=row[0], checkpoint_ns=row[1] or "", checkpoint_id=row[2],
                parent_id=row[3], type=row[4], checkpoint=row[5], metadata=row[6],
                unreadable=unreadable,
            )  # fmt: skip
            if self.saver == "postgres" and row[7]:
                ck.blobs = [_blob(b) for b in row[7]]
            key = (row[0], row[1], row[2])
            ck.writes = [_write(w) for w in writes.take(key)]
            ck.has_child = bool(parents.take(key))
            yield ck


_CHECKPOINT_FIELDS = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
                      "type")  # fmt: skip
_WRITE_FIELDS = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path", "idx",
                 "channel", "type")  # fmt: skip


def readable(row: Sequence[Any], names: Sequence[str]) -> tuple[tuple[Any, ...], str | None]:
    """``row`` with its fields named in ``names`` as text, and why one was not text.

    SQLite keeps any value in any column: text that is not UTF-8 (which the reader marks
    :class:`Undecodable`), or a number where LangGraph writes an id. Such a value is shown
    with escapes, so the row can still be ordered and merged, and its row is quarantined
    with the reason instead of ending the import.
    """
    out, why = list(row), None
    for i, (name, v) in enumerate(zip(names, row, strict=False)):
        if isinstance(v, Undecodable):
            out[i] = bytes(v).decode("utf-8", errors="backslashreplace")
            why = why or f"{name} is text that is not UTF-8: {out[i][:40]}"
        elif v is not None and not isinstance(v, str) and name != "idx":
            out[i] = str(v)
    return tuple(out), why


def _write(w: Sequence[Any]) -> RawWrite:
    row, why = readable(w, _WRITE_FIELDS)
    try:
        idx = int(row[5])
    except (TypeError, ValueError):
        idx, why = -1, why or f"idx is not an integer: {str(row[5])[:40]}"
    return RawWrite(row[3], row[4] or "", idx, row[6], row[7], _bytes(row[8]), why)


def _bytes(v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    # a number where LangGraph writes bytes (SQLite keeps any type): its text, which the
    # decoder then reports; bytes(n) would be n zero bytes
    return str(v).encode()


def _blob(parts: Sequence[Any]) -> tuple[str, str | None, bytes | None]:
    channel, type_, blob = (_bytes(p) for p in parts)
    return (
        channel.decode() if channel is not None else "",
        type_.decode() if type_ is not None else None,
        blob,
    )
