"""Reading a Temporal history's JSON: event types, attributes and payloads.

``fetch_history().to_json()`` and ``temporal workflow show --output json`` write the
history as protobuf's JSON: ``{"events": [...]}``, each event with ``eventId`` (a string),
``eventTime``, ``eventType`` (``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED``; older tools wrote
``ActivityTaskScheduled``) and one ``...EventAttributes`` object. Payloads are
``{"metadata": {"encoding": base64}, "data": base64}``: ``json/plain`` (and
``json/protobuf``) are decoded to their JSON value, ``binary/null`` to null; any other
encoding (a custom codec, encryption, raw bytes) stays opaque: its encoding and size are
shown, its bytes are never interpreted.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import orjson

JSON_ENCODINGS = {"json/plain", "json/protobuf"}


def event_type(event: dict[str, Any]) -> str:
    """``ACTIVITY_TASK_SCHEDULED`` from either spelling of the event's type."""
    raw = str(event.get("eventType") or "")
    if raw.startswith("EVENT_TYPE_"):
        return raw.removeprefix("EVENT_TYPE_")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", raw).upper()


def attributes(event: dict[str, Any]) -> dict[str, Any]:
    """The event's ``...EventAttributes`` object (empty when it has none)."""
    for key, value in event.items():
        if key.endswith("EventAttributes") and isinstance(value, dict):
            return value
    return {}


def _b64(text: Any) -> bytes:
    return base64.b64decode(str(text or ""), validate=False)


def payload(p: Any) -> Any:
    """One payload's value: JSON decoded, null, or an opaque ``{"encoding", "bytes"}``."""
    if not isinstance(p, dict):
        return p
    found = p.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    try:
        encoding = _b64(meta.get("encoding")).decode("utf-8", "replace")
        data = _b64(p.get("data"))
    except (binascii.Error, ValueError):
        return {"encoding": "unreadable", "bytes": len(str(p.get("data") or ""))}
    if encoding == "binary/null":
        return None
    if encoding in JSON_ENCODINGS:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return {"encoding": encoding, "bytes": len(data)}


def payloads(holder: Any) -> Any:
    """A ``{"payloads": [...]}`` object's value: one payload's value, or a list of them."""
    items = holder.get("payloads") if isinstance(holder, dict) else None
    if not items:
        return None
    values = [payload(p) for p in items]
    return values[0] if len(values) == 1 else values


def failure_text(failure: Any) -> str | None:
    """A failure's message with its causes (``message: cause: cause``), no stack trace."""
    parts: list[str] = []
    while isinstance(failure, dict) and len(parts) < 8:
        info = failure.get("applicationFailureInfo") or {}
        kind = info.get("type") if isinstance(info, dict) else None
        msg = str(failure.get("message") or "")
        parts.append(f"{kind}: {msg}" if kind else msg)
        failure = failure.get("cause")
    return ": ".join(p for p in parts if p) or None
