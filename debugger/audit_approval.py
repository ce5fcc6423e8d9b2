"""Audit rules about human approval: runs parked for it, and resumes that skip re-authorization.

An approval is given under the policy and permissions of its moment. A run that waited days
for it must re-check them when it resumes (the policy may have changed, the approver's rights
too), so a resume straight after a park with no sign of a re-check is a finding.

Evidence of a re-check, in this order: the resumed checkpoint's metadata has
``reauthorized`` / ``reauthorization`` / ``authorization`` set; or the tape of the resumed step
holds a read call whose name mentions policy, permission, authorization or approval.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from debugger.model import Checkpoint, Finding

if TYPE_CHECKING:
    from debugger.audit_rules import AuditInput

_EVIDENCE_KEYS = ("reauthorized", "reauthorization", "authorization")
_EVIDENCE_WORDS = ("polic", "permission", "authoriz", "authoris", "approv")


def is_parked(c: Checkpoint) -> bool:
    """Whether a checkpoint waits for a human (status parked, an interrupt, awaiting_approval)."""
    m = c.metadata if isinstance(c.metadata, dict) else {}
    return (
        str(m.get("status", "")).lower() == "parked"
        or bool(m.get("interrupt"))
        or bool(m.get("awaiting_approval"))
    )


def _what(c: Checkpoint) -> str:
    m = c.metadata if isinstance(c.metadata, dict) else {}
    interrupt: Any = m.get("interrupt") or m.get("awaiting_approval")
    if isinstance(interrupt, dict):
        for key in ("reason", "message", "question", "action"):
            if interrupt.get(key):
                return f" ({interrupt[key]})"
    if isinstance(interrupt, str):
        return f" ({interrupt})"
    return ""


def _since(c: Checkpoint) -> datetime | None:
    return c.created_at


def _days(a: datetime | None, b: datetime | None) -> str:
    if a is None or b is None:
        return ""
    hours = (b - a).total_seconds() / 3600
    return f" after {hours / 24:.1f} days" if hours >= 24 else f" after {hours:.1f} hours"


def parked(inp: AuditInput) -> list[Finding]:
    """The run is parked for approval at its head; since when."""
    if not is_parked(inp.head):
        return []
    start = inp.head
    for c in reversed(inp.lineage):
        if not is_parked(c):
            break
        start = c
    since = _since(start)
    when = since.strftime("%Y-%m-%d %H:%M UTC") if since else "an unknown time"
    return [
        Finding(
            "parked-awaiting-approval", "warning", start.step_index,
            f"parked for approval since {when} (step {start.step_index}){_what(start)}",
            "on approval, resume from the head and re-check the policy and the approver's "
            "permissions at resume time, not at request time",
        )
    ]  # fmt: skip


def _reauthorized(inp: AuditInput, resumed: Checkpoint) -> bool:
    m = resumed.metadata if isinstance(resumed.metadata, dict) else {}
    if any(m.get(k) for k in _EVIDENCE_KEYS):
        return True
    calls = [t for t in inp.calls if t.step_index == resumed.step_index and not t.is_write]
    return any(any(w in t.name.lower() for w in _EVIDENCE_WORDS) for t in calls)


def resumed_without_reauth(inp: AuditInput) -> list[Finding]:
    """A parked run resumed with no re-check of policy or permissions."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        if not is_parked(parent) or is_parked(child) or _reauthorized(inp, child):
            continue
        out.append(
            Finding(
                "resume-without-reauthorization", "error", child.step_index,
                f"resumed at step {child.step_index}{_days(parent.created_at, child.created_at)} "
                f"parked, with no re-check of policy or permissions",
                "re-authorize on resume: check the current policy and the approver's rights "
                "before acting on an old approval",
            )
        )  # fmt: skip
    return out


def approval_rules() -> list[Callable[[AuditInput], list[Finding]]]:
    """The approval rules, in documentation order."""
    return [parked, resumed_without_reauth]
