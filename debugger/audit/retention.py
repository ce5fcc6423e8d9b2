"""The store-level audit rule ``no-retention``: run content kept with no rule to expire it.

Checkpoints carry run content, and a debugging store is a copy of it: without retention it
grows forever and keeps every customer's messages as long as the file lives. This rule
looks at the store, not at one run (the per-run rules are registered with ``@rule``), so it
is run by ``stepscope audit --all`` and :func:`retention_findings`: for every import
location whose oldest checkpoint is older than :data:`WARN_AFTER_DAYS`, while the settings
file has no ``[prune]`` rule, it warns with the oldest checkpoint's age and the growth (the
checkpoints written in the last :data:`GROWTH_DAYS` days).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from debugger.audit.registry import finding
from debugger.model import Finding
from debugger.settings import config_table

if TYPE_CHECKING:
    from debugger.store import Store

__all__ = ["GROWTH_DAYS", "RULE_ID", "WARN_AFTER_DAYS", "retention_findings"]

RULE_ID = "no-retention"
WARN_AFTER_DAYS = 90
"""A source whose oldest stored checkpoint is this old, with no retention rule, is warned."""
GROWTH_DAYS = 30
"""The window the growth is counted in."""


def retention_findings(store: Store, now: datetime | None = None) -> list[Finding]:
    """One ``no-retention`` warning per import location with old checkpoints and no rule.

    Args:
        store: an open store.
        now: the current time (naive UTC; default: now), for tests.

    Raises:
        StepscopeError: the settings file cannot be read.
    """
    rules, path = config_table("prune")
    if any(rules.get(k) is not None for k in ("keep_last", "older_than", "completed_older_than")):
        return []
    now = now or datetime.now(UTC).replace(tzinfo=None)
    out = []
    for src in store.source_retention(now - timedelta(days=GROWTH_DAYS)):
        oldest = src["oldest"]
        if oldest is None or now - oldest < timedelta(days=WARN_AFTER_DAYS):
            continue
        where = f"in {path}" if path else "in a stepscope.toml"
        out.append(
            finding(
                RULE_ID, "warning", None,
                f"{src['location']}: {src['checkpoints']:,} checkpoints kept, the oldest "
                f"{(now - oldest).days} days old ({oldest:%Y-%m-%d}), {src['recent']:,} "
                f"written in the last {GROWTH_DAYS} days, and no retention rule expires them",
                f"set keep_last, older_than or completed_older_than in a [prune] table {where} "
                "and run `stepscope prune` (see `stepscope prune --help`)",
            )
        )  # fmt: skip
    return out
