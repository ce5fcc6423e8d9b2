"""The Google ADK flavour: session databases written by ADK's session services.

``source`` reads the ``sessions`` and ``events`` tables in one ordered pass, ``map`` maps a
session's events onto checkpoints (state rebuilt from the deltas), the tape and a status,
and ``flavour`` ties them into the :class:`AdkFlavour` the registry offers. docs/adk.md
gives the mapping.

The flavour is loaded on first use: the registry first asks ``source`` whether a SQL source
is one of these, without importing the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loaders.lazy import lazy_attributes

if TYPE_CHECKING:
    from loaders.adk.flavour import AdkFlavour

__all__ = ["AdkFlavour"]


__getattr__ = lazy_attributes(__name__, "loaders.adk.flavour", __all__)
