"""The OpenAI Agents SDK flavour.

``session`` reads SQLiteSession / AdvancedSQLiteSession tables, ``items`` knows the
Responses-API items they hold (turns, pending calls, the tape), ``map`` maps a session's
branch a checkpoint per turn, ``runstate`` maps a saved RunState file, and ``flavour`` ties
them into the :class:`OpenAIAgentsFlavour` the registry offers.

The flavour is loaded on first use: the registry first asks ``session`` whether a SQL source
is one of these, without importing the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loaders.openai_agents.flavour import OpenAIAgentsFlavour

__all__ = ["OpenAIAgentsFlavour"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'loaders.openai_agents' has no attribute {name!r}")
    value = getattr(importlib.import_module("loaders.openai_agents.flavour"), name)
    globals()[name] = value
    return value
