"""Mocks that answer like the test tools (for the step the crashed run lost)."""

from __future__ import annotations

from typing import Any


def price(item: str) -> dict[str, Any]:
    return {"amount": int(item.split("-")[1]) * 10}


def pay(key: str, amount: int) -> dict[str, Any]:
    return {"receipt": f"sandbox-{key}"}


def model(request: dict[str, Any]) -> dict[str, Any]:
    usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    return {"text": f"ok: {request['prompt']}", "usage": usage}
