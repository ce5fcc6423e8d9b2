"""What a resume checks before the loop goes on.

In order: the checkpoint to continue from exists and is not completed; a parked run gets
its input; the state is migrated to the agent's schema version (or the resume is refused:
restart required); tool permissions are checked again; every effect whose outcome is not
known is resolved through its idempotency key against the system of record. The findings go
into ``metadata.resume`` of the first checkpoint written after the resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from debugger.errors import MigrationError
from debugger.migrations import migrate_state, registry_from_module
from debugger.runtime.clock import iso
from debugger.runtime.context import Session
from debugger.runtime.spec import Faults, RuntimeRefusal
from debugger.runtime.storage import StoredCheckpoint

if TYPE_CHECKING:
    from debugger.runtime.engine import Runtime


@dataclass
class ResumePlan:
    """The checkpoint to continue from, the state to continue with, and what was checked."""

    checkpoint: StoredCheckpoint
    state: Any
    retry_step: bool
    record: dict[str, Any] = field(default_factory=dict)


def prepare_resume(
    rt: Runtime, session: Session, run_id: str, value: Any, from_step: int | None, faults: Faults
) -> ResumePlan:
    """Load the checkpoint and run every check a resume owes; see the module docstring."""
    ck = rt.db.checkpoint(run_id, from_step)
    if ck is None:
        where = f" at step {from_step}" if from_step is not None else ""
        raise RuntimeRefusal(f"run {run_id!r} has no checkpoint{where}", "check the run id")
    status = ck.metadata.get("status")
    if status == "completed" and from_step is None:
        raise RuntimeRefusal(f"run {run_id!r} is completed", "start a new run instead")
    record: dict[str, Any] = {
        "from_checkpoint_id": ck.checkpoint_id,
        "from_step": ck.step_index,
        "at": iso(rt.clock.now()),
    }
    state = _migrate(rt, ck, record)
    state = _apply_input(rt, ck, state, value, record)
    record["permissions"] = _check_permissions(rt, ck)
    if ck.model_version != (rt.model.version if rt.model else None):
        record["model_version_before"] = ck.model_version
    record["resolved_effects"] = (
        [] if faults.ignore_recorded_effects else _resolve(rt, session, run_id, ck)
    )
    return ResumePlan(ck, state, retry_step=status == "failed", record=record)


def _migrate(rt: Runtime, ck: StoredCheckpoint, record: dict[str, Any]) -> Any:
    have, want = ck.schema_version, rt.schema_version
    if have == want or want is None:
        return ck.state
    if rt.migrations is None:
        raise RuntimeRefusal(
            f"checkpoint {ck.checkpoint_id} has state schema v{have}, the agent writes v{want}",
            "pass migrations= with the vN_to_vM functions, or restart the run",
        )
    # the same rule as the audit and `stepscope migrate`: a missing step is restart required
    try:
        registry = registry_from_module(rt.migrations, current_version=want)
        state, _ = migrate_state(ck.state, have, registry)
    except MigrationError as e:
        raise RuntimeRefusal(
            f"checkpoint {ck.checkpoint_id}: {e.message}", f"{e.title.lower()}: {e.hint}"
        ) from e
    record["migrated_from"] = have
    return state


def _apply_input(
    rt: Runtime, ck: StoredCheckpoint, state: Any, value: Any, record: dict[str, Any]
) -> Any:
    parked = ck.metadata.get("status") == "parked"
    if parked and value is None:
        raise RuntimeRefusal(
            f"run is parked ({ck.metadata.get('interrupt', {}).get('reason', 'waiting')})",
            "resume it with input=... (the approval or answer it waits for)",
        )
    if not parked:
        if value is not None:
            raise RuntimeRefusal("the run is not waiting for input", "resume without input")
        return state
    on_input = getattr(rt.agent, "on_input", None)
    if on_input is None:
        raise RuntimeRefusal("the agent has no on_input(state, value) hook", "add one")
    record["input"] = value
    record["parked_since"] = ck.metadata.get("interrupt", {}).get("since")
    return on_input(state, value)


def _check_permissions(rt: Runtime, ck: StoredCheckpoint) -> dict[str, str]:
    """Every tool's permission as of now; a pending effect on a revoked tool stops the resume."""
    allowed = rt.permissions
    verdict = {
        name: "allowed" if allowed is None or name in allowed else "denied"
        for name in sorted(rt.tools)
    }
    for effect in ck.pending_effects:
        tool = str(effect.get("tool"))
        if verdict.get(tool) != "allowed":
            raise RuntimeRefusal(
                f"pending effect {effect.get('idempotency_key')!r} uses tool {tool!r}, which "
                "is no longer permitted",
                "re-authorize the tool, or close the run by hand",
            )
    return verdict


def _resolve(
    rt: Runtime, session: Session, run_id: str, ck: StoredCheckpoint
) -> list[dict[str, Any]]:
    """Ask the system of record about each open effect by key; remember what was committed."""
    for row in rt.db.effects(run_id, ("committed",)):
        if row["idempotency_key"] is not None:
            session.known[row["idempotency_key"]] = row["result"]
    open_effects = [*ck.pending_effects, *rt.db.effects(run_id, ("pending", "unknown"))]
    resolved: list[dict[str, Any]] = []
    seen: set[str] = set()
    for effect in open_effects:
        key, tool_name = effect.get("idempotency_key"), str(effect.get("tool"))
        if key is None:
            raise RuntimeRefusal(
                f"an open {tool_name} effect has no idempotency key",
                "check the system of record by hand; nothing can be verified automatically",
            )
        if key in seen or key in session.known:
            continue
        seen.add(key)
        resolved.append(_resolve_one(rt, session, run_id, key, tool_name))
    return resolved


def _resolve_one(
    rt: Runtime, session: Session, run_id: str, key: str, tool_name: str
) -> dict[str, Any]:
    tool = rt.tools.get(tool_name)
    if tool is None or tool.lookup is None:
        raise RuntimeRefusal(
            f"cannot verify effect {key!r}: tool {tool_name!r} has no lookup",
            "give the Tool a lookup(key) that asks the system of record",
        )
    found = tool.lookup(key)
    if found is not None:
        session.known[key] = found
        rt.db.resolve_effects(run_id, key, "committed", found)
        return {"idempotency_key": key, "tool": tool_name, "outcome": "committed"}
    rt.db.resolve_effects(run_id, key, "failed", {"resolution": "not in the system of record"})
    return {"idempotency_key": key, "tool": tool_name, "outcome": "not_executed"}
