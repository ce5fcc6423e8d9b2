"""Raw rows of a Google ADK session database, one session at a time with its events.

ADK's ``DatabaseSessionService`` (SQLAlchemy: SQLite, Postgres, MySQL) and the newer
``SqliteSessionService`` write the same tables: ``sessions`` (app, user, id, the latest
state), ``events`` (one row an event: ids, timestamp, ``event_data`` JSON), ``app_states``
and ``user_states`` (the ``app:`` and ``user:`` keys, shared between sessions) and, for the
SQLAlchemy service, ``adk_internal_metadata`` (``schema_version``). The older "v0" schema
pickled an event's actions into their own columns; it has no ``event_data`` and is refused
with a hint, never unpickled.

Sessions and events are read with two flat scans ordered the same way (app, user, session;
events by timestamp, then insertion order, as ADK reloads them) and merged, so memory holds
one session's events at a time. Postgres sorts with ``COLLATE "C"`` so its order is Python's.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from debugger.errors import FlavourError
from loaders.base import SqlReader

TABLES = {"sessions", "events"}
FETCH = 1000


@dataclass
class RawEvent:
    """One ``events`` row as stored."""

    event_id: str
    timestamp: Any
    event_data: Any
    """The event's JSON text (bytes or str), or whatever the column held."""


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
    """True for ADK's current tables: ``sessions`` and ``events`` with ``event_data``."""
    if not TABLES.issubset(reader.tables()):
        return False
    return {"event_data", "session_id", "invocation_id"}.issubset(reader.columns("events"))


def looks_like_adk(reader: SqlReader) -> bool:
    """ADK's tables, current or the pickled v0 ones (refused by :func:`check_schema` with a
    hint, rather than called an unknown shape)."""
    if not TABLES.issubset(reader.tables()):
        return False
    cols = set(reader.columns("events"))
    return {"session_id", "invocation_id"}.issubset(cols) and bool({"event_data", "actions"} & cols)


def check_schema(reader: SqlReader) -> None:
    """Refuse ADK's pickled v0 schema (and anything else) with a hint.

    Raises:
        FlavourError: not ADK's current session tables.
    """
    if is_adk(reader):
        return
    if TABLES.issubset(reader.tables()) and "actions" in reader.columns("events"):
        raise FlavourError(
            "this ADK session database has the old v0 schema (pickled event actions), which "
            "Stepscope does not unpickle",
            "migrate it with ADK's own migration (`adk migrate session`) and import the copy",
        )
    raise FlavourError(
        "not an ADK session database (needs tables sessions and events with event_data)",
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
        self.db_schema_version = self._metadata() if "adk_internal_metadata" in tables else None
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
        event_sql = (
            f"SELECT app_name, user_id, session_id, id, {_text('timestamp', d)}, "
            f"{_text('event_data', d)} FROM events "
            f"ORDER BY {_order(d, 'app_name', 'user_id', 'session_id')}, timestamp, {tie}"
        )
        events = self._rows(event_sql, "table events")
        ev = next(events, None)
        for row in self._rows(session_sql, "table sessions"):
            s = RawSession(*row)
            while ev is not None and tuple(ev[:3]) < s.key:
                ev = yield from self._orphans(ev, events)
            while ev is not None and tuple(ev[:3]) == s.key:
                s.events.append(RawEvent(ev[3], ev[4], ev[5]))
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
            lost.events.append(RawEvent(nxt[3], nxt[4], nxt[5]))
            nxt = next(events, None)
        yield lost
        return nxt

    def _rows(self, sql: str, what: str) -> Iterator[tuple[Any, ...]]:
        for rows in self.reader.stream(sql, size=FETCH, what=what):
            yield from rows
