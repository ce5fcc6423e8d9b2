"""Write the pydantic-ai fixtures with the real package and a scripted ``FunctionModel``.

Run with a Python that has ``pydantic-ai-slim`` (not the project's environment)::

    /work/venvs/pydai/bin/python tests/runtimes/pydantic_ai/generate.py [OUT_DIR]

OUT_DIR defaults to ``data/`` beside this file. Each run is saved the way an application
keeps a pydantic-ai history: ``histories/<run>.json`` holds ``result.all_messages_json()``
(or, when the run raised, the messages ``capture_run_messages()`` caught, dumped with
``ModelMessagesTypeAdapter``); a run that paused for approval is saved as
``{"schema_version": 1, "messages": [...], "deferred_tool_requests": ...}``, the history
and the ``DeferredToolRequests`` output it needs to resume. Runs:

- ``ok``: a lookup tool call, its return, a text answer;
- ``retried``: the tool raises ``ModelRetry`` once (a return with outcome ``retried``), then
  succeeds;
- ``structured``: the answer through an output tool (``final_result``);
- ``tool-raised``: the tool raises ``ConnectionError``: the run fails, the history ends with a
  request in state ``interrupted``;
- ``usage-limit``: the response crosses ``output_tokens_limit``: ``UsageLimitExceeded``, the
  response in state ``interrupted``;
- ``approval``: a refund tool with ``requires_approval=True``: the run ends with
  ``DeferredToolRequests``;
- ``approval-resumed``: the same run continued with ``DeferredToolResults`` (approved).

``expected.json`` is what the API says of each: the messages read back with
``ModelMessagesTypeAdapter``, the usage the run reported (``result.usage``, or the responses'
own usage summed when the run raised), the tool calls and returns, the output, the
exception, the deferred calls.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pydantic_ai
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, capture_run_messages
from pydantic_ai import usage as pai_usage
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits
from pydantic_core import to_jsonable_python

DEFERRED = hasattr(pydantic_ai, "DeferredToolRequests")
"""Deferred tools (the approval runs) came with pydantic-ai 1.0; older versions write the
other runs, in their own shape (no request timestamps, ``request_tokens`` before 0.7)."""

MODEL = "scripted-1"


def script(*responses: ModelResponse) -> FunctionModel:
    it = iter(responses)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return next(it)

    return FunctionModel(answer, model_name=MODEL)


def resp(*parts: Any, i: int = 50, o: int = 10) -> ModelResponse:
    if hasattr(pai_usage, "RequestUsage"):
        usage: Any = pai_usage.RequestUsage(input_tokens=i, output_tokens=o)
    else:  # before pydantic-ai 0.7
        usage = pai_usage.Usage(request_tokens=i, response_tokens=o, total_tokens=i + o)
    return ModelResponse(parts=list(parts), usage=usage, model_name=MODEL)


def spent(u: Any) -> int:
    """A usage's input and output tokens, in either version's names."""
    if hasattr(u, "input_tokens"):
        return int(u.input_tokens + u.output_tokens)
    return int((u.request_tokens or 0) + (u.response_tokens or 0))


def run_usage(result: Any) -> Any:
    """``result.usage``: a property since pydantic-ai 1.0, a method before."""
    u = result.usage
    return u if hasattr(u, "total_tokens") else u()


def call(name: str, args: dict[str, Any], cid: str) -> ToolCallPart:
    return ToolCallPart(name, args, tool_call_id=cid)


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "amount": 42.5}


class Refund(BaseModel):
    order_id: str
    amount: float


def api_view(messages: list[ModelMessage], **extra: Any) -> dict[str, Any]:
    """What pydantic-ai's own objects say of a history (read back from its JSON)."""
    back = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))
    responses = [m for m in back if isinstance(m, ModelResponse)]
    calls = [
        (p.tool_name, p.tool_call_id, p.args_as_dict())
        for m in responses
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]
    returns = [
        (p.tool_call_id, p.part_kind, getattr(p, "outcome", None), to_jsonable_python(p.content))
        for m in back
        if isinstance(m, ModelRequest)
        for p in m.parts
        if p.part_kind in ("tool-return", "retry-prompt")
    ]
    return {
        "messages": len(back),
        "responses": len(responses),
        "response_tokens": [spent(r.usage) for r in responses],
        "model_names": [r.model_name for r in responses],
        "states": [getattr(m, "state", None) for m in back],
        "tool_calls": calls,
        "tool_returns": returns,
        **extra,
    }


def save(out: Path, run: str, doc: Any) -> None:
    path = out / "histories" / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_jsonable_python(doc), indent=1) + "\n")


def finished(out: Path, run: str, agent: Agent[Any, Any], prompt: str) -> dict[str, Any]:
    result = agent.run_sync(prompt)
    save(out, run, json.loads(result.all_messages_json()))
    usage = run_usage(result)
    return api_view(
        result.all_messages(),
        total_tokens=usage.total_tokens,
        requests=usage.requests,
        output=to_jsonable_python(result.output),
    )


