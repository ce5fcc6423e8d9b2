"""The resumability audit's rules: each a small function over one run's records.

Every rule takes an :class:`AuditInput` and returns findings; docs/audit.md explains each rule
with an example, in the order of ``RULES``. The rules never touch the store: ``debugger.audit``
loads the records, so notebooks and tests can audit hand-built records too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from debugger.audit_approval import approval_rules
from debugger.audit_effects import action_key, effect_rules, key_of
from debugger.errors import MigrationError
from debugger.migrations import Registry, RestartRequired, migrate_state
from debugger.model import Checkpoint, Effect, Finding, Severity, ToolCall

__all__ = ["RULES", "AuditInput", "action_key", "key_of"]


@dataclass(frozen=True)
class AuditInput:
    """What the rules read: one run's records, its audited path and the migrations."""

    run_id: str
    checkpoints: list[Checkpoint]
    """Every checkpoint of the run in write order (all branches)."""
    lineage: list[Checkpoint]
    """The head's path from the root to the head."""
    effects: list[Effect]
    calls: list[ToolCall]
    registry: Registry | None = None
    newest_stored_version: int | None = None
    """Highest schema version in the store (to flag old runs when no registry is named)."""

    @property
    def head(self) -> Checkpoint:
        """The checkpoint a resume would continue from."""
        return self.lineage[-1]


Rule = Callable[[AuditInput], list[Finding]]


def _finding(
    rule_id: str, severity: Severity, step: int | None, message: str, hint: str
) -> Finding:
    return Finding(rule_id, severity, step, " ".join(message.split()), " ".join(hint.split()))


# -- the six items ------------------------------------------------------------------------

LONG_TEXT = 200
"""A string value this long with spaces reads as prose, not as a field."""


def _is_prose(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= LONG_TEXT and value.count(" ") >= 20


def prose_state(state: Any) -> bool:
    """Whether a working state is prose rather than structure.

    A top-level string is prose; so is a dict or list most of whose top-level values are long
    free text (a transcript pasted into one field, say), because a resume cannot read fields
    out of it.
    """
    if isinstance(state, str):
        return True
    values = list(state.values()) if isinstance(state, dict) else state
    if not isinstance(values, list) or not values:
        return False
    return sum(_is_prose(v) for v in values) * 2 > len(values)


def _has_budgets(c: Checkpoint, first: bool) -> bool:
    b = c.budgets
    # The store reads a missing budget as 0: all three zero after the first step means none
    # was recorded (a step always takes some wall clock).
    return (
        first or c.step_index <= 0 or (b.tokens_spent, b.steps_spent, b.wall_clock_ms) != (0,) * 3
    )


ITEMS: tuple[tuple[str, str, Callable[[Checkpoint, bool], bool], str], ...] = (
    ("missing-schema-version", "a schema version",
     lambda c, _: c.schema_version is not None,
     "have the runtime write schema_version into every checkpoint"),
    ("missing-working-state", "a structured working state",
     lambda c, _: isinstance(c.working_state, dict | list | str),
     "checkpoint the working state as a JSON object"),
    ("missing-budgets", "budgets consumed (tokens, steps, wall clock)",
     _has_budgets,
     "record tokens_spent, steps_spent and wall_clock_ms cumulatively in every checkpoint"),
    ("missing-run-metadata", "run metadata (model and tool versions)",
     lambda c, _: bool(c.model_version) and bool(c.tool_versions),
     "record model_version and tool_versions in every checkpoint"),
)  # fmt: skip


def missing_items(inp: AuditInput) -> list[Finding]:
    """A checkpoint on the audited path lacks one of the six items of the contract."""
    out = []
    first_id = inp.lineage[0].checkpoint_id
    for rule_id, item, present, hint in ITEMS:
        bad = [c for c in inp.lineage if not present(c, c.checkpoint_id == first_id)]
        if not bad:
            continue
        at_head = bad[-1] is inp.head
        where = (
            "including the head" if at_head else f"the head at step {inp.head.step_index} has it"
        )
        out.append(
            _finding(
                rule_id, "error" if at_head else "warning", bad[0].step_index,
                f"{len(bad)} of {len(inp.lineage)} checkpoints lack {item} (first at step "
                f"{bad[0].step_index}; {where})", hint,
            )
        )  # fmt: skip
    return out


def prose_rule(inp: AuditInput) -> list[Finding]:
    """Working state that is prose rather than structure."""
    bad = [c for c in inp.lineage if c.working_state is not None and prose_state(c.working_state)]
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


# -- steps --------------------------------------------------------------------------------


def step_order(inp: AuditInput) -> list[Finding]:
    """Steps going backwards and completed steps executed again (in write order)."""
    out: list[Finding] = []
    done: dict[int, Checkpoint] = {}
    prev: Checkpoint | None = None
    for c in inp.checkpoints:
        if prev is not None and c.step_index < prev.step_index:
            out.append(
                _finding(
                    "step-backwards", "warning", c.step_index,
                    f"step went back from {prev.step_index} to {c.step_index}: the run went on "
                    f"from an older checkpoint than its latest",
                    "resume from the latest checkpoint; an older one repeats completed work",
                )
            )  # fmt: skip
        if c.step_index in done and c.step_index > min(done):
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
        prev = c
    return out


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


# -- budgets ------------------------------------------------------------------------------

_BUDGETS = (
    ("tokens", "tokens_spent"),
    ("steps", "steps_spent"),
    ("wall_clock_ms", "wall_clock_ms"),
)


def budget_reset(inp: AuditInput) -> list[Finding]:
    """A consumed budget drops from a checkpoint to its child: the limits were reset."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        drops = [
            f"{attr} {getattr(parent.budgets, attr):,} → {getattr(child.budgets, attr):,}"
            for _, attr in _BUDGETS
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


def budget_exceeded(inp: AuditInput) -> list[Finding]:
    """Consumption passed a limit of ``metadata.limits`` (counted across any reset).

    Limits are checked between steps, so the step that stops a run may overspend a little:
    that is a warning when the run stopped there, an error when it went on past the limit.
    """
    out = []
    for name, attr in _BUDGETS:
        for c, total in _true_total(inp, attr):
            limit = _limits(c).get(name)
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


# -- versions -----------------------------------------------------------------------------


def version_changes(inp: AuditInput) -> list[Finding]:
    """Model or tool versions changing mid-run (a deploy between two steps)."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        if (
            parent.model_version
            and child.model_version
            and parent.model_version != child.model_version
        ):
            out.append(
                _finding(
                    "model-version-changed", "warning", child.step_index,
                    f"model version changed from {parent.model_version} to {child.model_version} "
                    f"at step {child.step_index}",
                    "compare decisions before and after the change; pin the model for a run",
                )
            )  # fmt: skip
        changed = sorted(
            t for t in set(parent.tool_versions) & set(child.tool_versions)
            if parent.tool_versions[t] != child.tool_versions[t]
        )  # fmt: skip
        for tool in changed:
            out.append(
                _finding(
                    "tool-version-changed", "warning", child.step_index,
                    f"tool {tool} changed from {parent.tool_versions[tool]} to "
                    f"{child.tool_versions[tool]} at step {child.step_index}",
                    "check that recorded calls of the old version still mean the same",
                )
            )  # fmt: skip
    return out


