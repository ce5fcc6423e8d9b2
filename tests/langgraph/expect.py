"""What LangGraph itself says about a thread, normalised to the JSON Stepscope stores.

``normalise`` renders Python values the way docs/langgraph.md says the safe decoder renders
their serialized form (pydantic models and dataclasses as objects with ``__type__``, enums as
``{"__type__": "enum:...", "value": ...}``, datetimes as ISO strings, sets as sorted lists).
"""

from __future__ import annotations

import dataclasses
import enum
from collections import deque
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import orjson
from pydantic import BaseModel


def _tag(kind: str, obj: Any) -> str:
    return f"{kind}:{type(obj).__module__}.{type(obj).__name__}"


def normalise(v: Any) -> Any:
    """A Python value as JSON, following the decoder's documented rendering."""
    if isinstance(v, BaseModel):
        return {"__type__": _tag("pydantic", v), **normalise(v.model_dump())}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = {f.name: normalise(getattr(v, f.name)) for f in dataclasses.fields(v)}
        return {"__type__": _tag("dataclass", v), **fields}
    if isinstance(v, enum.Enum):
        return {"__type__": _tag("enum", v), "value": normalise(v.value)}
    if isinstance(v, datetime | date | time):
        return v.isoformat()
    if isinstance(v, timedelta):
        return v.total_seconds()
    if isinstance(v, UUID | Decimal):
        return str(v)
    if isinstance(v, set | frozenset):
        items = [normalise(i) for i in v]
        return sorted(items, key=lambda i: orjson.dumps(i, option=orjson.OPT_SORT_KEYS))
    if isinstance(v, list | tuple | deque):
        return [normalise(i) for i in v]
    if isinstance(v, dict):
        return {str(k): normalise(x) for k, x in v.items()}
    return v


def expected(graph: Any, thread: str, ns: str = "") -> list[dict[str, Any]]:
    """``graph.get_state_history`` of a thread (or a subgraph namespace), normalised; the
    head's ``next`` is ``get_state``'s (live: without the tasks whose writes are stored)."""
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    out = []
    for snap in graph.get_state_history(cfg):
        parent = snap.parent_config["configurable"]["checkpoint_id"] if snap.parent_config else None
        out.append(
            {
                "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
                "parent_id": parent,
                "step": snap.metadata["step"],
                "values": normalise(snap.values),
                "next": sorted(snap.next),
            }
        )
    if out:
        # the head is what get_state() shows live: tasks that finished are not due next
        out[0]["next"] = sorted(graph.get_state(cfg).next)
    return out


def same_state(imported: Any, values: Any) -> bool:
    """Equal, except that channels with no stored value may be missing from the import.

    LangGraph fills a reducer channel that was never written with its empty default (``[]``)
    from the graph's code; the database holds nothing for it, so Stepscope shows nothing.
    An entrypoint's state (the functional API) is its output, any value: equal.
    """
    if not isinstance(imported, dict) or not isinstance(values, dict):
        return bool(imported == values)
    missing = set(values) - set(imported)
    if any(values[k] not in ([], {}, None, "", 0) for k in missing):
        return False
    return imported == {k: v for k, v in values.items() if k not in missing}
