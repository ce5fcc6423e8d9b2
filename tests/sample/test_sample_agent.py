"""The sample agents re-run from any checkpoint state and reproduce the next one.

A minimal tape-answering context stands in for the replay sandbox: each call is answered
with the recorded response, in order, and must match the recorded request. Importing the
agents by ``module:attribute`` is what replay does.
"""

from __future__ import annotations

import importlib
import itertools
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.fixtures.sample import SampleFiles

V3_COMPLETED = ["clean-completed", "crash-resumed", "deploy-mid-run", "resume-reset-budgets"]


def load(spec: str) -> Any:
    module, attr = spec.split(":")
    return getattr(importlib.import_module(module), attr)


class TapeContext:
    """Answers ``ctx`` calls from recorded tape rows, checking each request."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = list(calls)

    def _next(self, kind: str, name: str | None, request: Any, key: str | None = None) -> Any:
        assert self.calls, f"unrecorded {kind} call {name}"
        call = self.calls.pop(0)
        assert (call["kind"], call["request"]) == (kind, request)
        if name is not None:
            assert call["name"] == name
        assert call["idempotency_key"] == key
        return call["response"]

    def tool(self, name: str, **args: Any) -> Any:
        return self._next("tool", name, args)

    def effect(self, name: str, key: str | None, **args: Any) -> Any:
        return self._next("tool", name, args, key)

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = self._next("model", None, request)
        return response


def history(db: Path, run_id: str) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        cps = [dict(r) for r in con.execute(
            "SELECT step_index, working_state, metadata FROM checkpoints WHERE run_id = ? "
            "ORDER BY checkpoint_seq", [run_id])]  # fmt: skip
        tape: dict[int, list[dict[str, Any]]] = {}
        for r in con.execute("SELECT * FROM tool_calls WHERE run_id = ? ORDER BY seq", [run_id]):
            row = dict(r)
            row["request"] = orjson.loads(row["request"])
            row["response"] = orjson.loads(row["response"]) if row["response"] else None
            tape.setdefault(row["step_index"], []).append(row)
    finally:
        con.close()
    for c in cps:
        c["working_state"] = orjson.loads(c["working_state"])
        c["metadata"] = orjson.loads(c["metadata"])
    return cps, tape


@pytest.mark.parametrize("run_id", V3_COMPLETED)
def test_agent_reproduces_every_step_from_the_tape(run_id: str, sample_data: SampleFiles) -> None:
    agent = load("sample_checkpoints.refund_desk.agent:agent")
    cps, tape = history(sample_data.native, run_id)
    for before, after in itertools.pairwise(cps):
        ctx = TapeContext(tape.get(after["step_index"], []))
        state = agent.step(orjson.loads(orjson.dumps(before["working_state"])), ctx)
        assert state == after["working_state"], f"{run_id} step {after['step_index']}"
        assert ctx.calls == []
    assert agent.is_done(cps[-1]["working_state"])


def test_fixed_agent_checks_the_key_before_paying(sample_data: SampleFiles) -> None:
    fixed = load("sample_checkpoints.refund_desk.agent:fixed_agent")
    original = load("sample_checkpoints.refund_desk.agent:agent")
    cps, _ = history(sample_data.native, "crash-at-step-7")
    state = cps[-1]["working_state"]
    key = state["next_effect"]["idempotency_key"]
    issued = {"refund_id": "RF-00002", "idempotency_key": key, "order_id": "ORD-1077",
              "amount_cents": 12999, "status": "issued"}  # fmt: skip

    class Ledger:
        def __init__(self) -> None:
            self.log: list[tuple[str, Any]] = []

        def tool(self, name: str, **args: Any) -> Any:
            self.log.append((name, args))
            return issued if name == "find_refund" else None

        def effect(self, name: str, key: str | None, **args: Any) -> Any:
            self.log.append((name, key))
            return {**issued, "refund_id": "RF-99999"}

        def model(self, request: dict[str, Any]) -> dict[str, Any]:
            raise AssertionError("no model call in step 7")

    fixed_ctx, original_ctx = Ledger(), Ledger()
    fixed_state = fixed.step(orjson.loads(orjson.dumps(state)), fixed_ctx)
    original_state = original.step(orjson.loads(orjson.dumps(state)), original_ctx)
    assert fixed_ctx.log == [("find_refund", {"idempotency_key": key})]
    assert fixed_state["effects"]["refund"]["refund_id"] == "RF-00002"
    assert original_ctx.log == [("issue_refund", key)]  # the duplicate the original would pay
    assert original_state["effects"]["refund"]["refund_id"] == "RF-99999"
