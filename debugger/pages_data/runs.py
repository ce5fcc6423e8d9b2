"""The Runs page's data: runs with a status mark, runs needing attention first; audit
findings by step for the Timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from debugger.audit import audit_run
from debugger.model import RUN_STATUSES
from debugger.store import Store

ATTENTION = ("failed", "crashed", "parked", "budget_exhausted")
"""Statuses the Runs page makes stand out."""
STATUS_MARKS = {
    "completed": "🟢",
    "in_progress": "🔵",
    "parked": "🟡",
    "budget_exhausted": "🟣",
    "failed": "🔴",
    "crashed": "🔴",
}
"""A mark per status, so the eye finds failed, crashed and parked runs in a long list."""


def runs_table(
    store: Store,
    status: str | None = None,
    agent: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """Runs for the Runs page: the store's filters plus an upper time bound, with a
    ``needs_attention`` flag and a status mark; runs needing attention come first."""
    frame = store.runs(status=status, agent=agent, text=text, since=since)
    if until is not None and not frame.empty:
        frame = frame[frame["last_at"].isna() | (frame["last_at"] <= pd.Timestamp(until))]
    frame = frame.copy()
    frame.insert(0, "mark", [STATUS_MARKS.get(s, "⚪") for s in frame["status"]])
    frame["needs_attention"] = frame["status"].isin(ATTENTION)
    frame["steps"] = [
        f"{a}–{b}" for a, b in zip(frame["first_step"], frame["last_step"], strict=True)
    ]
    frame = frame.sort_values("needs_attention", ascending=False, kind="stable")
    return frame.reset_index(drop=True)


def status_counts(store: Store) -> dict[str, int]:
    """Number of runs per status (every status, zero included)."""
    counts = store.runs()["status"].value_counts().to_dict()
    return {s: int(counts.get(s, 0)) for s in RUN_STATUSES}


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
