"""The runtime's SQLite file, in Stepscope's native shape (``debugger.contract``).

Three tables: ``checkpoints`` (the six-item contract plus ``checkpoint_id``/``parent_id``),
``effects`` (one row per keyed write, with ``effect_id``) and ``tool_calls`` (the tape, with
``call_id``). Ids are explicit so that an import into Stepscope is exact and a fork (a resume
from an older checkpoint) keeps its shape. ``checkpoint_seq`` and ``effects.seq`` are the
runtime's own bookkeeping; importers ignore them.

Transactions: the effect row of a write is committed *before* the write runs (status
``pending``), so a crash leaves evidence; everything else a loop iteration produced (the
checkpoint, its tape rows, the final status of its effects) is committed together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from debugger.contract import NATIVE_COLUMNS, native_ddl, native_fields

CHECKPOINT_FIELDS = native_fields("checkpoints")
EFFECT_FIELDS = native_fields("effects")
CALL_FIELDS = native_fields("tool_calls")


def dumps(value: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, so equal values give equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def loads(text: str | None) -> Any:
    """Parse JSON text (None stays None)."""
    return None if text is None else orjson.loads(text)


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint as the runtime reads it back for a resume."""

    checkpoint_id: str
    seq: int
    step_index: int
    schema_version: int | None
    state: Any
    tokens_spent: int
    steps_spent: int
    wall_clock_ms: int
    pending_effects: list[dict[str, Any]]
    model_version: str | None
    tool_versions: dict[str, Any]
    metadata: dict[str, Any]


class RunDatabase:
    """The SQLite file a runtime writes; one connection, explicit transactions."""

    def __init__(self, path: str | Path, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous}")
        self.path = Path(path)
        self.con = sqlite3.connect(self.path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=DELETE")
        self.con.execute(f"PRAGMA synchronous={synchronous.upper()}")
        with self.transaction():
            for table in NATIVE_COLUMNS:
                self.con.execute(native_ddl(table))

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all or nothing."""
        self.con.execute("BEGIN IMMEDIATE")
        try:
            yield self.con
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def _insert(self, table: str, fields: Sequence[str], row: dict[str, Any]) -> None:
        marks = ", ".join("?" for _ in fields)
        self.con.execute(
            f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({marks})",
            [row.get(f) for f in fields],
        )

    def write_effect_intent(self, row: dict[str, Any]) -> None:
        """Commit a ``pending`` effect row before the write runs (the crash evidence)."""
        with self.transaction():
            self._insert("effects", EFFECT_FIELDS, row)

    def commit_step(
        self,
        checkpoint: dict[str, Any],
        calls: Sequence[dict[str, Any]],
        effect_outcomes: Sequence[tuple[str, str, Any]],
    ) -> None:
        """Write a checkpoint, its tape rows and its effects' outcomes in one transaction."""
        with self.transaction():
            self._insert("checkpoints", CHECKPOINT_FIELDS, checkpoint)
            for call in calls:
                self._insert("tool_calls", CALL_FIELDS, call)
            for effect_id, status, result in effect_outcomes:
                self._set_effect(checkpoint["run_id"], effect_id, status, result)

    def _set_effect(self, run_id: str, effect_id: str, status: str, result: Any) -> None:
        self.con.execute(
            "UPDATE effects SET status = ?, result = ? WHERE run_id = ? AND effect_id = ?",
            [status, None if result is None else dumps(result), run_id, effect_id],
        )

    def resolve_effects(self, run_id: str, key: str, status: str, result: Any) -> int:
        """Set the outcome of every open effect row with this key; returns rows changed."""
        with self.transaction():
            cur = self.con.execute(
                "UPDATE effects SET status = ?, result = ? WHERE run_id = ? "
                "AND idempotency_key = ? AND status IN ('pending', 'unknown')",
                [status, None if result is None else dumps(result), run_id, key],
            )
            return int(cur.rowcount)

    def has_run(self, run_id: str) -> bool:
        """True when the run has at least one checkpoint."""
        row = self.con.execute(
            "SELECT 1 FROM checkpoints WHERE run_id = ? LIMIT 1", [run_id]
        ).fetchone()
        return row is not None

    def checkpoint(self, run_id: str, step_index: int | None = None) -> StoredCheckpoint | None:
        """The newest checkpoint of the run, or the newest at ``step_index``."""
        sql = f"SELECT {', '.join(CHECKPOINT_FIELDS)} FROM checkpoints WHERE run_id = ?"
        params: list[Any] = [run_id]
        if step_index is not None:
            sql += " AND step_index = ?"
            params.append(step_index)
        row = self.con.execute(sql + " ORDER BY checkpoint_seq DESC LIMIT 1", params).fetchone()
        if row is None:
            return None
        r = dict(zip(CHECKPOINT_FIELDS, row, strict=True))
        return StoredCheckpoint(
            checkpoint_id=r["checkpoint_id"],
            seq=r["checkpoint_seq"],
            step_index=r["step_index"],
            schema_version=r["schema_version"],
            state=loads(r["working_state"]),
            tokens_spent=r["tokens_spent"],
            steps_spent=r["steps_spent"],
            wall_clock_ms=r["wall_clock_ms"],
            pending_effects=loads(r["pending_effects"]) or [],
            model_version=r["model_version"],
            tool_versions=loads(r["tool_versions"]) or {},
            metadata=loads(r["metadata"]) or {},
        )

    def next_seqs(self, run_id: str) -> tuple[int, int]:
        """(next checkpoint seq, next call seq): both continue, never reused, across resumes."""
        ck = self.con.execute(
            "SELECT coalesce(max(checkpoint_seq), -1) FROM checkpoints WHERE run_id = ?", [run_id]
        ).fetchone()
        call = self.con.execute(
            "SELECT max(s) FROM (SELECT max(seq) AS s FROM tool_calls WHERE run_id = ? "
            "UNION ALL SELECT max(seq) FROM effects WHERE run_id = ?)",
            [run_id, run_id],
        ).fetchone()
        last_call = call[0] if call and call[0] is not None else 0
        return int(ck[0] if ck else -1) + 1, int(last_call) + 1

    def effects(self, run_id: str, statuses: Sequence[str]) -> list[dict[str, Any]]:
        """Effect rows of the run with one of these statuses, in the order they were made."""
        marks = ", ".join("?" for _ in statuses)
        rows = self.con.execute(
            f"SELECT {', '.join(EFFECT_FIELDS)} FROM effects WHERE run_id = ? "
            f"AND status IN ({marks}) ORDER BY seq",
            [run_id, *statuses],
        ).fetchall()
        out = []
        for row in rows:
            r = dict(zip(EFFECT_FIELDS, row, strict=True))
            r["args"], r["result"] = loads(r["args"]), loads(r["result"])
            out.append(r)
        return out