def raised(out: Path, run: str, agent: Agent[Any, Any], prompt: str, **kw: Any) -> dict[str, Any]:
    with capture_run_messages() as messages:
        try:
            agent.run_sync(prompt, **kw)
        except Exception as e:  # the run's failure is what this fixture records
            error = f"{type(e).__name__}: {e}"
    save(out, run, json.loads(ModelMessagesTypeAdapter.dump_json(messages)))
    total = sum(spent(m.usage) for m in messages if isinstance(m, ModelResponse))
    return api_view(messages, total_tokens=total, error=error)


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    seen: dict[str, Any] = {}

    a = Agent(
        script(
            resp(call("lookup_order", {"order_id": "A-17"}, "c-ok-1")),
            resp(TextPart("A-17: 42.5, delivered."), i=70, o=8),
        )
    )
    a.tool_plain(lookup_order)
    seen["ok"] = finished(out, "ok", a, "Where is A-17?")

    tries = {"n": 0}

    def picky_lookup(order_id: str) -> dict[str, Any]:
        """Look up an order (ids must be upper case)."""
        tries["n"] += 1
        if tries["n"] == 1:
            raise ModelRetry("order ids are upper case")
        return lookup_order(order_id)

    a = Agent(
        script(
            resp(call("picky_lookup", {"order_id": "a-17"}, "c-re-1")),
            resp(call("picky_lookup", {"order_id": "A-17"}, "c-re-2"), i=60, o=9),
            resp(TextPart("Found it."), i=80, o=4),
        )
    )
    a.tool_plain(picky_lookup)
    seen["retried"] = finished(out, "retried", a, "Where is a-17?")

    a = Agent(
        script(resp(call("final_result", {"order_id": "A-17", "amount": 42.5}, "c-st-1"))),
        output_type=Refund,
    )
    seen["structured"] = finished(out, "structured", a, "Which refund?")

    def carrier_status(order_id: str) -> str:
        """Ask the carrier (it times out)."""
        raise ConnectionError("carrier API timed out")

    a = Agent(script(resp(call("carrier_status", {"order_id": "A-17"}, "c-tr-1"))))
    a.tool_plain(carrier_status)
    seen["tool-raised"] = raised(out, "tool-raised", a, "Has the carrier picked it up?")

    a = Agent(script(resp(TextPart("A very long answer..."), i=40, o=500)))
    seen["usage-limit"] = raised(
        out,
        "usage-limit",
        a,
        "Tell me everything.",
        usage_limits=UsageLimits(output_tokens_limit=100)
        if "output_tokens_limit" in UsageLimits.__dataclass_fields__
        else UsageLimits(response_tokens_limit=100),
    )
    if DEFERRED:
        approvals(out, seen)
    text = json.dumps(to_jsonable_python(seen), indent=1, sort_keys=True)
    (out / "expected.json").write_text(text + "\n")


def approvals(out: Path, seen: dict[str, Any]) -> None:
    """The runs that pause for approval and resume (pydantic-ai 1.0 on)."""
    from pydantic_ai import DeferredToolRequests, DeferredToolResults

    refund_args = {"order_id": "A-17", "amount": 42.5, "idempotency_key": "refund-A-17"}
    a = Agent(
        script(
            resp(call("lookup_order", {"order_id": "A-17"}, "c-ap-1")),
            resp(call("issue_refund", refund_args, "c-ap-2"), i=90, o=20),
            resp(TextPart("Refunded 42.5."), i=120, o=6),
        ),
        output_type=[str, DeferredToolRequests],
    )
    a.tool_plain(lookup_order)

    @a.tool_plain(requires_approval=True)
    def issue_refund(order_id: str, amount: float, idempotency_key: str) -> str:
        """Refund an order once a person approves."""
        return f"refunded {amount} on {order_id}"

    paused = a.run_sync("Refund A-17.")
    assert isinstance(paused.output, DeferredToolRequests)
    # what an application keeps to resume later: the history, the deferred requests, and
    # (its own choice) the version of what it saved
    save(
        out,
        "approval",
        {
            "schema_version": 1,
            "messages": json.loads(paused.all_messages_json()),
            "deferred_tool_requests": paused.output,
        },
    )
    seen["approval"] = api_view(
        paused.all_messages(),
        total_tokens=run_usage(paused).total_tokens,
        deferred={
            "approvals": [
                (p.tool_name, p.tool_call_id, p.args_as_dict()) for p in paused.output.approvals
            ],
            "calls": [(p.tool_name, p.tool_call_id) for p in paused.output.calls],
        },
    )
    resumed = a.run_sync(
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"c-ap-2": True}),
    )
    save(out, "approval-resumed", json.loads(resumed.all_messages_json()))
    total = sum(spent(m.usage) for m in resumed.all_messages() if isinstance(m, ModelResponse))
    seen["approval-resumed"] = api_view(
        resumed.all_messages(),
        total_tokens=total,
        output=resumed.output,
        run_ids=sorted({m.run_id for m in resumed.all_messages() if m.run_id}),
    )


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here / "data")
