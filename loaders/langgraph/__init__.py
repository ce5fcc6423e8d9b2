"""The LangGraph flavour: SqliteSaver and PostgresSaver databases, read directly.

``source`` reads the savers' tables in one ordered pass, ``decode`` turns their serialized
values into plain JSON without importing user classes, ``map`` maps a decoded checkpoint onto
the canonical columns, ``tape`` rebuilds the tool-call tape, and ``flavour`` ties them into
the :class:`LangGraphFlavour` the registry offers.

The names below are loaded on first use, so that the replay's sandbox child, which needs
``map`` only, does not import Arrow through ``flavour``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loaders.langgraph.decode import SafeDecoder, to_json, type_label
    from loaders.langgraph.flavour import LangGraphFlavour, select_all, to_batch

__all__ = ["LangGraphFlavour", "SafeDecoder", "select_all", "to_batch", "to_json", "type_label"]
_DECODE = ("SafeDecoder", "to_json", "type_label")


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'loaders.langgraph' has no attribute {name!r}")
    module = "decode" if name in _DECODE else "flavour"
    value = getattr(importlib.import_module(f"loaders.langgraph.{module}"), name)
    globals()[name] = value
    return value
