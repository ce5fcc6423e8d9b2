"""SQLiteSession and AdvancedSQLiteSession databases, read into one list of items per run.

``SQLiteSession`` keeps ``agent_sessions`` and ``agent_messages`` (an autoincrement id, the
session id, the item as JSON text, a timestamp to the second). ``AdvancedSQLiteSession``
adds ``message_structure`` (which messages each branch holds, in order, with the user turn
of each) and ``turn_usage`` (requests and tokens per branch and user turn). A run is a
session's branch: the session id for ``main`` (and for a plain session), and
``<session>@<branch>`` for any other branch. Messages are read in one ordered pass per
table, so memory is bounded by the largest session.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from loaders.base import SqlReader

SESSION_TABLES = {"agent_sessions", "agent_messages"}
"""The tables of ``SQLiteSession`` (their default names)."""
MAIN = "main"
ORPHANED = "orphaned"
"""The branch of the messages that no ``message_structure`` row lists."""
FETCH = 500


@dataclass
class Message:
    """One ``agent_messages`` row."""

    id: int
    created_at: str | None
    item: dict[str, Any] | None
    """The item, or None when ``message_data`` is not a JSON object (then quarantined)."""
    raw: str
    """``message_data`` as stored."""
    problem: str | None = None
    """Why the item could not be read."""


@dataclass
class SessionRun:
    """The items of one run (a session's branch) in order, with what the session adds."""

    session_id: str
    branch_id: str
    messages: list[Message]
    turns: list[int] | None = None
    """``message_structure.user_turn_number`` of each message, when the session records it."""
    usage: dict[int, dict[str, Any]] = field(default_factory=dict)
    """``turn_usage`` by user turn (AdvancedSQLiteSession), else empty."""
    first: bool = True
    """The session's first run: the one that reports its unreadable messages (a branch
    shares the messages before its branch point, which must be quarantined once)."""

    @property
    def run_id(self) -> str:
        """The session id, with ``@branch`` for a branch other than main."""
        return self.session_id if self.branch_id == MAIN else f"{self.session_id}@{self.branch_id}"


def is_session_db(reader: SqlReader) -> bool:
    """True when the reader holds SQLiteSession's tables with their columns."""
    tables = set(reader.tables())
    if not tables >= SESSION_TABLES:
        return False
    return {"id", "session_id", "message_data"} <= set(reader.columns("agent_messages"))


def _message(row: tuple[Any, ...]) -> Message:
    mid, _, data, created = row
    raw = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    try:
        item = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return Message(int(mid), created, None, raw, f"message_data is not JSON ({e})")
    if not isinstance(item, dict):
        return Message(int(mid), created, None, raw, "message_data is not a JSON object")
    return Message(int(mid), created, item, raw)


class SessionTables:
    """Ordered access to a session database through a SQL reader."""

    def __init__(self, reader: SqlReader) -> None:
        self.reader = reader
        tables = set(reader.tables())
        self.advanced = {"message_structure", "turn_usage"} <= tables

    def _rows(self, sql: str) -> Iterator[tuple[Any, ...]]:
        batches = self.reader.stream(sql, size=FETCH, what="the agent session tables")
        return itertools.chain.from_iterable(batches)

    def count(self) -> int | None:
        """Messages, for progress."""
        return self.reader.count("agent_messages")

    def runs(self) -> Iterator[SessionRun]:
        """Every session's runs, in session id order."""
        rows = self._rows(
            "SELECT id, session_id, message_data, created_at FROM agent_messages "
            "ORDER BY session_id, id"
        )
        messages = itertools.groupby(rows, key=lambda r: str(r[1]))
        structure = self._structure() if self.advanced else iter(())
        usage = self._usage() if self.advanced else iter(())
        pending_structure = next(structure, None)
        pending_usage = next(usage, None)
        for session_id, rows in messages:
            by_id = {m.id: m for m in map(_message, rows)}
            branches: dict[str, list[tuple[int, int | None]]] = {}
            while pending_structure is not None and pending_structure[0] <= session_id:
                if pending_structure[0] == session_id:
                    branches.setdefault(pending_structure[1], []).append(pending_structure[2:])
                pending_structure = next(structure, None)
            spent: dict[str, dict[int, dict[str, Any]]] = {}
            while pending_usage is not None and pending_usage[0] <= session_id:
                if pending_usage[0] == session_id:
                    spent.setdefault(pending_usage[1], {})[pending_usage[2]] = pending_usage[3]
                pending_usage = next(usage, None)
            yield from _session_runs(session_id, by_id, branches, spent)

    def _structure(self) -> Iterator[tuple[Any, ...]]:
        for s, b, mid, turn in self._rows(
            "SELECT session_id, branch_id, message_id, user_turn_number FROM message_structure "
            "ORDER BY session_id, branch_id, sequence_number"
        ):
            yield (str(s), str(b), int(mid), turn)

    def _usage(self) -> Iterator[tuple[Any, ...]]:
        for s, b, turn, req, inp, out, total in self._rows(
            "SELECT session_id, branch_id, user_turn_number, requests, input_tokens, "
            "output_tokens, total_tokens FROM turn_usage ORDER BY session_id, branch_id, "
            "user_turn_number"
        ):
            spent = {"requests": req, "input_tokens": inp, "output_tokens": out,
                     "total_tokens": total}  # fmt: skip
            yield (str(s), str(b), int(turn), spent)


def _session_runs(
    session_id: str,
    by_id: dict[int, Message],
    branches: dict[str, list[tuple[int, int | None]]],
    spent: dict[str, dict[int, dict[str, Any]]],
) -> Iterator[SessionRun]:
    if not branches:
        yield SessionRun(session_id, MAIN, list(by_id.values()))
        return
    main_turns = _turn_ids(branches.get(MAIN, []))
    listed: set[int] = set()
    for branch in sorted(branches, key=lambda b: (b != MAIN, b)):
        rows = [(by_id[mid], turn) for mid, turn in branches[branch] if mid in by_id]
        listed.update(m.id for m, _ in rows)
        usage = dict(spent.get(branch, {}))
        # a branch copies the main's turns before its branch point: their usage is the main's
        for turn, ids in _turn_ids(branches[branch]).items():
            if turn not in usage and main_turns.get(turn) == ids and turn in spent.get(MAIN, {}):
                usage[turn] = spent[MAIN][turn]
        yield SessionRun(session_id, branch, [m for m, _ in rows],
                         [int(t) if t is not None else 0 for _, t in rows], usage,
                         first=branch == min(branches, key=lambda b: (b != MAIN, b)))  # fmt: skip
    orphans = [m for mid, m in by_id.items() if mid not in listed]
    if orphans:
        # messages no branch lists (written by a plain SQLiteSession into the same file)
        yield SessionRun(session_id, ORPHANED if MAIN in branches else MAIN, orphans)


def _turn_ids(rows: list[tuple[int, int | None]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for mid, turn in rows:
        out.setdefault(int(turn or 0), []).append(mid)
    return out