def schema_rule(inp: AuditInput) -> list[Finding]:
    """Schema versions the migrations cannot reach; a head whose migration raises."""
    if inp.registry is None:
        return _schema_unchecked(inp)
    out = []
    seen: set[int | None] = set()
    for c in inp.lineage:
        if c.schema_version in seen or c.schema_version is None:
            continue
        seen.add(c.schema_version)
        try:
            inp.registry.path(c.schema_version)
        except RestartRequired as e:
            head = c.schema_version == inp.head.schema_version
            out.append(
                _finding("schema-unreachable", "error" if head else "warning", c.step_index,
                         e.message, e.hint)
            )  # fmt: skip
    if not out:
        out += _head_migrates(inp, inp.registry)
    return out


def _head_migrates(inp: AuditInput, registry: Registry) -> list[Finding]:
    head = inp.head
    if head.schema_version is None:
        return []
    try:
        migrate_state(head.working_state, head.schema_version, registry)
    except RestartRequired:
        return []
    except MigrationError as e:
        return [_finding("migration-failed", "error", head.step_index, e.message, e.hint)]
    return []


def _schema_unchecked(inp: AuditInput) -> list[Finding]:
    v, newest = inp.head.schema_version, inp.newest_stored_version
    if v is None or newest is None or v >= newest:
        return []
    return [
        _finding(
            "schema-unchecked", "warning", inp.head.step_index,
            f"the head is at schema version {v} while the store holds version {newest}, and no "
            "migrations module is named, so whether the current code can read it is unknown",
            "pass --migrations MODULE (or set STEPSCOPE_MIGRATIONS) to check the path",
        )
    ]  # fmt: skip


RULES: tuple[Rule, ...] = (
    missing_items, prose_rule, step_gaps, step_order, budget_reset, budget_exceeded,
    *effect_rules(), version_changes, schema_rule, *approval_rules(),
)  # fmt: skip
"""Every rule, in the order docs/audit.md explains them."""
