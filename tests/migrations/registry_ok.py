"""A user's migrations module as the tests' synthetic runs need it (no Stepscope import)."""

from typing import Any

CURRENT_VERSION = 3


def v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
    """Version 2 nests the order: {"order": {"id": ...}}; a v1 state without order_id raises."""
    return {"order": {"id": state["order_id"]}, "amount": state["amount"]}


def v2_to_v3(state: dict[str, Any]) -> dict[str, Any]:
    """Version 3 adds the currency."""
    state["currency"] = "EUR"  # mutates its argument on purpose: the caller's copy must survive
    return state
