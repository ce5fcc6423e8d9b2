"""Write a real Google ADK session database: the real ``Runner`` and session service, fake model.

Run with a Python that has ``google-adk[db]`` (not Stepscope's own environment: the
runtimes live in their own venvs, see docs/adk.md)::

    /work/venvs/adk/bin/python tests/runtimes/adk/generate.py OUT_DIR [postgresql://URL]

It writes ``OUT_DIR/adk.sqlite`` through ``DatabaseSessionService`` (SQLAlchemy +
aiosqlite; with ADK 1.x, synchronous SQLAlchemy and its v0 tables: ``data_v0/``), or into the
empty Postgres database URL given (through asyncpg; psycopg2 with ADK 1.x), and
``OUT_DIR/adk_view.json``: what ADK's own ``get_session`` returns for each session (its
events, their function calls and responses, usage, errors, the final state),
which the tests compare Stepscope's import with. The model is a ``BaseLlm`` subclass that
answers from a script: nothing leaves the machine.

Sessions (ids): ``refund-ok`` (two tool calls, state written by a tool and by the agent's
``output_key``, a ``user:`` key), ``lookup-error`` (the tool raises ``ConnectionError``),
``quota`` (the model answers ``RESOURCE_EXHAUSTED``), ``refund-confirm`` (a tool that
requires confirmation: the run pauses on it), ``refund-confirmed`` (the same, confirmed
and resumed), ``refund-crashed`` (the process dies inside the refund tool: its call is
stored, its answer never) and ``multi-agent`` (a coordinator hands the conversation to the
refund agent with ``transfer_to_agent``; a second turn goes to the refund agent directly).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk import version as adk_version
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.tools import FunctionTool, ToolContext
from google.genai import types

ADK_1 = adk_version.__version__.startswith("1.")
"""ADK 1.x: until 1.2x its ``DatabaseSessionService`` stores the v0 schema (an event's
actions pickled), which Stepscope reads without unpickling; later 1.x write v1 too."""
ASYNC_DB = hasattr(importlib.import_module("google.adk.sessions.database_session_service"),
                   "create_async_engine")  # fmt: skip
"""The service is asynchronous SQLAlchemy (aiosqlite, asyncpg): ADK 2, and late 1.x."""
CONFIRMS = "require_confirmation" in inspect.signature(FunctionTool.__init__).parameters
"""Tools can ask for a confirmation (ADK 1.14 on): without it, the two sessions that pause
on one are not written."""
VERSIONED = "model_version" in LlmResponse.model_fields
APP = "refund_desk"
USER = "u-42"
MODEL = "scripted-gemini-001"
CONFIRM_CALL = "adk_request_confirmation"


def lookup_order(order_id: str, tool_context: ToolContext) -> dict[str, Any]:
    """Look up an order."""
    if order_id == "down":
        raise ConnectionError("orders database unreachable")
    tool_context.state["last_order"] = order_id
    tool_context.state["user:orders_seen"] = tool_context.state.get("user:orders_seen", 0) + 1
    return {"order_id": order_id, "amount_cents": 12900, "status": "delivered"}


class ProcessDied(BaseException):
    """Stands for the process dying inside a tool (no ``Exception``: ADK records nothing)."""


def issue_refund(order_id: str, amount_cents: int, tool_context: ToolContext) -> dict[str, Any]:
    """Refund an order."""
    if order_id == "A-4004":
        raise ProcessDied("killed while the bank was being called")
    tool_context.state["refunded"] = [*tool_context.state.get("refunded", []), order_id]
    return {"refund_id": f"rf-{order_id}", "amount_cents": amount_cents}


def _usage(prompt: int, out: int) -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=out, total_token_count=prompt + out
    )


def _call(name: str, **args: Any) -> types.Content:
    return types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
        name=name, args=args))])  # fmt: skip


def _text(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


class ScriptedLlm(BaseLlm):
    """Answers from the conversation so far: the order to look up, then refund, then text."""

    model: str = MODEL

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        said = " ".join(
            p.text or "" for c in llm_request.contents if c.role == "user" for p in c.parts or []
        )
        answered = [
            p.function_response.name
            for c in llm_request.contents for p in c.parts or [] if p.function_response
        ]  # fmt: skip
        n = len(llm_request.contents)
        yield self._next(said, answered, n)

    def _next(self, said: str, answered: list[str], n: int) -> LlmResponse:
        order = said.split("order ")[-1].split()[0] if "order " in said else "A-1"
        if "quota" in said:
            return LlmResponse(error_code="RESOURCE_EXHAUSTED",
                               error_message="Quota exceeded for scripted-gemini-001")  # fmt: skip
        if "lookup_order" not in answered:
            content = _call("lookup_order", order_id=order)
        elif "issue_refund" not in answered:
            content = _call("issue_refund", order_id=order, amount_cents=12900)
        else:
            content = _text(f"Refunded order {order}.")
        extra = {"model_version": f"{MODEL}-2026-11"} if VERSIONED else {}  # ADK 2 on
        return LlmResponse(content=content, usage_metadata=_usage(100 + 20 * n, 30), **extra)


class Coordinator(BaseLlm):
    """A multi-agent app's root: it hands every conversation to the refund agent (ADK's
    ``transfer_to_agent``), which answers the turns after it itself."""

    model: str = "scripted-coordinator"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        content = _call("transfer_to_agent", agent_name="refund_agent")
        extra = {"model_version": f"{self.model}-2026-11"} if VERSIONED else {}
        yield LlmResponse(content=content, usage_metadata=_usage(50, 5), **extra)


def coordinator() -> LlmAgent:
    return LlmAgent(name="coordinator", model=Coordinator(), instruction="Route the request.",
                    sub_agents=[agent(False)])  # fmt: skip


def agent(confirm: bool) -> LlmAgent:
    asks = {"require_confirmation": confirm} if CONFIRMS else {}
    refund = FunctionTool(issue_refund, **asks)
    return LlmAgent(name="refund_agent", model=ScriptedLlm(), output_key="last_answer",
                    instruction="Refund delivered orders.",
                    tools=[FunctionTool(lookup_order), refund])  # fmt: skip


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _run(runner: Runner, session: str, message: types.Content) -> str | None:
    """Run one turn; the error it ended with, if any (ADK raises tool errors)."""
    try:
        async for _ in runner.run_async(user_id=USER, session_id=session, new_message=message):
            pass
    except (Exception, ProcessDied) as e:  # the runner re-raises a tool's exception
        return f"{type(e).__name__}: {e}"
    return None


def _confirmation_call(service: DatabaseSessionService, events: list[Any]) -> str:
    for e in events:
        for call in e.get_function_calls():
            if call.name == CONFIRM_CALL:
                return str(call.id)
    raise LookupError("no confirmation request")


async def generate(out: Path, url: str | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if url:  # ADK creates its tables in the empty database
        # synchronous SQLAlchemy (early ADK 1.x) through psycopg2; asynchronous: asyncpg
        driver = "postgresql+asyncpg://" if ASYNC_DB else "postgresql+psycopg2://"
        service = DatabaseSessionService(url.replace("postgresql://", driver, 1))
    else:
        db = out / "adk.sqlite"
        db.unlink(missing_ok=True)
        service = DatabaseSessionService(
            f"sqlite+aiosqlite:///{db}" if ASYNC_DB else f"sqlite:///{db}"
        )
    plain = Runner(app_name=APP, agent=agent(False), session_service=service)
    confirming = Runner(app_name=APP, agent=agent(True), session_service=service)
    routed = Runner(app_name=APP, agent=coordinator(), session_service=service)
    raised: dict[str, str | None] = {}
    for sid, runner, text in [
        ("refund-ok", plain, "please refund order A-1001"),
        ("multi-agent", routed, "please refund order A-5005"),
        ("lookup-error", plain, "please refund order down"),
        ("quota", plain, "quota test for order A-1"),
        ("refund-confirm", confirming, "please refund order A-2002"),
        ("refund-confirmed", confirming, "please refund order A-3003"),
        ("refund-crashed", plain, "please refund order A-4004"),
    ]:
        if runner is confirming and not CONFIRMS:
            continue
        await service.create_session(app_name=APP, user_id=USER, session_id=sid,
                                     state={"app:policy": "v3", "ticket": sid})  # fmt: skip
        raised[sid] = await _run(runner, sid, _user(text))
    if CONFIRMS:
        session = await service.get_session(app_name=APP, user_id=USER,
                                            session_id="refund-confirmed")  # fmt: skip
        assert session is not None
        call_id = _confirmation_call(service, session.events)
        answer = types.Content(role="user", parts=[types.Part(
            function_response=types.FunctionResponse(id=call_id, name=CONFIRM_CALL,
                                                     response={"confirmed": True}))])  # fmt: skip
        raised["refund-confirmed"] = await _run(confirming, "refund-confirmed", answer)
    # the second turn of the multi-agent session goes to the agent that answered the first
    raised["multi-agent"] = await _run(routed, "multi-agent", _user("and refund order A-6006"))
    view = {sid: await adk_view(service, sid, raised[sid]) for sid in raised}
    (out / "adk_view.json").write_text(json.dumps(view, indent=2, sort_keys=True) + "\n")
    if hasattr(service, "close"):  # ADK 2 on (1.x's engine is synchronous)
        await service.close()


async def adk_view(service: DatabaseSessionService, sid: str, raised: str | None) -> Any:
    """What ADK's ``get_session`` says about one session (the tests' reference)."""
    session = await service.get_session(app_name=APP, user_id=USER, session_id=sid)
    assert session is not None
    events = []
    for e in session.events:
        usage = e.usage_metadata
        events.append({
            "id": e.id, "author": e.author,
            "calls": [{"id": c.id, "name": c.name, "args": c.args}
                      for c in e.get_function_calls()],
            "responses": [{"id": r.id, "name": r.name, "response": r.response}
                          for r in e.get_function_responses()],
            "state_delta": e.actions.state_delta,
            "tokens": usage.total_token_count if usage else None,
            "model_version": getattr(e, "model_version", None), "error_code": e.error_code,
            "error_message": e.error_message,
            "long_running_tool_ids": sorted(e.long_running_tool_ids or []),
            "confirmations": sorted(
                (getattr(e.actions, "requested_tool_confirmations", None) or {}).keys()),
            "final": e.is_final_response(),
        })  # fmt: skip
    return {"state": session.state, "events": events, "raised": raised}


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data"
    asyncio.run(generate(out, sys.argv[2] if len(sys.argv) > 2 else None))
