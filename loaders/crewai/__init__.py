"""The CrewAI flavour: ``flavour`` reads ``SQLiteFlowPersistence``'s tables a flow at a time,
``map`` maps a flow's persisted states (a checkpoint per completed method, the parked head)."""

from loaders.crewai.flavour import CrewAIFlavour

__all__ = ["CrewAIFlavour"]
