"""What a run is made of: tools, the model, limits, fault injection, and the runtime's errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from debugger.errors import StepscopeError


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call through ``ctx.tool`` (read) or ``ctx.effect`` (keyed write).

    ``lookup`` matters for writes: given an idempotency key it asks the system of record
    whether the write happened (returning its record) or not (returning None). The runtime
    calls it on resume for every effect whose outcome it does not know, so an effect is
    checked, never blindly repeated.
    """

    name: str
    """Name the agent calls it by."""
    fn: Callable[..., Any]
    """The implementation: ``fn(**args)`` for reads, ``fn(key, **args)`` for writes."""
    version: str = "0"
    """Recorded in every checkpoint's ``tool_versions``."""
    write: bool = False
    """True for tools with side effects (called through ``ctx.effect`` with a key)."""
    lookup: Callable[[str], Any] | None = None
    """For writes: the system of record's answer for a key, or None if it never happened."""


@dataclass(frozen=True)
class Model:
    """The model the agent calls through ``ctx.model(request)``.

    ``fn(request)`` returns a dict whose ``usage`` holds ``input_tokens``, ``output_tokens``
    and ``total_tokens``; the runtime charges ``total_tokens`` to the token budget.
    """

    name: str
    """Model name (the tape's ``name`` for model calls)."""
    version: str
    """Recorded in each checkpoint's ``model_version``."""
    fn: Callable[[dict[str, Any]], dict[str, Any]]
    """The call itself."""


@dataclass(frozen=True)
class Limits:
    """Budget limits; None means unlimited. Stored in ``metadata.limits``."""

    tokens: int | None = None
    """Model tokens for the whole run (across resumes)."""
    steps: int | None = None
    """Loop iterations for the whole run."""
    wall_clock_ms: int | None = None
    """Milliseconds spent inside steps (time parked between steps does not count)."""

    def as_dict(self) -> dict[str, int]:
        """The limits that are set, as stored in ``metadata.limits``."""
        d = {"tokens": self.tokens, "steps": self.steps, "wall_clock_ms": self.wall_clock_ms}
        return {k: v for k, v in d.items() if v is not None}


@dataclass(frozen=True)
class Faults:
    """Fault injection, for building incident histories on purpose (tests, the sample).

    None of these is ever on by default; each reproduces a real failure mode so that the
    history it leaves behind can be studied.
    """

    crash_after_effect: tuple[str, int] | None = None
    """``(tool, step)``: die right after that write executed, before the checkpoint."""
    stop_after_step: int | None = None
    """Die right after the checkpoint of this step (the process was killed between steps)."""
    timeout: tuple[str, int] | None = None
    """``(tool, step)``: the call reaches the system but the reply is lost (unknown outcome)."""
    reset_budgets: bool = False
    """A naive resume that starts the consumed budgets from zero again."""
    ignore_recorded_effects: bool = False
    """A resume that ignores what was already written (re-executes completed writes)."""
    timeout_ms: int = 30_000
    """How long the injected timeout is said to have waited."""


@dataclass(frozen=True)
class RunResult:
    """Where a call to :meth:`Runtime.start` or :meth:`Runtime.resume` left the run."""

    run_id: str
    """The run."""
    status: str
    """completed, parked, failed, budget_exhausted, or in_progress (stopped between steps)."""
    step_index: int
    """Step of the last checkpoint written."""
    state: Any
    """Working state at that checkpoint."""
    checkpoint_id: str
    """Its id."""
    budgets: dict[str, int] = field(default_factory=dict)
    """Consumed budgets at that checkpoint."""


class RuntimeRefusal(StepscopeError):
    """The runtime will not start or resume a run (what is wrong and what to do)."""

    title = "Runtime refused"


class BudgetExhausted(RuntimeRefusal):
    """A consumed budget already reached its limit; resuming would overspend it."""

    title = "Budget exhausted"


class PermissionDenied(StepscopeError):
    """The agent called a tool it is not allowed to use (raised inside ``ctx``)."""

    title = "Tool not permitted"


class ToolTimeout(StepscopeError):
    """A call got no answer in time; for a write its outcome is unknown."""

    title = "Tool timed out"
    exit_code = 1


class SimulatedCrash(BaseException):
    """Raised by a crash fault. A BaseException so no agent ``except Exception`` swallows it:
    it stands for the process dying, and the runtime writes nothing after it."""
