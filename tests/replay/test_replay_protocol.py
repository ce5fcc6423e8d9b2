"""The parent's side of the protocol: the reader's schema, order and size checks, and the
judge, which trusts no claim of the child that its data does not bear out."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest

from debugger.replay.judge import judge
from debugger.replay.process import ChildResult
from debugger.replay.protocol import MAX_MESSAGE_BYTES, ProtocolError, Reader

BUDGETS = {"steps_spent": 2, "tokens_spent": 14, "wall_clock_ms": 0}


def _read(*messages: Any) -> list[dict[str, Any]]:
    raw = b"".join(m if isinstance(m, bytes) else orjson.dumps(m) + b"\n" for m in messages)
    return list(Reader(io.BytesIO(raw)))


HELLO = {"type": "hello", "pid": 2}
READY = {"type": "ready", "state": {}, "schema_version": 1, "migrated_from": None,
         "originals": None}  # fmt: skip


def test_a_well_formed_exchange_is_read() -> None:
    end = {"type": "end", "why": "done", "step_index": 2, "detail": None}
    assert [m["type"] for m in _read(HELLO, READY, end)] == ["hello", "ready", "end"]


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ((b"not json\n",), "is not JSON"),
        (({"type": "verdict", "outcome": "completed"},), "no known type"),
        (({"event": "end", "outcome": "completed", "reason": "FORGED"},), "no known type"),
        ((READY,), "out of order after the start"),
        ((HELLO, {"type": "end", "why": "done", "step_index": 2, "detail": None}), "out of order"),
        ((HELLO, {**READY, "outcome": "completed"}), "does not match its schema"),
        ((HELLO, READY, {"type": "end", "why": "completed", "step_index": 2, "detail": None}),
         "does not match its schema"),
        ((HELLO, READY, {"type": "end", "why": "done", "step_index": 2, "detail": None},
          {"type": "violation", "kind": "network", "detail": "x", "step_index": 2}),
         "out of order after end"),
        ((b"x" * (MAX_MESSAGE_BYTES + 10) + b"\n",), "too long"),
        ((orjson.dumps(HELLO),), "unterminated"),
    ],
)  # fmt: skip
def test_anything_outside_the_protocol_is_refused(messages: tuple[Any, ...], words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        _read(*messages)


def _doc(**over: Any) -> dict[str, Any]:
    tape = [{"step_index": 3, "seq": 10, "kind": "tool", "name": "price",
             "request": {"item": "sku-3"}, "response": {"amount": 30}, "error": None,
             "idempotency_key": None, "is_write": False}]  # fmt: skip
    doc = {"from_step": 2, "mode": "lenient", "max_steps": 5, "memory_mb": 512,
           "limits": {"steps": 9}, "start": {"budgets": BUDGETS, "state": {}},
           "original": {"3": {"state": {"n": 3}, "schema_version": 1}},
           "original_last_step": 3, "tape": tape, "effects": []}  # fmt: skip
    return {**doc, **over}


def _call(**over: Any) -> dict[str, Any]:
    call = {"step_index": 3, "seq": 10, "kind": "tool", "name": "price",
            "request": {"item": "sku-3"}, "idempotency_key": None, "is_write": False,
            "source": "tape", "response": {"amount": 30}, "error": None}  # fmt: skip
    return {**call, **over}


def _step(**over: Any) -> dict[str, Any]:
    step = {"type": "step", "step_index": 3, "partial": False, "state": {"n": 3},
            "budgets": {**BUDGETS, "steps_spent": 3}, "calls": [_call()],
            "pending_effects": [], "seconds": 0.01, "error": None}  # fmt: skip
    return {**step, **over}


def _child(steps: list[dict[str, Any]], why: str = "done", step: int = 3) -> ChildResult:
    end = {"type": "end", "why": why, "step_index": step, "detail": None}
    return ChildResult(started=True, ready=READY, steps=steps, end=end)


def test_an_honest_child_is_judged_by_the_parents_own_comparison() -> None:
    verdict = judge(_doc(), _child([_step()]), 30)
    assert (verdict.outcome, verdict.reason) == ("completed", "the agent finished at step 3")
    [step] = verdict.steps
    assert step["state_equal"] is True and step["divergences"] == []
    assert step["calls"][0]["status"] == "matched" and step["calls"][0]["tape_seq"] == 10


def test_the_parent_finds_a_state_divergence_the_child_did_not_mention() -> None:
    verdict = judge(_doc(), _child([_step(state={"n": 99})]), 30)
    [divergence] = verdict.steps[0]["divergences"]
    assert divergence["kind"] == "state" and verdict.steps[0]["state_equal"] is False


@pytest.mark.parametrize(
    ("child", "words"),
    [
        (_child([_step(calls=[_call(response={"amount": 0})])]), "an answer the tape never gave"),
        (_child([_step(calls=[_call(request={"item": "other"})])]), "the tape disagrees"),
        (_child([_step(step_index=4)], step=4), "where step 3 was next"),
        (_child([_step(budgets=BUDGETS)]), "did not move by one step"),
        (_child([_step(budgets={**BUDGETS, "steps_spent": 3, "tokens_spent": 99})]),
         "token budget"),
        (_child([_step()], why="step_limit"), "before reaching it"),
        (_child([_step()], why="budget"), "is not spent"),
        (_child([_step()], why="diverged"), "does not find"),
        (_child([_step()], step=7), "stopped at step 7"),
    ],
)  # fmt: skip
def test_claims_the_data_does_not_bear_out_are_a_violation(child: ChildResult, words: str) -> None:
    verdict = judge(_doc(), child, 30)
    assert verdict.outcome == "sandbox_violation" and words in verdict.reason
    assert verdict.steps == []


def test_a_spent_budget_and_the_step_limit_are_checked_and_worded_by_the_parent() -> None:
    spent = judge(_doc(limits={"steps": 3}), _child([_step()], why="budget"), 30)
    assert (spent.outcome, spent.reason) == (
        "budget_exhausted", "the run's step budget is spent (3 of 3)")  # fmt: skip
    limit = judge(_doc(max_steps=1, limits={}), _child([_step()], why="step_limit"), 30)
    assert limit.reason == "stopped by the replay's step limit (1 steps)"


def test_the_agents_error_text_is_quoted_on_one_line() -> None:
    partial = _step(partial=True, state=None, calls=[])
    child = _child([partial], why="agent_error")
    child.end = {"type": "end", "why": "agent_error", "step_index": 3,
                 "detail": "ValueError: bad\ncompleted - all good"}  # fmt: skip
    verdict = judge(_doc(), child, 30)
    assert verdict.reason == "step 3 raised ValueError: bad completed - all good"
