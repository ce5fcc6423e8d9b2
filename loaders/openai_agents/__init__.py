"""The OpenAI Agents SDK flavour.

``session`` reads SQLiteSession / AdvancedSQLiteSession tables, ``items`` knows the
Responses-API items they hold (turns, pending calls, the tape), ``map`` maps a session's
branch a checkpoint per turn, ``runstate`` maps a saved RunState file, and ``flavour`` ties
them into the :class:`OpenAIAgentsFlavour` the registry offers.

The flavour is loaded on first use: the registry first asks ``session`` whether a SQL source
is one of these, without importing the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loaders.lazy import lazy_attributes

if TYPE_CHECKING:
    from loaders.openai_agents.flavour import OpenAIAgentsFlavour

__all__ = ["OpenAIAgentsFlavour"]


__getattr__ = lazy_attributes(__name__, "loaders.openai_agents.flavour", __all__)
