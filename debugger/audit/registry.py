"""The audit's rule registry: what a rule reads, and the decorator that registers it.

A rule is a function over one run's records (:class:`AuditInput`) returning findings. The
``@rule(...)`` decorator names the ids a rule can report and registers it. :func:`all_rules`
gives them family by family in ``FAMILIES`` order, and within a family in the order they are
defined: the order docs/audit.md explains them and the audit runs them. A new rule goes into
its family's module; a new family is a module of ``debugger.audit`` named in ``FAMILIES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from debugger.audit.runtimes import NATIVE, Runtime
from debugger.audit.state import StateFacts, facts_of
from debugger.migrations import Registry
from debugger.model import Checkpoint, Effect, Finding, Severity, ToolCall

__all__ = [
    "FAMILIES",
    "AuditInput",
    "Registered",
    "Rule",
    "all_rules",
    "finding",
    "rule",
    "rule_ids",
]


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
    branches: list[Checkpoint] = field(default_factory=list)
    """Heads of the other branches of a fork, not on the audited path."""
    runtime: Runtime = NATIVE
    """The runtime that wrote the run: what it can record, how it resumes."""
    state_facts: dict[str, StateFacts] = field(default_factory=dict)
    """Facts of states read from their stored text, by checkpoint id (the store leaves
    those states unparsed); other checkpoints are answered from their parsed state."""

    def facts(self, c: Checkpoint) -> StateFacts:
        """The shape of a checkpoint's working state (:mod:`debugger.audit.state`)."""
        known = self.state_facts.get(c.checkpoint_id)
        return known if known is not None else facts_of(c.working_state)

    @property
    def head(self) -> Checkpoint:
        """The checkpoint a resume would continue from."""
        return self.lineage[-1]


Rule = Callable[[AuditInput], list[Finding]]


@dataclass(frozen=True)
class Registered:
    """One registered rule: the ids it can report and its function."""

    ids: tuple[str, ...]
    """The rule ids this function reports, in documentation order."""
    check: Rule
    """The function itself."""


FAMILIES = ("rules", "effects", "versions", "approval", "lineage")
"""The rule families (modules of ``debugger.audit``), in documentation order."""

_registered: list[Registered] = []


def rule(*ids: str) -> Callable[[Rule], Rule]:
    """Register a rule function that reports the given rule ids.

    Args:
        ids: the rule ids the function can report, in documentation order.

    Returns:
        A decorator that registers the function and returns it unchanged.

    Raises:
        ValueError: an id is registered twice.
    """
    known = {i for r in _registered for i in r.ids}
    if not ids or known & set(ids):
        raise ValueError(f"rule ids must be new and at least one: {sorted(known & set(ids))}")

    def register(check: Rule) -> Rule:
        _registered.append(Registered(ids, check))
        return check

    return register


def all_rules() -> list[Registered]:
    """Every rule of every family, in documentation order (importing the families)."""
    prefix = __name__.rpartition(".")[0]
    modules = [importlib.import_module(f"{prefix}.{name}").__name__ for name in FAMILIES]
    rank = {module: i for i, module in enumerate(modules)}
    unknown = sorted({r.check.__module__ for r in _registered} - set(rank))
    if unknown:
        raise ValueError(f"rules registered outside the families {FAMILIES}: {unknown}")
    # sorted() is stable: within a family, rules keep their definition order
    return sorted(_registered, key=lambda r: rank[r.check.__module__])


def rule_ids() -> tuple[str, ...]:
    """Every rule id, in documentation order."""
    return tuple(i for r in all_rules() for i in r.ids)


def finding(rule_id: str, severity: Severity, step: int | None, message: str, hint: str) -> Finding:
    """A finding with the whitespace of message and hint collapsed (they are written wrapped)."""
    return Finding(rule_id, severity, step, " ".join(message.split()), " ".join(hint.split()))
