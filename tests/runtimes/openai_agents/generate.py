"""Write the OpenAI Agents SDK fixtures with the real package and a scripted model.

Run with a Python that has ``openai-agents`` (not the project's environment)::

    /work/venvs/oai/bin/python tests/runtimes/openai_agents/generate.py [OUT_DIR]

OUT_DIR defaults to ``data/`` beside this file. It writes:

- ``sessions.sqlite``: ``SQLiteSession`` with four sessions: ``refund-ok`` (two turns, a
  lookup then a keyed refund), ``tool-error`` (a tool that raises), ``approval`` (a refund
  that needs approval: the run stops with the call unanswered), ``model-error`` (the model
  raises after a tool answered);
- ``advanced.sqlite``: ``AdvancedSQLiteSession`` session ``support-7``, three turns with
  ``store_run_usage``, then a branch from turn 2 with one more turn;
- ``runstate/approval-paused.json``: the ``RunState`` of the ``approval`` run at its pause
  (``result.to_state().to_string()``);
- ``expected.json``: what the SDK's own API reports for the same data (``get_items``,
  ``get_turn_usage``, ``get_conversation_by_turns``, ``list_branches``, the RunState read
  back with ``RunState.from_string``), which the tests compare the import with.

The model is ``agents.testing.ScriptedModel``; nothing touches the network.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the tools it shares

from agents import Agent, Runner, RunState, SQLiteSession, function_tool
from agents.extensions.memory import AdvancedSQLiteSession
from agents.testing.model import (
    ModelStep,
    ScriptedModel,
    assistant_message,
    function_call,
)
from agents.usage import Usage

from tests.runtimes.openai_agents.fixture_tools import (
    REFUND,
    carrier_status,
    issue_refund,
    lookup_order,
)


@function_tool(needs_approval=True)
def approved_refund(order_id: str, amount: float, idempotency_key: str) -> str:
    """Refund an order once a person approves."""
    return f"refunded {amount} on {order_id}"


TOOLS = [lookup_order, issue_refund, approved_refund, carrier_status]


def usage(inp: int, out: int) -> Usage:
    return Usage(requests=1, input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def call(name: str, args: dict[str, Any], cid: str, inp: int, out: int) -> ModelStep:
    return ModelStep(output=[function_call(name, args, call_id=cid)], usage=usage(inp, out))


def say(text: str, inp: int, out: int, mid: str) -> ModelStep:
    return ModelStep(output=[assistant_message(text, item_id=mid)], usage=usage(inp, out))


def agent(steps: list[Any]) -> Agent[Any]:
    return Agent(name="refund_desk", model=ScriptedModel(steps), tools=TOOLS)


async def plain_sessions(db: Path, out: Path) -> dict[str, Any]:
    """The four sessions of sessions.sqlite, and the RunState of the approval pause."""
    seen: dict[str, Any] = {}

    s = SQLiteSession("refund-ok", str(db))
    a = agent(
        [
            call("lookup_order", {"order_id": "A-17"}, "call_ok_1", 50, 10),
            say("A-17 was delivered; 42.5 paid.", 70, 12, "msg_ok_1"),
            call("issue_refund", REFUND, "call_ok_2", 90, 20),
            say("Refunded 42.5.", 120, 8, "msg_ok_2"),
        ]
    )
    await Runner.run(a, "Where is order A-17?", session=s)
    await Runner.run(a, "Refund it, please.", session=s)

    s = SQLiteSession("tool-error", str(db))
    a = agent(
        [
            call("carrier_status", {"order_id": "A-17"}, "call_err_1", 40, 9),
            say("The carrier is not answering.", 60, 7, "msg_err_1"),
        ]
    )
    await Runner.run(a, "Has the carrier picked it up?", session=s)

    s = SQLiteSession("approval", str(db))
    a = agent(
        [
            call("lookup_order", {"order_id": "A-17"}, "call_ap_1", 50, 10),
            say("A-17 was delivered.", 70, 12, "msg_ap_1"),
            call("approved_refund", REFUND, "call_ap_2", 90, 20),
        ]
    )
    await Runner.run(a, "Where is order A-17?", session=s)
    paused = await Runner.run(a, "Refund it, please.", session=s)
    (out / "runstate").mkdir(parents=True, exist_ok=True)
    (out / "runstate" / "approval-paused.json").write_text(paused.to_state().to_string())
    back = await RunState.from_string(a, paused.to_state().to_string())
    seen["runstate/approval-paused.json"] = {
        "schema_version": json.loads(paused.to_state().to_string())["$schemaVersion"],
        "current_turn": back._current_turn,
        "max_turns": back._max_turns,
        "total_tokens": back._context.usage.total_tokens if back._context else None,
        "interruptions": [
            {"name": i.tool_name, "call_id": i.raw_item.call_id, "arguments": i.raw_item.arguments}
            for i in back.get_interruptions()
        ],
    }

    s = SQLiteSession("model-error", str(db))
    a = agent(
        [
            call("lookup_order", {"order_id": "B-2"}, "call_me_1", 50, 10),
            ModelStep.raise_error(RuntimeError("model overloaded")),
        ]
    )
    try:
        await Runner.run(a, "Where is order B-2?", session=s)
    except RuntimeError as e:
        seen["model-error raised"] = str(e)

    for sid in ("refund-ok", "tool-error", "approval", "model-error"):
        seen[sid] = {"items": await SQLiteSession(sid, str(db)).get_items()}
    return seen


async def advanced_session(db: Path) -> dict[str, Any]:
    """support-7 in advanced.sqlite: three turns with usage, then a branch from turn 2."""
    s = AdvancedSQLiteSession(session_id="support-7", db_path=str(db), create_tables=True)
    a = agent(
        [
            call("lookup_order", {"order_id": "C-9"}, "call_s7_1", 50, 10),
            say("C-9 is on its way.", 70, 12, "msg_s7_1"),
            say("It should arrive tomorrow.", 80, 6, "msg_s7_2"),
            call(
                "issue_refund",
                {**REFUND, "order_id": "C-9", "idempotency_key": "refund-C-9"},
                "call_s7_2",
                90,
                20,
            ),
            say("Refunded.", 120, 8, "msg_s7_3"),
        ]
    )
    for text in ("Where is C-9?", "When will it arrive?", "Refund C-9."):
        result = await Runner.run(a, text, session=s)
        await s.store_run_usage(result)
    main = {
        "items": await s.get_items(),
        "turn_usage": await s.get_turn_usage(branch_id="main"),
        "turns": await s.get_conversation_by_turns("main"),
        "session_usage": await s.get_session_usage("main"),
    }
    branch = await s.create_branch_from_turn(2, "retry")
    a = agent([say("Ask me again tomorrow.", 75, 5, "msg_s7_b1")])
    result = await Runner.run(a, "Any news on C-9?", session=s)
    await s.store_run_usage(result)
    got = {
        "items": await s.get_items(),
        "turn_usage": await s.get_turn_usage(branch_id=branch),
        "turns": await s.get_conversation_by_turns(branch),
        "session_usage": await s.get_session_usage(branch),
    }
    return {"support-7": main, f"support-7@{branch}": got, "branches": await s.list_branches()}


async def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    expected = {
        "sessions.sqlite": await plain_sessions(out / "sessions.sqlite", out),
        "advanced.sqlite": await advanced_session(out / "advanced.sqlite"),
    }
    text = json.dumps(expected, indent=1, sort_keys=True, default=str)
    (out / "expected.json").write_text(text + "\n")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else here / "data"))
