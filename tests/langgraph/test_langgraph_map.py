"""The per-run message memo: one pass gives the state's facts, sums and exact JSON text."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from loaders.langgraph.budgets import ai_tokens
from loaders.langgraph.decode import SafeDecoder, to_json
from loaders.langgraph.map import MessageMemo, facts_of, unanswered_tool_calls


def _decoded(value: Any, decoder: SafeDecoder) -> Any:
    return decoder.decode(*JsonPlusSerializer().dumps_typed(value))


def _chat(turns: int) -> list[Any]:
    out: list[Any] = [HumanMessage(content="where is my refund?", id="h")]
    for t in range(turns):
        call = {"name": "lookup", "args": {"order": f"A-{t}", "n": 1.0}, "id": f"c{t}"}
        out.append(
            AIMessage(content="", id=f"ai{t}", tool_calls=[call],
                      usage_metadata={"input_tokens": 10, "output_tokens": t,
                                      "total_tokens": 10 + t},
                      response_metadata={"model_name": f"m{t % 2}"})
        )  # fmt: skip
        if t < turns - 1:  # the last call is still in flight
            out.append(ToolMessage(content=f"ok {t}", tool_call_id=f"c{t}", id=f"tm{t}"))
    return out


def test_scan_matches_the_plain_computation() -> None:
    decoder = SafeDecoder()
    memo = MessageMemo()
    for turns in (1, 2, 3):
        msgs = _chat(turns)
        state = _decoded(
            {"messages": msgs, "last": msgs[-1], "notes": ["x", 1, None], "turn": turns,
             "empty": [], "nested": {"m": msgs[0]}},
            decoder,
        )  # fmt: skip
        scan = memo.scan(state)
        # the fragments give byte for byte what serializing the whole state gives
        assert scan.json == to_json(state)
        plain = [(m, facts_of(m)) for m in state["messages"]] + [
            (state["last"], facts_of(state["last"]))
        ]
        assert [f for _, f in scan.messages] == [f for _, f in plain]
        assert ai_tokens(scan.messages) == ai_tokens(plain)
        unanswered = unanswered_tool_calls(scan.messages)
        assert unanswered == unanswered_tool_calls(plain)
        assert [c["tool_call_id"] for c in unanswered] == [f"c{turns - 1}"]
    tokens, model = ai_tokens(scan.messages)
    assert sum(tokens.values()) == 10 + 11 + 12
    assert model == "m0"


def test_new_lists_each_message_once_per_run() -> None:
    decoder = SafeDecoder()
    memo = MessageMemo()
    first = memo.scan(_decoded({"messages": _chat(1)}, decoder))
    second = memo.scan(_decoded({"messages": _chat(2)}, decoder))
    assert [m["id"] for m, _ in first.new] == ["h", "ai0"]
    assert [m["id"] for m, _ in second.new] == ["tm0", "ai1"]


def test_message_without_id_is_keyed_by_its_content() -> None:
    decoder = SafeDecoder()
    state = _decoded({"messages": [AIMessage(content="hi"), AIMessage(content="hi")]}, decoder)
    scan = MessageMemo().scan(state)
    assert scan.messages[0][1].key == scan.messages[1][1].key
    assert scan.json == to_json(state)


def test_decoder_cache_keeps_extension_codes_apart() -> None:
    decoder = SafeDecoder()
    msg = AIMessage(content="x" * 200, id="a")
    one = _decoded({"m": msg}, decoder)
    two = _decoded({"m": msg}, decoder)
    assert one["m"] is two["m"]  # the payload was decoded once
    decoder.clear()
    three = _decoded({"m": msg}, decoder)
    assert three["m"] is not one["m"] and three == one
