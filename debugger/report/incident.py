"""What a reviewer asks first of a run, in words: why this status, where it went wrong.

Shared by the app's pages (through :mod:`debugger.pages_data`) and the incident report, so
the Runs list, the Timeline and the HTML file say the same thing the same way.
"""

from __future__ import annotations

import re

from debugger.model import Effect, Run, ToolCall

STOPPED_STATUSES = frozenset({"failed", "crashed", "parked", "budget_exhausted"})
"""Statuses whose last checkpoint is where the run stopped (the step to look at)."""

_STALE = re.compile(r"no terminal status and no checkpoint for over (\d+) s")
_IN_FLIGHT = re.compile(r"stopped with (\d+) effect\(s\) in flight")


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return "an hour" if hours == 1 else f"{hours} hours"
    if seconds % 60 == 0:
        return f"{seconds // 60} minutes"
    return f"{seconds} s"


def human_reason(run: Run) -> str:
    """Why the run has its status, written for people (the store's reason, reworded)."""
    reason = run.status_reason or ""
    at = f"the last checkpoint (step {run.last_step})"
    status = run.status.replace("_", " ")
    if reason == "metadata.status at the head checkpoint":
        return f"{at} says {status}"
    if reason == "error at the head checkpoint":
        return f"{at} records an error"
    if m := _STALE.fullmatch(reason):
        return f"no final status, and no checkpoint for over {_duration(int(m.group(1)))}"
    if m := _IN_FLIGHT.fullmatch(reason):
        n = int(m.group(1))
        return f"stopped after step {run.last_step} with {n} effect{'s' * (n != 1)} in flight"
    return reason


def failure_step(run: Run) -> int | None:
    """The step where the run failed, crashed, parked or ran out of budget (None: it did not
    stop there)."""
    return run.last_step if run.status in STOPPED_STATUSES else None


def unrecorded_step(run: Run, effects: list[Effect], calls: list[ToolCall]) -> int | None:
    """The step the run attempted after its last checkpoint, if any: a crash in flight.

    The effects log and the tape are written as calls happen, the checkpoint only when a step
    ends, so a call at a later step than the last checkpoint is a step that started and was
    never checkpointed.
    """
    later = [e.step_index for e in effects if e.step_index > run.last_step]
    later += [c.step_index for c in calls if c.step_index > run.last_step]
    return max(later) if later else None


def unrecorded_sentence(step: int) -> str:
    """The Timeline's and the report's sentence for :func:`unrecorded_step`."""
    return (
        f"Step {step} was attempted and never checkpointed: its calls and effects are "
        "recorded, its result is not."
    )
