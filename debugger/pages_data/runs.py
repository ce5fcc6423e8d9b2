"""The Runs page's data: runs needing attention first, runs per status; audit findings by
step for the Timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from debugger.audit import audit_run
from debugger.model import ATTENTION_STATUSES, RUN_STATUSES, Run
from debugger.store import Store

ATTENTION = ATTENTION_STATUSES
"""Statuses the Runs page makes stand out."""


def needing_attention(store: Store, limit: int, **filters: datetime | str | None) -> list[Run]:
    """The newest runs needing attention among those matching ``filters`` (at most
    ``limit``: the page links each one)."""
    wanted = filters.get("status")
    statuses = [s for s in ATTENTION if not wanted or s in str(wanted).split(",")]
    if not statuses:
        return []
    return store.run_page(**{**filters, "status": ",".join(statuses)}, order="newest",
                          limit=limit).runs  # fmt: skip


def status_counts(store: Store) -> dict[str, int]:
    """Number of runs per status in the whole store (every status, zero included)."""
    counts = store.run_page(limit=0).by_status
    return {s: counts.get(s, 0) for s in RUN_STATUSES}


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
    known = sorted(set(steps))
    for f in findings:
        step = f.get("step_index")
        if step is not None and known and step not in known:
            earlier = [s for s in known if s < step]
            step = earlier[-1] if earlier else known[0]
        out.setdefault(step, []).append(f)
    return out
