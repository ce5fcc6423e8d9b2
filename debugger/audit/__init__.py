"""The resumability audit: could this run be resumed, and what would a resume do?

``audit_run(store, run_id)`` audits one stored run, ``audit_records`` hand-built records; the
rules live one family a module (``rules``, ``effects``, ``versions``, ``approval``,
``lineage``), registered by ``@rule`` in ``debugger.audit.registry``. docs/audit.md explains
every rule.
"""

from __future__ import annotations

from debugger.audit.registry import AuditInput, rule
from debugger.audit.run import (
    RULE_IDS,
    audit_records,
    audit_run,
    audit_store,
    lineage,
    summary_rows,
)
from debugger.audit.verdict import VERDICT_WORDS, verdict_title, verdict_word

__all__ = [
    "RULE_IDS",
    "VERDICT_WORDS",
    "AuditInput",
    "audit_records",
    "audit_run",
    "audit_store",
    "lineage",
    "rule",
    "summary_rows",
    "verdict_title",
    "verdict_word",
]
