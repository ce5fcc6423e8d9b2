"""State-schema migrations of the refund desk: v1 -> v2 -> v3 (pure functions).

Stepscope (``debugger.migrations``) and the runtime find them by name: ``CURRENT_VERSION``
and ``vN_to_vM``. There is no ``v0_to_v1``: the v0 prototype kept its working state as a
prose transcript, which no function can turn into structure, so a v0 checkpoint needs a
restart.

What changed:

* v1 -> v2: the ticket's fields moved from ``ticket_*`` keys into a ``ticket`` object;
  money moved from float dollars (``*_usd``) to integer cents (``*_cents``); ``notes``
  became ``log``.
* v2 -> v3: the outcomes of writes moved under ``effects`` (``refund``, ``email``);
  ``pending_effect`` became ``next_effect``; decisions carry their ``currency``.
"""

from __future__ import annotations

import copy
from typing import Any

CURRENT_VERSION = 3


def _usd_to_cents(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k.endswith("_usd") and isinstance(v, int | float):
                out[k[: -len("_usd")] + "_cents"] = round(v * 100)
            else:
                out[k] = _usd_to_cents(v)
        return out
    if isinstance(value, list):
        return [_usd_to_cents(v) for v in value]
    return value


def v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
    """Nest the ticket, dollars to cents, ``notes`` to ``log``."""
    s = copy.deepcopy(state)
    ticket = {k[len("ticket_") :]: s.pop(k) for k in list(s) if k.startswith("ticket_")}
    s = _usd_to_cents(s)
    s["ticket"] = ticket
    s["log"] = s.pop("notes", [])
    return dict(s)


def v2_to_v3(state: dict[str, Any]) -> dict[str, Any]:
    """Group write outcomes under ``effects``, rename ``pending_effect``, add ``currency``."""
    s = copy.deepcopy(state)
    s["effects"] = {"refund": s.pop("refund", None), "email": s.pop("email", None)}
    s["next_effect"] = s.pop("pending_effect", None)
    if isinstance(s.get("decision"), dict):
        s["decision"].setdefault("currency", "USD")
    return s
