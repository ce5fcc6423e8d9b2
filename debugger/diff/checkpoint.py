"""The diff of two checkpoints: working state, budgets, pending effects and run metadata.

Works on any two checkpoints: two steps of one run, two runs, an original and its replay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from debugger.contract import BUDGETS
from debugger.diff.states import Patterns, StateDiff, as_patterns, count_by_kind, diff_states
from debugger.diff.text import StateText, diff_texts
from debugger.model import Checkpoint

EffectChangeKind = Literal["added", "removed", "status_changed", "changed"]


@dataclass(frozen=True)
class CheckpointRef:
    """Which checkpoint a side of the diff is."""

    run_id: str
    """The run."""
    step_index: int
    """Its step."""
    checkpoint_id: str
    """Its id within the run."""

    @classmethod
    def of(cls, c: Checkpoint) -> CheckpointRef:
        """The reference of a checkpoint."""
        return cls(c.run_id, c.step_index, c.checkpoint_id)

    @property
    def label(self) -> str:
        """``run:step``, as the CLI accepts it."""
        return f"{self.run_id}:{self.step_index}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"run_id": self.run_id, "step_index": self.step_index,
                "checkpoint_id": self.checkpoint_id}  # fmt: skip


@dataclass(frozen=True)
class BudgetChange:
    """A budget counter that differs between the two checkpoints."""

    name: str
    """tokens_spent, steps_spent or wall_clock_ms."""
    old: int
    """Value at the old checkpoint."""
    new: int
    """Value at the new checkpoint."""

    @property
    def delta(self) -> int:
        """new - old (negative when the new side spent less, e.g. a reset budget)."""
        return self.new - self.old

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"name": self.name, "old": self.old, "new": self.new, "delta": self.delta}


@dataclass(frozen=True)
class EffectChange:
    """A pending effect that appeared, disappeared or changed, matched by idempotency key."""

    idempotency_key: str | None
    """The key (None for an unkeyed effect, matched by its whole content instead)."""
    change: EffectChangeKind
    """added, removed, status_changed (same key, other status) or changed (other content)."""
    tool: str | None
    """The write tool."""
    old: dict[str, Any] | None
    """The effect at the old checkpoint."""
    new: dict[str, Any] | None
    """The effect at the new checkpoint."""

    @property
    def old_status(self) -> str | None:
        """Status on the old side."""
        return None if self.old is None else self.old.get("status")

    @property
    def new_status(self) -> str | None:
        """Status on the new side."""
        return None if self.new is None else self.new.get("status")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"idempotency_key": self.idempotency_key, "change": self.change,
                "tool": self.tool, "old_status": self.old_status,
                "new_status": self.new_status, "old": self.old, "new": self.new}  # fmt: skip


@dataclass(frozen=True)
class CheckpointDiff:
    """Everything that differs between two checkpoints."""

    a: CheckpointRef
    """The old side."""
    b: CheckpointRef
    """The new side."""
    state: StateDiff
    """Working-state rows, exactly as DeepDiff reports them."""
    budgets: list[BudgetChange] = field(default_factory=list)
    """Budget counters that differ."""
    effects: list[EffectChange] = field(default_factory=list)
    """Pending effects added, removed or changed, by idempotency key."""
    metadata: StateDiff = field(default_factory=StateDiff)
    """Rows over schema_version, model_version, tool_versions and metadata
    (paths like ``root['model_version']``, ``root['metadata']['status']``)."""

    @property
    def is_empty(self) -> bool:
        """True when nothing differs (after the ignore options)."""
        return not (self.state or self.budgets or self.effects or self.metadata)

    @property
    def labels(self) -> tuple[str, str]:
        """``run:step`` of each side, or ``run@checkpoint_id`` when those would read the same
        (two checkpoints of a fork at one step)."""
        if self.a.label != self.b.label or self.a.checkpoint_id == self.b.checkpoint_id:
            return self.a.label, self.b.label
        return (
            f"{self.a.run_id}@{self.a.checkpoint_id}",
            f"{self.b.run_id}@{self.b.checkpoint_id}",
        )

    def summary(self) -> str:
        """One line for people."""
        a, b = self.labels
        if self.is_empty:
            return f"{a} -> {b}: no differences"
        kinds = ", ".join(f"{n} {k}" for k, n in count_by_kind(self.state).items())
        return (
            f"{a} -> {b}: {len(self.state)} state changes"
            f"{f' ({kinds})' if kinds else ''}, {len(self.budgets)} budget, "
            f"{len(self.effects)} pending-effect, {len(self.metadata)} metadata changes"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with stable keys (what ``stepscope diff --json`` prints)."""
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "state": [r.to_dict() for r in self.state],
            "budgets": [b.to_dict() for b in self.budgets],
            "effects": [e.to_dict() for e in self.effects],
            "metadata": [r.to_dict() for r in self.metadata],
            "summary": self.summary(),
        }

    def _repr_html_(self) -> str:
        from debugger.views import checkpoint_diff_html

        return checkpoint_diff_html(self)


