"""The CrewAI flavour: flow state persisted by ``@persist`` with ``SQLiteFlowPersistence``.

``flow_states`` (one row after each completed method: flow id, method name, ISO timestamp,
state JSON) and ``pending_feedback`` (a flow paused for a person: the feedback context and
the state, deleted on resume) are read in one ordered pass each, a flow at a time, and
mapped by :mod:`loaders.crewai.map`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import orjson

from debugger.errors import FlavourError
from loaders.base import Flavour, SqlReader, TablePlan
from loaders.crewai.map import Pending, StateRow, map_flow
from loaders.crewai.shape import is_flow_db
from loaders.runtime_rows import RunRows, plans_of

FETCH = 500


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


class _Tables:
    def __init__(self, reader: SqlReader) -> None:
        self.reader = reader

    def _rows(self, sql: str) -> Iterator[tuple[Any, ...]]:
        batches = self.reader.stream(sql, size=FETCH, what="the CrewAI flow tables")
        return itertools.chain.from_iterable(batches)

    def _pending(self) -> Iterator[tuple[str, Pending]]:
        if "pending_feedback" not in self.reader.tables():
            return
        for flow, context, state, created in self._rows(
            "SELECT flow_uuid, context_json, state_json, created_at FROM pending_feedback "
            "ORDER BY flow_uuid"
        ):
            try:
                ctx = orjson.loads(_text(context))
            except orjson.JSONDecodeError:
                ctx = {"unreadable_context": _text(context)[:2000]}
            ctx = ctx if isinstance(ctx, dict) else {"context": ctx}
            method = str(ctx.get("method_name") or "")
            yield str(flow), Pending(ctx, StateRow(None, method, _text(created), _text(state)))

    def flows(self) -> Iterator[RunRows]:
        states = itertools.groupby(
            self._rows(
                "SELECT flow_uuid, id, method_name, timestamp, state_json FROM flow_states "
                "ORDER BY flow_uuid, id"
            ),
            key=lambda r: str(r[0]),
        )
        pending = self._pending()
        waiting = next(pending, None)
        for flow, group in states:
            while waiting is not None and waiting[0] < flow:  # paused before any state row
                yield map_flow(waiting[0], [], waiting[1])
                waiting = next(pending, None)
            mine = None
            if waiting is not None and waiting[0] == flow:
                mine, waiting = waiting[1], next(pending, None)
            rows = [StateRow(int(r[1]), str(r[2]), _text(r[3]), _text(r[4])) for r in group]
            yield map_flow(flow, rows, mine)
        while waiting is not None:
            yield map_flow(waiting[0], [], waiting[1])
            waiting = next(pending, None)


class CrewAIFlavour(Flavour[SqlReader]):
    """CrewAI flows persisted with ``@persist`` (``SQLiteFlowPersistence``)."""

    name = "crewai"

    @classmethod
    def detect(cls, reader: SqlReader) -> bool:
        return is_flow_db(reader)

    def check(self, reader: SqlReader) -> None:
        if not is_flow_db(reader):
            raise FlavourError(
                "not a CrewAI flow database (needs flow_states with flow_uuid, method_name, "
                "state_json)",
                "use --flavor auto",
            )

    def plans(self, reader: SqlReader) -> Iterator[TablePlan]:
        self.check(reader)
        yield from plans_of(_Tables(reader).flows(), self.batch_rows, reader.count("flow_states"))
