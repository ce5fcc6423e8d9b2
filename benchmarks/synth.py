"""Large synthetic checkpoint histories in the native shape, for benchmarks and load tests.

Writes N runs x M steps of checkpoints whose working state is JSON of about S bytes, to a
SQLite file (table ``checkpoints``, the six-item columns) and/or a Parquet dataset directory
(``OUT/checkpoints/part-NNNNN.parquet``, which Stepscope reads as the ``checkpoints`` table).
The output is deterministic for a given seed and arguments: the same command writes the same
rows, so benchmark runs compare like with like.

States are built from a seeded pool of sentences rather than random bytes, because real agent
states repeat keys and phrases: their compressibility (and so the store's size and read cost)
is closer to real data than random text would be.

Usage::

    python benchmarks/synth.py --runs 2000 --steps 100 --state-bytes 2048 \\
        --sqlite benchmarks/data/c200k.sqlite --parquet benchmarks/data/c200k_parquet/

The histories are not committed (``benchmarks/data/`` is git-ignored); regenerate them.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

COLUMNS = ("run_id", "step_index", "schema_version", "created_at", "working_state",
           "tokens_spent", "steps_spent", "wall_clock_ms", "pending_effects", "model_version",
           "tool_versions", "metadata")  # fmt: skip
CHECKPOINT_DDL = (
    "CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, schema_version INTEGER, "
    "created_at TEXT, working_state TEXT, tokens_spent INTEGER, steps_spent INTEGER, "
    "wall_clock_ms INTEGER, pending_effects TEXT, model_version TEXT, tool_versions TEXT, "
    "metadata TEXT)"
)
SCHEMA = pa.schema(
    [("run_id", pa.string()), ("step_index", pa.int64()), ("schema_version", pa.int64()),
     ("created_at", pa.string()), ("working_state", pa.string()), ("tokens_spent", pa.int64()),
     ("steps_spent", pa.int64()), ("wall_clock_ms", pa.int64()), ("pending_effects", pa.string()),
     ("model_version", pa.string()), ("tool_versions", pa.string()), ("metadata", pa.string())]
)  # fmt: skip
CHUNK_ROWS = 10_000
"""Rows generated and written at a time (bounded memory whatever N x M is)."""
FILE_ROWS = 200_000
"""Rows per Parquet file; row groups hold CHUNK_ROWS rows."""
START = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
WORDS = [
    "order",
    "refund",
    "customer",
    "ledger",
    "approve",
    "policy",
    "invoice",
    "shipment",
    "carrier",
    "address",
    "payment",
    "amount",
    "currency",
    "account",
    "ticket",
    "escalate",
    "verify",
    "lookup",
    "tool",
    "model",
    "reply",
    "draft",
    "email",
    "status",
    "pending",
    "committed",
    "failed",
    "unknown",
    "retry",
    "budget",
    "tokens",
    "step",
    "note",
    "summary",
]
STATUSES = ("completed", "completed", "completed", "failed", "parked", "in_progress")


@dataclass(frozen=True)
class Spec:
    """What to generate."""

    runs: int
    steps: int
    state_bytes: int
    seed: int = 7
    large_runs: int = 0
    """Runs (appended after the others) whose states are ``large_bytes`` each."""
    large_steps: int = 3
    large_bytes: int = 1024 * 1024

    @property
    def total(self) -> int:
        """Rows the spec produces."""
        return self.runs * self.steps + self.large_runs * self.large_steps


def _pool(rng: random.Random, n: int = 4096) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) for _ in range(n)]


def _state(rng: random.Random, pool: list[str], run: int, step: int, size: int) -> str:
    state: dict[str, Any] = {
        "run": run,
        "step": step,
        "order": {"id": f"A-{run % 9973}", "amount": round(rng.uniform(5, 500), 2),
                  "currency": "EUR", "approved": step % 3 == 0},
        "customer": {"id": f"C-{rng.randint(1, 10**6)}", "tier": rng.choice("abc")},
        "messages": [],
    }  # fmt: skip
    base = len(orjson.dumps(state))
    messages: list[dict[str, Any]] = state["messages"]
    i = rng.randrange(len(pool))
    used = base
    while used < size:
        text = pool[i % len(pool)]
        msg = {
            "role": "assistant" if i % 2 else "user",
            "content": text,
            "ref": f"{rng.getrandbits(40):010x}",
        }
        used += len(text) + 58
        messages.append(msg)
        i += 1 + (step % 5)
    return orjson.dumps(state).decode()


def _row(rng: random.Random, pool: list[str], spec: Spec, run: int, step: int) -> tuple[Any, ...]:
    large = run >= spec.runs
    steps = spec.large_steps if large else spec.steps
    size = spec.large_bytes if large else spec.state_bytes
    run_id = f"large-{run - spec.runs:04d}" if large else f"run-{run:07d}"
    last = step == steps - 1
    status = STATUSES[run % len(STATUSES)]
    meta: dict[str, Any] = {"agent": f"agent-{run % 7}",
                            "limits": {"tokens": 10**7, "steps": 10**6}}  # fmt: skip
    if last and status != "in_progress":
        meta["status"] = status
        if status == "failed":
            meta["error"] = "tool timeout: carrier_api"
    pending = []
    if step % 10 == 9:
        pending = [{"tool": "send_email", "idempotency_key": f"{run_id}-mail-{step}",
                    "args": {"to": "c@example.com"}, "status": "pending"}]  # fmt: skip
    at = START + timedelta(seconds=run * 3600 // max(1, spec.runs), milliseconds=step * 1500)
    return (
        run_id,
        step,
        3,
        at.isoformat(timespec="milliseconds"),
        _state(rng, pool, run, step, size),
        137 * (step + 1),
        step + 1,
        1500 * (step + 1),
        orjson.dumps(pending).decode(),
        "model-2026-10" if step < steps // 2 else "model-2026-11",
        '{"lookup_order": "1.4", "send_email": "2.0"}',
        orjson.dumps(meta).decode(),
    )


def rows(spec: Spec) -> Iterator[list[tuple[Any, ...]]]:
    """Yield the rows in chunks of at most CHUNK_ROWS, run by run, step by step."""
    rng = random.Random(spec.seed)
    pool = _pool(rng)
    chunk: list[tuple[Any, ...]] = []
    for run in range(spec.runs + spec.large_runs):
        steps = spec.large_steps if run >= spec.runs else spec.steps
        for step in range(steps):
            chunk.append(_row(rng, pool, spec, run, step))
            if len(chunk) >= CHUNK_ROWS or (run >= spec.runs and len(chunk) >= 8):
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def write(spec: Spec, sqlite_path: Path | None, parquet_dir: Path | None) -> int:
    """Write the rows to the targets; return the number of rows written."""
    con = None
    if sqlite_path is not None:
        sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        sqlite_path.unlink(missing_ok=True)
        con = sqlite3.connect(sqlite_path)
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        con.execute(CHECKPOINT_DDL)
    writer: pq.ParquetWriter | None = None
    part = 0
    in_file = 0
    if parquet_dir is not None:
        out = parquet_dir / "checkpoints"
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("*.parquet"):
            old.unlink()
    n = 0
    marks = ", ".join("?" for _ in COLUMNS)
    for chunk in rows(spec):
        if con is not None:
            con.executemany(f"INSERT INTO checkpoints VALUES ({marks})", chunk)
        if parquet_dir is not None:
            if writer is None or in_file >= FILE_ROWS:
                if writer is not None:
                    writer.close()
                path = parquet_dir / "checkpoints" / f"part-{part:05d}.parquet"
                writer = pq.ParquetWriter(path, SCHEMA, compression="zstd")
                part += 1
                in_file = 0
            table = pa.Table.from_arrays(
                [pa.array([r[i] for r in chunk], type=SCHEMA.field(i).type)
                 for i in range(len(COLUMNS))],
                schema=SCHEMA,
            )  # fmt: skip
            writer.write_table(table)
            in_file += len(chunk)
        n += len(chunk)
    if con is not None:
        con.commit()
        con.close()
    if writer is not None:
        writer.close()
    return n


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, required=True, help="number of runs")
    p.add_argument("--steps", type=int, required=True, help="checkpoints per run")
    p.add_argument("--state-bytes", type=int, default=2048, help="working_state JSON size")
    p.add_argument("--large-runs", type=int, default=0, help="extra runs with large states")
    p.add_argument("--large-steps", type=int, default=3, help="checkpoints per large run")
    p.add_argument("--large-bytes", type=int, default=1024 * 1024, help="large state size")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sqlite", type=Path, help="write a SQLite file here")
    p.add_argument("--parquet", type=Path, help="write a Parquet dataset directory here")
    a = p.parse_args(argv)
    if a.sqlite is None and a.parquet is None:
        p.error("give --sqlite and/or --parquet")
    if min(a.runs, a.steps, a.state_bytes) < 1 or a.large_runs < 0:
        p.error("--runs, --steps and --state-bytes must be positive")
    spec = Spec(a.runs, a.steps, a.state_bytes, a.seed, a.large_runs, a.large_steps,
                a.large_bytes)  # fmt: skip
    t0 = time.perf_counter()
    n = write(spec, a.sqlite, a.parquet)
    print(f"wrote {n} checkpoints in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
