"""The data behind the app's pages, as plain functions a notebook can call too.

Every function reads through :class:`debugger.store.Store` and returns small, JSON-ready
records; the Streamlit pages in ``debugger/ui/`` only render them.

- :mod:`~debugger.pages_data.timeline`: one step of a run (diff from the previous step,
  budgets, pending effects, metadata with changes marked, the step's calls) and the budget
  series; :mod:`~debugger.pages_data.recent` keeps the last checkpoints read.
- :mod:`~debugger.pages_data.fork_tree`: where a run branches, for the Timeline;
  :mod:`~debugger.pages_data.incident`: where the run stopped, the step never checkpointed,
  budgets over the steps, links from a step, and deep links checked.
- :mod:`~debugger.pages_data.markup`: checkpoint content as text no markup can change.
- :mod:`~debugger.pages_data.triage`: the Runs page's audit verdicts and Needs attention.
- :mod:`~debugger.pages_data.findings`: a run's audit findings by step, for the Timeline.
- :mod:`~debugger.pages_data.runs`: runs needing attention, counts per status, the filters;
  :mod:`~debugger.pages_data.run_list` lays the list and Needs attention out as HTML, and
  :mod:`~debugger.pages_data.status` gives each status its colour, icon and badge.
- :mod:`~debugger.pages_data.diff`: two checkpoints compared, for the Diff page.
- :mod:`~debugger.pages_data.imports`: the Import page's imports and uploads.
- :mod:`~debugger.pages_data.replay`: the Replay page's tables and messages.
- :mod:`~debugger.pages_data.audit` and :mod:`~debugger.pages_data.migrations`: the Audit and
  Migrations pages' tables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debugger.pages_data.diff import default_position, diff_view, parse_patterns, split_summary
    from debugger.pages_data.findings import audit_findings, findings_by_step
    from debugger.pages_data.runs import ATTENTION, needing_attention, status_counts
    from debugger.pages_data.timeline import (
        MAX_DIFF_ROWS,
        StepRef,
        StepView,
        budget_series,
        find_ref,
        previous_ref,
        step_refs,
        step_view,
        view_of,
        whole_value,
    )

_HOME = {
    **dict.fromkeys(("default_position", "diff_view", "parse_patterns", "split_summary"), "diff"),
    **dict.fromkeys(("audit_findings", "findings_by_step"), "findings"),
    **dict.fromkeys(("ATTENTION", "needing_attention", "status_counts"), "runs"),
    **dict.fromkeys(
        ("MAX_DIFF_ROWS", "StepRef", "StepView", "budget_series", "find_ref",
         "previous_ref", "step_refs", "step_view", "view_of", "whole_value"), "timeline"),
}  # fmt: skip
"""Where each name lives. The submodules are imported on first use, so the Runs page (the
app's first page) does not wait for the diff code's DeepDiff and pydantic imports."""


_SUBMODULES = frozenset(
    {"audit", "diff", "findings", "fork_tree", "imports", "incident", "markup", "migrations",
     "recent", "replay", "run_list", "runs", "status", "timeline", "triage"}
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:  # ``pages_data.recent`` works before anything imported it
        return importlib.import_module(f"{__name__}.{name}")
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ATTENTION",
    "MAX_DIFF_ROWS",
    "StepRef",
    "StepView",
    "audit_findings",
    "budget_series",
    "default_position",
    "diff_view",
    "find_ref",
    "findings_by_step",
    "needing_attention",
    "parse_patterns",
    "previous_ref",
    "split_summary",
    "status_counts",
    "step_refs",
    "step_view",
    "view_of",
    "whole_value",
]
