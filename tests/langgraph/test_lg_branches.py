"""Model calls in Send branches and subgraphs: each on one tape, with what it was given; a
run's tokens include every namespace nested in it, each AI message once at each level.

The reference is the real execution (the recording model notes what each call was given,
and LangGraph's namespace and step for it) and the saver's own ``list`` of every namespace
of the thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent

from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.langgraph.budgets import PARTIAL_KEY, ThreadRollup
from tests.langgraph import patterns_branches as B
from tests.langgraph.lg_import import SAVERS, Build, Built, builder
from tests.langgraph.patterns_model import ScriptedModel, ai, cfg
from tests.langgraph.patterns_tokens import lookup


@pytest.fixture(params=SAVERS)
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Build]:
    yield from builder(request, tmp_path)


def _built(build: Build, pattern: Any) -> Built:
    B.CALLS.clear()
    return build(pattern)


def _ns(t: Any) -> str:
    return str(t.config["configurable"]["checkpoint_ns"])


def _run_id(thread: str, ns: str) -> str:
    return f"{thread}/{ns}" if ns else thread


def _ai(t: Any) -> dict[str, int]:
    return {m.id: m.usage_metadata["total_tokens"]
            for m in t.checkpoint["channel_values"].get("messages") or []
            if m.type == "ai" and m.usage_metadata}  # fmt: skip


def _has_tool_message(t: Any) -> bool:
    return any(m.type == "tool" for m in t.checkpoint["channel_values"].get("messages") or [])


def _first_step(tuples: list[Any], ns: str, mid: str) -> int:
    """The step of the saver's first checkpoint of ``ns`` that holds message ``mid``."""
    return min(t.metadata["step"] for t in tuples if _ns(t) == ns and mid in _ai(t))


@pytest.mark.parametrize("pattern", B.PATTERNS, ids=lambda p: p.__name__)
def test_each_model_call_is_on_one_tape_with_what_it_was_given(build: Build, pattern: Any) -> None:
    got = _built(build, pattern)
    for thread, tuples in got.tuples.items():
        namespaces = {_ns(t) for t in tuples}
        made = {mid: c for mid, c in B.CALLS.items() if any(mid in _ai(t) for t in tuples)}
        with Store.open(got.store, read_only=True) as store:
            tapes = {ns: store.tool_calls(_run_id(thread, ns)) for ns in namespaces}
        tape = [(ns, c) for ns, calls in tapes.items() for c in calls if c.kind == "model"]
        got_ids = sorted(c.response["id"] for _, c in tape)
        # every call the model answered, once, and nothing else (no input, no copy)
        assert made and got_ids == sorted(made), thread
        for ns, c in tape:
            mid = c.response["id"]
            want = made[mid]
            assert (ns, c.request) == (want["ns"], {"messages": want["given"]}), mid
            assert c.step_index == want["step"] == _first_step(tuples, ns, mid), mid


def _given(tuples: list[Any], ns: str) -> set[str]:
    """The AI messages a subgraph's namespace was given by the graph that called it: those
    of its input checkpoints and of the checkpoints their ``__start__`` step wrote."""
    inputs = {t.config["configurable"]["checkpoint_id"] for t in tuples
              if _ns(t) == ns and t.parent_config is None}  # fmt: skip
    return {
        mid for t in tuples if _ns(t) == ns and (
            t.config["configurable"]["checkpoint_id"] in inputs
            or (t.parent_config or {}).get("configurable", {}).get("checkpoint_id") in inputs)
        for mid in _ai(t)
    }  # fmt: skip


@pytest.mark.parametrize("pattern", B.PATTERNS, ids=lambda p: p.__name__)
def test_every_level_counts_what_is_nested_in_it_once(build: Build, pattern: Any) -> None:
    """A level counts the AI messages of its states and of the levels nested in it, each
    once, but for those the level above gave it with its input (that level spent them)."""
    got = _built(build, pattern)
    for thread, tuples in got.tuples.items():
        namespaces = {_ns(t) for t in tuples}
        for ns in namespaces:
            below = [t for t in tuples if not ns or _ns(t) == ns or _ns(t).startswith(f"{ns}|")]
            spent: dict[str, int] = {}
            for t in below:
                spent.update(_ai(t))
            given = _given(tuples, ns) if ns else set()
            with Store.open(got.store, read_only=True) as store:
                run = store.run(_run_id(thread, ns)).budgets.tokens_spent
                cps = {c.checkpoint_id: c for c in store.checkpoints(_run_id(thread, ns))}
            assert run == sum(v for k, v in spent.items() if k not in given), (thread, ns)
            for c in cps.values():  # consumed never drops along a lineage
                if c.parent_id in cps:
                    assert c.budgets.tokens_spent >= cps[c.parent_id].budgets.tokens_spent


