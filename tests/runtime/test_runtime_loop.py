"""The runtime's record of a run: checkpoints, tape, effects, budgets, statuses."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from debugger.runtime import Faults, Limits, RuntimeRefusal, SimulatedCrash
from tests.runtime.toy import World, runtime


def rows(db: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def checkpoints(db: Path, run_id: str = "r") -> list[dict[str, Any]]:
    out = rows(db, "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY checkpoint_seq", run_id)
    for r in out:
        for k in ("working_state", "metadata", "pending_effects", "tool_versions"):
            r[k] = orjson.loads(r[k])
    return out


def test_a_checkpoint_after_every_iteration(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        result = rt.start("r", {"n": 0, "paid": []})
    assert result.status == "completed"
    cps = checkpoints(db)
    assert [c["step_index"] for c in cps] == [0, 1, 2, 3, 4, 5]
    assert [c["parent_id"] for c in cps] == [None] + [c["checkpoint_id"] for c in cps[:-1]]
    assert [c["tokens_spent"] for c in cps] == [0, 40, 80, 120, 160, 200]
    assert [c["steps_spent"] for c in cps] == [0, 1, 2, 3, 4, 5]
    assert all(a["wall_clock_ms"] < b["wall_clock_ms"] for a, b in itertools.pairwise(cps))
    assert cps[-1]["metadata"]["status"] == "completed"
    assert all("status" not in c["metadata"] for c in cps[:-1])
    assert cps[0]["metadata"]["limits"] == {"tokens": 1000, "steps": 50, "wall_clock_ms": 60_000}
    assert cps[0]["metadata"]["agent"] == "counter"
    assert {c["schema_version"] for c in cps} == {2}
    assert cps[-1]["tool_versions"] == {"pay": "2.0", "read": "1.0"}
    assert cps[-1]["model_version"] == "m-1"
    assert cps[2]["pending_effects"][0]["idempotency_key"] == "pay-3"
    assert cps[3]["pending_effects"] == []


def test_tape_and_effects(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        rt.start("r", {"n": 0, "paid": []})
    tape = rows(db, "SELECT * FROM tool_calls ORDER BY seq")
    assert [t["seq"] for t in tape] == list(range(1, 12))
    assert [(t["kind"], t["name"]) for t in tape[:2]] == [("tool", "read"), ("model", "toy-model")]
    [write] = [t for t in tape if t["is_write"]]
    assert (write["step_index"], write["idempotency_key"]) == (3, "pay-3")
    assert orjson.loads(write["request"]) == {"amount": 30}
    [effect] = rows(db, "SELECT * FROM effects")
    assert (effect["status"], effect["idempotency_key"], effect["step_index"]) == (
        "committed",
        "pay-3",
        3,
    )
    assert orjson.loads(effect["result"])["amount"] == 30


def test_same_run_same_bytes(tmp_path: Path) -> None:
    dumps = []
    for name in ("a", "b"):
        db = tmp_path / f"{name}.sqlite"
        with runtime(db, World()) as rt:
            rt.start("r", {"n": 0, "paid": []})
        dumps.append(rows(db, "SELECT * FROM checkpoints ORDER BY checkpoint_seq"))
    assert dumps[0] == dumps[1]


def test_budget_exhausted_stops_the_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with runtime(db, World(), limits=Limits(tokens=100)) as rt:
        result = rt.start("r", {"n": 0, "paid": []})
    assert result.status == "budget_exhausted"
    head = checkpoints(db)[-1]
    assert (head["step_index"], head["tokens_spent"]) == (3, 120)
    assert head["metadata"]["exhausted"] == "tokens"


def test_agent_failure_is_recorded(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"

    class Broken:
        def is_done(self, state: Any) -> bool:
            return False

        def step(self, state: Any, ctx: Any) -> Any:
            raise KeyError("missing field")

    with runtime(db, World(), agent=Broken()) as rt:
        result = rt.start("r", {"n": 0})
    assert result.status == "failed"
    head = checkpoints(db)[-1]
    assert head["metadata"]["error"] == "KeyError: 'missing field'"
    assert head["metadata"]["agent"] == "Broken"


def test_crash_writes_nothing_after_the_effect(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt, pytest.raises(SimulatedCrash):
        rt.start("r", {"n": 0, "paid": []}, faults=Faults(crash_after_effect=("pay", 3)))
    assert [c["step_index"] for c in checkpoints(db)] == [0, 1, 2]
    assert [e["status"] for e in rows(db, "SELECT status FROM effects")] == ["pending"]
    assert len(world.payments["pay-3"]) == 1


def test_run_ids_are_not_reused(tmp_path: Path) -> None:
    with runtime(tmp_path / "runs.sqlite", World()) as rt:
        rt.start("r", {"n": 0, "paid": []})
        with pytest.raises(RuntimeRefusal):
            rt.start("r", {"n": 0, "paid": []})
