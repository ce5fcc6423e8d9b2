"""Audit rules about the contract's items, the step order and the budgets.

Every rule takes an :class:`AuditInput` and returns findings; docs/audit.md explains each rule
with an example, in registration order. The rules never touch the store: ``debugger.audit``
loads the records, so notebooks and tests can audit hand-built records too.
"""

from __future__ import annotations

from collections.abc import Callable

from debugger.audit.registry import AuditInput, rule
from debugger.audit.registry import finding as _finding
from debugger.audit.state import prose_state
from debugger.contract import BUDGET_LIMITS, BUDGETS
from debugger.model import Checkpoint, Finding

__all__ = ["prose_state", "unplaced"]


# -- the six items ------------------------------------------------------------------------


def _has_budgets(c: Checkpoint, first: bool) -> bool:
    b = c.budgets
    # The store reads a missing budget as 0: all three zero after the first step means none
    # was recorded (a step always takes some wall clock).
    return first or c.step_index <= 0 or any(getattr(b, name) for name in BUDGETS)


ITEMS: tuple[tuple[str, str, Callable[[AuditInput, Checkpoint, bool], bool], str], ...] = (
    ("missing-schema-version", "a schema version",
     lambda _, c, __: c.schema_version is not None,
     "have the runtime write schema_version into every checkpoint"),
    ("missing-working-state", "a structured working state",
     lambda inp, c, _: inp.facts(c).structured or inp.runtime.state_elsewhere(c),
     "checkpoint the working state as a JSON object"),
    ("missing-budgets", "budgets consumed (tokens, steps, wall clock)",
     lambda _, c, first: _has_budgets(c, first),
     "record tokens_spent, steps_spent and wall_clock_ms cumulatively in every checkpoint"),
    ("missing-run-metadata", "run metadata (model and tool versions)",
     lambda _, c, __: bool(c.model_version) and bool(c.tool_versions),
     "record model_version and tool_versions in every checkpoint"),
)  # fmt: skip


@rule(
    "missing-schema-version",
    "missing-step-position",
    "missing-working-state",
    "missing-budgets",
    "missing-run-metadata",
)
def missing_items(inp: AuditInput) -> list[Finding]:
    """A checkpoint on the audited path lacks one of the six items of the contract."""
    out = []
    first_id = inp.lineage[0].checkpoint_id
    for rule_id, item, present, hint in ITEMS:
        bad = [c for c in inp.lineage if not present(inp, c, c.checkpoint_id == first_id)]
        if not bad:
            continue
        at_head = bad[-1] is inp.head
        # an item the runtime has no place for is a gap to close, not a broken checkpoint
        uncarried = inp.runtime.uncarried.get(rule_id)
        where = (
            "including the head" if at_head else f"the head at step {inp.head.step_index} has it"
        )
        out.append(
            _finding(
                rule_id, "error" if at_head and not uncarried else "warning", bad[0].step_index,
                f"{len(bad)} of {len(inp.lineage)} checkpoints lack {item} (first at step "
                f"{bad[0].step_index}; {where})", uncarried or hint,
            )
        )  # fmt: skip
    return out


@rule("prose-state")
def prose_rule(inp: AuditInput) -> list[Finding]:
    """Working state that is prose rather than structure."""
    bad = [c for c in inp.lineage if inp.facts(c).prose and not inp.runtime.state_elsewhere(c)]
    if not bad:
        return []
    return [
        _finding(
            "prose-state", "error" if bad[-1] is inp.head else "warning", bad[0].step_index,
            f"the working state of {len(bad)} checkpoint(s) is free text rather than fields "
            f"(first at step {bad[0].step_index})",
            "keep decisions, ids and amounts as JSON fields; a resume cannot parse prose",
        )
    ]  # fmt: skip


def unplaced(checkpoints: list[Checkpoint]) -> Finding | None:
    """The ``missing-step-position`` finding when checkpoints lack a step, else None.

    Without step positions no order-based rule can run, so the audit checks this before the
    other rules and stops there.
    """
    bad = [c for c in checkpoints if not isinstance(c.step_index, int)]
    if not bad:
        return None
    return _finding(
        "missing-step-position", "error", None,
        f"{len(bad)} of {len(checkpoints)} checkpoints lack a step position "
        f"(first: checkpoint {bad[0].checkpoint_id})",
        "have the runtime write step_index into every checkpoint",
    )  # fmt: skip


# -- steps --------------------------------------------------------------------------------


