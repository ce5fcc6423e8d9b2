"""The CrewAI flavour: ``flavour`` reads ``SQLiteFlowPersistence``'s tables a flow at a time,
``map`` maps a flow's persisted states (a checkpoint per completed method, the parked head).

The flavour is loaded on first use: the registry first asks ``shape`` whether a SQL source is
one of these, without importing the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loaders.lazy import lazy_attributes

if TYPE_CHECKING:
    from loaders.crewai.flavour import CrewAIFlavour

__all__ = ["CrewAIFlavour"]


__getattr__ = lazy_attributes(__name__, "loaders.crewai.flavour", __all__)