def test_nested_private_levels(build: Build) -> None:
    """The root holds no AI message; the child its own; each level includes the levels
    nested in it: root and child 100 + 400, the grandchild 400."""
    got = _built(build, B.nested_calls)
    tuples = got.tuples["nested-private"]
    by_depth = {_ns(t).count("|") + (1 if _ns(t) else 0): _ns(t) for t in tuples}
    with Store.open(got.store, read_only=True) as store:
        spent = [store.run(_run_id("nested-private", by_depth[d])).budgets.tokens_spent
                 for d in (0, 1, 2)]  # fmt: skip
    assert spent == [500, 500, 400]


def test_past_the_hold_limit_rows_say_their_count_is_partial(
    build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``ThreadRollup.HOLD_BYTES`` of held states the rows held so far are stored with
    their own count and say so; every other row has the count of a full roll-up."""
    got = _built(build, B.nested_calls)
    full = {}
    with Store.open(got.store, read_only=True) as store:
        for r in store.run_records(text="nested-private"):
            full.update({c.checkpoint_id: c for c in store.checkpoints(r.run_id)})
    monkeypatch.setattr(ThreadRollup, "HOLD_BYTES", 800)
    small = tmp_path / "small.duckdb"
    with Store.open(small) as store:
        import_source(store, got.source, ImportOptions())
    with Store.open(small, read_only=True) as store:
        cps = [
            c for r in store.run_records(text="nested-private") for c in store.checkpoints(r.run_id)
        ]
    partial = [c for c in cps if PARTIAL_KEY in c.metadata]
    assert partial and len(partial) < len(cps)
    assert any(c.budgets.tokens_spent < full[c.checkpoint_id].budgets.tokens_spent
               for c in partial)  # fmt: skip
    for c in cps:
        if PARTIAL_KEY in c.metadata:
            assert "800 bytes" in c.metadata[PARTIAL_KEY]
            assert c.budgets.tokens_spent <= full[c.checkpoint_id].budgets.tokens_spent
        else:
            assert c.budgets.tokens_spent == full[c.checkpoint_id].budgets.tokens_spent


def _react_subgraph(saver: Any) -> dict[str, Any]:
    """The prebuilt ReAct agent as a node of a graph sharing its ``messages``."""
    call = {"name": "lookup", "args": {"order": "S-1"}, "id": "call-sub"}
    model = ScriptedModel(script=[ai("rs-ai-1", "", [call], 120), ai("rs-ai-2", "ok", tokens=80)])
    outer = StateGraph(B.Chat)
    outer.add_node("agent", create_react_agent(model, [lookup]))
    outer.add_edge(START, "agent")
    outer.add_edge("agent", END)
    graph = outer.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("where?", id="rs-human")]}, cfg("react-sub"))
    return {"react-sub": graph}


def test_a_subgraph_agent_s_calls_are_on_its_namespace_only(build: Build) -> None:
    got = _built(build, _react_subgraph)
    tuples = got.tuples["react-sub"]
    [ns] = {_ns(t) for t in tuples} - {""}
    answer = next(m for m in got.values["react-sub"]["messages"] if m.type == "tool")
    with Store.open(got.store, read_only=True) as store:
        root, sub = store.tool_calls("react-sub"), store.tool_calls(f"react-sub/{ns}")
        spent = store.run("react-sub").budgets.tokens_spent
    assert root == [] and spent == 200
    told = min(t.metadata["step"] for t in tuples if _ns(t) == ns and _has_tool_message(t))
    assert [(c.kind, c.step_index, c.response if c.kind == "tool" else c.response["id"])
            for c in sub] == [("model", _first_step(tuples, ns, "rs-ai-1"), "rs-ai-1"),
                              ("tool", told, answer.content),
                              ("model", _first_step(tuples, ns, "rs-ai-2"), "rs-ai-2")]  # fmt: skip
    ids = [m.id for m in got.values["react-sub"]["messages"]]
    assert [c.request for c in sub if c.kind == "model"] == [
        {"messages": ids[:1]}, {"messages": ids[:3]}]  # fmt: skip
