"""The LangGraph flavour: SqliteSaver and PostgresSaver databases, read directly.

``source`` reads the savers' tables in one ordered pass, ``decode`` turns their serialized
values into plain JSON without importing user classes, ``map`` maps a decoded checkpoint onto
the canonical columns, ``tape`` rebuilds the tool-call tape, and ``flavour`` ties them into
the :class:`LangGraphFlavour` the registry offers.
"""

from loaders.langgraph.decode import SafeDecoder, to_json, type_label
from loaders.langgraph.flavour import LangGraphFlavour, select_all, to_batch

__all__ = ["LangGraphFlavour", "SafeDecoder", "select_all", "to_batch", "to_json", "type_label"]
