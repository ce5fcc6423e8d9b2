"""Budgets on LangGraph runs: subgraphs roll up to the root once, trimming never lowers them.

LangGraph's own view is the saver's ``list`` over every namespace of the thread: the tokens
of the distinct AI messages (by id) its checkpoints hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from tests.langgraph import patterns_tokens as T
from tests.langgraph.lg_import import SAVERS, Build, builder


@pytest.fixture(params=SAVERS)
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Build]:
    yield from builder(request, tmp_path)


def _ai_tokens(tuples: list[Any], ns: str | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tuples:
        if ns is not None and t.config["configurable"]["checkpoint_ns"] != ns:
            continue
        for m in t.checkpoint["channel_values"].get("messages") or []:
            if m.type == "ai" and m.usage_metadata:
                out[m.id] = m.usage_metadata["total_tokens"]
    return out


def _namespaces(tuples: list[Any]) -> set[str]:
    return {t.config["configurable"]["checkpoint_ns"] for t in tuples} - {""}


@pytest.mark.parametrize(
    ("pattern", "thread"),
    [(T.subgraph_tokens, "subgraph-tokens"), (T.subgraph_private_tokens, "subgraph-private"),
     (T.send_tokens, "send-tokens")],
)  # fmt: skip
def test_root_counts_its_subgraphs_once(build: Build, pattern: Any, thread: str) -> None:
    got = build(pattern)
    tuples = got.tuples[thread]
    with Store.open(got.store, read_only=True) as store:
        root = store.run(thread).budgets.tokens_spent
        head = store.checkpoint(thread).budgets.tokens_spent
        children = {ns: store.run(f"{thread}/{ns}").budgets.tokens_spent
                    for ns in _namespaces(tuples)}  # fmt: skip
    assert root == head == sum(_ai_tokens(tuples).values())
    # each namespace keeps its own count
    assert children == {ns: sum(_ai_tokens(tuples, ns).values()) for ns in children}
    if pattern is not T.send_tokens:
        assert children and root == sum(children.values())


def test_root_checkpoints_carry_the_tokens_at_that_point(build: Build) -> None:
    got = build(T.subgraph_private_tokens)
    with Store.open(got.store, read_only=True) as store:
        cps = store.checkpoints("subgraph-private")
    # the subgraph ran in the root's step 1: before it nothing was spent
    by_step = {c.step_index: c.budgets.tokens_spent for c in cps}
    history = {s["step"]: s for s in got.says["subgraph-private"]["history"]}
    assert set(by_step) == set(history)
    assert by_step[max(by_step)] == 300 and by_step[min(by_step)] == 0


def test_trimming_never_lowers_consumed(build: Build) -> None:
    got = build(T.trimmed)
    history = got.says["trimmed"]["history"]
    most = max(sum(m["usage"]["total_tokens"] for m in s["messages"] if m["usage"])
               for s in history)  # fmt: skip
    with Store.open(got.store, read_only=True) as store:
        cps = {c.checkpoint_id: c for c in store.checkpoints("trimmed")}
        run = store.run("trimmed")
    for c in cps.values():
        if c.parent_id in cps:
            assert c.budgets.tokens_spent >= cps[c.parent_id].budgets.tokens_spent
    head = cps[got.says["trimmed"]["head"]["checkpoint_id"]]
    assert head.budgets.tokens_spent == run.budgets.tokens_spent == most == 600
