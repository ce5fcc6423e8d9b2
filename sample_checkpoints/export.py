"""Writing the sample histories in every supported source form, deterministically.

The runtime's own file is copied row by row, in a stable order, into fresh files with a fixed
page size and no WAL, then VACUUMed; Parquet is written without timestamps in its metadata.
So the same runs give the same bytes, and ``python -m sample_checkpoints.regenerate`` can
be checked by comparing files.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from debugger.contract import NATIVE_COLUMNS, native_ddl, native_fields

ORDER = {
    "checkpoints": "run_id, checkpoint_seq",
    "effects": "run_id, seq",
    "tool_calls": "run_id, seq",
}
FIELDS = {table: native_fields(table) for table in NATIVE_COLUMNS}
JSON_COLUMNS = {
    "working_state",
    "pending_effects",
    "tool_versions",
    "metadata",
    "args",
    "result",
    "request",
    "response",
}


Rows = list[dict[str, Any]]


def read_rows(db: Path, table: str) -> Rows:
    """All rows of a runtime table in the stable order."""
    con = sqlite3.connect(db)
    try:
        cur = con.execute(f"SELECT {', '.join(FIELDS[table])} FROM {table} ORDER BY {ORDER[table]}")
        return [dict(zip(FIELDS[table], r, strict=True)) for r in cur]
    finally:
        con.close()


def write_sqlite(path: Path, tables: Iterable[tuple[str, str, Sequence[str], Rows]]) -> None:
    """A fresh SQLite file: ``(name, ddl, columns, rows)`` per table, then VACUUM."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA page_size = 4096")
        con.execute("PRAGMA journal_mode = DELETE")
        con.execute("PRAGMA synchronous = OFF")  # written whole or written again
        con.execute("BEGIN")
        for name, ddl, columns, rows in tables:
            con.execute(ddl)
            marks = ", ".join("?" for _ in columns)
            con.executemany(
                f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({marks})",
                [tuple(r[c] for c in columns) for r in rows],
            )
        con.execute("COMMIT")
        con.execute("VACUUM")
    finally:
        con.close()


def native(runs_db: Path, out: Path) -> None:
    """native.sqlite: exactly the runtime's tables."""
    write_sqlite(
        out,
        [(t, native_ddl(t), FIELDS[t], read_rows(runs_db, t)) for t in FIELDS],
    )


def payload(runs_db: Path, out: Path) -> None:
    """payload.sqlite: checkpoints as ``(run_id, step_index, payload)``; effects and tape as is."""
    rows = []
    for r in read_rows(runs_db, "checkpoints"):
        doc = {
            k: (orjson.loads(v) if k in JSON_COLUMNS else v)
            for k, v in r.items()
            if k not in ("run_id", "step_index", "checkpoint_seq")
        }
        rows.append({"run_id": r["run_id"], "step_index": r["step_index"], "payload": _json(doc)})
    ddl = (
        "CREATE TABLE checkpoints (run_id TEXT NOT NULL, step_index INTEGER NOT NULL, "
        "payload TEXT NOT NULL)"
    )
    tables: list[tuple[str, str, Sequence[str], Rows]] = [
        ("checkpoints", ddl, ("run_id", "step_index", "payload"), rows)
    ]
    tables += [
        (t, native_ddl(t), FIELDS[t], read_rows(runs_db, t)) for t in ("effects", "tool_calls")
    ]
    write_sqlite(out, tables)


MAPPED_DDL = {
    "agent_snapshots": "CREATE TABLE agent_snapshots (session_id TEXT, snapshot_id TEXT, "
    "parent_snapshot TEXT, turn INTEGER, saved_at TEXT, doc TEXT)",
    "outbox_log": "CREATE TABLE outbox_log (session_id TEXT, entry_id TEXT, turn INTEGER, "
    "dedupe_key TEXT, action TEXT, payload TEXT, state TEXT, answer TEXT, logged_at TEXT)",
    "call_log": "CREATE TABLE call_log (session_id TEXT, call_ref TEXT, turn INTEGER, "
    "ordinal INTEGER, call_type TEXT, target TEXT, input TEXT, output TEXT, failure TEXT, "
    "dedupe_key TEXT, writes INTEGER)",
}


def _snapshot(r: dict[str, Any]) -> dict[str, Any]:
    doc = {
        "memory": orjson.loads(r["working_state"]),
        "schema": r["schema_version"],
        "usage": {"tokens": r["tokens_spent"], "steps": r["steps_spent"], "ms": r["wall_clock_ms"]},
        "in_flight": orjson.loads(r["pending_effects"]),
        "model": r["model_version"],
        "tools": orjson.loads(r["tool_versions"]),
        "meta": orjson.loads(r["metadata"]),
    }
    return {
        "session_id": r["run_id"],
        "snapshot_id": r["checkpoint_id"],
        "parent_snapshot": r["parent_id"],
        "turn": r["step_index"],
        "saved_at": r["created_at"],
        "doc": _json(doc),
    }


def mapped(runs_db: Path, out: Path) -> None:
    """mapped.sqlite: the same histories under other table and column names (mapped.toml)."""
    snaps = [_snapshot(r) for r in read_rows(runs_db, "checkpoints")]
    outbox = [
        {
            "session_id": r["run_id"],
            "entry_id": r["effect_id"],
            "turn": r["step_index"],
            "dedupe_key": r["idempotency_key"],
            "action": r["tool"],
            "payload": r["args"],
            "state": r["status"],
            "answer": r["result"],
            "logged_at": r["created_at"],
        }
        for r in read_rows(runs_db, "effects")
    ]
    calls = [
        {
            "session_id": r["run_id"],
            "call_ref": r["call_id"],
            "turn": r["step_index"],
            "ordinal": r["seq"],
            "call_type": r["kind"],
            "target": r["name"],
            "input": r["request"],
            "output": r["response"],
            "failure": r["error"],
            "dedupe_key": r["idempotency_key"],
            "writes": r["is_write"],
        }
        for r in read_rows(runs_db, "tool_calls")
    ]
    write_sqlite(
        out,
        [
            (name, ddl, tuple(rows[0]) if rows else (), rows)
            for (name, ddl), rows in zip(MAPPED_DDL.items(), (snaps, outbox, calls), strict=True)
        ],
    )


