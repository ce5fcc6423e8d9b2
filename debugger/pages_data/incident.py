"""The Timeline's run-level data: where the run stopped, what it attempted after its last
checkpoint, budgets over its steps, and the links from one step to the other pages.

Deep links are checked here too: a link that names a run, step or checkpoint the store does
not have gets a sentence naming what was asked, never another run or step in its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from debugger.contract import BUDGETS
from debugger.model import Run
from debugger.pages_data.timeline import StepRef, previous_ref
from debugger.report.incident import failure_step, unrecorded_step
from debugger.store import Store


@dataclass(frozen=True)
class RunFacts:
    """What the Timeline marks on a run, JSON-ready."""

    failure_step: int | None
    """The step where it failed, crashed, parked or ran out of budget (its last)."""
    unrecorded_step: int | None
    """A step attempted after the last checkpoint (its calls are recorded, it is not)."""
    budgets: list[dict[str, Any]]
    """One point per checkpoint in write order: step_index and each budget consumed."""
    limits: dict[str, Any]
    """The run's limits (``metadata.limits`` at the head)."""


def run_facts(store: Store, run: Run) -> RunFacts:
    """The Timeline's marks for ``run``."""
    frame = store.timeline(run.run_id)
    cols = ["step_index", *BUDGETS]
    points = [
        {c: int(v) for c, v in zip(cols, values, strict=True)}
        for values in zip(*(frame[c].tolist() for c in cols), strict=True)
    ]
    unrecorded = None
    if run.status == "crashed":
        unrecorded = unrecorded_step(run, store.effects(run.run_id), store.tool_calls(run.run_id))
    return RunFacts(failure_step(run), unrecorded, points, dict(run.limits or {}))


def missing_run(run_id: str) -> str:
    """The sentence for a link to a run the store does not have."""
    return f"No run {run_id!r} in this store. Hint: pick a run below, or open the Runs page."


def missing_step(
    run_id: str, refs: list[StepRef], step: int | None, checkpoint_id: str | None
) -> str | None:
    """The sentence for a link to a step or checkpoint the run does not have (None: it has
    it, or the link names neither)."""
    if checkpoint_id and not any(r.checkpoint_id == checkpoint_id for r in refs):
        return f"Run {run_id!r} has no checkpoint {checkpoint_id!r}."
    if checkpoint_id is None and step is not None and not any(r.step_index == step for r in refs):
        steps = sorted({r.step_index for r in refs})
        have = f"steps {steps[0]}–{steps[-1]}" if steps else "no checkpoints"
        return f"Run {run_id!r} has no step {step} (it has {have})."
    return None


def step_mark(ref: StepRef, last: bool, facts: RunFacts, findings: Any) -> str:
    """The navigator's label of a step: ⚠ where the audit found something, and the status
    at the step where the run stopped."""
    label = ref.label + (" ⚠" if ref.step_index in findings else "")
    if last and facts.failure_step == ref.step_index:
        label += " ✖ stopped here"
    return label


def step_links(run_id: str, refs: list[StepRef], pos: int) -> dict[str, dict[str, str]]:
    """From one step to the other pages: its diff with the previous step, the run's audit,
    a replay from this step. Page URL path -> query."""
    ref = refs[pos]
    links: dict[str, dict[str, str]] = {}
    prev = previous_ref(refs, pos)
    if prev is not None:
        links["diff"] = {"a": spec(run_id, refs, prev), "b": spec(run_id, refs, ref)}
    links["audit"] = {"run": run_id}
    links["replay"] = {"run": run_id, "step": str(ref.step_index)}
    return links


def spec(run_id: str, refs: list[StepRef], ref: StepRef) -> str:
    """The readable ``RUN:STEP`` form of a checkpoint, or ``RUN@CHECKPOINT`` where the step
    was written more than once (a fork)."""
    alone = sum(1 for r in refs if r.step_index == ref.step_index) == 1
    return f"{run_id}:{ref.step_index}" if alone else f"{run_id}@{ref.checkpoint_id}"
