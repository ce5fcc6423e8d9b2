"""A read-only SQL console over the store, for ad-hoc questions.

Each query runs on its own DuckDB connection: an in-memory database that attaches the store
``READ_ONLY``, detaches its own in-memory catalog, then disables external access and locks the
configuration. So a query cannot write to the store, read or write local files, install
extensions or attach other databases, and cannot switch those settings back. Results are cut
to a row limit; a query that runs too long is interrupted. Errors are one line.

Memory is capped (``STEPSCOPE_SQL_MEMORY``) and nothing spills to disk: DuckDB would
otherwise write a query's overflow under ``<cwd>/.tmp/`` (its default for an in-memory
database), a directory the user may share, with no cap but the disk. A query past the cap
fails with a one-line error instead. ``tests/store/test_console_attacks.py`` holds the
hostile queries this is checked against.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from debugger.errors import StepscopeError, StoreError
from debugger.settings import SQL_MEMORY

DEFAULT_ROW_LIMIT = 1000
"""Rows returned at most (the console says when a result was cut)."""
DEFAULT_TIMEOUT_S = 20.0
"""A query running longer is interrupted."""

EXAMPLES: dict[str, str] = {
    "First step where tokens passed 80% of the limit": """\
SELECT run_id, min(step_index) AS first_step, min(tokens_spent) AS tokens,
       any_value(CAST(metadata->>'$.limits.tokens' AS BIGINT)) AS token_limit
FROM checkpoints
WHERE tokens_spent > 0.8 * CAST(metadata->>'$.limits.tokens' AS BIGINT)
GROUP BY run_id
ORDER BY run_id""",
    "Runs by status": """\
SELECT status, count(*) AS runs, sum(pending_count) AS pending_effects
FROM runs GROUP BY status ORDER BY runs DESC""",
    "Effects with an unknown or pending outcome": """\
SELECT run_id, step_index, tool, idempotency_key, status
FROM effects WHERE status IN ('pending', 'unknown')
ORDER BY run_id, step_index""",
    "Where the model version changed": """\
SELECT run_id, step_index, prev_version, model_version
FROM (SELECT run_id, step_index, model_version,
             lag(model_version) OVER (PARTITION BY run_id ORDER BY created_at, step_index)
               AS prev_version
      FROM checkpoints)
WHERE prev_version IS DISTINCT FROM model_version AND prev_version IS NOT NULL
ORDER BY run_id, step_index""",
    "One run's states, step by step (checkpoints_of)": """\
SELECT step_index, state_bytes, working_state->>'phase' AS phase, tokens_spent
FROM checkpoints_of('crash-at-step-7')
ORDER BY step_index""",
    "Largest working states": """\
SELECT run_id, step_index, state_bytes
FROM checkpoints ORDER BY state_bytes DESC LIMIT 20""",
    "Failed tool calls": """\
SELECT run_id, step_index, seq, kind, name, error
FROM tool_calls WHERE error IS NOT NULL ORDER BY run_id, seq""",
}
"""Example queries the SQL page offers (each runs on the sample histories)."""


class QueryError(StepscopeError):
    """A console query failed: bad SQL, a forbidden operation, or too slow."""

    title = "Query failed"


@dataclass(frozen=True)
class QueryResult:
    """Rows of a console query, cut to the row limit."""

    frame: pd.DataFrame
    """At most ``limit`` rows."""
    truncated: bool
    """True when the query returned more rows than the limit."""
    seconds: float
    """Time the query took."""


def connect_read_only(store_path: str) -> duckdb.DuckDBPyConnection:
    """A locked-down connection that sees only the store, read-only.

    Raises:
        StoreError: no store at the path, or it cannot be attached.
    """
    if not Path(store_path).exists():
        raise StoreError(f"no store at {store_path}", "import a source first")
    try:
        con = duckdb.connect(":memory:", config=_config())
    except duckdb.Error as e:
        raise StoreError(
            f"the SQL console's settings are refused: {_first_line(e)}",
            f"set {SQL_MEMORY.name} to a size such as 512MB or 2GB",
        ) from e
    try:
        escaped = store_path.replace("'", "''")
        con.execute(f"ATTACH '{escaped}' AS store (READ_ONLY)")
        con.execute("USE store")
        con.execute("DETACH memory")  # no writable scratch catalog either
        con.execute("SET enable_progress_bar = false")  # on stdout: into `sql --json` output
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except duckdb.Error as e:
        con.close()
        raise StoreError(
            f"cannot open the store {store_path} for queries: {_first_line(e)}",
            "check that it is a Stepscope store and not being written by an import",
        ) from e
    return con


def _config() -> dict[str, str | bool | int | float | list[str]]:
    """Settings fixed before the store is attached, then locked with the rest."""
    return {
        "memory_limit": SQL_MEMORY.value(),
        "temp_directory": "",  # no spilling: the cap is the cap, and no file is written
        "max_temp_directory_size": "0B",
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_persistent_secrets": False,
    }


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def run_query(
    store_path: str,
    sql: str,
    limit: int = DEFAULT_ROW_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> QueryResult:
    """Run one query read-only and return at most ``limit`` rows.

    Raises:
        QueryError: the query is empty, fails, is not allowed, or runs past ``timeout_s``.
        StoreError: the store cannot be opened.
    """
    if not sql.strip():
        raise QueryError("the query is empty", "write a SELECT, or pick an example")
    con = connect_read_only(store_path)
    timer = threading.Timer(timeout_s, con.interrupt)
    started = time.perf_counter()
    try:
        timer.start()
        cursor = con.execute(sql)
        if cursor.description is None:
            return QueryResult(pd.DataFrame(), False, time.perf_counter() - started)
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(limit + 1)
    except duckdb.InterruptException as e:
        raise QueryError(
            f"the query ran longer than {timeout_s:g} s and was stopped",
            "add a WHERE clause or a LIMIT; for one run's states and metadata, query "
            "checkpoints_of('<run>'), which rebuilds only that run's",
        ) from e
    except duckdb.Error as e:
        raise QueryError(_first_line(e), _hint(e)) from e
    finally:
        timer.cancel()
        con.close()
    frame = pd.DataFrame(rows[:limit], columns=columns)
    return QueryResult(frame, len(rows) > limit, time.perf_counter() - started)


def _hint(error: duckdb.Error) -> str:
    if isinstance(error, duckdb.PermissionException):
        return "the console reads only the store: no files, extensions or other databases"
    if isinstance(error, duckdb.OutOfMemoryException):
        return (
            f"the query needs more than {SQL_MEMORY.value()} ({SQL_MEMORY.name}): aggregate "
            "or filter first, or raise the setting"
        )
    text = str(error)
    if "read-only" in text or "read only" in text:
        return "the console is read-only: use `stepscope import` to change the store"
    return (
        "tables: runs, checkpoints, effects, tool_calls, quarantine, sources; one run's "
        "checkpoints: checkpoints_of('<run>')"
    )
