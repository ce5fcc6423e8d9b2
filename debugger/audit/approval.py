"""Audit rules about human approval: runs parked for it, and resumes that skip re-authorization.

An approval is given under the policy and permissions of its moment. A run that waited days
for it must re-check them when it resumes (the policy may have changed, the approver's rights
too), so a resume straight after a park with no sign of a re-check is a finding.

Evidence of a re-check, in this order: the resumed checkpoint's metadata has
``reauthorized`` / ``reauthorization`` / ``authorization`` set; or the tape of the resumed step
holds a read call whose name mentions policy, permission, authorization or approval.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from debugger.audit.registry import AuditInput, rule
from debugger.model import Checkpoint, Finding

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
    m = c.metadata if isinstance(c.metadata, dict) else {}
    interrupt = m.get("interrupt")
    since = interrupt.get("since") if isinstance(interrupt, dict) else None
    if isinstance(since, str):
        try:
            parsed = datetime.fromisoformat(since)
        except ValueError:
            return c.created_at
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    return c.created_at


def _days(a: datetime | None, b: datetime | None) -> str:
    if a is None or b is None:
        return ""
    hours = (b - a).total_seconds() / 3600
    return f" after {hours / 24:.1f} days" if hours >= 24 else f" after {hours:.1f} hours"


@rule("parked-awaiting-approval")
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


def _evidence(inp: AuditInput, resumed: Checkpoint) -> str | None:
    m = resumed.metadata if isinstance(resumed.metadata, dict) else {}
    for key in _EVIDENCE_KEYS:
        if m.get(key):
            return f"metadata.{key}"
    resume = m.get("resume")
    if isinstance(resume, dict) and resume.get("permissions"):
        return "permissions re-checked (metadata.resume.permissions)"
    for t in inp.calls:
        same_step = t.step_index == resumed.step_index and not t.is_write
        if same_step and any(w in t.name.lower() for w in _EVIDENCE_WORDS):
            return f"{t.name} called at step {t.step_index}"
    return None


@rule("resumed-after-approval", "resume-without-reauthorization")
def resumed_after_park(inp: AuditInput) -> list[Finding]:
    """A parked run resumed: with a re-check of policy or permissions (info), or without."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        if not is_parked(parent) or is_parked(child):
            continue
        waited = _days(_since(parent), child.created_at)
        evidence = _evidence(inp, child)
        if evidence:
            out.append(
                Finding(
                    "resumed-after-approval", "info", child.step_index,
                    f"resumed at step {child.step_index}{waited} parked, re-authorized at "
                    f"resume: {evidence}",
                    "nothing to do: an old approval was checked against today's rules",
                )
            )  # fmt: skip
            continue
        out.append(
            Finding(
                "resume-without-reauthorization", "error", child.step_index,
                f"resumed at step {child.step_index}{waited} parked, with no re-check of "
                "policy or permissions",
                "re-authorize on resume: check the current policy and the approver's rights "
                "before acting on an old approval",
            )
        )  # fmt: skip
    return out
