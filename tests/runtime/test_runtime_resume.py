"""Resume: completed steps are never re-executed, budgets never reset, effects checked by key."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from debugger.runtime import BudgetExhausted, Faults, Limits, RuntimeRefusal, SimulatedCrash
from tests.runtime.test_runtime_loop import checkpoints, rows
from tests.runtime.toy import World, runtime

START = {"n": 0, "paid": []}


def crashed(tmp_path: Path) -> tuple[Path, World]:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt, pytest.raises(SimulatedCrash):
        rt.start("r", dict(START), faults=Faults(crash_after_effect=("pay", 3)))
    return db, world


def test_resume_after_crash_never_repeats_work(tmp_path: Path) -> None:
    db, world = crashed(tmp_path)
    assert world.reads == [1, 2, 3]
    with runtime(db, world) as rt:
        result = rt.resume("r")
    assert result.status == "completed"
    # step 3 had no checkpoint, so it runs again; steps 1 and 2 do not
    assert world.reads == [1, 2, 3, 3, 4, 5]
    assert len(world.payments["pay-3"]) == 1  # resolved by key, not paid twice
    cps = checkpoints(db)
    assert [c["step_index"] for c in cps] == [0, 1, 2, 3, 4, 5]
    resume = cps[3]["metadata"]["resume"]
    assert resume["from_step"] == 2
    assert resume["resolved_effects"] == [
        {"idempotency_key": "pay-3", "tool": "pay", "outcome": "committed"}
    ]
    assert cps[3]["metadata"]["deduplicated_effects"] == ["pay-3"]
    assert [e["status"] for e in rows(db, "SELECT status FROM effects")] == ["committed"]
    seqs = [r["seq"] for r in rows(db, "SELECT seq FROM tool_calls ORDER BY seq")]
    assert len(seqs) == len(set(seqs))
    effect_seq = rows(db, "SELECT seq FROM effects")[0]["seq"]
    assert effect_seq not in seqs  # the crashed call's number is not reused


def test_resume_never_resets_budgets(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        rt.start("r", dict(START), faults=Faults(stop_after_step=2))
    with runtime(db, world) as rt:
        rt.resume("r")
    cps = checkpoints(db)
    for key in ("tokens_spent", "steps_spent", "wall_clock_ms"):
        values = [c[key] for c in cps]
        assert values == sorted(values), key
    assert [c["steps_spent"] for c in cps] == [0, 1, 2, 3, 4, 5]
    assert world.reads == [1, 2, 3, 4, 5]


def test_naive_resume_fault_does_reset(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        rt.start("r", dict(START), faults=Faults(stop_after_step=2))
    with runtime(db, world) as rt:
        rt.resume("r", faults=Faults(reset_budgets=True))
    cps = checkpoints(db)
    assert cps[3]["tokens_spent"] < cps[2]["tokens_spent"]
    assert cps[3]["steps_spent"] == 1


def test_resume_rechecks_budgets(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world, limits=Limits(tokens=100)) as rt:
        assert rt.start("r", dict(START)).status == "budget_exhausted"
    with runtime(db, world, limits=Limits(tokens=100)) as rt, pytest.raises(BudgetExhausted):
        rt.resume("r")
    assert world.reads == [1, 2, 3]


def test_resume_rechecks_permissions(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        rt.start("r", dict(START), faults=Faults(stop_after_step=2))  # pay-3 is planned
    with runtime(db, world, permissions={"read"}) as rt, pytest.raises(RuntimeRefusal) as e:
        rt.resume("r")
    assert "no longer permitted" in str(e.value)
    with runtime(db, world) as rt:
        rt.resume("r")
    assert checkpoints(db)[3]["metadata"]["resume"]["permissions"] == {
        "pay": "allowed",
        "read": "allowed",
    }


def test_timeout_is_resolved_by_key_not_repeated(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        result = rt.start("r", dict(START), faults=Faults(timeout=("pay", 3)))
    assert result.status == "failed"
    head = checkpoints(db)[-1]
    assert head["pending_effects"][0]["status"] == "unknown"
    assert rows(db, "SELECT status FROM effects")[0]["status"] == "unknown"
    with runtime(db, world) as rt:
        assert rt.resume("r").status == "completed"
    assert len(world.payments["pay-3"]) == 1
    assert rows(db, "SELECT status FROM effects")[0]["status"] == "committed"


def test_resume_from_older_checkpoint_does_not_repeat_writes(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        rt.start("r", dict(START), faults=Faults(stop_after_step=4))
    with runtime(db, world) as rt:
        rt.resume("r", from_step=2)
    assert len(world.payments["pay-3"]) == 1
    with runtime(db, world) as rt:  # the fault: ignore what was written
        rt.resume("r", from_step=2, faults=Faults(ignore_recorded_effects=True))
    assert len(world.payments["pay-3"]) == 2


def test_parked_run_needs_input(tmp_path: Path) -> None:
    class Asks:
        name = "asks"

        def is_done(self, state: dict[str, Any]) -> bool:
            return bool(state.get("answer"))

        def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
            state["asked"] = True
            return state

        def interrupt(self, state: dict[str, Any]) -> dict[str, Any] | None:
            return (
                {"reason": "need a yes"} if state.get("asked") and not state.get("answer") else None
            )

        def on_input(self, state: dict[str, Any], value: Any) -> dict[str, Any]:
            state["answer"] = value
            return state

    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world, agent=Asks()) as rt:
        assert rt.start("r", {}).status == "parked"
        with pytest.raises(RuntimeRefusal):
            rt.resume("r")
        assert rt.resume("r", input="yes").status == "completed"
    head = checkpoints(db)[-1]
    assert head["metadata"]["resume"]["input"] == "yes"
    assert head["metadata"]["resume"]["parked_since"].startswith("2026-03-01")


def test_completed_run_is_not_resumed(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world) as rt:
        rt.start("r", dict(START))
        with pytest.raises(RuntimeRefusal):
            rt.resume("r")
        with pytest.raises(RuntimeRefusal):
            rt.resume("missing")


def test_schema_migration_on_resume(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world, schema_version=1) as rt:
        rt.start("r", {"n": 0, "paid": [], "old": True}, faults=Faults(stop_after_step=1))
    no_path = types.ModuleType("m")
    with runtime(db, world, migrations=no_path) as rt, pytest.raises(RuntimeRefusal) as e:
        rt.resume("r")
    assert "restart" in str(e.value)
    mig = types.ModuleType("mig")
    mig.v1_to_v2 = lambda s: {"n": s["n"], "paid": s["paid"]}  # type: ignore[attr-defined]
    with runtime(db, world, migrations=mig) as rt:
        assert rt.resume("r").status == "completed"
    cps = checkpoints(db)
    assert cps[2]["metadata"]["resume"]["migrated_from"] == 1
    assert "old" in cps[1]["working_state"] and "old" not in cps[2]["working_state"]


def test_a_failing_migration_refuses_the_resume_and_leaves_the_state(tmp_path: Path) -> None:
    db, world = tmp_path / "runs.sqlite", World()
    with runtime(db, world, schema_version=1) as rt:
        rt.start("r", {"n": 0, "paid": [], "old": True}, faults=Faults(stop_after_step=1))

    def v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
        state.pop("old")  # mutates its argument: the stored state must not see it
        raise KeyError("paid_total")

    mig = types.ModuleType("mig")
    mig.v1_to_v2 = v1_to_v2  # type: ignore[attr-defined]
    with runtime(db, world, migrations=mig) as rt, pytest.raises(RuntimeRefusal) as e:
        rt.resume("r")
    assert "mig.v1_to_v2 failed: KeyError" in str(e.value)
    assert "migration failed" in str(e.value)
    assert "old" in checkpoints(db)[-1]["working_state"]
    mig.CURRENT_VERSION = 3  # type: ignore[attr-defined]
    with runtime(db, world, migrations=mig) as rt, pytest.raises(RuntimeRefusal) as e:
        rt.resume("r")
    assert "CURRENT_VERSION 3" in str(e.value)