@rule("step-gap")
def step_gaps(inp: AuditInput) -> list[Finding]:
    """A step on the audited path has no checkpoint."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        if child.step_index > parent.step_index + 1:
            missing = f"{parent.step_index + 1}–{child.step_index - 1}"
            out.append(
                _finding(
                    "step-gap", "warning", child.step_index,
                    f"no checkpoint for step(s) {missing} between steps {parent.step_index} "
                    f"and {child.step_index}",
                    "checkpoint after every loop iteration, or a crash there loses that work",
                )
            )  # fmt: skip
    return out


@rule("step-backwards", "step-repeated")
def step_order(inp: AuditInput) -> list[Finding]:
    """Steps going backwards and completed steps executed again (in write order).

    A fork made on purpose (LangGraph's ``update_state`` or a replay from an older
    checkpoint) starts a new history: from it on, only its own ancestors count as done.
    """
    out: list[Finding] = []
    done: dict[int, Checkpoint] = {}
    lowest: int | None = None  # min(done), kept as it grows: recomputing it is quadratic
    prev: Checkpoint | None = None
    by_id = {c.checkpoint_id: c for c in inp.checkpoints}
    for c in inp.checkpoints:
        if inp.runtime.forked_on_purpose(c):
            done = {a.step_index: a for a in reversed(_ancestors(c, by_id))}
            done.setdefault(c.step_index, c)
            lowest = min(done)
            prev = c
            continue
        if prev is not None and c.step_index < prev.step_index:
            out.append(
                _finding(
                    "step-backwards", "warning", c.step_index,
                    f"step went back from {prev.step_index} to {c.step_index}: the run went on "
                    f"from an older checkpoint than its latest",
                    "resume from the latest checkpoint; an older one repeats completed work",
                )
            )  # fmt: skip
        if c.step_index in done and lowest is not None and c.step_index > lowest:
            first = done[c.step_index]
            out.append(
                _finding(
                    "step-repeated", "error", c.step_index,
                    f"step {c.step_index} had completed (checkpoint {first.checkpoint_id}) and "
                    f"was executed again (checkpoint {c.checkpoint_id})",
                    "a resume must continue after the last completed step; check the writes "
                    "of the repeated step in the system of record",
                )
            )  # fmt: skip
        done.setdefault(c.step_index, c)
        lowest = c.step_index if lowest is None else min(lowest, c.step_index)
        prev = c
    return out


def _ancestors(c: Checkpoint, by_id: dict[str, Checkpoint]) -> list[Checkpoint]:
    """The checkpoints ``c`` descends from, nearest first."""
    out: list[Checkpoint] = []
    seen = {c.checkpoint_id}
    parent = by_id.get(c.parent_id) if c.parent_id else None
    while parent is not None and parent.checkpoint_id not in seen:
        out.append(parent)
        seen.add(parent.checkpoint_id)
        parent = by_id.get(parent.parent_id) if parent.parent_id else None
    return out


# -- budgets ------------------------------------------------------------------------------


@rule("budget-reset")
def budget_reset(inp: AuditInput) -> list[Finding]:
    """A consumed budget drops from a checkpoint to its child: the limits were reset."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        drops = [
            f"{attr} {getattr(parent.budgets, attr):,} → {getattr(child.budgets, attr):,}"
            for attr in BUDGETS
            if getattr(child.budgets, attr) < getattr(parent.budgets, attr)
        ]
        if drops:
            out.append(
                _finding(
                    "budget-reset", "error", child.step_index,
                    f"consumed budgets dropped at step {child.step_index} ({'; '.join(drops)}): "
                    "the resume reset them, so the limits no longer bound the run",
                    "carry consumed budgets over on resume and re-check them against the limits",
                )
            )  # fmt: skip
    return out


def _limits(c: Checkpoint) -> dict[str, int]:
    raw = c.metadata.get("limits") if isinstance(c.metadata, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {
        k: int(v) for k, v in raw.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }


def _true_total(inp: AuditInput, attr: str) -> list[tuple[Checkpoint, int]]:
    # After a reset the stored counter restarts; the true consumption keeps adding up.
    total, out, prev = 0, [], None
    for c in inp.lineage:
        value = getattr(c.budgets, attr)
        base = getattr(prev.budgets, attr) if prev is not None else 0
        total += value - base if value >= base else value
        out.append((c, total))
        prev = c
    return out


@rule("budget-exceeded")
def budget_exceeded(inp: AuditInput) -> list[Finding]:
    """Consumption passed a limit of ``metadata.limits`` (counted across any reset).

    Limits are checked between steps, so the step that stops a run may overspend a little:
    that is a warning when the run stopped there, an error when it went on past the limit.
    """
    out = []
    # one parse of each checkpoint's limits for all three budgets; checkpoints of one run
    # often share one metadata object (the store parses a repeated text once)
    by_meta: dict[int, dict[str, int]] = {}
    limits = []
    for c in inp.lineage:
        if id(c.metadata) not in by_meta:
            by_meta[id(c.metadata)] = _limits(c)
        limits.append(by_meta[id(c.metadata)])
    for attr, name in BUDGET_LIMITS.items():
        for (c, total), known in zip(_true_total(inp, attr), limits, strict=True):
            limit = known.get(name)
            if limit is None or total <= limit:
                continue
            meta = c.metadata if isinstance(c.metadata, dict) else {}
            stopped = c is inp.head and meta.get("status") == "budget_exhausted"
            went_on = (
                "" if stopped
                else " and the run did not stop for it" if c is inp.head
                else f" and went on to step {inp.head.step_index}"
            )  # fmt: skip
            out.append(
                _finding(
                    "budget-exceeded", "warning" if stopped else "error", c.step_index,
                    f"{attr} reached {total:,} by step {c.step_index}, past the limit of "
                    f"{limit:,}{went_on}",
                    "check limits before each model call, against the cumulative budgets, "
                    "also after a resume",
                )
            )  # fmt: skip
            break
    return out
