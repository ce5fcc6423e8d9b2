"""Reads for the audit and the state-schema migrations: a run's fingerprint, schema versions.

Functions take the store's connection; :class:`debugger.store.Store` exposes them as methods,
so the audit and ``debugger.migrations`` never run SQL of their own.
"""

from __future__ import annotations

from typing import Any

import duckdb

from debugger.contract import pending_entries
from debugger.json_text import loads
from debugger.model import Budgets, Checkpoint
from debugger.store.reads import _CKPT_COLS, _CKPT_FROM, run_num, with_split_states

__all__ = [
    "audit_checkpoints",
    "audit_fingerprint",
    "run_ids_of_version",
    "schema_version_counts",
]


def audit_checkpoints(
    con: duckdb.DuckDBPyConnection, run_id: str
) -> tuple[list[Checkpoint], list[str | None]]:
    """A run's checkpoints in write order, built for the audit of a long run.

    The audit reads a state only for its shape, which it tells from the text, so states are
    left unparsed (``working_state`` None) and their texts returned beside the checkpoints.
    The small documents (pending effects, tool versions, metadata) mostly repeat from step
    to step: each distinct text is parsed once and the parsed value shared between the
    checkpoints that hold it, so a caller must not change them.

    Raises:
        NotFound: no such run.
    """
    run_num(con, run_id)
    rows = con.execute(
        f"SELECT {_CKPT_COLS} FROM {_CKPT_FROM} WHERE c.run_id = ? "
        "ORDER BY c.created_at NULLS FIRST, c.ckpt_key",
        [run_id],
    ).fetchall()
    rows = with_split_states(con, rows)
    parsed: dict[tuple[int, str], Any] = {}

    def doc(column: int, text: str | None, default: Any) -> Any:
        if text is None:
            return default
        key = (column, text)
        if key not in parsed:
            parsed[key] = loads(text)
        return parsed[key]

    out = [
        Checkpoint(
            run_id=r[0], checkpoint_id=r[1], parent_id=r[2], step_index=int(r[3]),
            schema_version=r[4], created_at=r[5], working_state=None, state_hash=r[7],
            state_bytes=int(r[8]), budgets=Budgets(int(r[9]), int(r[10]), int(r[11])),
            pending_effects=pending_entries(doc(12, r[12], [])), model_version=r[13],
            tool_versions=doc(14, r[14], {}), metadata=doc(15, r[15], {}),
        )
        for r in rows
    ]  # fmt: skip
    return out, [r[6] for r in rows]


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
        "SELECT schema_version, count(*) FROM checkpoint_rows GROUP BY 1 ORDER BY 1 NULLS LAST"
    ).fetchall()
    return {(None if v is None else int(v)): int(n) for v, n in rows}


def run_ids_of_version(con: duckdb.DuckDBPyConnection, version: int | None) -> list[str]:
    """The runs holding a checkpoint at this schema version, in run-id order."""
    rows = con.execute(
        "SELECT DISTINCT run_id FROM checkpoint_rows WHERE schema_version = ? ORDER BY run_id",
        [version],
    ).fetchall()
    return [str(r) for (r,) in rows]
