"""The replay's own files, and the replay stored as a run.

The replay's checkpoints, its tape and its ledger are written in the native shape to
``replay.sqlite`` in the replay's output directory and imported like any source, so the
store, every page and the diff treat a replay as a run; ``metadata.replay_of`` and
``metadata.replay_from_step`` mark it. Sandboxed writes are stored as effects with status
``committed`` (committed to the sandbox's ledger, never executed) and ``result.sandboxed``.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from debugger.contract import BUDGETS, TABLE_COLUMNS, native_ddl
from debugger.model import ImportReport
from debugger.replay.compare import checkpoint_id
from debugger.replay.inputs import ReplayInputs
from debugger.replay.process import ChildResult
from debugger.replay.report import ReplayReport
from debugger.store import Store

_STATUS = {"completed": "completed", "budget_exhausted": "budget_exhausted", "parked": "parked"}
"""Run status of the replay by outcome; every other outcome is stored as failed + error."""


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=repr).decode()


def _state_json(value: Any) -> str:
    # sorted keys, as the runtime writes states: equal states then have equal state_hash
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def _checkpoint_rows(
    inputs: ReplayInputs, child: ChildResult, report: ReplayReport, ready: dict[str, Any]
) -> list[tuple[Any, ...]]:
    start = inputs.start
    base = {"agent": report.agent, "replay_of": report.run_id,
            "replay_from_step": report.from_step,
            "limits": start.metadata.get("limits") or inputs.run.limits or {},
            "replay": {"mode": report.mode, "mocks": report.mocks,
                       "output_dir": report.output_dir,
                       "isolation": report.isolation}}  # fmt: skip
    now = datetime.now(UTC)
    steps = [(start.step_index, ready.get("state", start.working_state),
              report.budgets_start, start.model_version, start.pending_effects)]  # fmt: skip
    for ev in child.steps:
        if not ev["partial"]:
            original = inputs.original_at(int(ev["step_index"]))
            model = original.model_version if original else steps[-1][3]
            steps.append((int(ev["step_index"]), ev["state"], ev["budgets"], model,
                          ev.get("pending_effects") or []))  # fmt: skip
    rows: list[tuple[Any, ...]] = []
    parent: str | None = None
    version = ready.get("schema_version", start.schema_version)
    for i, (step, state, budgets, model, pending) in enumerate(steps):
        meta = dict(base)
        if i == len(steps) - 1:
            meta["status"] = _STATUS.get(report.outcome, "failed")
            meta["replay_outcome"] = report.outcome
            if meta["status"] == "failed":
                meta["error"] = f"replay {report.outcome}: {report.reason}"
        cid = checkpoint_id(report.replay_run_id, step)
        rows.append((report.replay_run_id, cid, parent, step, version,
                     (now + timedelta(milliseconds=i)).isoformat(), _state_json(state),
                     *(budgets[b] for b in BUDGETS), _json(pending), model,
                     _json(start.tool_versions), _json(meta)))  # fmt: skip
        parent = cid
    return rows


def _call_rows(replay_id: str, child: ChildResult) -> tuple[list[tuple[Any, ...]], ...]:
    now = datetime.now(UTC).isoformat()
    calls, effects = [], []
    for ev in child.steps:
        for c in ev.get("calls") or []:
            call_id = f"{replay_id}#{c['seq']}"
            calls.append((replay_id, call_id, c["step_index"], c["seq"], c["kind"], c["name"],
                          _json(c.get("request")), _json(c.get("response")), c.get("error"),
                          c.get("idempotency_key"), int(bool(c.get("is_write")))))  # fmt: skip
            if c.get("is_write"):
                result = {"sandboxed": True, "source": c.get("source"),
                          "response": c.get("response"), "error": c.get("error")}  # fmt: skip
                effects.append((replay_id, call_id, c["step_index"], c.get("idempotency_key"),
                                c["name"], _json(c.get("request")), "committed",
                                _json(result), now))  # fmt: skip
    return calls, effects


def write_sqlite(
    path: Path,
    inputs: ReplayInputs,
    child: ChildResult,
    report: ReplayReport,
    ready: dict[str, Any],
) -> Path:
    """Write the replay in the native shape to ``path`` (a new file)."""
    calls, effects = _call_rows(report.replay_run_id, child)
    con = sqlite3.connect(path)
    try:
        rows = {"checkpoints": _checkpoint_rows(inputs, child, report, ready),
                "effects": effects, "tool_calls": calls}  # fmt: skip
        for table, columns in TABLE_COLUMNS.items():
            # written whole by this one writer: the canonical columns, no constraints
            con.execute(native_ddl(table, constraints=False))
            marks = ", ".join("?" for _ in columns)
            con.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows[table]
            )
        con.commit()
    finally:
        con.close()
    return path


def import_replay(store: Store, path: Path) -> ImportReport:
    """Import the replay's SQLite file into the store (a writable one)."""
    from loaders import import_source

    return import_source(store, str(path))


def save_report(report: ReplayReport, output_dir: Path) -> Path:
    """Write ``report.json`` beside the replay's other files."""
    path = output_dir / "report.json"
    path.write_bytes(
        orjson.dumps(
            report.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=repr
        )
    )
    return path


def saved_report(store: Store, replay_run_id: str) -> dict[str, Any] | None:
    """The ``report.json`` of a stored replay, or None when its output directory is gone.

    Raises:
        NotFound: no such run.
    """
    head = store.checkpoint(replay_run_id)
    out = (head.metadata.get("replay") or {}).get("output_dir")
    path = Path(out) / "report.json" if out else None
    if path is None or not path.is_file():
        return None
    report: dict[str, Any] = orjson.loads(path.read_bytes())
    return report
