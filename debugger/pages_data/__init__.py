"""The data behind the app's pages, as plain functions a notebook can call too.

Every function reads through :class:`debugger.store.Store` and returns small, JSON-ready
records; the Streamlit pages in ``debugger/ui/`` only render them.

- :mod:`~debugger.pages_data.step`: one step of a run (diff from the previous step, budgets,
  pending effects, metadata with changes marked, the step's calls) and the budget series.
- :mod:`~debugger.pages_data.runs`: the runs table and audit findings by step.
- :mod:`~debugger.pages_data.diff`: two checkpoints compared, for the Diff page.
- :mod:`debugger.fork_tree`: where a run branches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debugger.pages_data.diff import default_position, diff_view, parse_patterns, split_summary
    from debugger.pages_data.runs import (
        ATTENTION,
        audit_findings,
        findings_by_step,
        needing_attention,
        status_counts,
    )
    from debugger.pages_data.step import (
        MAX_DIFF_ROWS,
        StepRef,
        StepView,
        budget_series,
        find_ref,
        preview,
        previous_ref,
        step_refs,
        step_view,
        view_of,
    )

_HOME = {
    **dict.fromkeys(("default_position", "diff_view", "parse_patterns", "split_summary"), "diff"),
    **dict.fromkeys(
        ("ATTENTION", "audit_findings", "findings_by_step", "needing_attention",
         "status_counts"), "runs"),
    **dict.fromkeys(
        ("MAX_DIFF_ROWS", "StepRef", "StepView", "budget_series", "find_ref", "preview",
         "previous_ref", "step_refs", "step_view", "view_of"), "step"),
}  # fmt: skip
"""Where each name lives. The submodules are imported on first use: the Runs page (the app's
first page) needs none of the diff code, whose DeepDiff and pydantic imports took ~0.3 s of
the app's start."""


_SUBMODULES = frozenset({"diff", "imports", "recent", "runs", "step"})


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
    "preview",
    "previous_ref",
    "split_summary",
    "status_counts",
    "step_refs",
    "step_view",
    "view_of",
]
