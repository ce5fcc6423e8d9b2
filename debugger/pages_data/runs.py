"""The Runs page's data: runs needing attention first, runs per status; audit findings by
step for the Timeline."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from debugger.audit import audit_run
from debugger.model import RUN_STATUSES, Run
from debugger.store import Store

ATTENTION = ("failed", "crashed", "parked", "budget_exhausted")
"""Statuses the Runs page makes stand out."""


def runs_listed(
    store: Store,
    status: str | None = None,
    agent: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[Run]:
    """Runs for the Runs page: the store's filters plus an upper time bound on the last
    checkpoint; runs needing attention (:data:`ATTENTION`) first, then newest first.

    Records, not a DataFrame: the Runs page is the first page, and pandas alone is ~0.4 s
    of imports that the server would otherwise pay while the browser loads the front end.
    """
    runs = store.run_records(status=status, agent=agent, text=text, since=since)
    if until is not None:
        runs = [r for r in runs if r.last_at is None or r.last_at <= until]
    return sorted(runs, key=lambda r: r.status not in ATTENTION)  # stable: newest first


def status_counts(runs: list[Run]) -> dict[str, int]:
    """Number of runs per status (every status, zero included), of ``store.run_records()``."""
    counts = Counter(r.status for r in runs)
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
