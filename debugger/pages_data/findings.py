"""Audit findings of a run, grouped by the checkpoint step the Timeline marks them on."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from debugger.audit import audit_run
from debugger.store import Store


def audit_findings(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The run's audit findings (rule_id, severity, step_index, message, hint).

    The step navigator marks the steps that have findings (``debugger.audit.audit_run``, cached)
    and each step shows its own.

    Raises:
        StepscopeError: the audit could not run (for example a broken migrations module).
    """
    return [
        {
            "rule_id": f.rule_id,
            "severity": f.severity,
            "step_index": f.step_index,
            "message": f.message,
            "hint": f.hint,
        }
        for f in audit_run(store, run_id).findings
    ]


def findings_by_step(
    findings: list[dict[str, Any]], steps: list[int]
) -> dict[int | None, list[dict[str, Any]]]:
    """Group findings by the checkpoint step they belong to.

    A finding at a step with no checkpoint (an effect attempted after the last checkpoint,
    say) belongs to the last checkpoint before it; run-wide findings go under None.
    """
    out: dict[int | None, list[dict[str, Any]]] = {}
    present = set(steps)
    known = sorted(present)
    for f in findings:
        step = f.get("step_index")
        if step is not None and known and step not in present:
            # bisected, not scanned: a long run can have a finding at many of its steps
            at = bisect_left(known, step)
            step = known[at - 1] if at else known[0]
        out.setdefault(step, []).append(f)
    return out
