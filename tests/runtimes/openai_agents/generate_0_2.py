"""Write ``SQLiteSession`` sessions with openai-agents 0.2.x and a scripted model of our own.

openai-agents 0.2 has no ``agents.testing`` (the scripted model ``generate.py`` uses) and no
``RunState`` or tool approvals, so this writes the sessions those versions can: ``refund-ok``
(two turns, a lookup then a keyed refund), ``tool-error`` (a tool that raises) and
``model-error`` (the model raises after a tool answered), and what ``get_items()`` returns
for each (``expected.json``). Run with a Python that has openai-agents 0.2::

    /work/venvs/oa02/bin/python tests/runtimes/openai_agents/generate_0_2.py OUT_DIR

The model implements the SDK's own ``Model`` interface (``get_response``, and
``stream_response`` as one completed event) and answers from its script; nothing touches the
network.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from agents import Agent, ModelResponse, Runner, SQLiteSession, Usage
from agents.models.interface import Model
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from tests.runtimes.openai_agents.fixture_tools import (
    REFUND,
    carrier_status,
    issue_refund,
    lookup_order,
)


class Scripted(Model):
    """Answers each call with the next step of its script (an exception is raised)."""

    def __init__(self, steps: list[Any]) -> None:
        self.steps = list(steps)

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """The same step as one ``response.completed`` event (what ``Runner.run_streamed``
        reads its output and usage from)."""
        step = await self.get_response(*args, **kwargs)
        u = step.usage
        usage = ResponseUsage(
            input_tokens=u.input_tokens, output_tokens=u.output_tokens,
            total_tokens=u.total_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )  # fmt: skip
        response = Response(
            id="scripted", created_at=0, model="scripted", object="response",
            output=step.output, parallel_tool_calls=False, tool_choice="auto", tools=[],
            usage=usage,
        )  # fmt: skip
        yield ResponseCompletedEvent(type="response.completed", response=response,
                                     sequence_number=0)  # fmt: skip


def usage(inp: int, out: int) -> Usage:
    return Usage(requests=1, input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def call(name: str, args: dict[str, Any], cid: str, inp: int, out: int) -> ModelResponse:
    item = ResponseFunctionToolCall(type="function_call", name=name, arguments=json.dumps(args),
                                    call_id=cid, id=cid)  # fmt: skip
    return ModelResponse(output=[item], usage=usage(inp, out), response_id=None)


def say(text: str, inp: int, out: int, mid: str) -> ModelResponse:
    item = ResponseOutputMessage(
        id=mid, type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )  # fmt: skip
    return ModelResponse(output=[item], usage=usage(inp, out), response_id=None)


def agent(steps: list[Any]) -> Agent[Any]:
    # no tool approvals before 0.3 (the other fixtures' approved_refund)
    return Agent(name="refund_desk", model=Scripted(steps),
                 tools=[lookup_order, issue_refund, carrier_status])  # fmt: skip


async def sessions(db: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    s = SQLiteSession("refund-ok", str(db))
    a = agent([
        call("lookup_order", {"order_id": "A-17"}, "call_ok_1", 50, 10),
        say("A-17 was delivered; 42.5 paid.", 70, 12, "msg_ok_1"),
        call("issue_refund", REFUND, "call_ok_2", 90, 20),
        say("Refunded 42.5.", 120, 8, "msg_ok_2"),
    ])  # fmt: skip
    await Runner.run(a, "Where is order A-17?", session=s)
    await Runner.run(a, "Refund it, please.", session=s)

    s = SQLiteSession("tool-error", str(db))
    a = agent([
        call("carrier_status", {"order_id": "A-17"}, "call_err_1", 40, 9),
        say("The carrier is not answering.", 60, 7, "msg_err_1"),
    ])  # fmt: skip
    await Runner.run(a, "Has the carrier picked it up?", session=s)

    s = SQLiteSession("model-error", str(db))
    a = agent([
        call("lookup_order", {"order_id": "B-2"}, "call_me_1", 50, 10),
        RuntimeError("model overloaded"),
    ])  # fmt: skip
    try:
        await Runner.run(a, "Where is order B-2?", session=s)
    except RuntimeError as e:
        seen["model-error raised"] = str(e)

    for sid in ("refund-ok", "tool-error", "model-error"):
        seen[sid] = {"items": await SQLiteSession(sid, str(db)).get_items()}
    return seen


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    db = out / "sessions.sqlite"
    db.unlink(missing_ok=True)
    said = asyncio.run(sessions(db))
    doc = {"versions": {"openai-agents": version("openai-agents")}, "sessions.sqlite": said}
    text = json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"
    (out / "expected.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
