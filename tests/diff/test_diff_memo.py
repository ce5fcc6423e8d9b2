"""Stepping through states with chunk memos (debugger.diff_prune.ChunkMemo) changes no row.

The Timeline keeps each parsed state with a memo of its serialized chunks, so the next step's
diff serializes only the new state, and, the states being parsed JSON, trusts equal bytes
without an ``==`` walk except where ``null`` could hide NaN or infinity. These tests step
through edited states parsed as the store parses them and compare every diff with plain
DeepDiff, chunks of two and of the size in use.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debugger import diff_prune
from debugger.diff import diff_states, plain_deepdiff_rows
from debugger.diff_prune import ChunkMemo
from tests.diff.test_diff_property import edited_pairs


def parsed(value: Any) -> Any:
    """As the store parses a state: stdlib json keeps NaN and Infinity (orjson refuses them)."""
    return json.loads(json.dumps(value))


def step_through(states: list[Any]) -> None:
    memos = [ChunkMemo(json_only=True) for _ in states]
    for i in range(1, len(states)):
        old, new = states[i - 1], states[i]
        got = diff_states(old, new, memos=(memos[i - 1], memos[i]))
        assert repr(got) == repr(plain_deepdiff_rows(old, new))


@pytest.mark.parametrize("chunk", [2, diff_prune.CHUNK])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(edited_pairs(), min_size=1, max_size=3))
def test_stepping_with_memos_matches_plain_deepdiff(
    chunk: int, pairs: list[tuple[Any, Any]]
) -> None:
    saved = diff_prune.CHUNK
    diff_prune.CHUNK = chunk
    try:
        for old, new in pairs:  # each pair, then back: every state is old once and new once
            step_through([parsed(old), parsed(new), parsed(old)])
    finally:
        diff_prune.CHUNK = saved


def test_nan_and_none_behind_equal_bytes_are_told_apart() -> None:
    # orjson writes NaN, Infinity and None all as null: equal bytes are not enough there.
    base = {"xs": [{"v": i} for i in range(100)]}
    for hidden in (float("nan"), float("inf")):
        old = parsed(base)
        new = parsed(base)
        old["xs"][40]["v"] = None
        new["xs"][40]["v"] = hidden
        step_through([parsed(base), old, new, parsed(base)])


def test_the_old_side_is_serialized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    states = [orjson.loads(orjson.dumps({"n": 0, "orders": {f"A{k}": [k] for k in range(500)}}))]
    states.append(orjson.loads(orjson.dumps({**states[0], "n": 1})))
    states.append(orjson.loads(orjson.dumps({**states[0], "n": 2})))
    memos = [ChunkMemo(json_only=True) for _ in states]
    diff_states(states[0], states[1], memos=(memos[0], memos[1]))
    sizes: list[int] = []
    real = diff_prune._dumps

    def counting(value: Any, option: int = 0) -> bytes:
        sizes.append(len(value))
        return real(value, option=option)

    monkeypatch.setattr(diff_prune, "_dumps", counting)
    rows = diff_states(states[1], states[2], memos=(memos[1], memos[2]))
    assert [r.path for r in rows] == ["root['n']"]
    # Only the new state's unchanged orders were serialized (whole, as a one-item list; "n"
    # is a scalar, compared directly); the old state's bytes came from its memo.
    assert sizes == [1]