MAPPING_TOML = """\
# How Stepscope reads mapped.sqlite: the refund desk's histories under another table shape.
#   cd sample_checkpoints/data && stepscope import mapped.sqlite --mapping mapped.toml
version = 1

[checkpoints]
table = "agent_snapshots"
run_id = "session_id"
checkpoint_id = "snapshot_id"
parent_id = "parent_snapshot"
step_index = "turn"
created_at = "saved_at"
working_state = { column = "doc", path = "$.memory" }
schema_version = { column = "doc", path = "$.schema" }
tokens_spent = { column = "doc", path = "$.usage.tokens" }
steps_spent = { column = "doc", path = "$.usage.steps" }
wall_clock_ms = { column = "doc", path = "$.usage.ms" }
pending_effects = { column = "doc", path = "$.in_flight" }
model_version = { column = "doc", path = "$.model" }
tool_versions = { column = "doc", path = "$.tools" }
metadata = { column = "doc", path = "$.meta" }

[effects]
table = "outbox_log"
run_id = "session_id"
effect_id = "entry_id"
step_index = "turn"
idempotency_key = "dedupe_key"
tool = "action"
args = "payload"
status = "state"
result = "answer"
created_at = "logged_at"

[tool_calls]
table = "call_log"
run_id = "session_id"
call_id = "call_ref"
step_index = "turn"
seq = "ordinal"
kind = "call_type"
name = "target"
request = "input"
response = "output"
error = "failure"
idempotency_key = "dedupe_key"
is_write = "writes"
"""


def _arrow_type(table: str, column: str) -> pa.DataType:
    if column in ("created_at",):
        return pa.timestamp("ms", tz="UTC")
    if column in (
        "step_index",
        "schema_version",
        "tokens_spent",
        "steps_spent",
        "wall_clock_ms",
        "checkpoint_seq",
        "seq",
    ):
        return pa.int64()
    if column == "is_write":
        return pa.bool_()
    return pa.string()


def parquet(runs_db: Path, out_dir: Path) -> None:
    """parquet/: checkpoints/, effects/, tool_calls/, each hive-partitioned by the run's day."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    checkpoints = read_rows(runs_db, "checkpoints")
    run_day: dict[str, str] = {}
    for r in checkpoints:
        run_day.setdefault(r["run_id"], r["created_at"][:10])
    for table in FIELDS:
        rows = checkpoints if table == "checkpoints" else read_rows(runs_db, table)
        by_day: dict[str, Rows] = {}
        for r in rows:
            by_day.setdefault(run_day[r["run_id"]], []).append(r)
        for day, part in sorted(by_day.items()):
            _write_part(out_dir / table / f"date={day}" / "part-0.parquet", table, part)


def _write_part(path: Path, table: str, rows: Rows) -> None:
    columns = FIELDS[table]
    arrays = []
    for c in columns:
        values = [r[c] for r in rows]
        if c == "created_at":
            values = [None if v is None else datetime.fromisoformat(v) for v in values]
        elif c == "is_write":
            values = [bool(v) for v in values]
        arrays.append(pa.array(values, type=_arrow_type(table, c)))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_arrays(arrays, names=list(columns)),
        path,
        compression="zstd",
        use_dictionary=True,
        write_statistics=True,
        store_schema=False,
        row_group_size=10_000,
    )


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def postgres(runs_db: Path, out: Path) -> None:
    """postgres.sql: the native shape for Postgres (``psql -f postgres.sql``), in one transaction.

    The DDL is the contract's (``native_ddl(table, "postgres")``): JSON columns are ``json``,
    not ``jsonb``, so the stored text, and so the state hashes, are the same as elsewhere.
    """
    lines = [
        "-- Stepscope sample histories (native shape). Load with: psql -f postgres.sql",
        "-- Regenerate with: python -m sample_checkpoints.regenerate",
        "SET standard_conforming_strings = on;",
        "BEGIN;",
    ]
    for table, columns in FIELDS.items():
        lines.append(native_ddl(table, "postgres"))
        for r in read_rows(runs_db, table):
            values = []
            for c in columns:
                v = r[c]
                if c == "is_write":
                    values.append("true" if v else "false")
                else:
                    values.append(_sql_literal(v))
            lines.append(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(values)});"
            )
    lines.append("COMMIT;")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


LEDGER_TABLES = {
    "orders": "order_id",
    "refund_policies": "version",
    "refunds": "refund_id",
    "outbox": "message_id",
}


def ledger(work_ledger: Path, out: Path) -> None:
    """ledger.sqlite: the payments ledger as the scenarios left it."""
    from sample_checkpoints.refund_desk.ledger import SCHEMA

    con = sqlite3.connect(work_ledger)
    tables = []
    try:
        for (name, order), ddl in zip(LEDGER_TABLES.items(), SCHEMA, strict=True):
            cur = con.execute(f"SELECT * FROM {name} ORDER BY {order}")
            cols = [d[0] for d in cur.description]
            rows = [dict(zip(cols, r, strict=True)) for r in cur]
            tables.append((name, ddl.replace(" IF NOT EXISTS", ""), cols, rows))
    finally:
        con.close()
    write_sqlite(out, tables)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
