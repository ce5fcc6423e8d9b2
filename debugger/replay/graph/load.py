"""``MODULE:ATTR`` as a compiled LangGraph graph on the replay's own checkpointer.

ATTR may be a compiled graph, a ``StateGraph`` builder, or a function returning either, so
the user's module needs no checkpointer of its own: the replay always puts the graph on an
in-memory saver (:class:`~debugger.replay.graph.restore.ReplaySaver`) and never on the one
the application uses.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any


class GraphSpecError(ValueError):
    """MODULE:ATTR does not name a LangGraph graph."""


def resolve(spec: str) -> Any:
    """The object ``module:attribute`` names (dots in the attribute walk attributes)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise GraphSpecError(f"graph {spec!r} is not of the form module:attribute")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _is_builder(obj: Any) -> bool:
    return hasattr(obj, "compile") and hasattr(obj, "add_node")


def _is_compiled(obj: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def load_graph(spec: str, checkpointer: Any) -> Any:
    """The graph ``spec`` names, compiled (or copied) onto ``checkpointer``.

    Raises:
        GraphSpecError: the object is none of a compiled graph, a builder or a factory of
            either.
    """
    obj = resolve(spec)
    if not (_is_compiled(obj) or _is_builder(obj)) and callable(obj):
        obj = _call_factory(obj, spec)
    if _is_builder(obj):
        return obj.compile(checkpointer=checkpointer)
    if _is_compiled(obj):
        return obj.copy(update={"checkpointer": checkpointer})
    raise GraphSpecError(
        f"{spec} is a {type(obj).__name__}, not a LangGraph graph: name a compiled graph, a "
        "StateGraph builder, or a function returning one"
    )


def _call_factory(factory: Any, spec: str) -> Any:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    if "checkpointer" in params:
        return factory(checkpointer=None)
    return factory()
