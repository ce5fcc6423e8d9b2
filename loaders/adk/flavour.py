"""The ADK flavour: Google ADK session databases (SQLite or Postgres), read directly.

Detected from the tables (``sessions`` and ``events`` with ``event_data``). Each session is
mapped by :class:`loaders.adk.map.SessionMap` into canonical rows, and
:func:`loaders.runtime_rows.plans_of` turns the sessions into the importer's plans. An event
whose ``event_data`` is not a JSON object is quarantined with its reason, and so is an event
whose session row is gone.
"""

from __future__ import annotations

from collections.abc import Iterator

from debugger.json_text import preview
from loaders.adk.map import SessionMap, run_id_of
from loaders.adk.source import AdkTables, RawSession, check_schema, is_adk
from loaders.base import Flavour, SqlReader, TablePlan
from loaders.langgraph.map import idempotency_args
from loaders.runtime_rows import RunRows, plans_of, quarantined, stable_key


def _orphans(s: RawSession) -> RunRows:
    run = run_id_of(s)
    reason = f"event of session {s.session_id}, which has no row in table sessions"
    return RunRows([
        quarantined(stable_key(run, str(e.event_id)), run, reason, preview(e.event_data, 2000))
        for e in s.events
    ])  # fmt: skip


def session_rows(tables: AdkTables) -> Iterator[RunRows]:
    """Every session's checkpoint and tape rows, one session at a time."""
    names = idempotency_args()
    for s in tables.sessions():
        if s.orphan:
            yield _orphans(s)
            continue
        m = SessionMap(s, tables.app_states.get((s.app_name,)),
                       tables.user_states.get((s.app_name, s.user_id)),
                       tables.db_schema_version, names)  # fmt: skip
        yield RunRows(m.rows() if s.events else [m.empty_row()], m.tape_rows())


class AdkFlavour(Flavour[SqlReader]):
    """Sessions written by Google ADK's DatabaseSessionService or SqliteSessionService."""

    name = "adk"

    @classmethod
    def detect(cls, reader: SqlReader) -> bool:
        return is_adk(reader)

    def check(self, reader: SqlReader) -> None:
        check_schema(reader)

    def plans(self, reader: SqlReader) -> Iterator[TablePlan]:
        check_schema(reader)
        tables = AdkTables(reader)
        yield from plans_of(session_rows(tables), self.batch_rows, tables.count())
