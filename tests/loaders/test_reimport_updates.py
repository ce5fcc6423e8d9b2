"""A re-import rewrites exactly the stored rows whose source row changed (store/refresh.py).

Native SQLite with a ``checkpoint_id`` column, so a checkpoint keeps its identity when its
content changes, as a live LangGraph checkpoint does when writes arrive.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import debugger
from tests.fixtures.native import COLUMNS, native_rows, stepscope_json


def _source(path: Path, rows: list[dict[str, Any]]) -> str:
    con = sqlite3.connect(path)
    cols = ("checkpoint_id", "parent_id", *COLUMNS)
    con.execute(f"CREATE TABLE checkpoints ({', '.join(cols)})")
    con.executemany(
        f"INSERT INTO checkpoints VALUES ({', '.join('?' for _ in cols)})",
        [tuple(r.get(c) for c in cols) for r in rows],
    )
    con.commit()
    con.close()
    return str(path)


def _rows() -> list[dict[str, Any]]:
    rows = native_rows(3, 60)  # several batches of 64 rows (--batch-rows 100)
    prev: dict[str, str] = {}
    for r in rows:
        r["checkpoint_id"] = f"{r['run_id']}-c{r['step_index']}"
        r["parent_id"] = prev.get(r["run_id"])
        prev[r["run_id"]] = r["checkpoint_id"]
    return rows


def _import(src: str, store: Path) -> dict[str, Any]:
    doc = stepscope_json("import", src, "--batch-rows", "100", "--store", str(store))
    return doc["tables"]["checkpoints"]  # type: ignore[no-any-return]


def test_unchanged_reimport_updates_nothing_and_a_changed_row_is_updated(tmp_path: Path) -> None:
    rows = _rows()
    src = _source(tmp_path / "src.sqlite", rows)
    store = tmp_path / "s.duckdb"
    first = _import(src, store)
    assert first["imported"] == len(rows) and first["updated"] == 0

    again = _import(src, store)
    assert again == {"read": len(rows), "imported": 0, "already_present": len(rows),
                     "quarantined": 0, "updated": 0}  # fmt: skip

    con = sqlite3.connect(src)
    # one row's metadata (a document), another's state, a third's budget
    con.execute(
        "UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = 'run-1-c7'",
        [json.dumps({"agent": "refund_desk", "status": "failed", "error": "late write"})],
    )
    con.execute(
        "UPDATE checkpoints SET working_state = ? WHERE checkpoint_id = 'run-2-c59'",
        [json.dumps({"step": 59, "edited": True})],
    )
    con.execute("UPDATE checkpoints SET tokens_spent = 7 WHERE checkpoint_id = 'run-0-c0'")
    con.commit()
    con.close()

    changed = _import(src, store)
    assert changed == {"read": len(rows), "imported": 0, "already_present": len(rows) - 3,
                       "quarantined": 0, "updated": 3}  # fmt: skip
    with debugger.open(store) as s:
        assert s.checkpoint("run-1", 7).metadata["error"] == "late write"
        assert s.checkpoint("run-2", 59).working_state == {"step": 59, "edited": True}
        assert s.checkpoint("run-0", 0).budgets.tokens_spent == 7
        (kept,) = [r for r in rows if r["checkpoint_id"] == "run-1-c8"]
        assert s.checkpoint("run-1", 8).metadata == json.loads(kept["metadata"])
    fresh = tmp_path / "fresh.duckdb"
    _import(src, fresh)
    with debugger.open(store) as a, debugger.open(fresh) as b:
        for run in ("run-0", "run-1", "run-2"):
            assert [c.to_dict() for c in a.checkpoints(run)] == [
                c.to_dict() for c in b.checkpoints(run)
            ]
    assert _import(src, store)["updated"] == 0
