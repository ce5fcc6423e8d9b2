"""The run's own budget limits, checked the way the runtime checks them.

Shared by the child (which stops the loop) and the parent (which words the reason and
checks that a child claiming a spent budget really reported one).
"""

from __future__ import annotations

from typing import Any

from debugger.contract import BUDGET_LIMITS

BUDGET_WORDS = (
    ("steps_spent", "step"),
    ("tokens_spent", "token"),
    ("wall_clock_ms", "wall-clock"),
)
"""Each budget in the order it is checked (steps first), and its word in a reason."""


def budget_reason(budgets: dict[str, int], limits: dict[str, Any]) -> str | None:
    """Why the run's own limits stop it (as the runtime checks them), or None."""
    for spent_key, what in BUDGET_WORDS:
        limit = limits.get(BUDGET_LIMITS[spent_key])
        if isinstance(limit, int | float) and budgets[spent_key] >= limit:
            return f"the run's {what} budget is spent ({budgets[spent_key]} of {limit})"
    return None
