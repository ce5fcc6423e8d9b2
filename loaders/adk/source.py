"""Raw rows of a Google ADK session database, one session at a time with its events.

ADK's ``DatabaseSessionService`` (SQLAlchemy: SQLite, Postgres, MySQL) and the newer
``SqliteSessionService`` write the same tables: ``sessions`` (app, user, id, the latest
state), ``events`` (one row an event: ids, timestamp, ``event_data`` JSON), ``app_states``
and ``user_states`` (the ``app:`` and ``user:`` keys, shared between sessions) and, for the
SQLAlchemy service, ``adk_internal_metadata`` (``schema_version``). The older "v0" schema
(ADK 1.x) kept an event in columns of its own, its actions pickled: each row is put together
into the event ADK's v1 would store (:func:`v0_event`), its pickle read as data by
:mod:`loaders.pickled`, never unpickled.

Sessions and events are read with two flat scans ordered the same way (app, user, session;
events by timestamp, then insertion order, as ADK reloads them) and merged, so memory holds
one session's events at a time. Postgres sorts with ``COLLATE "C"`` so its order is Python's.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from debugger.errors import FlavourError
from loaders.base import SqlReader
from loaders.pickled import UnreadablePickle, read_pickle

TABLES = {"sessions", "events"}
FETCH = 1000


@dataclass
class RawEvent:
    """One ``events`` row as stored."""

    event_id: str
    timestamp: Any
    event_data: Any
    """The event's JSON text (bytes or str), or whatever the column held; for a v0 row, the
    event put together from its columns."""
    unreadable: str | None = None
    """Why a v0 row cannot be put together (its pickle), if so."""


V0_COLUMNS = ("invocation_id", "author", "branch", "content", "long_running_tool_ids_json",
              "grounding_metadata", "custom_metadata", "usage_metadata", "citation_metadata",
              "partial", "turn_complete", "error_code", "error_message", "interrupted")  # fmt: skip
"""The v0 ``events`` columns an event is made of besides ``actions`` (ADK added some over
1.x: those a table lacks are left out)."""
V0_JSON = {"content", "grounding_metadata", "custom_metadata", "usage_metadata",
           "citation_metadata"}  # fmt: skip
"""v0 columns holding JSON text."""


def v0_event(event_id: str, timestamp: Any, actions: Any, cols: dict[str, Any]) -> RawEvent:
    """A v0 row as the event ADK's v1 stores as ``event_data`` (``Event.model_dump``).

    ``timestamp`` is the naive ``DATETIME`` ADK wrote with ``datetime.fromtimestamp``: the
    writer's local time, which ADK reads back as the reader's local time (so does this). The
    ``actions`` pickle (an ``EventActions``) becomes its fields.
    """
    event: dict[str, Any] = {"id": event_id}
    for name, value in cols.items():
        if value is None:
            continue
        if name in V0_JSON and isinstance(value, str | bytes):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                return RawEvent(event_id, timestamp, None, f"{name} is not JSON")
        if name == "long_running_tool_ids_json":
            try:
                name, value = "long_running_tool_ids", orjson.loads(value)
            except orjson.JSONDecodeError:
                return RawEvent(event_id, timestamp, None, f"{name} is not JSON")
        if name in ("partial", "turn_complete", "interrupted"):
            value = value if isinstance(value, bool) else str(value).lower() in ("1", "true")
        event[name] = value
    when = _local_epoch(timestamp)
    if when is not None:
        event["timestamp"] = when
    if actions is not None:
        try:
            read = read_pickle(actions if isinstance(actions, bytes | bytearray | memoryview)
                               else str(actions).encode("latin-1"))  # fmt: skip
        except (UnreadablePickle, UnicodeEncodeError) as e:
            return RawEvent(event_id, timestamp, None, f"actions: {e}")
        if not isinstance(read, dict) or not str(read.get("__type__", "")).endswith(
            ".EventActions"
        ):
            kind = read.get("__type__") if isinstance(read, dict) else type(read).__name__
            return RawEvent(
                event_id, timestamp, None, f"actions is not ADK's EventActions pickle ({kind})"
            )
        event["actions"] = {k: v for k, v in read.items() if k != "__type__"}
    return RawEvent(event_id, timestamp, event)


def _local_epoch(timestamp: Any) -> float | None:
    if isinstance(timestamp, datetime):
        when = timestamp
    else:
        try:
            when = datetime.fromisoformat(str(timestamp))
        except ValueError:
            return None
    return when.timestamp()


@dataclass
class RawSession:
    """One ``sessions`` row and its events in order."""

    app_name: str
    user_id: str
    session_id: str
    state: Any
    create_time: Any
    update_time: Any
    events: list[RawEvent] = field(default_factory=list)
    orphan: bool = False
    """Events whose session row is gone (ADK deletes them together): quarantined."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.app_name, self.user_id, self.session_id)


