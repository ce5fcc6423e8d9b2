"""The tools the OpenAI Agents fixtures' agents call, for every SDK version the generators
run (``generate.py``, ``generate_0_2.py``): nothing here needs more than ``function_tool``."""

from __future__ import annotations

from typing import Any

from agents import function_tool


@function_tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "amount": 42.5, "status": "delivered"}


@function_tool
def issue_refund(order_id: str, amount: float, idempotency_key: str) -> str:
    """Refund an order (a write, keyed)."""
    return f"refunded {amount} on {order_id}"


@function_tool
def carrier_status(order_id: str) -> str:
    """Ask the carrier (it times out)."""
    raise ConnectionError("carrier API timed out")


REFUND = {"order_id": "A-17", "amount": 42.5, "idempotency_key": "refund-A-17"}