def diff_checkpoints(
    a: Checkpoint,
    b: Checkpoint,
    ignore_paths: Patterns = (),
    ignore_order: Patterns = (),
    *,
    state_texts: tuple[str | StateText, str | StateText] | None = None,
) -> CheckpointDiff:
    """Diff two checkpoints: state rows plus budgets, pending effects and metadata.

    Args:
        a: the old side (an earlier step, or the original run).
        b: the new side (a later step, another run, or a replay).
        ignore_paths: state paths to leave out (see :func:`debugger.diff.diff_states`).
        ignore_order: state lists compared without regard to order.
        state_texts: the two working states as stored JSON texts, when the checkpoints were
            read without parsing them (``Store.checkpoint_text``): the states are then
            diffed from the texts (:func:`debugger.diff.text.diff_texts`), same rows.

    Returns:
        The :class:`CheckpointDiff`.
    """
    ignore_paths, ignore_order = as_patterns(ignore_paths), as_patterns(ignore_order)
    return CheckpointDiff(
        a=CheckpointRef.of(a),
        b=CheckpointRef.of(b),
        state=(
            diff_states(a.working_state, b.working_state, ignore_paths, ignore_order)
            if state_texts is None
            else diff_texts(*state_texts, ignore_paths, ignore_order)
        ),
        budgets=diff_budgets(a, b),
        effects=diff_pending_effects(a.pending_effects, b.pending_effects),
        metadata=diff_states(_meta(a), _meta(b)),
    )


def diff_budgets(a: Checkpoint, b: Checkpoint) -> list[BudgetChange]:
    """Budget counters that differ, in the order tokens, steps, wall clock."""
    changes = []
    for name in BUDGETS:
        old, new = getattr(a.budgets, name), getattr(b.budgets, name)
        if old != new:
            changes.append(BudgetChange(name, old, new))
    return changes


def diff_pending_effects(old: Iterable[Any], new: Iterable[Any]) -> list[EffectChange]:
    """Pending effects matched by idempotency key: added, removed, status or content changed.

    Effects without a key cannot be matched safely (that is an audit finding in itself), so
    they are matched by their whole serialized content: a changed one shows as removed + added.
    """
    before, after = _by_key(old), _by_key(new)
    changes: list[EffectChange] = []
    for key, (ident, eff) in before.items():
        if key not in after:
            changes.append(EffectChange(ident, "removed", _tool(eff), eff, None))
            continue
        other = after[key][1]
        if eff.get("status") != other.get("status"):
            changes.append(EffectChange(ident, "status_changed", _tool(other), eff, other))
        elif _dumps(eff) != _dumps(other):
            changes.append(EffectChange(ident, "changed", _tool(other), eff, other))
    for key, (ident, eff) in after.items():
        if key not in before:
            changes.append(EffectChange(ident, "added", _tool(eff), None, eff))
    return changes


def _by_key(effects: Iterable[Any]) -> dict[bytes, tuple[str | None, dict[str, Any]]]:
    out: dict[bytes, tuple[str | None, dict[str, Any]]] = {}
    for raw in effects or ():
        eff = raw if isinstance(raw, dict) else {"value": raw}
        key = eff.get("idempotency_key")
        ident = None if key is None else str(key)
        match = b"k:" + ident.encode() if ident is not None else b"c:" + _dumps(eff)
        out.setdefault(match, (ident, eff))
    return out


def _tool(effect: dict[str, Any]) -> str | None:
    tool = effect.get("tool")
    return None if tool is None else str(tool)


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def _meta(c: Checkpoint) -> dict[str, Any]:
    return {
        "schema_version": c.schema_version,
        "model_version": c.model_version,
        "tool_versions": c.tool_versions,
        "metadata": c.metadata,
    }
