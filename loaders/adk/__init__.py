"""The Google ADK flavour: session databases written by ADK's session services.

``source`` reads the ``sessions`` and ``events`` tables in one ordered pass, ``map`` maps a
session's events onto checkpoints (state rebuilt from the deltas), the tape and a status,
and ``flavour`` ties them into the :class:`AdkFlavour` the registry offers. docs/adk.md
gives the mapping.
"""

from loaders.adk.flavour import AdkFlavour

__all__ = ["AdkFlavour"]
