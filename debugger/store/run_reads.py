"""Reads of runs: one run, the filtered and ordered run lists, the agents.

A run's record is derived at import (:mod:`debugger.store.derive`); :func:`runs_now`
applies the stale rule at read time on top of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from debugger.errors import NotFound
from debugger.json_text import loads
from debugger.model import ATTENTION_STATUSES, Budgets, Run
from debugger.store import derive

if TYPE_CHECKING:
    import pandas as pd  # DataFrames come from DuckDB's .df(), which imports pandas itself


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
        # what the run said of itself then (what was in flight) is still worth reading
        f"|| CASE WHEN status_reason NOT IN ('no terminal status yet', '') "
        f"THEN '; it was ' || status_reason ELSE '' END "
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
    replays: bool | None = None,
) -> RunPage:
    """A page of runs ordered and cut in SQL: only the page's runs become records.

    Building a :class:`Run` parses its JSON columns, so a large store listed whole is slow
    where a page is not. ``replays`` narrows the list to replays (True) or to originals
    (False); None lists both.

    Raises:
        ValueError: ``order`` is not a key of :data:`RUN_ORDERS`.
    """
    if order not in RUN_ORDERS:
        raise ValueError(f"unknown order {order!r}: use one of {', '.join(RUN_ORDERS)}")
    where, params = _run_filters(status, agent, text, since)
    if replays is not None:  # True: replays only; False: originals only
        where += (" AND " if where else "WHERE ") + (
            "replay_of IS NOT NULL" if replays else "replay_of IS NULL"
        )
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
