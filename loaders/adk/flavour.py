"""The ADK flavour: Google ADK session databases (SQLite or Postgres), read directly.

Detected from the tables (``sessions`` and ``events`` with ``event_data``). Each session is
mapped by :class:`loaders.adk.map.SessionMap`; the batches handed to the store already hold
the canonical columns. An event whose ``event_data`` is not a JSON object is quarantined
with its reason, and so is an event whose session row is gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from debugger.json_text import preview
from loaders.adk.map import SessionMap, run_id_of
from loaders.adk.source import AdkTables, RawSession, check_schema, is_adk
from loaders.base import Flavour, SqlReader, TablePlan, aligned_rows
from loaders.langgraph.flavour import select_all, stable_key, to_batch
from loaders.langgraph.map import idempotency_args
from loaders.prefetch import prefetched

BATCH_ROWS = 1024
"""Events per batch at most (a power of two, so batches fill the store's row groups)."""


class _Walk:
    """One pass over the sessions: checkpoint batches now, the tape gathered for after."""

    def __init__(self, tables: AdkTables, batch_rows: int) -> None:
        self.tables = tables
        self.batch_rows = aligned_rows(min(batch_rows, BATCH_ROWS))
        self.names = idempotency_args()
        self.tape: list[dict[str, Any]] = []

    def checkpoint_batches(self) -> Iterator[pa.RecordBatch]:
        rows: list[dict[str, Any]] = []
        for s in self.tables.sessions():
            rows += self._session(s)
            while len(rows) >= self.batch_rows:
                yield to_batch("checkpoints", rows[: self.batch_rows])
                rows = rows[self.batch_rows :]
        if rows:
            yield to_batch("checkpoints", rows)

    def _session(self, s: RawSession) -> list[dict[str, Any]]:
        if s.orphan:
            run = run_id_of(s)
            reason = f"event of session {s.session_id}, which has no row in table sessions"
            return [
                {
                    "_key": stable_key(run, str(e.event_id)),
                    "run_id": run,
                    "checkpoint_id": str(e.event_id),
                    "_reason": reason,
                    "_raw_text": preview(e.event_data, 2000),
                }
                for e in s.events
            ]
        m = SessionMap(
            s,
            self.tables.app_states.get((s.app_name,)),
            self.tables.user_states.get((s.app_name, s.user_id)),
            self.tables.db_schema_version,
            self.names,
        )
        rows = m.rows() if s.events else [m.empty_row()]
        self.tape += m.tape_rows()
        return rows

    def tape_batches(self) -> Iterator[pa.RecordBatch]:
        for i in range(0, len(self.tape), self.batch_rows):
            yield to_batch("tool_calls", self.tape[i : i + self.batch_rows])


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
        walk = _Walk(tables, self.batch_rows)
        batches = prefetched(walk.checkpoint_batches())
        yield TablePlan("checkpoints", batches, select_all("checkpoints"), total=tables.count())
        if walk.tape:
            yield TablePlan("tool_calls", walk.tape_batches(), select_all("tool_calls"))
