"""The CrewAI flavour: ``flavour`` reads ``SQLiteFlowPersistence``'s tables a flow at a time,
``map`` maps a flow's persisted states (a checkpoint per completed method, the parked head).

The flavour is loaded on first use: the registry first asks ``shape`` whether a SQL source is
one of these, without importing the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loaders.crewai.flavour import CrewAIFlavour

__all__ = ["CrewAIFlavour"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'loaders.crewai' has no attribute {name!r}")
    value = getattr(importlib.import_module("loaders.crewai.flavour"), name)
    globals()[name] = value
    return value
