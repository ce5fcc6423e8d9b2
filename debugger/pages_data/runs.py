"""The Runs page's data: runs with a status mark, runs needing attention first; audit
findings by step for the Timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

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


def findings_by_step(store: Store, run_id: str) -> dict[int, list[dict[str, Any]]]:
    """Audit findings of a run grouped by step, or {} while no audit module is installed.

    The audit (``debugger.audit.audit_run``) is optional for the Timeline: the step
    navigator marks the steps that have findings when it is there.
    """
    try:
        from debugger.audit import audit_run
    except ModuleNotFoundError as e:
        if e.name != "debugger.audit":
            raise
        return {}
    out: dict[int, list[dict[str, Any]]] = {}
    for finding in audit_run(store, run_id).findings:
        if finding.step_index is not None:
            out.setdefault(int(finding.step_index), []).append(
                {
                    "rule_id": finding.rule_id,
                    "severity": finding.severity,
                    "message": finding.message,
                    "hint": finding.hint,
                }
            )
    return out
