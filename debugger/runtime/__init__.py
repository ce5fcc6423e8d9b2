"""A small checkpointing runtime: make any plain-Python agent resumable and debuggable.

An agent is an object with ``step(state, ctx) -> state`` and ``is_done(state) -> bool``; every
tool call, keyed write and model call goes through ``ctx``. :class:`Runtime` runs it, writes
a checkpoint after every loop iteration in Stepscope's native SQLite shape, and resumes it
without re-executing completed work. See docs/runtime.md.
"""

from __future__ import annotations

from debugger.runtime.clock import Clock, ManualClock, SystemClock
from debugger.runtime.context import RecordingContext
from debugger.runtime.engine import Runtime
from debugger.runtime.spec import (
    BudgetExhausted,
    Faults,
    Limits,
    Model,
    PermissionDenied,
    RunResult,
    RuntimeRefusal,
    SimulatedCrash,
    Tool,
    ToolTimeout,
)

__all__ = [
    "BudgetExhausted",
    "Clock",
    "Faults",
    "Limits",
    "ManualClock",
    "Model",
    "PermissionDenied",
    "RecordingContext",
    "RunResult",
    "Runtime",
    "RuntimeRefusal",
    "SimulatedCrash",
    "SystemClock",
    "Tool",
    "ToolTimeout",
]
