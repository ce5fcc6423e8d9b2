"""Reads every part of Stepscope relies on; pages and notebooks never write SQL of their own."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from debugger.errors import NotFound
from debugger.json_text import loads
from debugger.model import ATTENTION_STATUSES, Budgets, Checkpoint, Effect, Run, ToolCall
from debugger.store import derive
from debugger.store.schema import RUN_SHIFT, STEP_OFFSET

if TYPE_CHECKING:
    import pandas as pd  # DataFrames come from DuckDB's .df(), which imports pandas itself

_CKPT_COLS = (
    "c.run_id, c.checkpoint_id, c.parent_id, c.step_index, c.schema_version, c.created_at, "
    "coalesce(CAST(c.working_state AS VARCHAR), l.working_state) AS ws, c.state_hash, "
    "c.state_bytes, c.tokens_spent, c.steps_spent, c.wall_clock_ms, "
    "CAST(c.pending_effects AS VARCHAR), c.model_version, CAST(c.tool_versions AS VARCHAR), "
    "CAST(c.metadata AS VARCHAR)"
)
_CKPT_FROM = "checkpoint_rows c LEFT JOIN large_states l ON l.ckpt_key = c.ckpt_key"

# One checkpoint is read without the join: joining large_states costs ~2.5 ms on every
# point lookup (measured on 1M checkpoints: 4.3 ms against 1.7 ms), while only states of
# LARGE_STATE_BYTES or more live there. Those are then fetched by their indexed ckpt_key.
_ONE_NAMES = (
    "run_id", "checkpoint_id", "parent_id", "step_index", "schema_version", "created_at",
    "working_state", "state_hash", "state_bytes", "tokens_spent", "steps_spent",
    "wall_clock_ms", "pending_effects", "model_version", "tool_versions", "metadata",
    "ckpt_key",
)  # fmt: skip
"""The columns of :func:`_one`'s rows: those of ``_CKPT_COLS`` (the documents are VARCHAR in
``checkpoint_rows``), then ``ckpt_key``."""


def _newest(row: tuple[Any, ...]) -> tuple[bool, datetime, int]:
    # newest written first: created_at (unknown times last), then insertion order
    created = row[5]
    return (created is not None, created or datetime.min, int(row[-1]))


def _one(con: duckdb.DuckDBPyConnection, where: str, params: list[Any]) -> tuple[Any, ...] | None:
    """The newest checkpoint row matching ``where``, its large state fetched if it has one.

    No ORDER BY ... LIMIT in SQL: DuckDB plans that as a Top-N over a sequential scan and
    skips the lookup_key index (6.4 ms against 1.9 ms on 1M checkpoints). A step has one
    checkpoint, or a few where the run forked, so the newest is picked here.

    ``SELECT *``, with the columns picked here by name: a point read of all 19 columns took
    1.42 ms where naming 17 of them took 1.61 ms, and 1.94 ms with the casts the view's
    column list carries (no-ops on ``checkpoint_rows``' VARCHAR columns; 1M store, warm).
    """
    result = con.execute(f"SELECT * FROM checkpoint_rows c WHERE {where}", params)
    found = result.fetchall()
    if not found:
        return None
    names = [d[0] for d in result.description or ()]
    at = [names.index(n) for n in _ONE_NAMES]
    rows = [tuple(r[i] for i in at) for r in found]
    row = max(rows, key=_newest)
    if row[6] is not None:
        return row[:-1]
    large = con.execute(
        "SELECT working_state FROM large_states WHERE ckpt_key = ?", [row[-1]]
    ).fetchone()
    return (*row[:6], large[0] if large else None, *row[7:-1])


def checkpoint_from_row(row: tuple[Any, ...], parse_state: bool = True) -> Checkpoint:
    """Build a :class:`Checkpoint` from a row selected with the checkpoint columns.

    With ``parse_state`` false the working state is left unparsed (``working_state`` is
    None) for a caller that diffs the state's text, ``row[6]`` (see ``debugger.diff.text``).
    """
    return Checkpoint(
        run_id=row[0],
        checkpoint_id=row[1],
        parent_id=row[2],
        step_index=int(row[3]),
        schema_version=row[4],
        created_at=row[5],
        working_state=loads(row[6]) if parse_state else None,
        state_hash=row[7],
        state_bytes=int(row[8]),
        budgets=Budgets(int(row[9]), int(row[10]), int(row[11])),
        pending_effects=loads(row[12], []),
        model_version=row[13],
        tool_versions=loads(row[14], {}),
        metadata=loads(row[15], {}),
    )


RUN_NUMBERS_AT_ONCE = 250_000
"""Stores with at most this many runs have all their run numbers read on the first lookup."""


def _load_run_numbers(con: duckdb.DuckDBPyConnection, known: dict[str, int]) -> None:
    """Read every run's number in one statement (10,000 runs: ~5 ms), when there are few.

    A lookup of a run not yet seen otherwise costs a statement of its own (~1.2 ms on a
    store of 1M checkpoints, a quarter of a point lookup); the numbers never change.
    """
    row = con.execute("SELECT count(*) FROM run_keys").fetchone()
    if row and 0 < int(row[0]) <= RUN_NUMBERS_AT_ONCE:
        known.update((str(r), int(n)) for r, n in con.execute(
            "SELECT run_id, run_num FROM run_keys").fetchall())  # fmt: skip


def run_num(
    con: duckdb.DuckDBPyConnection, run_id: str, known: dict[str, int] | None = None
) -> int:
    """Return the store's number for a run, or raise :class:`NotFound`.

    Args:
        con: the store's connection.
        run_id: the run.
        known: numbers already looked up on this connection. A run's number never changes
            once given, so a caller may keep them; that saves a statement (~1 ms) per lookup.
    """
    if known is not None and not known:
        _load_run_numbers(con, known)
    if known is not None and run_id in known:
        return known[run_id]
    row = con.execute("SELECT run_num FROM run_keys WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise NotFound(f"no run {run_id!r} in the store", "list the runs with `stepscope runs`")
    if known is not None:
        known[run_id] = int(row[0])
    return int(row[0])


def checkpoint(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    step: int | None = None,
    checkpoint_id: str | None = None,
    known: dict[str, int] | None = None,
) -> Checkpoint:
    """One checkpoint: by id, by step (the newest written at that step), or the run's head.

    A lookup by step goes through ``lookup_key``, a single indexed BIGINT, so it is a point
    read even in a store of millions of checkpoints. ``known`` is passed to :func:`run_num`.
    """
    return checkpoint_from_row(checkpoint_row(con, run_id, step, checkpoint_id, known))


def checkpoint_row(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    step: int | None = None,
    checkpoint_id: str | None = None,
    known: dict[str, int] | None = None,
) -> tuple[Any, ...]:
    """The row of :func:`checkpoint`, its JSON documents still text (see
    :func:`checkpoint_from_row`)."""
    num = run_num(con, run_id, known)
    if checkpoint_id is not None:
        row = _one(con, "c.run_id = ? AND c.checkpoint_id = ?", [run_id, checkpoint_id])
        what = f"checkpoint {checkpoint_id!r}"
    elif step is not None:
        row = None
        if -STEP_OFFSET <= step < STEP_OFFSET:  # no step outside 32 bits is ever stored
            key = num * RUN_SHIFT + step + STEP_OFFSET
            row = _one(con, "c.lookup_key = ?", [key])
        what = f"step {step}"
    else:
        head = con.execute(
            "SELECT head_checkpoint_id FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        if head is None:
            raise NotFound(f"run {run_id!r} has no checkpoints", "import its source again")
        return checkpoint_row(con, run_id, checkpoint_id=head[0], known=known)
    if row is None:
        raise NotFound(
            f"run {run_id!r} has no {what}",
            f"see its steps with `stepscope show {run_id}`",
        )
    return row


def checkpoints(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Checkpoint]:
    """Every checkpoint of a run in write order (created_at, then insertion)."""
    run_num(con, run_id)
    rows = con.execute(
        f"SELECT {_CKPT_COLS} FROM {_CKPT_FROM} WHERE c.run_id = ? "
        "ORDER BY c.created_at NULLS FIRST, c.ckpt_key",
        [run_id],
    ).fetchall()
    return [checkpoint_from_row(r) for r in rows]


def run(con: duckdb.DuckDBPyConnection, run_id: str) -> Run:
    """The derived record of one run."""
    sql = f"SELECT {_RUN_COLS} FROM {runs_now()} WHERE run_id = ?"
    row = con.execute(sql, [run_id]).fetchone()
    if row is None:
        raise NotFound(f"no run {run_id!r} in the store", "list the runs with `stepscope runs`")
    return _run_from_row(row)


def runs_now() -> str:
    """``runs`` as of now: the stale rule (docs/status.md, rule 6) applied at read time.

    ``runs`` is derived when a source is imported; a run that was ``in_progress`` then and
    has written nothing for longer than the stale limit since is ``crashed`` now, even if
    nothing was imported in between.
    """
    limit = int(derive.STALE_AFTER_SECONDS)
    stale = f"status = 'in_progress' AND last_at < now()::TIMESTAMP - INTERVAL {limit} SECOND"
    return (
        f"(SELECT * REPLACE (CASE WHEN {stale} THEN 'crashed' ELSE status END AS status, "
        f"CASE WHEN {stale} THEN 'no terminal status and no checkpoint for over {limit} s' "
        f"ELSE status_reason END AS status_reason) FROM runs) AS runs"
    )


_RUN_COLS = (
    "run_id, agent, status, status_reason, first_step, last_step, checkpoint_count, "
    "first_at, last_at, tokens_spent, steps_spent, wall_clock_ms, CAST(limits AS VARCHAR), "
    "CAST(model_versions AS VARCHAR), CAST(schema_versions AS VARCHAR), last_error, "
    "pending_count, replay_of, replay_from_step"
)


def _run_from_row(row: tuple[Any, ...]) -> Run:
    return Run(
        run_id=row[0],
        agent=row[1],
        status=row[2],
        status_reason=row[3],
        first_step=int(row[4]),
        last_step=int(row[5]),
        checkpoint_count=int(row[6]),
        first_at=row[7],
        last_at=row[8],
        budgets=Budgets(int(row[9]), int(row[10]), int(row[11])),
        limits=loads(row[12], {}),
        model_versions=loads(row[13], []),
        schema_versions=loads(row[14], []),
        last_error=row[15],
        pending_count=int(row[16]),
        replay_of=row[17],
        replay_from_step=row[18],
    )


def run_records(
    con: duckdb.DuckDBPyConnection,
    status: str | None = None,
    agent: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
) -> list[Run]:
    """Runs as records, filtered like :func:`runs_frame`."""
    where, params = _run_filters(status, agent, text, since)
    rows = con.execute(
        f"SELECT {_RUN_COLS} FROM {runs_now()} {where} ORDER BY last_at DESC NULLS LAST, run_id",
        params,
    ).fetchall()
    return [_run_from_row(r) for r in rows]


RUN_ORDERS = {
    "attention": f"(status IN {ATTENTION_STATUSES!r}) DESC, ",
    "newest": "",
    "tokens": "tokens_spent DESC, ",
    "wall_clock": "wall_clock_ms DESC, ",
    "run_id": "run_id, ",
}
"""Orders of :func:`run_page`: what comes first, then the newest (ties by run id)."""


@dataclass(frozen=True)
class RunPage:
    """One page of the runs matching some filters, with the counts over all of them."""

    runs: list[Run]
    """The page's runs, in the asked order."""
    total: int
    """Runs matching the filters."""
    by_status: dict[str, int]
    """Runs matching the filters, per status."""


def run_page(
    con: duckdb.DuckDBPyConnection,
    status: str | None = None,
    agent: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    order: str = "attention",
    offset: int = 0,
    limit: int = 50,
) -> RunPage:
    """A page of runs ordered and cut in SQL: only the page's runs become records.

    Building a :class:`Run` costs ~20 us (its JSON columns are parsed); a 10,000-run store
    took 0.2 s to list whole, against a few ms for a page.

    Raises:
        ValueError: ``order`` is not a key of :data:`RUN_ORDERS`.
    """
    if order not in RUN_ORDERS:
        raise ValueError(f"unknown order {order!r}: use one of {', '.join(RUN_ORDERS)}")
    where, params = _run_filters(status, agent, text, since)
    if until is not None:
        where += (" AND " if where else "WHERE ") + "(last_at IS NULL OR last_at <= ?)"
        params = [*params, until]
    source = f"(SELECT * FROM {runs_now()} {where})"
    by_status = {
        str(s): int(n)
        for s, n in con.execute(
            f"SELECT status, count(*) FROM {source} GROUP BY status", params
        ).fetchall()
    }
    rows = con.execute(
        f"SELECT {_RUN_COLS} FROM {source} "
        f"ORDER BY {RUN_ORDERS[order]}last_at DESC NULLS LAST, run_id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    return RunPage([_run_from_row(r) for r in rows], sum(by_status.values()), by_status)


def run_agents(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every agent name, sorted."""
    rows = con.execute(
        f"SELECT DISTINCT agent FROM {runs_now()} WHERE agent IS NOT NULL ORDER BY agent"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _run_filters(
    status: str | None, agent: str | None, text: str | None, since: datetime | None
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if status:
        statuses = [s.strip() for s in status.split(",") if s.strip()]
        clauses.append(f"status IN ({', '.join('?' for _ in statuses)})")
        params += statuses
    if agent:
        clauses.append("agent = ?")
        params.append(agent)
    if text:
        clauses.append(
            "(run_id ILIKE ? OR coalesce(last_error, '') ILIKE ? OR coalesce(agent, '') ILIKE ? "
            "OR status_reason ILIKE ?)"
        )
        params += [f"%{text}%"] * 4
    if since:
        clauses.append("last_at >= ?")
        params.append(since)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def runs_frame(
    con: duckdb.DuckDBPyConnection,
    status: str | None = None,
    agent: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
) -> pd.DataFrame:
    """Runs with their aggregates as a DataFrame, newest first.

    Args:
        status: one status or several separated by commas.
        agent: exact agent name.
        text: case-insensitive substring of run id, agent, last error or status reason.
        since: only runs whose head was written at or after this time.
    """
    where, params = _run_filters(status, agent, text, since)
    return con.execute(
        f"""
        SELECT run_id, agent, status, status_reason, first_step, last_step,
               checkpoint_count, first_at, last_at, tokens_spent, steps_spent,
               wall_clock_ms, CAST(limits AS VARCHAR) AS limits,
               CAST(model_versions AS VARCHAR) AS model_versions, last_error,
               pending_count, replay_of, replay_from_step
        FROM {runs_now()} {where} ORDER BY last_at DESC NULLS LAST, run_id""",
        params,
    ).df()


def timeline(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """One row per checkpoint of a run: step, time, budgets, effects, calls, state size."""
    run_num(con, run_id)
    return con.execute(
        """
        WITH e AS (SELECT step_index, count(*) AS effects,
                          count(*) FILTER (WHERE status IN ('pending', 'unknown')) AS open_effects
                   FROM effects WHERE run_id = ? GROUP BY step_index),
             t AS (SELECT step_index, count(*) AS calls FROM tool_calls
                   WHERE run_id = ? GROUP BY step_index)
        SELECT c.step_index, c.checkpoint_id, c.parent_id, c.created_at, c.schema_version,
               c.tokens_spent, c.steps_spent, c.wall_clock_ms, c.state_bytes, c.state_hash,
               coalesce(json_array_length(c.pending_effects), 0) AS pending_effects,
               coalesce(e.effects, 0) AS effects, coalesce(e.open_effects, 0) AS open_effects,
               coalesce(t.calls, 0) AS calls, c.model_version
        FROM checkpoint_rows c LEFT JOIN e USING (step_index) LEFT JOIN t USING (step_index)
        WHERE c.run_id = ?
        ORDER BY c.created_at NULLS FIRST, c.ckpt_key""",
        [run_id, run_id, run_id],
    ).df()


def effects(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Effect]:
    """A run's effects in the order they were recorded."""
    rows = con.execute(
        "SELECT run_id, effect_id, step_index, idempotency_key, tool, CAST(args AS VARCHAR), "
        "status, CAST(result AS VARCHAR), created_at FROM effects WHERE run_id = ? "
        "ORDER BY step_index, created_at NULLS FIRST, effect_id",
        [run_id],
    ).fetchall()
    return [
        Effect(r[0], r[1], int(r[2]), r[3], r[4], loads(r[5]), r[6], loads(r[7]), r[8])
        for r in rows
    ]


def tool_calls(
    con: duckdb.DuckDBPyConnection, run_id: str, step: int | None = None
) -> list[ToolCall]:
    """A run's tape (tool and model calls), optionally of one step, in call order."""
    sql = (
        "SELECT run_id, step_index, seq, kind, name, CAST(request AS VARCHAR), "
        "CAST(response AS VARCHAR), error, idempotency_key, is_write FROM tool_calls "
        "WHERE run_id = ?"
    )
    params: list[Any] = [run_id]
    if step is not None:
        sql += " AND step_index = ?"
        params.append(step)
    rows = con.execute(sql + " ORDER BY seq, step_index", params).fetchall()
    return [
        ToolCall(r[0], int(r[1]), int(r[2]), r[3], r[4], loads(r[5]), loads(r[6]), r[7], r[8],
                 bool(r[9]))
        for r in rows
    ]  # fmt: skip


def quarantine(con: duckdb.DuckDBPyConnection, source_id: int | None = None) -> pd.DataFrame:
    """Quarantined rows with their reasons, newest first."""
    where = "WHERE source_id = ?" if source_id is not None else ""
    params = [source_id] if source_id is not None else []
    return con.execute(
        f"SELECT source_id, source, source_table, source_key, reason, raw, quarantined_at "
        f"FROM quarantine {where} ORDER BY quarantined_at DESC, source_table, source_key",
        params,
    ).df()


def sources(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every import so far, with its counts."""
    return con.execute(
        "SELECT source_id, kind, flavour, location, imported_at, rows_read, imported, "
        "already_present, quarantined FROM sources ORDER BY source_id"
    ).df()
