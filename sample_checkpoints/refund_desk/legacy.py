"""The refund desk as older releases wrote it: state schemas v2, v1 and the v0 prototype.

The older releases ran the same decision logic; what differed is the shape of the working
state they saved. :class:`LegacyRefundDesk` reproduces that: it works on the current (v3)
shape internally and saves the old shape, so that a v1 or v2 checkpoint migrated with
:mod:`.migrations` equals what the current agent writes. The round trip is tested.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from sample_checkpoints.refund_desk import migrations
from sample_checkpoints.refund_desk.agent import Ctx, RefundDesk


def _cents_to_usd(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k.endswith("_cents") and isinstance(v, int):
                out[k[: -len("_cents")] + "_usd"] = v / 100
            else:
                out[k] = _cents_to_usd(v)
        return out
    if isinstance(value, list):
        return [_cents_to_usd(v) for v in value]
    return value


def v3_to_v2(state: dict[str, Any]) -> dict[str, Any]:
    """What the v2 release saved for this v3 state."""
    s = copy.deepcopy(state)
    effects = s.pop("effects")
    s["refund"], s["email"] = effects["refund"], effects["email"]
    s["pending_effect"] = s.pop("next_effect")
    if isinstance(s.get("decision"), dict):
        s["decision"].pop("currency", None)
    return s


def v2_to_v1(state: dict[str, Any]) -> dict[str, Any]:
    """What the v1 release saved for this v2 state."""
    s = copy.deepcopy(state)
    ticket = s.pop("ticket")
    s["notes"] = s.pop("log")
    s = _cents_to_usd(s)
    s.update({f"ticket_{k}": v for k, v in ticket.items()})
    return dict(s)


def save_as(state: dict[str, Any], version: int) -> dict[str, Any]:
    """A v3 state in the shape of ``version`` (1, 2 or 3)."""
    if version == 3:
        return state
    v2 = v3_to_v2(state)
    return v2 if version == 2 else v2_to_v1(v2)


def load_from(state: dict[str, Any], version: int) -> dict[str, Any]:
    """A state saved as ``version`` in the current shape, through the migrations."""
    for v in range(version, migrations.CURRENT_VERSION):
        state = getattr(migrations, f"v{v}_to_v{v + 1}")(state)
    return state


class LegacyRefundDesk:
    """The refund desk of an older release, saving state schema ``version``."""

    name = "refund_desk"

    def __init__(self, version: int) -> None:
        if version not in (1, 2):
            raise ValueError("legacy releases wrote schema v1 or v2")
        self.schema_version = version
        self._inner = RefundDesk()

    def initial_state(self, v3_state: dict[str, Any]) -> dict[str, Any]:
        """The old shape of a new ticket's state."""
        return save_as(v3_state, self.schema_version)

    def is_done(self, state: dict[str, Any]) -> bool:
        return self._inner.is_done(load_from(state, self.schema_version))

    def step(self, state: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
        current = self._inner.step(load_from(state, self.schema_version), ctx)
        return save_as(current, self.schema_version)

    def planned_effects(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        return self._inner.planned_effects(load_from(state, self.schema_version))


class PrototypeRefundDesk:
    """The v0 prototype: its working state was one prose transcript (a JSON string).

    Nothing structured can be recovered from it reliably, so there is no v0 -> v1 migration.
    """

    name = "refund_desk"
    schema_version = 0

    @staticmethod
    def initial_state(ticket: dict[str, Any]) -> str:
        """The transcript a new ticket starts with."""
        return (
            f"Ticket {ticket['id']} from {ticket['customer']} about order "
            f'{ticket["order_id"]}: "{ticket["message"]}"'
        )

    def is_done(self, state: str) -> bool:
        return "Closed." in state

    def step(self, state: str, ctx: Ctx) -> str:
        match = re.search(r"order (ORD-\d+)", state)
        if match is None:
            raise ValueError("no order id in the transcript")
        order_id = match.group(1)
        if "Triage:" not in state:
            ticket = {"id": "?", "order_id": order_id, "message": state}
            answer = ctx.model({"task": "triage", "ticket": ticket})
            return state + f" Triage: the customer wants a {answer['intent']}."
        order = ctx.tool("lookup_order", order_id=order_id)
        return state + (
            f" Looked up {order_id}: {order['item']}, "
            f"${order['total_cents'] / 100:.2f}, delivered {order['delivered_on']}."
        )
