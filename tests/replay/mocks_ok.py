"""A mocks module for the replay tests: a fixed value and two callables."""

from __future__ import annotations

from typing import Any

MOCKS = {"price": {"amount": 5}}


def pay(key: str, amount: int) -> dict[str, Any]:
    return {"receipt": f"mock-{key}", "amount": amount}


def model(request: dict[str, Any]) -> dict[str, Any]:
    return {"text": "mocked", "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
