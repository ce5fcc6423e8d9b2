"""The Audit page's data: the verdict of every run, and what a resume of one must verify."""

from __future__ import annotations

from typing import Any

import orjson

from debugger.audit import audit_store, summary_rows, verdict_title
from debugger.audit.retention import retention_findings
from debugger.migrations import Registry
from debugger.model import AuditReport
from debugger.store import Store

__all__ = ["effect_rows", "store_warnings", "verdict_rows"]


def verdict_rows(store: Store, migrations: Registry | str | None = None) -> list[dict[str, Any]]:
    """One row per run: its verdict (as a heading names it), counts by severity, next step.

    Args:
        store: an open store.
        migrations: a :class:`Registry`, a module name, or None for ``$STEPSCOPE_MIGRATIONS``.

    Returns:
        The rows of :func:`debugger.audit.summary_rows`, with the verdict in words.

    Raises:
        MigrationError: the migrations module cannot be loaded.
    """
    rows = summary_rows(audit_store(store, migrations))
    return [{**row, "verdict": verdict_title(row["verdict"])} for row in rows]


def effect_rows(report: AuditReport) -> list[dict[str, Any]]:
    """The pending effects a resume must resolve by key, one row each."""
    return [
        {"key": c.idempotency_key, "tool": c.tool, "step": c.step_index, "status": c.status,
         "args": orjson.dumps(c.args).decode()}
        for c in report.verify_effects
    ]  # fmt: skip


def store_warnings(store: Store) -> list[dict[str, Any]]:
    """The store-level findings (``no-retention``: run content kept with no rule to expire
    it), as ``stepscope audit --all`` prints them after its table.

    They concern the store, not one run, so the Audit page shows them above its verdicts.

    Raises:
        StepscopeError: the settings file cannot be read.
    """
    return [f.to_dict() for f in retention_findings(store)]