def is_adk(reader: SqlReader) -> bool:
    """True for ADK's tables: ``sessions`` and ``events`` with ``event_data`` (v1) or
    ``actions`` (v0)."""
    if not TABLES.issubset(reader.tables()):
        return False
    cols = set(reader.columns("events"))
    return {"session_id", "invocation_id"}.issubset(cols) and bool({"event_data", "actions"} & cols)


def check_schema(reader: SqlReader) -> None:
    """Refuse anything but ADK's session tables, with a hint.

    Raises:
        FlavourError: not ADK's session tables.
    """
    if is_adk(reader):
        return
    raise FlavourError(
        "not an ADK session database (needs tables sessions and events with event_data, or "
        "ADK 1.x's with actions)",
        "use --flavor auto",
    )


def _text(col: str, dialect: str) -> str:
    return f"CAST({col} AS TEXT)" if dialect == "postgres" else col


def _order(dialect: str, *cols: str) -> str:
    collate = ' COLLATE "C"' if dialect == "postgres" else ""
    return ", ".join(f"{c}{collate}" for c in cols)


class AdkTables:
    """The session database's rows, merged session by session."""

    def __init__(self, reader: SqlReader) -> None:
        self.reader = reader
        self.dialect = reader.dialect
        tables = set(reader.tables())
        cols = set(reader.columns("events"))
        self.v0 = "event_data" not in cols
        """ADK 1.x's tables: an event in columns, its actions pickled."""
        self.v0_columns = [c for c in V0_COLUMNS if c in cols]
        self.db_schema_version = self._metadata() if "adk_internal_metadata" in tables else None
        if self.v0 and self.db_schema_version is None:
            self.db_schema_version = "0"
        self.app_states = (
            self._states("app_states", ("app_name",)) if "app_states" in tables else {}
        )
        self.user_states = (
            self._states("user_states", ("app_name", "user_id")) if "user_states" in tables else {}
        )

    def _metadata(self) -> str | None:
        sql = "SELECT key, value FROM adk_internal_metadata"
        for rows in self.reader.stream(sql, what="table adk_internal_metadata"):
            for key, value in rows:
                if key == "schema_version":
                    return str(value)
        return None

    def _states(self, table: str, keys: tuple[str, ...]) -> dict[tuple[str, ...], Any]:
        sql = f"SELECT {', '.join(keys)}, {_text('state', self.dialect)} FROM {table}"
        out: dict[tuple[str, ...], Any] = {}
        for rows in self.reader.stream(sql, what=f"table {table}"):
            for r in rows:
                out[tuple(r[:-1])] = r[-1]
        return out

    def count(self) -> int | None:
        """Events plus sessions without events would be exact; events alone are close."""
        return self.reader.count("events")

    def sessions(self) -> Iterator[RawSession]:
        """Every session with its events, in (app, user, session) order."""
        d = self.dialect
        order = _order(d, "app_name", "user_id", "id")
        session_sql = (
            f"SELECT app_name, user_id, id, {_text('state', d)}, "
            f"{_text('create_time', d)}, {_text('update_time', d)} FROM sessions ORDER BY {order}"
        )
        tie = "rowid" if d == "sqlite" else _order(d, "id")
        data = (
            ", ".join(["actions", *(_text(c, d) if c in V0_JSON else c for c in self.v0_columns)])
            if self.v0 else _text("event_data", d)
        )  # fmt: skip
        event_sql = (
            f"SELECT app_name, user_id, session_id, id, {_text('timestamp', d)}, {data} "
            f"FROM events "
            f"ORDER BY {_order(d, 'app_name', 'user_id', 'session_id')}, timestamp, {tie}"
        )
        events = self._rows(event_sql, "table events")
        ev = next(events, None)
        for row in self._rows(session_sql, "table sessions"):
            s = RawSession(*row)
            while ev is not None and tuple(ev[:3]) < s.key:
                ev = yield from self._orphans(ev, events)
            while ev is not None and tuple(ev[:3]) == s.key:
                s.events.append(self._event(ev))
                ev = next(events, None)
            yield s
        while ev is not None:
            ev = yield from self._orphans(ev, events)

    def _orphans(
        self, ev: tuple[Any, ...], events: Iterator[tuple[Any, ...]]
    ) -> Generator[RawSession, None, tuple[Any, ...] | None]:
        """The events of one session that has no ``sessions`` row; returns the next event."""
        lost = RawSession(ev[0], ev[1], ev[2], None, None, None, orphan=True)
        nxt: tuple[Any, ...] | None = ev
        while nxt is not None and tuple(nxt[:3]) == lost.key:
            lost.events.append(self._event(nxt))
            nxt = next(events, None)
        yield lost
        return nxt

    def _event(self, row: tuple[Any, ...]) -> RawEvent:
        if not self.v0:
            return RawEvent(row[3], row[4], row[5])
        return v0_event(
            str(row[3]), row[4], row[5], dict(zip(self.v0_columns, row[6:], strict=True))
        )

    def _rows(self, sql: str, what: str) -> Iterator[tuple[Any, ...]]:
        for rows in self.reader.stream(sql, size=FETCH, what=what):
            yield from rows
