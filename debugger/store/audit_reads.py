"""Reads for the audit and the state-schema migrations: a run's fingerprint, schema versions.

Functions take the store's connection; :class:`debugger.store.Store` exposes them as methods,
so the audit and ``debugger.migrations`` never run SQL of their own.
"""

from __future__ import annotations

from typing import Any

import duckdb

__all__ = ["audit_fingerprint", "run_ids_of_version", "schema_version_counts"]


def audit_fingerprint(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[Any, ...] | None:
    """What identifies a run's rows now, for caching its audit; None when no such run.

    One query, since pages ask on every view: ``(checkpoint_count, last_at,
    head_checkpoint_id, status, effect count, tool-call count, newest schema version in the
    store)``.
    """
    row = con.execute(
        """SELECT r.checkpoint_count, r.last_at, r.head_checkpoint_id, r.status,
                  (SELECT count(*) FROM effects WHERE run_id = $1),
                  (SELECT count(*) FROM tool_calls WHERE run_id = $1),
                  (SELECT max(v) FROM (SELECT unnest(CAST(schema_versions AS INTEGER[])) AS v
                                       FROM runs))
           FROM runs r WHERE r.run_id = $1""",
        [run_id],
    ).fetchone()
    return tuple(row) if row else None


def schema_version_counts(con: duckdb.DuckDBPyConnection) -> dict[int | None, int]:
    """Schema versions of the stored checkpoints with their counts (None: no version)."""
    rows = con.execute(
        "SELECT schema_version, count(*) FROM checkpoints GROUP BY 1 ORDER BY 1 NULLS LAST"
    ).fetchall()
    return {(None if v is None else int(v)): int(n) for v, n in rows}


def run_ids_of_version(con: duckdb.DuckDBPyConnection, version: int | None) -> list[str]:
    """The runs holding a checkpoint at this schema version, in run-id order."""
    rows = con.execute(
        "SELECT DISTINCT run_id FROM checkpoints WHERE schema_version = ? ORDER BY run_id",
        [version],
    ).fetchall()
    return [str(r) for (r,) in rows]
