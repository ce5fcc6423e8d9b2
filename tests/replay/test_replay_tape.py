"""Tape matching and the sandbox context, without a child process (fast, exact cases)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from debugger.replay.sandbox import (
    NoRecordedAnswer,
    RecordedCallError,
    SandboxContext,
    StopReplay,
    recorded_error,
)
from debugger.replay.tape import Tape, canonical


def call(
    step: int, seq: int, name: str, request: Any, response: Any = None, kind: str = "tool",
    key: str | None = None, error: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    return {"step_index": step, "seq": seq, "kind": kind, "name": name, "request": request,
            "response": response, "error": error, "idempotency_key": key,
            "is_write": key is not None}  # fmt: skip


TAPE = [
    call(1, 1, "price", {"item": "a"}, {"amount": 1}),
    call(1, 2, "price", {"item": "b"}, {"amount": 2}),
    call(1, 3, "scripted", {"prompt": "x"}, {"text": "y", "usage": {"total_tokens": 9}},
         kind="model"),
    call(2, 4, "pay", {"amount": 3}, {"receipt": "r"}, key="k-2"),
    call(2, 5, "pay", {"amount": 4}, {"receipt": "s"}, key="k-1"),
    call(3, 6, "price", {"item": "c"}, error="LookupError: no item c"),
]  # fmt: skip


def ctx(mode: str = "strict", mocks: Any = None, effects: Any = ()) -> SandboxContext:
    tape = Tape(TAPE, 0, effects, checkpoint_steps={1, 2, 3})
    return SandboxContext(tape, mocks, mode, seq=1)  # type: ignore[arg-type]


def test_canonical_tells_one_one_point_zero_and_true_apart() -> None:
    assert len({canonical(1), canonical(1.0), canonical(True)}) == 3
    assert canonical({"b": 1, "a": [1, 2]}) == canonical({"a": [1, 2], "b": 1})


def test_calls_match_in_order_within_their_step() -> None:
    c = ctx()
    c.begin_step(1, beyond_original=False)
    assert c.tool("price", item="a") == {"amount": 1}
    assert c.tool("price", item="b") == {"amount": 2}
    assert c.model({"prompt": "x"})["text"] == "y"  # model calls match on kind only
    assert c.step_tokens == 9 and c.missing_calls() == [] and c.divergences == []
    assert [r["tape_seq"] for r in c.calls] == [1, 2, 3]


def test_writes_match_by_key_whatever_their_order() -> None:
    c = ctx()
    c.begin_step(2, beyond_original=False)
    assert c.effect("pay", "k-1", amount=4) == {"receipt": "s"}
    assert c.effect("pay", "k-2", amount=3) == {"receipt": "r"}
    assert c.divergences == []


def test_different_arguments_stop_strict_mode_with_the_original_call() -> None:
    c = ctx()
    c.begin_step(1, beyond_original=False)
    with pytest.raises(StopReplay) as stop:
        c.tool("price", item="z")
    d = stop.value.divergence
    assert d["kind"] == "different_args" and d["original"]["request"] == {"item": "a"}


def test_lenient_mode_uses_a_mock_then_errors_where_none_fits() -> None:
    mocks = types.ModuleType("mocks")
    mocks.MOCKS = {"stock": 7}  # type: ignore[attr-defined]
    c = ctx("lenient", mocks)
    c.begin_step(1, beyond_original=False)
    assert c.tool("stock", item="a") == 7
    with pytest.raises(NoRecordedAnswer, match="no answer for tool call weather"):
        c.tool("weather")
    assert [d["kind"] for d in c.divergences] == ["unexpected_call", "unexpected_call"]
    assert [r["source"] for r in c.calls] == ["mock", "none"]
    missing = c.missing_calls()
    assert [m["original"]["seq"] for m in missing] == [1, 2, 3]


def test_a_recorded_error_is_raised_again() -> None:
    c = ctx()
    c.begin_step(3, beyond_original=False)
    with pytest.raises(LookupError, match="no item c"):
        c.tool("price", item="c")
    assert isinstance(recorded_error("Weird: thing"), RecordedCallError)
    assert isinstance(recorded_error("ValueError: bad"), ValueError)


def test_a_step_the_original_died_in_matches_writes_by_key_and_leaves_reads_unrecorded() -> None:
    pending = {"step_index": 4, "tool": "pay", "idempotency_key": "k-4", "args": {"amount": 5},
               "status": "pending", "result": None}  # fmt: skip
    c = ctx("strict", None, [pending])
    assert c.tape.is_partial(4) and c.tape.last_step == 4
    c.begin_step(4, beyond_original=False)
    with pytest.raises(NoRecordedAnswer, match="never recorded"):
        c.tool("price", item="d")  # unknown, not a divergence
    with pytest.raises(NoRecordedAnswer):
        c.effect("pay", "k-4", amount=5)  # known by key, but no answer was recorded
    assert c.divergences == [] and [r["status"] for r in c.calls] == ["unrecorded", "matched"]
