"""The refund-desk agent (state schema v3): one phase a loop iteration, everything via ``ctx``.

A clean run takes ten steps::

    1 triage (model)        2 lookup_order          3 check_refund_policy
    4 decide (model)        5 approval gate         6 plan the refund (model)
    7 issue_refund (write)  8 draft the email (model)
    9 send_email (write)    10 close (model)

Refunds over the policy's approval limit park the run at step 5 until a person approves;
after the approval the agent re-checks the policy (re-authorization) before paying.

Two agents are exported for replay (``module:attribute``):

* ``agent``: the original code. Step 7 calls ``issue_refund`` straight away. Its runtime
  deduplicates keys it knows, but a replay or a resume that re-executes step 7 sends the
  refund again, because the ledger stores keys without enforcing them.
* ``fixed_agent``: asks the ledger for the refund's key (``find_refund``) first and reuses
  what it finds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from debugger.contract import Context as Ctx

SCHEMA_VERSION = 3


def initial_state(ticket: dict[str, Any]) -> dict[str, Any]:
    """The v3 working state for a new ticket."""
    return {
        "ticket": dict(ticket),
        "phase": "triage",
        "intent": None,
        "order": None,
        "policy": None,
        "decision": None,
        "approval": None,
        "next_effect": None,
        "effects": {"refund": None, "email": None},
        "email_draft": None,
        "resolution": None,
        "log": [],
    }


def _ask(ctx: Ctx, request: dict[str, Any]) -> dict[str, Any]:
    response = dict(ctx.model(request))
    response.pop("usage", None)
    return response


class RefundDesk:
    """The agent. ``check_key_first`` is the fix: look the refund's key up before paying."""

    name = "refund_desk"
    schema_version = SCHEMA_VERSION

    def __init__(self, check_key_first: bool = False) -> None:
        self.check_key_first = check_key_first

    # -- protocol -------------------------------------------------------------------------

    def is_done(self, state: dict[str, Any]) -> bool:
        """Done once the ticket is closed."""
        return bool(state["phase"] == "done")

    def step(self, state: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
        """Run the current phase once and move to the next."""
        handler = self._handlers().get(state["phase"])
        if handler is None:
            raise ValueError(f"unknown phase {state['phase']!r}")
        handler(state, ctx)
        return state

    # -- optional runtime hooks -----------------------------------------------------------

    def planned_effects(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """The write decided on but not made yet (listed as pending in the checkpoint)."""
        return [dict(state["next_effect"])] if state.get("next_effect") else []

    def interrupt(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """Park for a person while an approval is requested."""
        approval = state.get("approval") or {}
        if state["phase"] != "awaiting_approval" or approval.get("status") != "requested":
            return None
        return {"type": "approval", "reason": approval["reason"], "ticket": state["ticket"]["id"]}

    def on_input(self, state: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
        """Apply a person's decision: ``{"approved": bool, "by": str, "at": iso}``."""
        state["approval"] = {
            **state["approval"],
            "status": "granted" if value.get("approved") else "refused",
            "decided_by": value.get("by"),
            "decided_at": value.get("at"),
        }
        state["phase"] = "reauthorize"
        state["log"].append(f"approval {state['approval']['status']} by {value.get('by')}")
        return state

    # -- phases ---------------------------------------------------------------------------

    def _handlers(self) -> dict[str, Callable[[dict[str, Any], Ctx], None]]:
        return {
            "triage": self._triage,
            "lookup_order": self._lookup,
            "check_policy": self._policy,
            "decide": self._decide,
            "approval": self._approval,
            "reauthorize": self._reauthorize,
            "plan_refund": self._plan_refund,
            "refund": self._refund,
            "draft_email": self._draft_email,
            "send_email": self._send_email,
            "close": self._close,
        }

    def _triage(self, state: dict[str, Any], ctx: Ctx) -> None:
        answer = _ask(ctx, {"task": "triage", "ticket": state["ticket"]})
        state["intent"] = answer["intent"]
        state["phase"] = "lookup_order" if answer["intent"] == "refund" else "close"
        state["log"].append(f"triaged as {answer['intent']}")

    def _lookup(self, state: dict[str, Any], ctx: Ctx) -> None:
        state["order"] = ctx.tool("lookup_order", order_id=state["ticket"]["order_id"])
        state["phase"] = "check_policy"
        state["log"].append(f"order {state['order']['order_id']} found")

    def _policy(self, state: dict[str, Any], ctx: Ctx) -> None:
        state["policy"] = ctx.tool("check_refund_policy", category=state["order"]["category"])
        state["phase"] = "decide"
        state["log"].append(f"policy {state['policy']['version']} applies")

    def _decide(self, state: dict[str, Any], ctx: Ctx) -> None:
        request = {
            "task": "decide",
            "ticket": state["ticket"],
            "order": state["order"],
            "policy": state["policy"],
        }
        state["decision"] = {**_ask(ctx, request), "currency": "USD"}
        state["phase"] = "approval" if state["decision"]["eligible"] else "draft_email"
        verdict = "eligible" if state["decision"]["eligible"] else "not eligible"
        state["log"].append(f"decided: {verdict}")

    def _approval(self, state: dict[str, Any], ctx: Ctx) -> None:
        decision, policy = state["decision"], state["policy"]
        if decision["needs_approval"]:
            state["approval"] = {
                "status": "requested",
                "policy_version": policy["version"],
                "reason": f"refund of {decision['amount_cents'] / 100:.2f} USD is over the "
                f"{policy['approval_over_cents'] / 100:.2f} USD limit",
            }
            state["phase"] = "awaiting_approval"
            state["log"].append("approval requested")
            return
        state["approval"] = {"status": "not_required", "policy_version": policy["version"]}
        state["phase"] = "plan_refund"
        state["log"].append("no approval needed")

    def _reauthorize(self, state: dict[str, Any], ctx: Ctx) -> None:
        """After a delayed approval, check the refund is still allowed by today's policy."""
        approval = state["approval"]
        if approval["status"] != "granted":
            state["decision"] = {
                **state["decision"],
                "eligible": False,
                "amount_cents": 0,
                "reason": "the approver refused the refund",
            }
            state["phase"] = "draft_email"
            return
        policy = ctx.tool("check_refund_policy", category=state["order"]["category"])
        request = {
            "task": "decide",
            "ticket": state["ticket"],
            "order": state["order"],
            "policy": policy,
        }
        again = _ask(ctx, request)
        allowed = bool(again["eligible"])
        approval["reauthorization"] = {
            "policy_version": policy["version"],
            "allowed": allowed,
            "reason": again["reason"],
        }
        if allowed:
            state["phase"] = "plan_refund"
            state["log"].append(f"re-authorized under policy {policy['version']}")
            return
        state["policy"] = policy
        state["decision"] = {**again, "currency": "USD"}
        state["phase"] = "draft_email"
        state["log"].append(f"re-authorization denied under policy {policy['version']}")

    def _plan_refund(self, state: dict[str, Any], ctx: Ctx) -> None:
        decision, ticket = state["decision"], state["ticket"]
        answer = _ask(
            ctx, {"task": "plan_refund", "order_id": ticket["order_id"], "decision": decision}
        )
        state["next_effect"] = {
            "tool": "issue_refund",
            "idempotency_key": f"refund-{ticket['id']}-{ticket['order_id']}",
            "args": {
                "order_id": ticket["order_id"],
                "amount_cents": decision["amount_cents"],
                "memo": answer["memo"],
            },
        }
        state["phase"] = "refund"
        state["log"].append("refund planned")

    def _refund(self, state: dict[str, Any], ctx: Ctx) -> None:
        planned = state["next_effect"]
        key = planned["idempotency_key"]
        found = ctx.tool("find_refund", idempotency_key=key) if self.check_key_first else None
        if found is not None:
            result = found
            state["log"].append(f"refund {found['refund_id']} was already issued under {key}")
        else:
            result = ctx.effect("issue_refund", key, **planned["args"])
            state["log"].append(f"refund {result['refund_id']} issued")
        state["effects"]["refund"] = result
        state["next_effect"] = None
        state["phase"] = "draft_email"

    def _draft_email(self, state: dict[str, Any], ctx: Ctx) -> None:
        ticket = state["ticket"]
        draft = _ask(
            ctx,
            {
                "task": "draft_email",
                "ticket": ticket,
                "decision": state["decision"],
                "refund": state["effects"]["refund"],
            },
        )
        state["email_draft"] = draft
        state["next_effect"] = {
            "tool": "send_email",
            "idempotency_key": f"email-{ticket['id']}-{draft['template']}",
            "args": {
                "to": ticket["customer_email"],
                "subject": draft["subject"],
                "body": draft["body"],
            },
        }
        state["phase"] = "send_email"
        state["log"].append(f"email drafted ({draft['template']})")

    def _send_email(self, state: dict[str, Any], ctx: Ctx) -> None:
        planned = state["next_effect"]
        result = ctx.effect("send_email", planned["idempotency_key"], **planned["args"])
        state["effects"]["email"] = result
        state["next_effect"] = None
        state["phase"] = "close"
        state["log"].append(f"email {result['message_id']} sent")

    def _close(self, state: dict[str, Any], ctx: Ctx) -> None:
        answer = _ask(
            ctx, {"task": "close", "ticket": state["ticket"], "refund": state["effects"]["refund"]}
        )
        state["resolution"] = answer["summary"]
        state["phase"] = "done"
        state["log"].append("closed")


agent = RefundDesk()
"""The original agent: issues the refund without checking the ledger by key first."""

fixed_agent = RefundDesk(check_key_first=True)
"""The fixed agent: looks the refund's key up in the ledger before issuing it."""
