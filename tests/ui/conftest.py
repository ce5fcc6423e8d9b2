"""A store for the app's tests: a few plain runs and a crash at step 7 with a pending refund.

Built once per session from a native SQLite source (checkpoints, effects, tool_calls), through
the real importer. The crashed run carries what the pages must show: a model version change,
a fork (two checkpoints continuing step 4), a pending refund with its key and unknown outcome,
tool and model calls per step, and budget limits.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.fixtures.native import native_rows, write_native_sqlite

CRASHED = "crash-at-step-7"
REFUND_KEY = "refund-A-17-1"


def _state(step: int) -> dict[str, Any]:
    return {
        "order": {"id": "A-17", "amount": 42.5, "status": "refund_sent" if step >= 7 else "open"},
        "notes": [f"step {i} done" for i in range(step)],
        "refund": {"decided": step >= 5, "amount": 42.5 if step >= 5 else None},
    }


def crash_rows() -> list[dict[str, Any]]:
    """Checkpoints of the crashed run, with a fork: step 4 is written twice from step 3."""
    rows = []
    for step in range(8):
        pending = (
            [
                {
                    "tool": "issue_refund",
                    "idempotency_key": REFUND_KEY,
                    "status": "unknown",
                    "args": {"order": "A-17", "amount": 42.5},
                }
            ]
            if step == 7
            else []
        )
        meta: dict[str, Any] = {
            "agent": "refund_desk",
            "limits": {"tokens": 4000, "steps": 10, "wall_clock_ms": 60000},
        }
        if step == 7:
            meta |= {"status": "crashed", "error": "process killed after issue_refund"}
        rows.append(
            {
                "run_id": CRASHED,
                "checkpoint_id": f"c{step}",
                "parent_id": f"c{step - 1}" if step else None,
                "step_index": step,
                "schema_version": 3,
                "created_at": f"2026-11-02T09:00:{step * 2:02d}+00:00",
                "working_state": json.dumps(_state(step)),
                "tokens_spent": 500 * step,
                "steps_spent": step,
                "wall_clock_ms": 2000 * step,
                "pending_effects": json.dumps(pending),
                "model_version": "scripted-1" if step < 4 else "scripted-2",
                "tool_versions": json.dumps({"issue_refund": "2.1"}),
                "metadata": json.dumps(meta),
            }
        )
    fork = dict(rows[4], checkpoint_id="c4b", created_at="2026-11-02T09:00:09+00:00")
    rows.insert(5, fork)
    return rows


def _write_side_tables(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE checkpoints ADD COLUMN checkpoint_id TEXT")
    con.execute("ALTER TABLE checkpoints ADD COLUMN parent_id TEXT")
    con.execute(
        "CREATE TABLE effects (run_id TEXT, effect_id TEXT, step_index INTEGER, "
        "idempotency_key TEXT, tool TEXT, args TEXT, status TEXT, result TEXT, created_at TEXT)"
    )
    con.execute(
        "INSERT INTO effects VALUES (?, 'e1', 7, ?, 'issue_refund', ?, 'unknown', NULL, "
        "'2026-11-02T09:00:13+00:00')",
        [CRASHED, REFUND_KEY, json.dumps({"order": "A-17", "amount": 42.5})],
    )
    con.execute(
        "CREATE TABLE tool_calls (run_id TEXT, call_id TEXT, step_index INTEGER, seq INTEGER, "
        "kind TEXT, name TEXT, request TEXT, response TEXT, error TEXT, idempotency_key TEXT, "
        "is_write INTEGER)"
    )
    calls: list[tuple[Any, ...]] = []
    for step in range(8):
        calls.append(
            (
                CRASHED,
                f"m{step}",
                step,
                2 * step,
                "model",
                "scripted-model",
                json.dumps({"step": step}),
                json.dumps({"usage": {"total_tokens": 500}}),
                None,
                None,
                0,
            )
        )
    calls.append(
        (
            CRASHED,
            "t7",
            7,
            15,
            "tool",
            "issue_refund",
            json.dumps({"order": "A-17", "amount": 42.5}),
            None,
            "process killed",
            REFUND_KEY,
            1,
        )
    )
    con.executemany(f"INSERT INTO tool_calls VALUES ({', '.join('?' * 11)})", calls)
    con.commit()
    con.close()


def build_ui_store(directory: Path) -> Path:
    """Import the plain runs and the crashed run into a new store; return its path."""
    plain = write_native_sqlite(directory / "plain.sqlite", native_rows())
    crash = directory / "crash.sqlite"
    write_native_sqlite(crash, [])
    _write_side_tables(crash)
    con = sqlite3.connect(crash)
    cols = list(crash_rows()[0])
    con.executemany(
        f"INSERT INTO checkpoints ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        [tuple(r[c] for c in cols) for r in crash_rows()],
    )
    con.commit()
    con.close()
    store_path = directory / "ui.duckdb"
    with Store.open(store_path) as store:
        import_source(store, str(plain), ImportOptions())
        import_source(store, str(crash), ImportOptions())
    return store_path


@pytest.fixture(scope="session")
def ui_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-only-ready store with the plain runs and the crashed run."""
    return build_ui_store(tmp_path_factory.mktemp("ui"))
