"""How a run status looks: its colour, its Material icon, its badge.

A module of its own, without pandas: the Runs page (the app's first page) needs only these
from the shared rendering pieces (:mod:`debugger.ui.widgets`, which needs pandas).
"""

from __future__ import annotations

STATUS_COLOURS = {
    "completed": "green",
    "in_progress": "blue",
    "parked": "orange",
    "budget_exhausted": "violet",
    "failed": "red",
    "crashed": "red",
}


STATUS_ICONS = {
    "completed": "check_circle",
    "in_progress": "pending",
    "parked": "pause_circle",
    "budget_exhausted": "data_usage",
    "failed": "error",
    "crashed": "dangerous",
}


def status_badge(status: str) -> str:
    """Markdown badge of a run status (a Material icon: renders without emoji fonts)."""
    colour = STATUS_COLOURS.get(status, "gray")
    icon = STATUS_ICONS.get(status, "help")
    return f":{colour}-badge[:material/{icon}: {status.replace('_', ' ')}]"
