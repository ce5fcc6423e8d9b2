"""The scripted "model": decisions made from the request alone, with token usage.

It stands in for an LLM so that every regeneration writes the same bytes: the answer is a
pure function of the request (and of the model version, so a deploy can change wording).
Usage is estimated from the size of the request and the answer, like a tokenizer would.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import date
from typing import Any

import orjson

from debugger.runtime import Clock, ManualClock, Model

MODEL_NAME = "refund-desk-scripted"
MODEL_VERSION = "refund-script-2026.03.1"
SYSTEM_PROMPT_TOKENS = 180


def _tokens(value: Any) -> int:
    return math.ceil(len(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)) / 4)


def _money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def _triage(req: dict[str, Any], version: str) -> dict[str, Any]:
    ticket = req["ticket"]
    wants_refund = "refund" in ticket["message"].lower() or "money back" in ticket["message"]
    return {"intent": "refund" if wants_refund else "question", "order_id": ticket["order_id"]}


def _decide(req: dict[str, Any], version: str) -> dict[str, Any]:
    order, policy, ticket = req["order"], req["policy"], req["ticket"]
    age = date.fromisoformat(ticket["opened_on"]) - date.fromisoformat(order["delivered_on"])
    eligible = order["status"] == "delivered" and age.days <= policy["window_days"]
    amount = order["total_cents"] if eligible else 0
    reason = (
        f"delivered {age.days} days before the request, within the {policy['window_days']}-day "
        f"window of policy {policy['version']}"
        if eligible
        else f"delivered {age.days} days before the request, outside the "
        f"{policy['window_days']}-day window of policy {policy['version']}"
    )
    return {
        "eligible": eligible,
        "amount_cents": amount,
        "reason": reason,
        "needs_approval": eligible and amount > policy["approval_over_cents"],
    }


def _plan_refund(req: dict[str, Any], version: str) -> dict[str, Any]:
    d = req["decision"]
    return {"memo": f"Refund {_money(d['amount_cents'])} for {req['order_id']}: {d['reason']}"}


def _draft_email(req: dict[str, Any], version: str) -> dict[str, Any]:
    ticket, decision, refund = req["ticket"], req["decision"], req.get("refund")
    if refund:
        subject = (
            f"Your refund for {ticket['order_id']} is on its way"
            if version < "refund-script-2026.03.2"
            else f"Refund issued: {ticket['order_id']} ({_money(refund['amount_cents'])})"
        )
        body = (
            f"Hi {ticket['customer']}, we refunded {_money(refund['amount_cents'])} "
            f"(reference {refund['refund_id']}). It reaches your card in 3-5 days."
        )
        return {"template": "refund_issued", "subject": subject, "body": body}
    return {
        "template": "refund_denied",
        "subject": f"About your refund request for {ticket['order_id']}",
        "body": f"Hi {ticket['customer']}, we cannot refund this order: {decision['reason']}.",
    }


def _close(req: dict[str, Any], version: str) -> dict[str, Any]:
    outcome = "refunded" if req.get("refund") else "declined"
    return {"summary": f"Ticket {req['ticket']['id']} closed: {outcome}."}


TASKS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "triage": _triage,
    "decide": _decide,
    "plan_refund": _plan_refund,
    "draft_email": _draft_email,
    "close": _close,
}


def answer(request: dict[str, Any], version: str = MODEL_VERSION) -> dict[str, Any]:
    """The model's response to a request, with ``usage``."""
    task = request.get("task")
    if task not in TASKS:
        raise ValueError(f"the scripted model has no task {task!r}")
    response = TASKS[str(task)](request, version)
    inp, out = SYSTEM_PROMPT_TOKENS + _tokens(request), _tokens(response) + 12
    return {
        **response,
        "usage": {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out},
    }


def scripted_model(clock: Clock | None = None, version: str = MODEL_VERSION) -> Model:
    """The model for ``Runtime(model=...)``; with a ManualClock it takes time like a real one."""

    def call(request: dict[str, Any]) -> dict[str, Any]:
        response = answer(request, version)
        if isinstance(clock, ManualClock):
            clock.advance(450 + 9 * response["usage"]["output_tokens"])
        return response

    return Model(name=MODEL_NAME, version=version, fn=call)
