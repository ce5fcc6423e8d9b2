"""The Google ADK flavour: session databases written by ADK's session services.

``source`` reads the ``sessions`` and ``events`` tables in one ordered pass, ``map`` maps a
session's events onto checkpoints (state rebuilt from the deltas), the tape and a status,
and ``flavour`` ties them into the :class:`AdkFlavour` the registry offers. docs/adk.md
gives the mapping.

The flavour is loaded on first use: the registry first asks ``source`` whether a SQL source
is one of these, without importing the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loaders.adk.flavour import AdkFlavour

__all__ = ["AdkFlavour"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'loaders.adk' has no attribute {name!r}")
    value = getattr(importlib.import_module("loaders.adk.flavour"), name)
    globals()[name] = value
    return value
