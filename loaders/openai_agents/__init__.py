"""The OpenAI Agents SDK flavour.

``session`` reads SQLiteSession / AdvancedSQLiteSession tables, ``items`` knows the
Responses-API items they hold (turns, pending calls, the tape), ``map`` maps a session's
branch a checkpoint per turn, ``runstate`` maps a saved RunState file, and ``flavour`` ties
them into the :class:`OpenAIAgentsFlavour` the registry offers.
"""

from loaders.openai_agents.flavour import OpenAIAgentsFlavour

__all__ = ["OpenAIAgentsFlavour"]
