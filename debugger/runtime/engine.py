"""The loop: run an agent step by step, checkpointing after every iteration, and resume it.

The resume contract this keeps (docs/runtime.md):

* a checkpoint after every loop iteration, in one transaction with its tape and effects;
* budgets consumed (steps, tokens, wall clock) are carried in each checkpoint and re-checked
  on resume against the limits, never reset;
* completed steps are never executed again: a resume continues after the checkpoint;
* every effect whose outcome is not known (pending or timed out) is resolved through its
  idempotency key against the system of record before the loop goes on;
* tool permissions are checked again on resume; model and tool versions are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from debugger.contract import BUDGET_LIMITS, Agent
from debugger.runtime.clock import Clock, SystemClock, elapsed_ms, iso
from debugger.runtime.context import RecordingContext, Session
from debugger.runtime.resume import prepare_resume
from debugger.runtime.spec import (
    BudgetExhausted,
    Faults,
    Limits,
    Model,
    RunResult,
    RuntimeRefusal,
    SimulatedCrash,
    Tool,
)
from debugger.runtime.storage import RunDatabase, dumps

RUNTIME_NAME = "stepscope.runtime/1"


@dataclass
class Consumed:
    """Budgets consumed so far in the run."""

    tokens: int = 0
    steps: int = 0
    wall_clock_ms: int = 0

    def exhausted(self, limits: Limits) -> str | None:
        """The first budget that reached its limit, or None."""
        for name in BUDGET_LIMITS.values():  # the attributes here are named as the limits
            used, limit = getattr(self, name), getattr(limits, name)
            if limit is not None and used >= limit:
                return name
        return None

    def as_dict(self) -> dict[str, int]:
        return {spent: getattr(self, name) for spent, name in BUDGET_LIMITS.items()}


@dataclass
class _Cursor:
    """Where the loop is: the last checkpoint written and what it carried."""

    state: Any
    step_index: int
    checkpoint_id: str
    checkpoint_seq: int
    consumed: Consumed


class Runtime:
    """Runs an agent (``step(state, ctx) -> state``, ``is_done(state)``) with checkpoints.

    Optional agent hooks, used when present: ``planned_effects(state)`` (writes the agent has
    decided on but not made; listed as pending in the checkpoint), ``interrupt(state)`` (a
    dict to park the run for human input) and ``on_input(state, value)`` (applies that input
    on resume).

    Args:
        db_path: SQLite file to write (created if missing; many runs may share it).
        agent: an Agent (``debugger.contract``): ``step(state, ctx)`` and ``is_done(state)``.
        tools: tools the agent may call.
        model: the model behind ``ctx.model``.
        limits: budget limits, stored in ``metadata.limits``.
        clock: where time comes from (default: the system clock).
        permissions: names of the tools this run may use (default: all registered).
        agent_name: ``metadata.agent`` (default: the agent's ``name`` attribute or class).
        schema_version: state-schema version written (default: the agent's
            ``schema_version`` attribute, else None).
        migrations: a module with ``CURRENT_VERSION`` and ``vN_to_vM`` functions, used to
            migrate an older checkpoint's state on resume.
        metadata: extra keys merged into every checkpoint's metadata.
        synchronous: SQLite's ``synchronous`` setting; FULL (default) makes each committed
            checkpoint survive a power cut, OFF is for scratch files and tests.
    """

    def __init__(
        self,
        db_path: str | Path,
        agent: Agent,
        *,
        tools: list[Tool] | tuple[Tool, ...] = (),
        model: Model | None = None,
        limits: Limits | None = None,
        clock: Clock | None = None,
        permissions: set[str] | frozenset[str] | None = None,
        agent_name: str | None = None,
        schema_version: int | None = None,
        migrations: ModuleType | None = None,
        metadata: dict[str, Any] | None = None,
        synchronous: str = "FULL",
    ) -> None:
        self.db = RunDatabase(db_path, synchronous)
        self.agent = agent
        self.tools = {t.name: t for t in tools}
        self.model = model
        self.limits = limits or Limits()
        self.clock: Clock = clock or SystemClock()
        self.permissions = frozenset(permissions) if permissions is not None else None
        self.agent_name = agent_name or getattr(agent, "name", None) or type(agent).__name__
        self.schema_version = (
            schema_version if schema_version is not None else getattr(agent, "schema_version", None)
        )
        self.migrations = migrations
        self.extra_metadata = dict(metadata or {})

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the SQLite file."""
        self.db.close()

    # -- public API -------------------------------------------------------------------------

    def start(self, run_id: str, state: Any, *, faults: Faults | None = None) -> RunResult:
        """Start a new run from ``state``: checkpoint 0 holds it, then the loop runs.

        Raises:
            RuntimeRefusal: the run id is already used.
            SimulatedCrash: a crash fault fired (nothing after it is written).
        """
        if self.db.has_run(run_id):
            raise RuntimeRefusal(f"run {run_id!r} already exists", "resume it, or pick a new id")
        session = self._session(run_id, faults or Faults(), next_seq=1)
        cursor = _Cursor(_copy(state), 0, "", 0, Consumed())
        cursor.checkpoint_id = self._write(session, cursor, None, [], [], {})
        return self._loop(session, cursor, {})

    def resume(
        self,
        run_id: str,
        *,
        input: Any = None,
        from_step: int | None = None,
        faults: Faults | None = None,
    ) -> RunResult:
        """Continue a run after its last checkpoint (or after the one at ``from_step``).

        Raises:
            RuntimeRefusal: no such run, it is completed, it is parked and no input was
                given, a pending effect cannot be resolved, or its tool is not permitted.
            BudgetExhausted: a consumed budget already reached its limit.
        """
        faults = faults or Faults()
        ck_seq, call_seq = self.db.next_seqs(run_id)
        session = self._session(run_id, faults, next_seq=call_seq)
        plan = prepare_resume(self, session, run_id, input, from_step, faults)
        consumed = (
            Consumed()
            if faults.reset_budgets
            else Consumed(
                plan.checkpoint.tokens_spent,
                plan.checkpoint.steps_spent,
                plan.checkpoint.wall_clock_ms,
            )
        )
        which = consumed.exhausted(self.limits)
        if which is not None:
            raise BudgetExhausted(
                f"run {run_id!r} already used its {which} budget "
                f"({consumed.as_dict()} against limits {self.limits.as_dict()})",
                "raise the limit deliberately (Runtime(limits=...)) or close the run",
            )
        cursor = _Cursor(
            plan.state,
            plan.checkpoint.step_index,
            plan.checkpoint.checkpoint_id,
            ck_seq - 1,
            consumed,
        )
        return self._loop(session, cursor, {"resume": plan.record}, retry=plan.retry_step)

    # -- the loop ---------------------------------------------------------------------------

    def _session(self, run_id: str, faults: Faults, next_seq: int) -> Session:
        return Session(
            run_id=run_id,
            db=self.db,
            tools=self.tools,
            model=self.model,
            clock=self.clock,
            faults=faults,
            allowed=self.permissions,
            next_seq=next_seq,
        )

    def _loop(
        self, session: Session, cursor: _Cursor, first_meta: dict[str, Any], retry: bool = False
    ) -> RunResult:
        meta = first_meta
        if meta and self.agent.is_done(cursor.state):
            # the resume's input finished the run: record it, at the same step position
            meta = {**meta, "status": "completed"}
            cursor.checkpoint_id = self._write(session, cursor, cursor.checkpoint_id, [], [], meta)
            return self._result(session.run_id, cursor, "completed")
        while not self.agent.is_done(cursor.state):
            if cursor.consumed.exhausted(self.limits) is not None:
                return self._result(session.run_id, cursor, "budget_exhausted")
            step = cursor.step_index if retry else cursor.step_index + 1
            retry = False
            status = self._one_step(session, cursor, step, meta)
            meta = {}
            if status is not None:
                return self._result(session.run_id, cursor, status)
            if session.faults.stop_after_step == step:
                return self._result(session.run_id, cursor, "in_progress")
        return self._result(session.run_id, cursor, "completed")

    def _one_step(
        self, session: Session, cursor: _Cursor, step: int, meta: dict[str, Any]
    ) -> str | None:
        ctx = RecordingContext(session, step)
        started = self.clock.now()
        meta = dict(meta)
        try:
            new_state = _copy(self.agent.step(_copy(cursor.state), ctx))
        except SimulatedCrash:
            raise
        except Exception as e:  # the agent's failure is recorded, not raised
            new_state = cursor.state
            meta |= {"status": "failed", "error": f"{type(e).__name__}: {e}", "failed_step": step}
        cursor.consumed = Consumed(
            cursor.consumed.tokens + ctx.tokens,
            cursor.consumed.steps + 1,
            cursor.consumed.wall_clock_ms + elapsed_ms(started, self.clock.now()),
        )
        cursor.state, cursor.step_index = new_state, step
        if ctx.deduplicated:
            meta["deduplicated_effects"] = ctx.deduplicated
        if "status" not in meta:
            meta |= self._status_after(cursor)
        cursor.checkpoint_id = self._write(
            session, cursor, cursor.checkpoint_id, ctx.calls, ctx.outcomes, meta, ctx.unknown
        )
        status = meta.get("status")
        return str(status) if status is not None else None

    def _status_after(self, cursor: _Cursor) -> dict[str, Any]:
        if self.agent.is_done(cursor.state):
            return {"status": "completed"}
        interrupt = getattr(self.agent, "interrupt", None)
        request = interrupt(cursor.state) if interrupt is not None else None
        if request:
            return {"status": "parked", "interrupt": {**request, "since": iso(self.clock.now())}}
        which = cursor.consumed.exhausted(self.limits)
        if which is not None:
            return {"status": "budget_exhausted", "exhausted": which}
        return {}

    def _write(
        self,
        session: Session,
        cursor: _Cursor,
        parent_id: str | None,
        calls: list[dict[str, Any]],
        outcomes: list[tuple[str, str, Any]],
        meta: dict[str, Any],
        unknown: list[dict[str, Any]] | None = None,
    ) -> str:
        seq = cursor.checkpoint_seq + (1 if parent_id is not None else 0)
        cursor.checkpoint_seq = seq
        checkpoint_id = f"{session.run_id}/c{seq:03d}"
        self.db.commit_step(
            self._row(session.run_id, checkpoint_id, parent_id, cursor, meta, unknown or []),
            calls,
            outcomes,
        )
        return checkpoint_id

    def _row(
        self,
        run_id: str,
        checkpoint_id: str,
        parent_id: str | None,
        cursor: _Cursor,
        meta: dict[str, Any],
        unknown: list[dict[str, Any]],
    ) -> dict[str, Any]:
        metadata = {
            "agent": self.agent_name,
            "limits": self.limits.as_dict(),
            "runtime": RUNTIME_NAME,
            **self.extra_metadata,
            **meta,
        }
        return {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "parent_id": parent_id,
            "checkpoint_seq": cursor.checkpoint_seq,
            "step_index": cursor.step_index,
            "schema_version": self.schema_version,
            "created_at": iso(self.clock.now()),
            "working_state": dumps(cursor.state),
            **cursor.consumed.as_dict(),
            "pending_effects": dumps(self._pending(cursor.state, unknown)),
            "model_version": self.model.version if self.model else None,
            "tool_versions": dumps({name: t.version for name, t in sorted(self.tools.items())}),
            "metadata": dumps(metadata),
        }

    def _pending(self, state: Any, unknown: list[dict[str, Any]]) -> list[dict[str, Any]]:
        planned = getattr(self.agent, "planned_effects", None)
        out = list(unknown)
        keys = {e.get("idempotency_key") for e in out}
        for effect in planned(state) if planned is not None else []:
            if effect.get("idempotency_key") not in keys:
                out.append({"status": "pending", **effect})
        return out

    def _result(self, run_id: str, cursor: _Cursor, status: str) -> RunResult:
        return RunResult(
            run_id=run_id,
            status=status,
            step_index=cursor.step_index,
            state=cursor.state,
            checkpoint_id=cursor.checkpoint_id,
            budgets=cursor.consumed.as_dict(),
        )


def _copy(state: Any) -> Any:
    """A deep, JSON-clean copy: the agent never mutates a state already checkpointed."""
    return orjson.loads(orjson.dumps(state))
