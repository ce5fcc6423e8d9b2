"""The Runs page's triage: each run's audit verdict, and the runs that need attention.

A run needs attention when it stopped (failed, crashed, parked, out of budget) or when its
audit has errors even though it completed (a key executed twice, budgets reset on resume):
a completed status alone says nothing about what the run did twice. Replays are not runs
that failed: they are counted under their original, never here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from debugger.errors import StepscopeError
from debugger.model import ATTENTION_STATUSES, Run
from debugger.report.incident import human_reason
from debugger.store import Store

AUDITED_RUNS = 200
"""The newest original runs audited for the list's verdict column and Needs attention; an
older run's verdict is on the Audit page."""


@dataclass(frozen=True)
class Verdict:
    """A run's audit in a few words, for one cell of the list."""

    verdict: str
    """The verdict's phrase (``resumable after checks``), or ``audit failed``."""
    errors: list[dict[str, Any]]
    """Error findings: rule_id, step_index, message."""
    status: str
    """The run's status."""


def verdicts(store: Store, limit: int = AUDITED_RUNS) -> dict[str, dict[str, Any]]:
    """Run id -> :class:`Verdict` (as a dict) for the newest ``limit`` original runs."""
    # the audit (and DeepDiff under it) on first use: the Runs page's module loads without it
    from debugger.audit import audit_run
    from debugger.audit.verdict import VERDICT_WORDS

    out: dict[str, dict[str, Any]] = {}
    for run in store.run_page(order="newest", limit=limit, replays=False).runs:
        try:
            report = audit_run(store, run.run_id)
        except StepscopeError as e:
            failed = [{"rule_id": "audit", "step_index": None, "message": str(e)}]
            out[run.run_id] = asdict(Verdict("audit failed", failed, run.status))
            continue
        errors = [
            {"rule_id": f.rule_id, "step_index": f.step_index, "message": f.message}
            for f in report.findings
            if f.severity == "error"
        ]
        out[run.run_id] = asdict(Verdict(VERDICT_WORDS[report.verdict], errors, run.status))
    return out


def attention_items(
    stopped: list[Run], audited: dict[str, dict[str, Any]], shown: set[str] | None = None
) -> list[dict[str, Any]]:
    """Needs attention, one item a run: its id, status and why, in words.

    Args:
        stopped: the newest original runs with a status needing attention.
        audited: :func:`verdicts`.
        shown: when the list is filtered, the run ids it matches (None: every run).
    """
    items = [
        {"run_id": r.run_id, "status": r.status, "why": _why(r, audited.get(r.run_id))}
        for r in stopped
    ]
    seen = {r.run_id for r in stopped}
    for run_id, v in audited.items():
        if run_id in seen or not v["errors"] or v["status"] in ATTENTION_STATUSES:
            continue  # listed by status already, or left out by the filters
        if shown is not None and run_id not in shown:
            continue
        first = v["errors"][0]
        at = f" at step {first['step_index']}" if first["step_index"] is not None else ""
        more = f" (and {len(v['errors']) - 1} more)" if len(v["errors"]) > 1 else ""
        why = f"{v['status']}, but the audit found{at}: {first['message']}{more}"
        items.append({"run_id": run_id, "status": v["status"], "why": why})
    return items


def _why(run: Run, verdict: dict[str, Any] | None) -> str:
    why = human_reason(run)
    if verdict and verdict["errors"]:
        why += f"; audit: {verdict['errors'][0]['message']}"
    return why
