"""Resumability audit: could this run be resumed, and what would a resume do?

``audit_run(store, run_id)`` loads one run's checkpoints, effects and tape, audits the head's
lineage (root → head; other branches of a fork are noted) with the registered rules of
``debugger.audit``, and returns an :class:`~debugger.model.AuditReport`: a verdict
(completed, resumable, resumable after checks, restart required), the findings, and what a
resume would do (the checkpoint it continues from, the next step, the effects it must verify
by key). docs/audit.md explains every rule.

Results are cached per run and keyed on a fingerprint of the run's rows (checkpoint count,
head, effect and call counts), so pages can call ``audit_run`` on every view: a repeat costs
one small query.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from debugger.audit.approval import is_parked
from debugger.audit.effects import (
    asks_first,
    effect_label,
    in_doubt,
    key_of,
    open_effects,
    short,
)
from debugger.audit.lineage import head_of, lineage
from debugger.audit.registry import AuditInput, all_rules, rule_ids
from debugger.audit.rules import unplaced
from debugger.audit.runtimes import runtime_of
from debugger.audit.state import StateFacts, facts_of_text
from debugger.errors import NotFound
from debugger.json_text import gc_paused, loads
from debugger.migrations import Registry, load_registry
from debugger.model import (
    AuditReport,
    Checkpoint,
    Effect,
    EffectCheck,
    Finding,
    ToolCall,
    VerdictKind,
)

if TYPE_CHECKING:
    from debugger.store import Store

__all__ = ["RULE_IDS", "audit_records", "audit_run", "audit_store", "lineage", "summary_rows"]

RULE_IDS = rule_ids()
"""Every rule id the audit can report, in the order docs/audit.md explains them."""

# Rules whose error at the head means the head cannot be resumed at all.
_BLOCKING = {
    "missing-schema-version", "missing-step-position", "missing-working-state",
    "missing-budgets", "missing-run-metadata", "prose-state", "schema-unreachable",
    "migration-failed",
}  # fmt: skip
_CACHE_SIZE = 512
_cache: OrderedDict[tuple[Any, ...], AuditReport] = OrderedDict()
_lock = threading.Lock()


def audit_records(
    run_id: str,
    checkpoints: list[Checkpoint],
    effects: list[Effect],
    calls: list[ToolCall],
    registry: Registry | None = None,
    newest_stored_version: int | None = None,
    status: str | None = None,
    head_id: str | None = None,
    runtime: str | None = None,
    state_facts: dict[str, StateFacts] | None = None,
) -> AuditReport:
    """Audit one run's records (no store needed: notebooks and tests can build them).

    Args:
        run_id: the run.
        checkpoints: every checkpoint of the run, in write order.
        effects: its effects; calls: its tape.
        registry: the user's state-schema migrations, if any.
        newest_stored_version: highest schema version in the store (used without a registry).
        status: the run's derived status, if known (else read from the head's metadata).
        head_id: the head's checkpoint id as the store derived it, if known (else the head is
            picked by the same rule, :func:`~debugger.audit.lineage.head_of`).
        runtime: the import flavour that wrote the run (``native``, ``langgraph``), if known
            (else told from the checkpoints: :func:`~debugger.audit.runtimes.runtime_of`).
        state_facts: the shape of states left unparsed, by checkpoint id (what
            :func:`audit_run` reads from the store); other states are looked at as parsed.
    """
    if not checkpoints:
        raise ValueError(f"run {run_id!r} has no checkpoints to audit")
    bad = unplaced(checkpoints)
    if bad is not None:
        return _unplaced(run_id, checkpoints, bad)
    head = next((c for c in checkpoints if c.checkpoint_id == head_id), None)
    path, branches = lineage(checkpoints, head)
    inp = AuditInput(
        run_id, checkpoints, path, effects, calls, registry, newest_stored_version, branches,
        runtime_of(runtime, checkpoints), state_facts or {},
    )  # fmt: skip
    findings = [f for r in all_rules() for f in r.check(inp)]
    findings.sort(key=lambda f: f.step_index if f.step_index is not None else -(2**31))
    return _report(inp, findings, branches, status or _head_status(inp.head))


def _unplaced(run_id: str, checkpoints: list[Checkpoint], finding: Finding) -> AuditReport:
    ids = [c.checkpoint_id for c in checkpoints]
    return AuditReport(run_id, "restart_required", [finding.message], [finding], None, None,
                       None, [], ids, [])  # fmt: skip


def _head_status(head: Checkpoint) -> str:
    m = head.metadata if isinstance(head.metadata, dict) else {}
    return str(m.get("status") or ("failed" if m.get("error") else "in_progress")).lower()


def _restart_reasons(inp: AuditInput, findings: Iterable[Finding]) -> list[str]:
    head = inp.head
    reasons = [
        f.message for f in findings
        if f.severity == "error" and f.rule_id in _BLOCKING
    ]  # fmt: skip
    for p in in_doubt(inp):
        if key_of(p) is None and not asks_first(inp, p):
            tool = effect_label(p)
            reasons.append(
                f"pending {tool} at step {head.step_index} has no idempotency key: a resume "
                "cannot tell whether it happened"
            )
    return reasons


def _checks(
    inp: AuditInput, verify: list[EffectCheck], findings: list[Finding], status: str
) -> list[str]:
    doubtful = [c for c in verify if c.status != "planned"]
    checks = [
        f"resolve {c.tool} {short(c.args)} by key {c.idempotency_key} in the system of record "
        f"(attempted at step {c.step_index}, {c.status})"
        for c in doubtful
    ]
    reset = [f for f in findings if f.rule_id == "budget-reset"]
    if reset:
        checks.append(
            "restore the consumed budgets before resuming (they were reset at step "
            f"{reset[0].step_index}; the head understates what the run has spent)"
        )
    unchecked = [f for f in findings if f.rule_id == "schema-unchecked"]
    if unchecked:
        checks.append(
            f"confirm the current code reads schema version {inp.head.schema_version}: name "
            "the migrations module (--migrations MODULE or STEPSCOPE_MIGRATIONS)"
        )
    for p in in_doubt(inp):
        if key_of(p) is None and asks_first(inp, p):
            checks.append(
                f"make sure {effect_label(p)} {short(p.get('args'))} does nothing before it asks: "
                "resuming runs it from its start"
            )
    if is_parked(inp.head):
        checks.append("obtain the approval, and re-check policy and permissions at resume")
        how = inp.runtime.resume_hint(inp.head)
        if how:
            checks.append(how)
    meta = inp.head.metadata if isinstance(inp.head.metadata, dict) else {}
    if status == "budget_exhausted":
        which = meta.get("exhausted") or "exhausted"
        checks.append(f"raise the {which} limit in metadata.limits, or accept the partial result")
    if status == "failed" and not any(c.step_index == _failed_step(inp.head) for c in doubtful):
        # a failure caused by a lost reply is handled by resolving that effect's key
        checks.append(f"fix the cause of the failure first: {meta.get('error')}")
    return checks


def _failed_step(head: Checkpoint) -> int:
    step = head.metadata.get("failed_step") if isinstance(head.metadata, dict) else None
    return step if isinstance(step, int) else head.step_index


def _report(
    inp: AuditInput, findings: list[Finding], branches: list[Checkpoint], status: str
) -> AuditReport:
    head = inp.head
    verify = open_effects(inp)
    ids = [c.checkpoint_id for c in inp.lineage]
    branch_ids = [b.checkpoint_id for b in branches]
    if status == "completed":
        done = [f"the run completed at step {head.step_index}"]
        return AuditReport(inp.run_id, "completed", done, findings, None, None, None, [], ids,
                           branch_ids)  # fmt: skip
    restart = _restart_reasons(inp, findings)
    if restart:
        return AuditReport(inp.run_id, "restart_required", restart, findings, None, None, None,
                           [], ids, branch_ids)  # fmt: skip
    checks = _checks(inp, verify, findings, status)
    verdict: VerdictKind = "resumable_after_checks" if checks else "resumable"
    gaps = any(f.rule_id in inp.runtime.uncarried for f in findings)
    carries = f"every item {inp.runtime.name} records" if gaps else "all six items"
    reasons = checks or [f"the head at step {head.step_index} carries {carries}"]
    # a failed step is retried; otherwise the loop goes on after the head
    next_step = _failed_step(head) if status == "failed" else head.step_index + 1
    return AuditReport(inp.run_id, verdict, reasons, findings, head.checkpoint_id,
                       head.step_index, next_step, verify, ids, branch_ids)  # fmt: skip


def audit_run(store: Store, run_id: str, migrations: Registry | str | None = None) -> AuditReport:
    """Audit one stored run.

    Args:
        store: an open store.
        run_id: the run to audit.
        migrations: a :class:`Registry`, a module name, or None for ``$STEPSCOPE_MIGRATIONS``.

    Raises:
        NotFound: no such run. MigrationError: the migrations module cannot be loaded.
    """
    registry = migrations if isinstance(migrations, Registry) or migrations is None else None
    if registry is None:
        registry = load_registry(migrations if isinstance(migrations, str) else None)
    fp = store.audit_fingerprint(run_id)
    if fp is None:
        store.run(run_id)  # raises NotFound with a hint
        raise NotFound(f"run {run_id!r} has no derived record", "import its source again")
    key = (store.path, id(store), run_id, _registry_key(registry), fp)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    with gc_paused():  # a long run's records are many small objects, none in a cycle
        checkpoints, facts = _stored_checkpoints(store, run_id, fp[2])
        report = audit_records(
            run_id, checkpoints, store.effects(run_id), store.tool_calls(run_id), registry,
            newest_stored_version=fp[-1], status=fp[3], head_id=fp[2],
            runtime=store.run_flavour(run_id), state_facts=facts,
        )  # fmt: skip
    with _lock:
        _cache[key] = report
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return report


def _stored_checkpoints(
    store: Store, run_id: str, head_id: str | None
) -> tuple[list[Checkpoint], dict[str, StateFacts]]:
    """A run's checkpoints with only the head's state parsed (a resume migrates it), and
    the shape of every state, told from its text: parsing each state of a long run would
    cost more than the whole audit."""
    checkpoints, texts = store.audit_checkpoints(run_id)
    facts = {c.checkpoint_id: facts_of_text(t) for c, t in zip(checkpoints, texts, strict=True)}
    if checkpoints:
        head = next((c for c in checkpoints if c.checkpoint_id == head_id), None)
        head = head if head is not None else head_of(checkpoints)
        at = next(i for i, c in enumerate(checkpoints) if c is head)
        checkpoints[at] = replace(head, working_state=loads(texts[at]))
    return checkpoints, facts


def _registry_key(registry: Registry | None) -> tuple[Any, ...]:
    if registry is None:
        return ()
    return (registry.module, registry.current_version, tuple(sorted(registry.steps)))


def audit_store(store: Store, migrations: Registry | str | None = None) -> list[AuditReport]:
    """Audit every run of the store (``stepscope audit --all``, the Audit page's table)."""
    registry = migrations if isinstance(migrations, Registry) else load_registry(migrations)
    return [audit_run(store, r.run_id, registry) for r in store.run_records()]


def summary_rows(reports: Iterable[AuditReport]) -> list[dict[str, Any]]:
    """One plain row per report: verdict, counts by severity, next step, reasons."""
    rows = []
    for r in reports:
        count = {s: sum(f.severity == s for f in r.findings) for s in ("error", "warning", "info")}
        rows.append(
            {"run_id": r.run_id, "verdict": r.verdict, "errors": count["error"],
             "warnings": count["warning"], "infos": count["info"], "next_step": r.next_step,
             "verify": len(r.verify_effects), "reasons": "; ".join(r.reasons)}
        )  # fmt: skip
    return rows
